//! Cross-thread progress counters: each driver thread publishes its running totals into
//! its own [`SharedCounters`] (relaxed atomic stores, single writer), and the
//! progress thread (pgbench: thread 0) sums them with a [`ProgressAggregator`]
//! into one [`IntervalSample`] per report — the numbers of a `-P` line and one
//! point of the JSON per-interval series. Like pgbench, the group of counters is
//! read without a lock, so a report may be off by a transaction in flight.
//!
//! Optional interval histograms (for percentiles in progress lines, the JSON
//! series and `--hdr-log`), one per script, sit behind an uncontended per-thread
//! mutex; the all-scripts histogram of an interval is their sum, built by the
//! aggregator (a transaction is recorded once).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};

use serde::{Deserialize, Serialize};

use crate::histogram::{LatencyHistogram, SIGFIG_FINE};
use crate::nullable::nullable_f64;
pub use crate::percentile::Percentile;
use crate::txn::{TxnOutcome, TxnSample, TxnStats};

/// Running totals of one thread, readable from another thread.
#[derive(Debug)]
pub struct SharedCounters {
    cnt: AtomicU64,
    skipped: AtomicU64,
    retries: AtomicU64,
    retried: AtomicU64,
    failures: AtomicU64,
    latency_sum: AtomicU64,
    latency_sum2: AtomicU64,
    lag_sum: AtomicU64,
    /// Interval histograms, one per script.
    hist: Option<Mutex<Vec<LatencyHistogram>>>,
    scripts: usize,
}

/// A plain copy of counters (one thread's, or summed over threads).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProgressSnapshot {
    /// Successful transactions.
    pub cnt: u64,
    /// Skipped transactions.
    pub skipped: u64,
    /// Total retries.
    pub retries: u64,
    /// Retried transactions.
    pub retried: u64,
    /// Failed transactions (all kinds).
    pub failures: u64,
    /// Sum of latencies (µs).
    pub latency_sum: f64,
    /// Sum of squared latencies (µs²).
    pub latency_sum2: f64,
    /// Sum of lags (µs).
    pub lag_sum: f64,
}

impl ProgressSnapshot {
    /// Add another snapshot's counters into this one.
    pub fn add(&mut self, o: &ProgressSnapshot) {
        self.cnt += o.cnt;
        self.skipped += o.skipped;
        self.retries += o.retries;
        self.retried += o.retried;
        self.failures += o.failures;
        self.latency_sum += o.latency_sum;
        self.latency_sum2 += o.latency_sum2;
        self.lag_sum += o.lag_sum;
    }
}

