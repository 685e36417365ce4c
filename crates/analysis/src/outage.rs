//! What a failure cost the clients, from the commits they were told of over time:
//! the stretch without an acknowledged commit (the outage window) — the one that holds
//! the moment the clients first lost a connection (through a moment of the failover the
//! servers' logs give, [`outage_through`], or else [`outage_at`]), or the longest
//! ([`outage`]) —, the steady rate before it, and when the rate came back to 90 % of it.
//! Which of these is a run's outage is decided in one place, [`failure_outage`], for
//! `bench --reconnect` and a campaign's faults alike.
//!
//! Input: commits counted per bucket of a fixed width (10 ms in a run), from the run's
//! start. Bucket resolution bounds every time given here.

use serde::{Deserialize, Serialize};

/// The share of the steady rate before an outage that counts as recovered.
pub const RECOVERED_SHARE: f64 = 0.9;

/// Seconds before an outage whose rate is its steady rate (fewer when the run is
/// younger, but never its first second, a warm-up).
pub const STEADY_WINDOW_S: f64 = 5.0;

/// An outage and its cost, in seconds from the run's start.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Outage {
    /// The end of the last bucket with a commit before the outage (the last commit
    /// acknowledged before it is at most one bucket earlier).
    pub last_commit_before_s: f64,
    /// The start of the first bucket with a commit after it.
    pub first_commit_after_s: f64,
    /// `first_commit_after_s - last_commit_before_s`.
    pub seconds: f64,
    /// Commits per second over the seconds before the outage (none when the outage
    /// began in the run's first second).
    pub steady_tps: Option<f64>,
    /// Seconds from the last commit before the outage until the first one-second window
    /// after it that holds [`RECOVERED_SHARE`] of the steady rate (none: never, or no
    /// steady rate).
    pub recovery_s: Option<f64>,
}

/// Which stretch without a commit a run's outage is ([`failure_outage`]'s rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// The one that holds the moment the run's first transaction failed with its
    /// connection lost, however short: the failure's own gap (its start among the
    /// failing server's late commits by [`LATE_COMMITS_S`]).
    FirstConnectionLost,
    /// The same failure's, found through a moment of the failover that the servers'
    /// logs gave ([`outage_through`]), with no allowance: the moment's index in those
    /// [`failure_outage`] was given.
    Failover(usize),
    /// No connection was lost: the longest from the first fault's time on.
    FirstFault,
    /// No connection was lost and no fault was applied: the longest of the run.
    Longest,
}

/// A run's outage and which stretch it is, by one rule: when a connection was lost
/// (`connection_lost_s`), the stretch that holds that moment, so a later, longer stall
/// (the promoted server's first checkpoint on a busy machine, say) is not taken for
/// the failure — the stretch through the first moment of `failovers_s` (moments of
/// failovers the servers' own logs give, in time order) that is this failure's
/// ([`outage_through`]) when there is one, else the one the allowance for the failing
/// server's late commits gives ([`outage_at`]); else, with faults applied
/// (`first_fault_s`), the longest stretch from the first fault's time on (a paused
/// replay or a delayed link breaks no connection); else the longest of the run. Times
/// are seconds from the run's start.
pub fn failure_outage(
    counts: &[u32],
    bucket_s: f64,
    connection_lost_s: Option<f64>,
    first_fault_s: Option<f64>,
    failovers_s: &[f64],
) -> Option<(Outage, Anchor)> {
    match (connection_lost_s, first_fault_s) {
        (Some(lost), _) => (failovers_s.iter().enumerate())
            .find_map(|(i, &moment)| {
                outage_through(counts, bucket_s, lost, moment).map(|o| (o, Anchor::Failover(i)))
            })
            .or_else(|| {
                outage_at(counts, bucket_s, lost).map(|o| (o, Anchor::FirstConnectionLost))
            }),
        (None, Some(fault)) => outage(counts, bucket_s, fault).map(|o| (o, Anchor::FirstFault)),
        (None, None) => outage(counts, bucket_s, 0.0).map(|o| (o, Anchor::Longest)),
    }
}

