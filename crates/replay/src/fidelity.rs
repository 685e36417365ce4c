//! Fidelity: per fingerprint, how many statements and errors the log had and the replay
//! produced, and their latencies (logged: `log_min_duration_statement` durations;
//! replayed: from the send to the answer's end); and the replay's lag behind its
//! schedule, second by second. Accumulated per driver thread, merged once at the end.
//! Owns the counting, not the rendering (`report`).

use hdrhistogram::Histogram;

use crate::fingerprint::FpId;

/// Significant digits of the latency histograms (1 %: a few KB each, grown on use).
const SIGFIG: u8 = 2;

/// Counts and latencies of one fingerprint on one side.
#[derive(Debug, Clone, Default)]
pub struct FpCounts {
    /// Statements.
    pub statements: u64,
    /// Statements that ended in an error (a client's cancel included).
    pub errors: u64,
    /// Latencies in µs, when known.
    pub latency: Option<Histogram<u64>>,
}

impl FpCounts {
    /// Counts one statement.
    pub fn record(&mut self, error: bool, latency_us: Option<i64>) {
        self.statements += 1;
        self.errors += u64::from(error);
        if let Some(us) = latency_us {
            self.record_latency(us);
        }
    }

    /// Adds a latency to the statements already counted.
    pub fn record_latency(&mut self, us: i64) {
        let h = self
            .latency
            .get_or_insert_with(|| Histogram::new(SIGFIG).expect("2 significant digits are valid"));
        // Auto-resizing: any value fits.
        let _ = h.record(us.max(0) as u64);
    }

    fn merge(&mut self, other: &FpCounts) {
        self.statements += other.statements;
        self.errors += other.errors;
        if let Some(o) = &other.latency {
            match &mut self.latency {
                Some(h) => {
                    let _ = h.add(o);
                }
                None => self.latency = Some(o.clone()),
            }
        }
    }
}

/// Counts per fingerprint (indexed by [`FpId`]).
#[derive(Debug, Clone, Default)]
pub struct Counts {
    per_fp: Vec<FpCounts>,
}

impl Counts {
    /// The counts of `fp`, made on first use.
    pub fn of(&mut self, fp: FpId) -> &mut FpCounts {
        let i = fp.0 as usize;
        if i >= self.per_fp.len() {
            self.per_fp.resize_with(i + 1, FpCounts::default);
        }
        &mut self.per_fp[i]
    }

    /// The counts of `fp` (empty when none).
    pub fn get(&self, fp: FpId) -> Option<&FpCounts> {
        self.per_fp.get(fp.0 as usize)
    }

    /// Adds `other` in.
    pub fn merge(&mut self, other: &Counts) {
        for (i, c) in other.per_fp.iter().enumerate() {
            self.of(FpId(i as u32)).merge(c);
        }
    }

    /// Number of fingerprint slots.
    pub fn len(&self) -> usize {
        self.per_fp.len()
    }

    /// No fingerprint counted.
    pub fn is_empty(&self) -> bool {
        self.per_fp.is_empty()
    }
}

/// One second of the replay: statements sent and how late they went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LagSecond {
    /// Statements sent in that second.
    pub statements: u64,
    /// Sum of their lags (µs).
    pub lag_sum_us: u64,
    /// Largest lag (µs).
    pub lag_max_us: u64,
}

/// What one driver thread saw of the replay.
#[derive(Debug, Clone, Default)]
pub struct ReplayTally {
    /// Per fingerprint.
    pub counts: Counts,
    /// Errors of statements that succeeded in the log (the replay's errors).
    pub unexpected_errors: u64,
    /// Statements that failed in the log and failed again.
    pub expected_errors: u64,
    /// Statements that failed in the log but succeeded in the replay.
    pub missing_errors: u64,
    /// Cancel requests sent for statements the log shows cancelled.
    pub cancels_sent: u64,
    /// Sessions that connected.
    pub sessions: u64,
    /// Sessions that could not connect (their statements were not sent).
    pub failed_connections: u64,
    /// Statements not sent: their session could not connect, or was lost.
    pub not_sent: u64,
    /// Sessions whose connection closed inside a transaction (as the log had them).
    pub ended_in_transaction: u64,
    /// Lag per second since the replay's start.
    pub lag: Vec<LagSecond>,
    /// The first few unexpected errors, for the report.
    pub error_examples: Vec<ErrorExample>,
}

/// A replay error, for the report.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ErrorExample {
    /// Where the statement is in the logs (`file:line`).
    pub at: String,
    /// SQLSTATE.
    pub sqlstate: String,
    /// The server's message.
    pub message: String,
}

/// How many error examples a tally keeps.
pub const ERROR_EXAMPLES: usize = 10;

impl ReplayTally {
    /// Notes a statement sent `lag_us` after its scheduled time, `second` seconds into
    /// the replay.
    pub fn note_lag(&mut self, second: usize, lag_us: i64) {
        if second >= self.lag.len() {
            self.lag.resize(second + 1, LagSecond::default());
        }
        let s = &mut self.lag[second];
        let lag = lag_us.max(0) as u64;
        s.statements += 1;
        s.lag_sum_us += lag;
        s.lag_max_us = s.lag_max_us.max(lag);
    }

    /// Adds another thread's tally.
    pub fn merge(&mut self, o: &ReplayTally) {
        self.counts.merge(&o.counts);
        self.unexpected_errors += o.unexpected_errors;
        self.expected_errors += o.expected_errors;
        self.missing_errors += o.missing_errors;
        self.cancels_sent += o.cancels_sent;
        self.sessions += o.sessions;
        self.failed_connections += o.failed_connections;
        self.not_sent += o.not_sent;
        self.ended_in_transaction += o.ended_in_transaction;
        if o.lag.len() > self.lag.len() {
            self.lag.resize(o.lag.len(), LagSecond::default());
        }
        for (d, s) in self.lag.iter_mut().zip(&o.lag) {
            d.statements += s.statements;
            d.lag_sum_us += s.lag_sum_us;
            d.lag_max_us = d.lag_max_us.max(s.lag_max_us);
        }
        for e in &o.error_examples {
            if self.error_examples.len() < ERROR_EXAMPLES {
                self.error_examples.push(e.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tallies_merge_counts_latencies_and_lag() {
        let mut a = ReplayTally::default();
        a.counts.of(FpId(1)).record(false, Some(100));
        a.note_lag(0, 5);
        let mut b = ReplayTally::default();
        b.counts.of(FpId(1)).record(true, Some(300));
        b.counts.of(FpId(3)).record(false, None);
        b.note_lag(2, 7);
        b.note_lag(0, 9);
        a.merge(&b);
        let c = a.counts.get(FpId(1)).unwrap();
        assert_eq!((c.statements, c.errors), (2, 1));
        assert_eq!(c.latency.as_ref().unwrap().len(), 2);
        assert_eq!(a.counts.len(), 4);
        assert_eq!(a.lag.len(), 3);
        assert_eq!(
            a.lag[0],
            LagSecond {
                statements: 2,
                lag_sum_us: 14,
                lag_max_us: 9
            }
        );
    }
}