fn lock(m: &Mutex<Vec<LatencyHistogram>>) -> MutexGuard<'_, Vec<LatencyHistogram>> {
    // A panic elsewhere must not stop progress reporting.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl SharedCounters {
    /// Zeroed counters; `interval_histograms` also keeps, for each of the
    /// `scripts` scripts (at least one), a histogram of the latencies recorded
    /// since the last [`ProgressAggregator::tick`].
    pub fn new(interval_histograms: bool, scripts: usize) -> Self {
        let scripts = scripts.max(1);
        SharedCounters {
            cnt: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            retried: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            latency_sum: AtomicU64::new(0),
            latency_sum2: AtomicU64::new(0),
            lag_sum: AtomicU64::new(0),
            hist: interval_histograms.then(|| {
                Mutex::new(
                    (0..scripts)
                        .map(|_| LatencyHistogram::new(SIGFIG_FINE))
                        .collect(),
                )
            }),
            scripts,
        }
    }

    /// Number of scripts (interval histograms) these counters were made for.
    pub fn scripts(&self) -> usize {
        self.scripts
    }

    /// Publish the owner's running totals after `s` was accumulated into `total`.
    /// Called by [`crate::ThreadStats::record_txn`]; never allocates.
    #[inline]
    pub fn publish(&self, s: &TxnSample, total: &TxnStats, throttled: bool) {
        // With interval histograms, counters and histogram change under one lock, so a
        // sample never sees a transaction in one and not in the other.
        let mut guard = self.hist.as_ref().map(lock);
        self.cnt.store(total.cnt, Relaxed);
        self.skipped.store(total.skipped, Relaxed);
        self.retries.store(total.retries, Relaxed);
        self.retried.store(total.retried, Relaxed);
        self.failures.store(total.failures(), Relaxed);
        self.latency_sum.store(total.latency.sum.to_bits(), Relaxed);
        self.latency_sum2
            .store(total.latency.sum2.to_bits(), Relaxed);
        if throttled {
            self.lag_sum.store(total.lag.sum.to_bits(), Relaxed);
        }
        if let (Some(g), TxnOutcome::Success) = (guard.as_mut(), s.outcome) {
            let i = s.script.min(g.len() - 1);
            g[i].record(s.latency_us);
        }
    }

    /// Read the counters (not atomically as a group, like pgbench).
    pub fn snapshot(&self) -> ProgressSnapshot {
        ProgressSnapshot {
            cnt: self.cnt.load(Relaxed),
            skipped: self.skipped.load(Relaxed),
            retries: self.retries.load(Relaxed),
            retried: self.retried.load(Relaxed),
            failures: self.failures.load(Relaxed),
            latency_sum: f64::from_bits(self.latency_sum.load(Relaxed)),
            latency_sum2: f64::from_bits(self.latency_sum2.load(Relaxed)),
            lag_sum: f64::from_bits(self.lag_sum.load(Relaxed)),
        }
    }

    /// [`snapshot`](Self::snapshot) and [`drain_histograms`](Self::drain_histograms)
    /// at one instant: the counters and the drained histograms hold the same
    /// transactions.
    pub fn snapshot_and_drain(&self, into: &mut [LatencyHistogram]) -> ProgressSnapshot {
        let Some(h) = &self.hist else {
            return self.snapshot();
        };
        let mut g = lock(h);
        let snap = self.snapshot();
        for (dst, src) in into.iter_mut().zip(g.iter_mut()) {
            dst.merge(src);
            src.reset();
        }
        snap
    }

    /// Move the interval histograms' values into `into` (script by script; extra
    /// scripts on either side are ignored) and reset them.
    pub fn drain_histograms(&self, into: &mut [LatencyHistogram]) {
        if let Some(h) = &self.hist {
            let mut g = lock(h);
            for (dst, src) in into.iter_mut().zip(g.iter_mut()) {
                dst.merge(src);
                src.reset();
            }
        }
    }
}

/// One reporting interval summed over all threads: a `-P` line's numbers and
/// one point of the JSON series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct IntervalSample {
    /// End of the interval, seconds since the progress thread started (`-P` prints `%.1f`).
    #[serde(deserialize_with = "nullable_f64")]
    pub elapsed_s: f64,
    /// End of the interval, seconds since the Unix epoch (`--progress-timestamp` prints `%.3f`).
    #[serde(deserialize_with = "nullable_f64")]
    pub epoch_s: f64,
    /// Length of the interval in seconds.
    #[serde(deserialize_with = "nullable_f64")]
    pub duration_s: f64,
    /// Successful transactions in the interval.
    pub transactions: u64,
    /// Failed transactions in the interval.
    pub failures: u64,
    /// Skipped transactions in the interval.
    pub skipped: u64,
    /// Retried transactions in the interval.
    pub retried: u64,
    /// Retries in the interval.
    pub retries: u64,
    /// Successful transactions per second.
    #[serde(deserialize_with = "nullable_f64")]
    pub tps: f64,
    /// Mean latency (ms); 0 when no transaction completed.
    #[serde(deserialize_with = "nullable_f64")]
    pub latency_ms: f64,
    /// Latency standard deviation (ms), pgbench's formula; 0 when none completed.
    #[serde(deserialize_with = "nullable_f64")]
    pub stddev_ms: f64,
    /// Mean schedule lag (ms) under `-R`; 0 otherwise.
    #[serde(deserialize_with = "nullable_f64")]
    pub lag_ms: f64,
    /// Latency percentiles of the interval (empty without interval histograms).
    pub percentiles: Vec<Percentile>,
    /// The interval's latency histogram (µs), encoded as
    /// [`LatencySummary::histogram`](crate::result::LatencySummary::histogram), so
    /// that `pgsurge merge` can merge generators' seconds exactly. Written by
    /// `--json`; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<String>,
}