/// The longest stretch without a commit that starts at or after `from_s` (a fault's
/// time; 0 for any), between two buckets with commits. None when no commit comes
/// after such a stretch, or when there is no gap at all.
pub fn outage(counts: &[u32], bucket_s: f64, from_s: f64) -> Option<Outage> {
    if bucket_s.is_nan() || bucket_s <= 0.0 {
        return None;
    }
    let nonempty: Vec<usize> = (0..counts.len()).filter(|&i| counts[i] > 0).collect();
    // A gap counts from the last commit before `from_s` on (the fault may strike while
    // the clients are between commits).
    let (before, after) = nonempty
        .windows(2)
        .map(|w| (w[0], w[1]))
        .filter(|&(a, b)| b > a + 1 && (b as f64) * bucket_s > from_s)
        .max_by_key(|&(a, b)| (b - a, std::cmp::Reverse(a)))?;
    Some(window(counts, bucket_s, before, after))
}

/// How long after the first lost connection the server that failed may still be
/// acknowledging commits: it does not die at once (its backends end one after another,
/// and a client reads a commit's reply a moment after it came), so a gap between such
/// late commits is not the failure's own.
pub const LATE_COMMITS_S: f64 = 0.25;

/// The stretch without a commit that a failure the clients saw at `at_s` caused: the
/// longest of the stretch that holds the moment (from the last bucket with a commit at
/// or before `at_s`'s bucket to the first bucket with a commit after it) and those that
/// start within [`LATE_COMMITS_S`] after it, however short; a stretch that starts later
/// (a stall of the server that took over) is another matter. Its length is 0 when
/// commits went on without a gap. None when no commit comes before or after the moment.
pub fn outage_at(counts: &[u32], bucket_s: f64, at_s: f64) -> Option<Outage> {
    if bucket_s.is_nan() || bucket_s <= 0.0 || at_s.is_nan() || at_s < 0.0 {
        return None;
    }
    let at = (at_s / bucket_s).floor() as usize;
    let before = (0..=at.min(counts.len().checked_sub(1)?))
        .rev()
        .find(|&i| counts[i] > 0)?;
    let after = (at + 1..counts.len()).find(|&i| counts[i] > 0)?;
    let (mut best, mut from) = ((before, after), after);
    let last_start = ((at_s + LATE_COMMITS_S) / bucket_s).floor() as usize;
    while from <= last_start {
        let Some(next) = (from + 1..counts.len()).find(|&i| counts[i] > 0) else {
            break;
        };
        if next - from > best.1 - best.0 {
            best = (from, next);
        }
        from = next;
    }
    Some(window(counts, bucket_s, best.0, best.1))
}

/// The stretch without a commit that a failure the clients saw at `at_s` caused, found
/// through `failover_s`, a moment of the failover that the servers' own logs give, when
/// no server took a commit (the failing one gone, the one taking over not yet taking
/// any: a promoted standby's end of archive recovery, a restarted primary's readiness
/// for connections): from the last bucket with a commit before `failover_s`'s bucket to
/// the first bucket with a commit from it on (a commit in that bucket is taken for the
/// new server's). No allowance is needed for the failing server's late commits: however
/// late, they came before that moment. The moment may come before the failure was seen
/// (clients that noticed their lost connections late) when the stretch holds both.
/// None when no stretch without a commit holds the moment, or the one that does ended
/// before the failure was seen (another failure's); the caller then has [`outage_at`]'s
/// rule.
pub fn outage_through(counts: &[u32], bucket_s: f64, at_s: f64, failover_s: f64) -> Option<Outage> {
    if bucket_s.is_nan() || bucket_s <= 0.0 || at_s.is_nan() || at_s < 0.0 {
        return None;
    }
    if failover_s.is_nan() || failover_s < 0.0 {
        return None;
    }
    let moment = ((failover_s / bucket_s).floor() as usize).min(counts.len());
    let seen = (at_s / bucket_s).floor() as usize;
    let before = (0..moment).rev().find(|&i| counts[i] > 0)?;
    let after = (moment..counts.len()).find(|&i| counts[i] > 0)?;
    (after > before + 1 && after >= seen).then(|| window(counts, bucket_s, before, after))
}

