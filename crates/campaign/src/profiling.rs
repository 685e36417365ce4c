//! `[profile]`: the profiles of a test's measured run, recorded around it by
//! `pgsurge-observe` (`profile`) and kept with its result; what cannot be profiled is a
//! warning stored with the test, which runs on without it.

use pgsurge_results::RunResult;
use pgsurge_store::RunWrite;

use crate::execute::warning;
use crate::spec::Campaign;

/// `[profile]`: the recording of the measured run's stacks, started just before it;
/// `None` without `[profile]`, or (with a warning: the test goes on without a profile)
/// when it cannot be taken.
pub fn start(
    campaign: &Campaign,
    monitor: &pgsurge_wire::ConnConfig,
    w: &mut RunWrite,
) -> Option<pgsurge_observe::profile::Profiler> {
    use crate::spec::ProfileProcesses;
    let p = campaign.spec.profile.as_ref().filter(|p| p.on)?;
    let request = pgsurge_observe::profile::ProfileRequest {
        frequency_hz: p
            .frequency
            .unwrap_or(pgsurge_observe::profile::DEFAULT_FREQUENCY_HZ),
        server: p.processes != ProfileProcesses::Client,
        client: p.processes != ProfileProcesses::Server,
        off_cpu: p.off_cpu,
    };
    match pgsurge_observe::profile::Profiler::start(monitor, request) {
        Ok(profiler) => Some(profiler),
        Err(e) => {
            w.warnings
                .push(warning("profile", format!("no profile is taken: {e}")));
            None
        }
    }
}

/// The profiles of the measured run into its result (stored with it); what could not
/// be profiled as warnings.
pub fn record(
    outcome: Option<pgsurge_observe::profile::ProfileOutcome>,
    result: &mut RunResult,
    w: &mut RunWrite,
) {
    let Some(outcome) = outcome else {
        return;
    };
    for f in outcome.failures {
        w.warnings
            .push(warning("profile", format!("not profiled: {f}")));
    }
    result.profiles = outcome.profiles;
}