/// Sums [`SharedCounters`] of all threads into [`IntervalSample`]s.
#[derive(Debug)]
pub struct ProgressAggregator {
    threads: Vec<std::sync::Arc<SharedCounters>>,
    start_us: i64,
    epoch_shift_us: i64,
    last: ProgressSnapshot,
    last_us: i64,
    hist: LatencyHistogram,
    script_hists: Vec<LatencyHistogram>,
    percentiles: Vec<f64>,
}

impl ProgressAggregator {
    /// `start_us`: the progress thread's start (monotonic µs, pgbench's
    /// `thread_start`); `epoch_shift_us` turns monotonic µs into Unix-epoch µs;
    /// `percentiles`: ranks to compute per interval (needs interval histograms).
    pub fn new(
        threads: Vec<std::sync::Arc<SharedCounters>>,
        start_us: i64,
        epoch_shift_us: i64,
        percentiles: Vec<f64>,
    ) -> Self {
        let scripts = threads.first().map_or(1, |t| t.scripts());
        ProgressAggregator {
            threads,
            start_us,
            epoch_shift_us,
            last: ProgressSnapshot::default(),
            last_us: start_us,
            hist: LatencyHistogram::new(SIGFIG_FINE),
            script_hists: (0..scripts)
                .map(|_| LatencyHistogram::new(SIGFIG_FINE))
                .collect(),
            percentiles,
        }
    }

    /// Close the interval ending at `now_us` (monotonic) and start the next one.
    pub fn tick(&mut self, now_us: i64) -> IntervalSample {
        let mut cur = ProgressSnapshot::default();
        self.hist.reset();
        for h in &mut self.script_hists {
            h.reset();
        }
        for t in &self.threads {
            cur.add(&t.snapshot_and_drain(&mut self.script_hists));
        }
        for h in &self.script_hists {
            self.hist.merge(h);
        }
        let sample = interval_from_snapshots(
            &self.last,
            &cur,
            now_us - self.last_us,
            (now_us - self.start_us) as f64 / 1e6,
            (now_us + self.epoch_shift_us) as f64 / 1e6,
            &self.hist,
            &self.percentiles,
        );
        self.last = cur;
        self.last_us = now_us;
        sample
    }

    /// The histogram of the interval closed by the last [`tick`](Self::tick)
    /// (for `--hdr-log`).
    pub fn interval_histogram(&self) -> &LatencyHistogram {
        &self.hist
    }

    /// The same interval, one histogram per script (they sum to
    /// [`interval_histogram`](Self::interval_histogram)).
    pub fn script_histograms(&self) -> &[LatencyHistogram] {
        &self.script_hists
    }
}

