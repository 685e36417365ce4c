//! What a failure cost a run (`bench --reconnect`, a campaign's `[[fault]]`s): the
//! commits of each 10 ms of the run ([`CommitTimeline`], in memory only), and, in the
//! result, the outage window, the faults applied, the standbys' lag per second and
//! the acknowledged commits the surviving primary lacks ([`FailureCost`]); and the
//! transactions run on a standby, with the stale reads among them ([`ReplicaReads`]).

use serde::{Deserialize, Serialize};

/// Width of a [`CommitTimeline`] bucket, in µs.
pub const COMMIT_BUCKET_US: i64 = 10_000;

/// Commits acknowledged in each [`COMMIT_BUCKET_US`] of a run, from `origin_unix_us`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CommitTimeline {
    /// The start of the first bucket, Unix epoch µs.
    pub origin_unix_us: i64,
    /// Commits per bucket.
    pub counts: Vec<u32>,
    /// The transactions each client was told were committed, by their numbers
    /// (`:txn_seq`), as ranges.
    pub acknowledged: Vec<AckRange>,
    /// When the run's first transaction failed with its connection lost, Unix epoch µs
    /// (none: no connection was lost).
    pub first_connection_lost_unix_us: Option<i64>,
}

/// Transactions `first..=last` of a client (its `:txn_seq` numbers), each acknowledged
/// as committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckRange {
    /// The client (`:client_id`).
    pub client: u32,
    /// Its first transaction number in the range.
    pub first: i64,
    /// Its last, included.
    pub last: i64,
}

/// A thread's acknowledged transactions as they come, one range per run of consecutive
/// numbers of a client: a commit extends its client's range, a gap (a failed or skipped
/// transaction) starts another.
#[derive(Debug, Clone, Default)]
pub struct AckRecorder {
    ranges: Vec<AckRange>,
    /// Each client's range being extended, as its index in `ranges` + 1 (0: none yet),
    /// indexed by client: clients are numbered from 0, so this is one load per commit
    /// where a hash map hashed the client's number every time.
    open: Vec<usize>,
}

impl AckRecorder {
    /// Client `client` was told transaction `seq` committed.
    pub fn acknowledged(&mut self, client: u32, seq: i64) {
        let c = client as usize;
        if let Some(i) = self.open.get(c).and_then(|&i| i.checked_sub(1)) {
            let r = &mut self.ranges[i];
            if r.last + 1 == seq {
                r.last = seq;
                return;
            }
        }
        if self.open.len() <= c {
            self.open.resize(c + 1, 0);
        }
        self.ranges.push(AckRange {
            client,
            first: seq,
            last: seq,
        });
        self.open[c] = self.ranges.len();
    }

    /// The ranges, in the order they started.
    pub fn into_ranges(self) -> Vec<AckRange> {
        self.ranges
    }
}

impl CommitTimeline {
    /// Adds another thread's counts bucket by bucket.
    pub fn add(&mut self, counts: &[u32]) {
        if self.counts.len() < counts.len() {
            self.counts.resize(counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(counts) {
            *a = a.saturating_add(*b);
        }
    }
}

/// What a failure cost a run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct FailureCost {
    /// The stretch without an acknowledged commit the failure caused (which one:
    /// [`OutageWindow::anchor`]); absent when there was none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outage: Option<OutageWindow>,
    /// The faults applied during the run, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultApplied>,
    /// The standbys' lag, sampled every second on the primary while it answered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lag: Vec<LagSample>,
    /// Acknowledged commits checked on the primary after the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acknowledged_checked: Option<u64>,
    /// Of those, the ones it lacks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acknowledged_lost: Option<u64>,
    /// Why the acknowledged commits could not be checked, when they were to be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acknowledged_error: Option<String>,
}

impl FailureCost {
    /// The failure cost stored in a run's result document, if it has one.
    pub fn of_result(result: &serde_json::Value) -> Option<FailureCost> {
        serde_json::from_value(result.get("failure_cost")?.clone()).ok()
    }

