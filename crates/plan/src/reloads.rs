//! When a target's data is checked on its server and loaded again before a test: the
//! one rule the runner loads by and `campaign plan` counts its loads by, for throwaway
//! and existing servers alike (a throwaway server replaced by a new one is
//! [`crate::restarts`]'s; its new database holds nothing).
//!
//! The runner keeps what the target's last test left the database holding (`known`);
//! a test that wants other data, or comes when that is unknown, has the server checked
//! ([`checks`]) and the data loaded as [`loads`] says. What a test leaves known is
//! [`after_test`]'s: faults leave the data unknown (a topology's server stopped or
//! promoted, a command that did what it pleased to an existing server), a replay leaves
//! it changed.
//!
//! It decides only; checking and loading are the runner's.

use crate::matrix::Dataset;
use crate::spec::InitMode;

/// Whether the server is checked for `wanted` before a test: whenever the runner does
/// not know its database to hold it (`known`: what the target's last test left it
/// holding, None when that is unknown).
pub fn checks(known: Option<&Dataset>, wanted: &Dataset) -> bool {
    known != Some(wanted)
}

/// Whether a check loads the data, by the target's `init` mode: `always` loads;
/// `never` never does (a test whose data is missing fails instead); `if-needed` loads
/// data that `changed` since it was loaded (a replay ran on it) or that the database
/// does not hold (`holds` false).
pub fn loads(init: InitMode, changed: bool, holds: bool) -> bool {
    match init {
        InitMode::Always => true,
        InitMode::Never => false,
        InitMode::IfNeeded => changed || !holds,
    }
}

/// What a test leaves the runner knowing of its target's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// The database holds what the test ran on.
    Known,
    /// Nothing is known: the next test has the server checked.
    Unknown,
    /// The test changed the data: the next test has it loaded again.
    Changed,
}

/// What a test that ran `faulted` (with `[[fault]]`s) or `replayed` (a replay of
/// logged statements, which writes as they did) leaves known of the data on a target
/// of init mode `init`. With `never` a replay's changes stay: the user restores the
/// data (in a `before_test` hook), never pgsurge.
pub fn after_test(init: InitMode, faulted: bool, replayed: bool) -> After {
    if replayed && init != InitMode::Never {
        After::Changed
    } else if faulted {
        After::Unknown
    } else {
        After::Known
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_loads_by_the_init_mode() {
        let d = Dataset::pgbench(10);
        assert!(!checks(Some(&d), &Dataset::pgbench(10)));
        assert!(checks(Some(&d), &Dataset::pgbench(1)));
        assert!(checks(None, &d));
        for (changed, holds) in [(false, false), (false, true), (true, false), (true, true)] {
            assert!(loads(InitMode::Always, changed, holds));
            assert!(!loads(InitMode::Never, changed, holds));
            assert_eq!(loads(InitMode::IfNeeded, changed, holds), changed || !holds);
        }
    }

    #[test]
    fn faults_leave_the_data_unknown_and_a_replay_leaves_it_changed() {
        use InitMode::*;
        assert_eq!(after_test(IfNeeded, false, false), After::Known);
        assert_eq!(after_test(IfNeeded, true, false), After::Unknown);
        assert_eq!(after_test(Always, true, false), After::Unknown);
        assert_eq!(after_test(IfNeeded, false, true), After::Changed);
        assert_eq!(after_test(Never, false, true), After::Known);
        assert_eq!(after_test(Never, true, false), After::Unknown);
    }
}