/// The outage between bucket `before` (the last with a commit) and bucket `after` (the
/// first with one again), with the steady rate before it and the recovery after it.
fn window(counts: &[u32], bucket_s: f64, before: usize, after: usize) -> Outage {
    let last = (before + 1) as f64 * bucket_s;
    let first = after as f64 * bucket_s;
    let steady_tps = steady_rate(counts, bucket_s, before + 1);
    let recovery_s = steady_tps.and_then(|tps| {
        let window = (1.0 / bucket_s).round().max(1.0) as usize;
        let need = RECOVERED_SHARE * tps * window as f64 * bucket_s;
        let mut sum: u64 = counts[after..]
            .iter()
            .take(window)
            .map(|&c| u64::from(c))
            .sum();
        let mut start = after;
        loop {
            if start + window > counts.len() {
                return None;
            }
            if sum as f64 >= need {
                return Some(start as f64 * bucket_s - last);
            }
            sum -= u64::from(counts[start]);
            if let Some(&next) = counts.get(start + window) {
                sum += u64::from(next);
            }
            start += 1;
        }
    });
    Outage {
        last_commit_before_s: last,
        first_commit_after_s: first,
        seconds: first - last,
        steady_tps,
        recovery_s,
    }
}

/// Commits per second in the [`STEADY_WINDOW_S`] before bucket `end` (exclusive),
/// leaving out the run's first second.
fn steady_rate(counts: &[u32], bucket_s: f64, end: usize) -> Option<f64> {
    let first = (1.0 / bucket_s).round() as usize;
    let span = (STEADY_WINDOW_S / bucket_s).round() as usize;
    let start = end.saturating_sub(span).max(first);
    if end <= start {
        return None;
    }
    let n: u64 = counts[start..end].iter().map(|&c| u64::from(c)).sum();
    Some(n as f64 / ((end - start) as f64 * bucket_s))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 100 commits a second (one per 10 ms bucket) for `secs` seconds.
    fn steady(secs: usize) -> Vec<u32> {
        vec![1; secs * 100]
    }

    #[test]
    fn the_longest_gap_after_the_fault_is_the_outage() {
        let mut c = steady(3);
        c.extend(vec![0; 150]); // 1.5 s without a commit
        c.extend(vec![1; 300]);
        let o = outage(&c, 0.01, 2.0).unwrap();
        assert!((o.last_commit_before_s - 3.0).abs() < 1e-9, "{o:?}");
        assert!((o.first_commit_after_s - 4.5).abs() < 1e-9, "{o:?}");
        assert!((o.seconds - 1.5).abs() < 1e-9);
        assert!((o.steady_tps.unwrap() - 100.0).abs() < 1e-9);
        // Back at full rate at once.
        assert!((o.recovery_s.unwrap() - 1.5).abs() < 1e-9, "{o:?}");
    }

    #[test]
    fn a_slow_return_counts_until_ninety_percent() {
        let mut c = steady(3);
        c.extend(vec![0; 100]);
        // Half the rate for two seconds, then full.
        c.extend((0..200).map(|i| ((i + 1) % 2) as u32));
        c.extend(vec![1; 300]);
        let o = outage(&c, 0.01, 0.0).unwrap();
        assert!((o.seconds - 1.0).abs() < 1e-9);
        // The first second holding 90 commits starts 1.8 s into the half rate.
        let r = o.recovery_s.unwrap();
        assert!(r > 2.5 && r < 3.0 + 1e-9, "{r}");
    }

    #[test]
    fn gaps_before_the_fault_and_runs_without_gaps_are_not_outages() {
        let mut c = steady(2);
        c[50] = 0;
        c[51] = 0;
        assert!(outage(&c, 0.01, 1.0).is_none());
        assert!(outage(&steady(2), 0.01, 0.0).is_none());
        assert!(outage(&[], 0.01, 0.0).is_none());
        // No commit after the gap: no outage window to give.
        let mut c = steady(2);
        c.extend(vec![0; 100]);
        assert!(outage(&c, 0.01, 0.0).is_none());
    }

    #[test]
    fn the_stretch_holding_the_failure_is_the_outage_not_a_longer_stall_after_it() {
        // A 0.3 s gap at the failure (3.0 s to 3.3 s), then a 1.2 s stall at 6 s.
        let mut c = steady(3);
        c.extend(vec![0; 30]);
        c.extend(vec![1; 270]);
        c.extend(vec![0; 120]);
        c.extend(vec![1; 300]);
        // The first connection was lost at 3.05 s, inside the short gap.
        let o = outage_at(&c, 0.01, 3.05).unwrap();
        assert!((o.last_commit_before_s - 3.0).abs() < 1e-9, "{o:?}");
        assert!((o.first_commit_after_s - 3.3).abs() < 1e-9, "{o:?}");
        assert!((o.seconds - 0.3).abs() < 1e-9, "{o:?}");
        assert!((o.steady_tps.unwrap() - 100.0).abs() < 1e-9, "{o:?}");
        // The longest stretch is the later stall.
        let longest = outage(&c, 0.01, 0.0).unwrap();
        assert!((longest.seconds - 1.2).abs() < 1e-9, "{longest:?}");
        // A failure seen in a bucket that still had commits (a client noticed a moment
        // after the last commit): the same stretch.
        assert_eq!(outage_at(&c, 0.01, 2.995), Some(o));
    }

    #[test]
    fn a_lost_connection_decides_the_outage_over_the_first_fault_and_the_longest_stall() {
        // A fault at 2.9 s, a 0.3 s gap at the lost connection (3.0 s to 3.3 s), then
        // a 1.2 s stall at 6 s.
        let mut c = steady(3);
        c.extend(vec![0; 30]);
        c.extend(vec![1; 270]);
        c.extend(vec![0; 120]);
        c.extend(vec![1; 300]);
        let (o, anchor) = failure_outage(&c, 0.01, Some(3.05), Some(2.9), &[]).unwrap();
        assert_eq!(anchor, Anchor::FirstConnectionLost);
        assert!((o.seconds - 0.3).abs() < 1e-9, "{o:?}");
        assert!((o.last_commit_before_s - 3.0).abs() < 1e-9, "{o:?}");
        // No connection lost (a paused replay): the longest from the fault on.
        let (o, anchor) = failure_outage(&c, 0.01, None, Some(2.9), &[]).unwrap();
        assert_eq!(anchor, Anchor::FirstFault);
        assert!((o.seconds - 1.2).abs() < 1e-9, "{o:?}");
        // Neither: the longest of the run.
        let (o, anchor) = failure_outage(&c, 0.01, None, None, &[]).unwrap();
        assert_eq!(anchor, Anchor::Longest);
        assert!((o.seconds - 1.2).abs() < 1e-9, "{o:?}");
        // A lost connection with no commit after it: no window, not another stretch
        // (the gap at 1.2 s after the fault).
        let mut c = steady(2);
        c[120..150].fill(0);
        c.extend(vec![0; 100]);
        assert!(failure_outage(&c, 0.01, None, Some(1.0), &[]).is_some());
        assert!(failure_outage(&c, 0.01, Some(2.5), Some(1.0), &[]).is_none());
    }

    #[test]
    fn late_commits_of_the_failing_server_do_not_cut_its_outage_short() {
        // The first connection lost at 3.005 s while other backends of the dying
        // server still acknowledged commits at 3.02 s and 3.05 s; then nothing until
        // the standby took over at 3.5 s; a longer stall at 6 s.
        let mut c = steady(3);
        c.extend(vec![0; 300]);
        c[302] = 1;
        c[305] = 1;
        c[350..600].fill(1);
        c.extend(vec![0; 120]);
        c.extend(vec![1; 300]);
        let o = outage_at(&c, 0.01, 3.005).unwrap();
        assert!((o.last_commit_before_s - 3.06).abs() < 1e-9, "{o:?}");
        assert!((o.first_commit_after_s - 3.5).abs() < 1e-9, "{o:?}");
        // A commit after the allowance: the stretch before it stands, though a longer
        // one follows.
        let mut c = steady(3);
        c.extend(vec![0; 300]);
        c[340] = 1;
        c[400..600].fill(1);
        let o = outage_at(&c, 0.01, 3.005).unwrap();
        assert!((o.seconds - 0.4).abs() < 1e-9, "{o:?}");
    }

    #[test]
    fn a_failure_the_commits_went_on_through_is_an_outage_of_nothing() {
        let c = steady(3);
        let o = outage_at(&c, 0.01, 1.5).unwrap();
        assert_eq!(o.seconds, 0.0, "{o:?}");
        assert!((o.last_commit_before_s - 1.51).abs() < 1e-9, "{o:?}");
        // No commit before the moment, or none after it: no window.
        let mut late = vec![0; 100];
        late.extend(steady(1));
        assert!(outage_at(&late, 0.01, 0.5).is_none());
        let mut c = steady(2);
        c.extend(vec![0; 100]);
        assert!(outage_at(&c, 0.01, 2.5).is_none());
        assert!(outage_at(&c, 0.01, 9.0).is_none());
        assert!(outage_at(&[], 0.01, 0.0).is_none());
        assert!(outage_at(&c, 0.01, f64::NAN).is_none());
    }
    #[test]
    fn a_logged_failover_moment_finds_the_outage_however_late_the_failing_server_committed() {
        // The first connection lost at 3.005 s; the dying server's backends still
        // acknowledged commits at 3.02 s and, on a busy machine, at 3.4 s, past the
        // allowance; the standby, promoted, ended its archive recovery at 3.652 s (its
        // log's time) and took commits from 3.66 s; a longer stall at 6 s.
        let mut c = steady(3);
        c.extend(vec![0; 300]);
        c[302] = 1;
        c[340] = 1;
        c[366..600].fill(1);
        c.extend(vec![0; 120]);
        c.extend(vec![1; 300]);
        let fixed = outage_at(&c, 0.01, 3.005).unwrap();
        // The late commit at 3.4 s came past the allowance: the fixed rule's stretch
        // begins at 3.03 s and is cut short at 3.4 s.
        assert!(
            (fixed.last_commit_before_s - 3.03).abs() < 1e-9,
            "{fixed:?}"
        );
        assert!((fixed.seconds - 0.37).abs() < 1e-9, "{fixed:?}");
        let o = outage_through(&c, 0.01, 3.005, 3.652).unwrap();
        assert!((o.last_commit_before_s - 3.41).abs() < 1e-9, "{o:?}");
        assert!((o.first_commit_after_s - 3.66).abs() < 1e-9, "{o:?}");
        // An earlier failover's moment (its stretch ended before the failure was seen)
        // is passed over for this one's; a later one's is not reached.
        let moments = [1.5, 3.652, 6.5];
        let (with, anchor) = failure_outage(&c, 0.01, Some(3.005), Some(3.0), &moments).unwrap();
        assert_eq!((with, anchor), (o, Anchor::Failover(1)));
        // Clients that noticed their lost connections only at 3.5 s, after the moment:
        // the same stretch holds both.
        assert_eq!(outage_through(&c, 0.01, 3.5, 3.452), Some(o));
        // A commit taken in the moment's own bucket is the new server's: it ends the
        // stretch there.
        c[365] = 1;
        let o = outage_through(&c, 0.01, 3.005, 3.652).unwrap();
        assert!((o.first_commit_after_s - 3.65).abs() < 1e-9, "{o:?}");
    }

    #[test]
    fn without_a_usable_failover_moment_the_late_commit_allowance_decides() {
        // As above, without the late commit at 3.4 s.
        let mut c = steady(3);
        c.extend(vec![0; 300]);
        c[302] = 1;
        c[366..600].fill(1);
        let fixed = outage_at(&c, 0.01, 3.005).unwrap();
        assert!(
            (fixed.last_commit_before_s - 3.03).abs() < 1e-9,
            "{fixed:?}"
        );
        let rule = |moments: &[f64]| failure_outage(&c, 0.01, Some(3.005), None, moments);
        assert_eq!(rule(&[]), Some((fixed, Anchor::FirstConnectionLost)));
        // A moment whose stretch ended before the failure was seen (an earlier
        // failover's), one with commits on both sides, one past the run's last bucket,
        // none at all: not this failure's.
        for moment in [2.5, 4.5, 60.0, f64::NAN] {
            assert_eq!(outage_through(&c, 0.01, 3.005, moment), None, "{moment}");
            assert_eq!(
                rule(&[moment]),
                Some((fixed, Anchor::FirstConnectionLost)),
                "{moment}"
            );
        }
    }
}