    /// The acknowledged commits checked and lost, when they were checked.
    pub fn acknowledged(&self) -> Option<AcknowledgedCommits> {
        Some(AcknowledgedCommits {
            checked: self.acknowledged_checked?,
            lost: self.acknowledged_lost?,
        })
    }
}

/// Acknowledged commits looked for on the surviving primary after one run or more, and
/// those it lacked: what the report's failure cost and `compare` both show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct AcknowledgedCommits {
    /// Acknowledged commits looked for.
    pub checked: u64,
    /// Of those, the ones missing.
    pub lost: u64,
}

impl AcknowledgedCommits {
    /// The sum over the runs of `runs` that checked theirs; None when none did.
    pub fn over<'a>(runs: impl IntoIterator<Item = &'a serde_json::Value>) -> Option<Self> {
        runs.into_iter()
            .filter_map(|doc| FailureCost::of_result(doc)?.acknowledged())
            .reduce(std::ops::Add::add)
    }

    /// `3 of 41207 checked`.
    pub fn text(&self) -> String {
        format!("{} of {} checked", self.lost, self.checked)
    }
}

impl std::ops::Add for AcknowledgedCommits {
    type Output = AcknowledgedCommits;

    fn add(self, other: AcknowledgedCommits) -> AcknowledgedCommits {
        AcknowledgedCommits {
            checked: self.checked + other.checked,
            lost: self.lost + other.lost,
        }
    }
}

/// The outage window and the recovery after it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct OutageWindow {
    /// The last commit acknowledged before the outage (end of its 10 ms bucket), Unix
    /// epoch µs.
    pub last_commit_before_unix_us: i64,
    /// The first commit acknowledged after it (start of its bucket), Unix epoch µs.
    pub first_commit_after_unix_us: i64,
    /// Its length in seconds.
    pub seconds: f64,
    /// Commits per second over the 5 s before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_tps: Option<f64>,
    /// Seconds from its start until a one-second window held 90 % of the steady rate
    /// again; absent: not within the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_s: Option<f64>,
    /// Which stretch without a commit this is (absent in results that did not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor: Option<OutageAnchor>,
    /// With [`OutageAnchor::FirstConnectionLost`]: when that transaction failed, Unix
    /// epoch µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_lost_unix_us: Option<i64>,
    /// With [`OutageAnchor::FirstConnectionLost`] in a campaign: the moment of the
    /// failover, by a server's own log, that the outage was found through (a promoted
    /// standby's end of archive recovery, a restarted primary's readiness for
    /// connections), Unix epoch µs; absent: the allowance for the failing server's late
    /// commits found it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover_unix_us: Option<i64>,
}

/// Which stretch without a commit a run's outage is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutageAnchor {
    /// The one that holds the moment the run's first transaction failed with its
    /// connection lost: the failure's own gap, whatever stalls come later.
    FirstConnectionLost,
    /// The longest from the first fault's time on (a campaign's `[[fault]]`s that
    /// broke no connection).
    FirstFault,
    /// The longest of the whole run (no connection was lost and no fault was applied).
    Longest,
}

impl OutageWindow {
    /// The window from times in seconds after `origin_unix_us`, found by `anchor`.
    pub fn from_seconds(
        origin_unix_us: i64,
        last_before_s: f64,
        first_after_s: f64,
        steady_tps: Option<f64>,
        recovery_s: Option<f64>,
        anchor: OutageAnchor,
    ) -> Self {
        let at = |s: f64| origin_unix_us + (s * 1e6).round() as i64;
        OutageWindow {
            last_commit_before_unix_us: at(last_before_s),
            first_commit_after_unix_us: at(first_after_s),
            seconds: first_after_s - last_before_s,
            steady_tps,
            recovery_s,
            anchor: Some(anchor),
            connection_lost_unix_us: None,
            failover_unix_us: None,
        }
    }

