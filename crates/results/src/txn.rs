//! One transaction as the engine reports it ([`TxnSample`]) and the sums over a set of
//! transactions ([`TxnStats`], pgbench's `StatsData`): what a thread's statistics and
//! its progress counters are made of.

use serde::{Deserialize, Serialize};

use crate::histogram::{LatencyHistogram, SIGFIG_FINE};
use crate::simple::SimpleStats;

/// Why a transaction failed (only these are counted as failures, spec §8.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// SQLSTATE 40001.
    Serialization,
    /// SQLSTATE 40P01.
    Deadlock,
    /// Any other SQL error. pgbench 18 aborts the client instead of counting
    /// these, so the pgbench 18 engine never records it; kept for a later
    /// `--continue-on-error` (pgbench 19) and counted in `failures` when used.
    OtherSql,
    /// `--reconnect`: the connection was lost with the transaction under way (closed,
    /// a shutting-down server's FATAL, SQLSTATE class 08 or 57P01–57P03).
    ConnectionLost,
    /// `--reconnect`: the server refused a write as read-only (SQLSTATE 25006, a
    /// standby or a demoted primary).
    ReadOnly,
    /// `--reconnect`: the statement was cancelled (SQLSTATE 57014).
    Cancelled,
}

/// How one transaction (one script execution, or one skipped schedule slot) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TxnOutcome {
    /// Committed / completed normally.
    Success,
    /// Skipped because it was already later than `-L` at its scheduled start.
    Skipped,
    /// Failed after its last try.
    Failed(FailureKind),
}

/// One finished transaction, as the engine reports it to [`ThreadStats::record_txn`](crate::stats::ThreadStats::record_txn).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TxnSample {
    /// Script index (0-based).
    pub script: usize,
    /// How it ended.
    pub outcome: TxnOutcome,
    /// Number of tries (1 = no retry). Ignored for skipped transactions.
    pub tries: u32,
    /// Latency in µs from the scheduled start (pgbench: `now - txn_scheduled`).
    /// Only meaningful for successes when [`StatsConfig::detailed`](crate::stats::StatsConfig::detailed); pass 0 otherwise.
    pub latency_us: f64,
    /// Schedule lag in µs (`txn_begin - txn_scheduled`); used only under `-R`.
    pub lag_us: f64,
}

/// Counters and sums of a set of transactions (pgbench's `StatsData`) plus histograms.
#[derive(Debug, Clone)]
pub struct TxnStats {
    /// Successful transactions.
    pub cnt: u64,
    /// Skipped (late under `-R -L`).
    pub skipped: u64,
    /// Sum of `tries - 1` over successful and failed transactions.
    pub retries: u64,
    /// Transactions with more than one try (successful or not).
    pub retried: u64,
    /// Failed with a serialization error after the last try.
    pub serialization_failures: u64,
    /// Failed with a deadlock after the last try.
    pub deadlock_failures: u64,
    /// Failed with another SQL error (never in pgbench 18 mode).
    pub other_sql_failures: u64,
    /// Failed by a lost connection (`--reconnect`).
    pub connection_lost_failures: u64,
    /// Failed as read-only (`--reconnect`).
    pub read_only_failures: u64,
    /// Failed by a cancel (`--reconnect`).
    pub cancelled_failures: u64,
    /// Successes later than `-L`.
    pub late: u64,
    /// Latency of successful transactions (µs; zeros when not "detailed").
    pub latency: SimpleStats,
    /// Schedule lag of successful transactions (µs; only under `-R`).
    pub lag: SimpleStats,
    /// HDR histogram of successful transactions' latency, if kept.
    pub latency_hist: Option<LatencyHistogram>,
    /// HDR histogram of schedule lag, if kept and throttled.
    pub lag_hist: Option<LatencyHistogram>,
}