/// pgbench's progress arithmetic (`printProgressReport`) over two snapshots.
pub fn interval_from_snapshots(
    last: &ProgressSnapshot,
    cur: &ProgressSnapshot,
    run_us: i64,
    elapsed_s: f64,
    epoch_s: f64,
    hist: &LatencyHistogram,
    percentiles: &[f64],
) -> IntervalSample {
    let cnt = cur.cnt.saturating_sub(last.cnt);
    let tps = 1e6 * cnt as f64 / run_us as f64;
    let (latency, stddev, lag) = if cnt > 0 {
        let n = cnt as f64;
        let latency = 0.001 * (cur.latency_sum - last.latency_sum) / n;
        let sqlat = (cur.latency_sum2 - last.latency_sum2) / n;
        let stddev = 0.001 * (sqlat - 1e6 * latency * latency).sqrt();
        (latency, stddev, 0.001 * (cur.lag_sum - last.lag_sum) / n)
    } else {
        (0.0, 0.0, 0.0)
    };
    let percentiles = if hist.is_empty() || percentiles.is_empty() {
        Vec::new()
    } else {
        crate::percentile::latency_percentiles(&hist.to_hdr(), percentiles)
    };
    IntervalSample {
        elapsed_s,
        epoch_s,
        duration_s: run_us as f64 / 1e6,
        transactions: cnt,
        failures: cur.failures.saturating_sub(last.failures),
        skipped: cur.skipped.saturating_sub(last.skipped),
        retried: cur.retried.saturating_sub(last.retried),
        retries: cur.retries.saturating_sub(last.retries),
        tps,
        latency_ms: latency,
        stddev_ms: stddev,
        lag_ms: lag,
        percentiles,
        histogram: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{FailureKind, StatsConfig, ThreadStats};
    use std::sync::Arc;

    #[test]
    fn aggregator_reports_deltas_over_threads() {
        let cfg = StatsConfig {
            detailed: true,
            throttled: true,
            script_commands: vec![1],
            ..Default::default()
        };
        let shared: Vec<_> = (0..2)
            .map(|_| Arc::new(SharedCounters::new(true, 1)))
            .collect();
        let mut t0 = ThreadStats::with_shared(&cfg, shared[0].clone());
        let mut t1 = ThreadStats::with_shared(&cfg, shared[1].clone());
        let mut agg = ProgressAggregator::new(shared.clone(), 1_000_000, 5_000_000, vec![50.0]);
        let s = |lat: f64| TxnSample {
            script: 0,
            outcome: TxnOutcome::Success,
            tries: 1,
            latency_us: lat,
            lag_us: 100.0,
        };
        t0.record_txn(&s(1000.0));
        t1.record_txn(&s(3000.0));
        t1.record_txn(&TxnSample {
            outcome: TxnOutcome::Failed(FailureKind::Deadlock),
            tries: 2,
            ..s(0.0)
        });
        let a = agg.tick(2_000_000);
        assert_eq!(
            (a.transactions, a.failures, a.retried, a.retries),
            (2, 1, 1, 1)
        );
        assert_eq!(a.tps, 2.0);
        assert_eq!(a.latency_ms, 2.0);
        assert_eq!(a.stddev_ms, 1.0);
        assert_eq!(a.lag_ms, 0.1);
        assert_eq!((a.elapsed_s, a.epoch_s), (1.0, 7.0));
        assert_eq!(a.percentiles.len(), 1);
        assert!((a.percentiles[0].latency_ms - 1.0).abs() < 0.002);
        t0.record_txn(&s(5000.0));
        let b = agg.tick(2_500_000);
        assert_eq!(
            (b.transactions, b.failures, b.tps, b.latency_ms),
            (1, 0, 2.0, 5.0)
        );
        let c = agg.tick(3_500_000);
        assert_eq!((c.transactions, c.latency_ms, c.stddev_ms), (0, 0.0, 0.0));
        assert!(c.percentiles.is_empty());
    }

    #[test]
    fn interval_histograms_per_script_sum_to_the_overall_one() {
        let cfg = StatsConfig {
            detailed: true,
            script_commands: vec![1, 1],
            ..Default::default()
        };
        let shared: Vec<_> = (0..2)
            .map(|_| Arc::new(SharedCounters::new(true, 2)))
            .collect();
        let mut threads: Vec<_> = shared
            .iter()
            .map(|sh| ThreadStats::with_shared(&cfg, sh.clone()))
            .collect();
        let mut agg = ProgressAggregator::new(shared.clone(), 0, 0, vec![]);
        for i in 0..300u32 {
            threads[(i % 2) as usize].record_txn(&TxnSample {
                script: (i % 3 == 0) as usize,
                outcome: TxnOutcome::Success,
                tries: 1,
                latency_us: f64::from(if i % 3 == 0 { 5000 + i } else { 100 + i }),
                lag_us: 0.0,
            });
        }
        agg.tick(1_000_000);
        let parts = agg.script_histograms();
        assert_eq!(
            parts.iter().map(|h| h.len()).collect::<Vec<_>>(),
            vec![200, 100]
        );
        let mut sum = LatencyHistogram::new(SIGFIG_FINE);
        parts.iter().for_each(|h| sum.merge(h));
        assert_eq!(&sum, agg.interval_histogram());
        // The next interval starts empty.
        agg.tick(2_000_000);
        assert!(agg.script_histograms().iter().all(|h| h.is_empty()));
        assert!(agg.interval_histogram().is_empty());
    }
}