    /// The report's lines (`bench --reconnect`).
    pub fn render(&self) -> String {
        let mut s = match self.anchor {
            Some(OutageAnchor::FirstConnectionLost) => format!(
                "stretch without a commit at the first lost connection = {:.3} s\n",
                self.seconds
            ),
            _ => format!("longest stretch without a commit = {:.3} s\n", self.seconds),
        };
        if let Some(tps) = self.steady_tps {
            s.push_str(&format!("tps before it = {tps:.1}\n"));
        }
        match self.recovery_s {
            Some(r) => s.push_str(&format!("back to 90% of it after = {r:.3} s\n")),
            None if self.steady_tps.is_some() => {
                s.push_str("back to 90% of it after = not within the run\n")
            }
            None => {}
        }
        s
    }
}

/// One fault, as applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct FaultApplied {
    /// Its planned time, seconds after the run's start.
    pub at_s: f64,
    /// What it did (`promote`, `stop`, `kill`, `pause-replay`, `resume-replay`,
    /// `command`).
    pub action: String,
    /// When it was done, Unix epoch µs.
    pub done_unix_us: i64,
    /// Why it failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One standby's lag at one second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct LagSample {
    /// Seconds after the run's start.
    pub t_s: f64,
    /// The standby (`application_name`).
    pub replica: String,
    /// WAL the primary wrote that the standby has not replayed, in bytes.
    pub bytes: i64,
    /// `pg_stat_replication.replay_lag` in seconds (absent when the primary has no
    /// figure: nothing replayed recently).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
}

/// Transactions of scripts run on a standby (`bench --replica-file`): how many, how
/// many were stale (a query of theirs that returns rows returned none: the standby had
/// not yet replayed what it looked for), per second, and the standbys' lag per second
/// beside them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct ReplicaReads {
    /// Committed transactions of scripts run on a standby.
    pub reads: u64,
    /// Of those, the stale ones.
    pub stale: u64,
    /// Per second of the run, in order (seconds with no read left out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_second: Vec<ReplicaReadSecond>,
    /// The standbys' lag, read on the primary every second of the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lag: Vec<LagSample>,
}

/// The reads on a standby in one second of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct ReplicaReadSecond {
    /// The second, counted from the run's start (0: the first).
    pub second: u32,
    /// Reads committed in it.
    pub reads: u32,
    /// Of those, the stale ones.
    pub stale: u32,
}

impl ReplicaReads {
    /// From per-second `[reads, stale]` counts.
    pub fn from_seconds(counts: &[[u32; 2]]) -> Self {
        let per_second: Vec<ReplicaReadSecond> = counts
            .iter()
            .enumerate()
            .filter(|(_, c)| c[0] > 0)
            .map(|(i, c)| ReplicaReadSecond {
                second: i as u32,
                reads: c[0],
                stale: c[1],
            })
            .collect();
        ReplicaReads {
            reads: per_second.iter().map(|s| u64::from(s.reads)).sum(),
            stale: per_second.iter().map(|s| u64::from(s.stale)).sum(),
            per_second,
            lag: Vec::new(),
        }
    }

    /// The report's lines.
    pub fn render(&self) -> String {
        let share = if self.reads == 0 {
            0.0
        } else {
            100.0 * self.stale as f64 / self.reads as f64
        };
        format!(
            "transactions run on a standby = {}\nstale reads = {} ({share:.3}%)\n",
            self.reads, self.stale
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acknowledged_transactions_are_kept_as_ranges_per_client() {
        let mut r = AckRecorder::default();
        for (client, seq) in [
            (2, 1),
            (0, 1),
            (2, 2),
            (0, 2),
            (2, 3),
            (0, 4),
            (0, 5),
            (2, 5),
        ] {
            r.acknowledged(client, seq);
        }
        let range = |client, first, last| AckRange {
            client,
            first,
            last,
        };
        assert_eq!(
            r.into_ranges(),
            vec![
                range(2, 1, 3),
                range(0, 1, 2),
                range(0, 4, 5),
                range(2, 5, 5)
            ]
        );
    }
}