impl TxnStats {
    /// Empty stats; `histograms` chooses whether HDR histograms are kept.
    pub fn new(histograms: bool, throttled: bool) -> Self {
        TxnStats {
            cnt: 0,
            skipped: 0,
            retries: 0,
            retried: 0,
            serialization_failures: 0,
            deadlock_failures: 0,
            other_sql_failures: 0,
            connection_lost_failures: 0,
            read_only_failures: 0,
            cancelled_failures: 0,
            late: 0,
            latency: SimpleStats::default(),
            lag: SimpleStats::default(),
            latency_hist: histograms.then(|| LatencyHistogram::new(SIGFIG_FINE)),
            lag_hist: (histograms && throttled).then(|| LatencyHistogram::new(SIGFIG_FINE)),
        }
    }

    /// Failed transactions of every kind.
    pub fn failures(&self) -> u64 {
        self.serialization_failures
            + self.deadlock_failures
            + self.other_sql_failures
            + self.connection_lost_failures
            + self.read_only_failures
            + self.cancelled_failures
    }

    /// `cnt + skipped + failures`: every transaction that ended one way or another.
    pub fn total_cnt(&self) -> u64 {
        self.cnt + self.skipped + self.failures()
    }

    /// Accumulate one transaction (pgbench's `accumStats`, plus histograms).
    /// `detailed` false: the latency counts as 0 and histograms are left alone,
    /// as pgbench does when it does not measure latencies.
    #[inline]
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.pgsurge")]
    pub fn accum(&mut self, s: &TxnSample, detailed: bool, throttled: bool, late: bool) {
        match s.outcome {
            TxnOutcome::Skipped => {
                self.skipped += 1;
                return;
            }
            TxnOutcome::Success => {
                self.cnt += 1;
                if !detailed {
                    self.latency.add(0.0);
                    return self.count_tries(s.tries);
                }
                self.latency.add(s.latency_us);
                if let Some(h) = &mut self.latency_hist {
                    h.record(s.latency_us);
                }
                if throttled {
                    self.lag.add(s.lag_us);
                    if let Some(h) = &mut self.lag_hist {
                        h.record(s.lag_us);
                    }
                }
                if late {
                    self.late += 1;
                }
            }
            TxnOutcome::Failed(FailureKind::Serialization) => self.serialization_failures += 1,
            TxnOutcome::Failed(FailureKind::Deadlock) => self.deadlock_failures += 1,
            TxnOutcome::Failed(FailureKind::OtherSql) => self.other_sql_failures += 1,
            TxnOutcome::Failed(FailureKind::ConnectionLost) => self.connection_lost_failures += 1,
            TxnOutcome::Failed(FailureKind::ReadOnly) => self.read_only_failures += 1,
            TxnOutcome::Failed(FailureKind::Cancelled) => self.cancelled_failures += 1,
        }
        self.count_tries(s.tries);
    }

    #[inline]
    fn count_tries(&mut self, tries: u32) {
        if tries > 1 {
            self.retries += u64::from(tries - 1);
            self.retried += 1;
        }
    }

    /// Add another set of transactions into this one.
    pub fn merge(&mut self, o: &TxnStats) {
        self.cnt += o.cnt;
        self.skipped += o.skipped;
        self.retries += o.retries;
        self.retried += o.retried;
        self.serialization_failures += o.serialization_failures;
        self.deadlock_failures += o.deadlock_failures;
        self.other_sql_failures += o.other_sql_failures;
        self.connection_lost_failures += o.connection_lost_failures;
        self.read_only_failures += o.read_only_failures;
        self.cancelled_failures += o.cancelled_failures;
        self.late += o.late;
        self.latency.merge(&o.latency);
        self.lag.merge(&o.lag);
        merge_hist(&mut self.latency_hist, &o.latency_hist);
        merge_hist(&mut self.lag_hist, &o.lag_hist);
    }
}

/// Adds the histogram `src` into `dst` (a copy of it when `dst` has none).
pub(crate) fn merge_hist(dst: &mut Option<LatencyHistogram>, src: &Option<LatencyHistogram>) {
    match (dst.as_mut(), src) {
        (Some(d), Some(s)) => d.merge(s),
        (None, Some(s)) => *dst = Some(s.clone()),
        _ => {}
    }
}
