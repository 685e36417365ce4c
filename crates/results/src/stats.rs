//! Per-thread run statistics: what pgbench accumulates at the end of every
//! transaction (spec §3.5, §8) plus HDR histograms, kept per script and per
//! command. A [`ThreadStats`] is owned by one driver thread and updated without
//! locks; recording never allocates. Threads' stats are merged once at the end.
//!
//! Each transaction's latency goes into one histogram only, its script's: the
//! run-wide histograms are the sum of the scripts' and are built at report time
//! ([`ThreadStats::overall`]), which halves the per-transaction histogram work.
//!
//! This module does no I/O and reads no clock: the engine passes measured values.

use std::sync::Arc;

use crate::histogram::{LatencyHistogram, SIGFIG_COARSE};
use crate::options::RunOptions;
use crate::progress_counters::SharedCounters;
use crate::simple::SimpleStats;
use crate::txn::merge_hist;
pub use crate::txn::{FailureKind, TxnOutcome, TxnSample, TxnStats};
use crate::ResultsError;

/// pgbench's rule for measuring per-transaction latency ("detailed" stats):
/// `-P`, `-R`, `-L`, `-l`, or more than one script. pgsurge extensions that need
/// latencies (`--percentiles`, `--json`, `--hdr-log`) should be OR-ed in; that
/// changes no pgbench output line (the report's latency lines depend on
/// `-R`/`-P`/`-L` only).
pub fn pgbench_detailed(
    progress: bool,
    rate: bool,
    latency_limit: bool,
    log: bool,
    scripts: usize,
) -> bool {
    progress || rate || latency_limit || log || scripts > 1
}

/// What to collect; fixed for the whole run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StatsConfig {
    /// pgbench's "detailed" rule (`-P || -R || -L || -l || ≥2 scripts`), or any
    /// pgsurge extension needing latencies (`--percentiles`, `--json`, `--hdr-log`).
    /// When false, latency sums accumulate 0 like pgbench does.
    pub detailed: bool,
    /// `-R` given: lag is accumulated.
    pub throttled: bool,
    /// `-L` in µs: successes with a strictly larger latency are counted as late.
    pub latency_limit_us: Option<f64>,
    /// Keep HDR histograms (overall, per script, and per command when
    /// `per_command`). Cheap; the engine may simply always set it.
    pub histograms: bool,
    /// `-r`: per-command latencies are recorded.
    pub per_command: bool,
    /// Number of commands of each script, in script order.
    pub script_commands: Vec<usize>,
}

impl StatsConfig {
    /// What a run with `options` collects: the flags come from the run's recorded
    /// options (the one place the recorder, the logs and the progress lines read them);
    /// `histograms` and the script shapes are the engine's choice.
    pub fn for_run(options: &RunOptions, histograms: bool, script_commands: Vec<usize>) -> Self {
        StatsConfig {
            detailed: true,
            throttled: options.rate_tps.is_some(),
            latency_limit_us: options.latency_limit_us.map(|us| us as f64),
            histograms,
            per_command: options.report_per_command,
            script_commands,
        }
    }
}

/// Per-command statistics (`-r`).
#[derive(Debug, Clone)]
pub struct CommandStats {
    /// Latency of completed executions (µs).
    pub latency: SimpleStats,
    /// HDR histogram of the same, if kept (2 significant digits).
    pub hist: Option<LatencyHistogram>,
    /// Transactions that failed (after their last try) at this command.
    pub failures: u64,
    /// Retries triggered by an error at this command.
    pub retries: u64,
}

impl CommandStats {
    /// Empty command stats.
    pub fn new(histograms: bool) -> Self {
        CommandStats {
            latency: SimpleStats::default(),
            hist: histograms.then(|| LatencyHistogram::new(SIGFIG_COARSE)),
            failures: 0,
            retries: 0,
        }
    }

    /// Add another command's stats into this one.
    pub fn merge(&mut self, o: &CommandStats) {
        self.latency.merge(&o.latency);
        merge_hist(&mut self.hist, &o.hist);
        self.failures += o.failures;
        self.retries += o.retries;
    }
}

/// Statistics of one script: its transactions and its commands.
#[derive(Debug, Clone)]
pub struct ScriptStats {
    /// Transactions that ran this script; empty when it is the run's only script, whose
    /// transactions are the thread's total (read them with [`ThreadStats::script_txn`]).
    pub(crate) txn: TxnStats,
    /// One entry per command of the script (empty if the script has none).
    pub commands: Vec<CommandStats>,
}

/// Everything one driver thread measured. Owned and updated by that thread only.
#[derive(Debug, Clone)]
pub struct ThreadStats {
    detailed: bool,
    throttled: bool,
    latency_limit_us: Option<f64>,
    per_command: bool,
    /// All transactions of the thread.
    pub total: TxnStats,
    /// Per script, in script order.
    pub scripts: Vec<ScriptStats>,
    /// Time spent connecting (µs): `-C` reconnections, or 0 (pgbench's `conn_duration`).
    pub conn_duration_us: u64,
    shared: Option<Arc<SharedCounters>>,
}

impl ThreadStats {
    /// Empty stats shaped by `config` (all allocation happens here).
    pub fn new(config: &StatsConfig) -> Self {
        let h = config.histograms;
        ThreadStats {
            detailed: config.detailed,
            throttled: config.throttled,
            latency_limit_us: config.latency_limit_us,
            per_command: config.per_command,
            // With several scripts, the overall histograms are folded from theirs at the
            // end; a single script's transactions are counted once, in the total.
            total: TxnStats::new(h && config.script_commands.len() <= 1, config.throttled),
            scripts: config
                .script_commands
                .iter()
                .map(|&n| ScriptStats {
                    txn: TxnStats::new(h && config.script_commands.len() > 1, config.throttled),
                    commands: (0..n).map(|_| CommandStats::new(h)).collect(),
                })
                .collect(),
            conn_duration_us: 0,
            shared: None,
        }
    }

    /// Same, publishing progress counters to `shared` after every transaction
    /// (for `-P` / interval series read by another thread).
    pub fn with_shared(config: &StatsConfig, shared: Arc<SharedCounters>) -> Self {
        let mut s = ThreadStats::new(config);
        s.shared = Some(shared);
        s
    }

    /// The shared counters this thread publishes to, if any.
    pub fn shared(&self) -> Option<&Arc<SharedCounters>> {
        self.shared.as_ref()
    }

    /// The transactions of script `i`.
    pub fn script_txn(&self, i: usize) -> Option<&TxnStats> {
        match self.scripts.len() {
            1 => (i == 0).then_some(&self.total),
            _ => self.scripts.get(i).map(|s| &s.txn),
        }
    }

    /// The run-wide statistics with their histograms: [`ThreadStats::total`] plus,
    /// when the histograms were kept per script, their sum (built here, once).
    pub fn overall(&self) -> std::borrow::Cow<'_, TxnStats> {
        let t = &self.total;
        if t.latency_hist.is_some() || self.scripts.iter().all(|s| s.txn.latency_hist.is_none()) {
            return std::borrow::Cow::Borrowed(t);
        }
        let mut o = t.clone();
        for sc in &self.scripts {
            merge_hist(&mut o.latency_hist, &sc.txn.latency_hist);
            merge_hist(&mut o.lag_hist, &sc.txn.lag_hist);
        }
        std::borrow::Cow::Owned(o)
    }

    /// Record one finished (or skipped) transaction. Never allocates.
    #[inline]
    pub fn record_txn(&mut self, s: &TxnSample) {
        let late = self.detailed
            && matches!(s.outcome, TxnOutcome::Success)
            && self.latency_limit_us.is_some_and(|l| s.latency_us > l);
        self.total.accum(s, self.detailed, self.throttled, late);
        if self.scripts.len() > 1 {
            if let Some(sc) = self.scripts.get_mut(s.script) {
                sc.txn.accum(s, self.detailed, self.throttled, late);
            }
        }
        if let Some(sh) = &self.shared {
            sh.publish(s, &self.total, self.throttled);
        }
    }

    /// Record the latency (µs) of one completed command (`-r`).
    #[inline]
    pub fn record_command(&mut self, script: usize, command: usize, latency_us: f64) {
        if !self.per_command {
            return;
        }
        if let Some(c) = self.command_mut(script, command) {
            c.latency.add(latency_us);
            if let Some(h) = &mut c.hist {
                h.record(latency_us);
            }
        }
    }

    /// Charge a retry to the command whose error triggered it.
    #[inline]
    pub fn record_command_retry(&mut self, script: usize, command: usize) {
        if let Some(c) = self.command_mut(script, command) {
            c.retries += 1;
        }
    }

    /// Charge a final failure to the command where the last error happened.
    #[inline]
    pub fn record_command_failure(&mut self, script: usize, command: usize) {
        if let Some(c) = self.command_mut(script, command) {
            c.failures += 1;
        }
    }

    /// Add connection time (µs) — `-C` connects and disconnects.
    #[inline]
    pub fn record_connection(&mut self, elapsed_us: u64) {
        self.conn_duration_us += elapsed_us;
    }

    fn command_mut(&mut self, script: usize, command: usize) -> Option<&mut CommandStats> {
        self.scripts.get_mut(script)?.commands.get_mut(command)
    }

    /// Merge another thread's stats into this one (end of run).
    pub fn merge(&mut self, other: &ThreadStats) -> Result<(), ResultsError> {
        let same_shape = self.scripts.len() == other.scripts.len()
            && self
                .scripts
                .iter()
                .zip(&other.scripts)
                .all(|(a, b)| a.commands.len() == b.commands.len());
        if !same_shape {
            return Err(ResultsError::ShapeMismatch);
        }
        self.total.merge(&other.total);
        for (a, b) in self.scripts.iter_mut().zip(&other.scripts) {
            a.txn.merge(&b.txn);
            for (ca, cb) in a.commands.iter_mut().zip(&b.commands) {
                ca.merge(cb);
            }
        }
        self.conn_duration_us += other.conn_duration_us;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> StatsConfig {
        StatsConfig {
            detailed: true,
            throttled: true,
            latency_limit_us: Some(1000.0),
            histograms: true,
            per_command: true,
            script_commands: vec![3, 1],
        }
    }

    fn ok(script: usize, lat: f64, lag: f64, tries: u32) -> TxnSample {
        TxnSample {
            script,
            outcome: TxnOutcome::Success,
            tries,
            latency_us: lat,
            lag_us: lag,
        }
    }

    #[test]
    fn accumulates_like_pgbench() {
        let mut t = ThreadStats::new(&cfg());
        t.record_txn(&ok(0, 500.0, 10.0, 1));
        t.record_txn(&ok(1, 1500.0, 20.0, 3));
        t.record_txn(&TxnSample {
            outcome: TxnOutcome::Failed(FailureKind::Serialization),
            latency_us: 0.0,
            ..ok(0, 0.0, 0.0, 2)
        });
        t.record_txn(&TxnSample {
            outcome: TxnOutcome::Skipped,
            ..ok(1, 0.0, 0.0, 1)
        });
        t.record_txn(&TxnSample {
            outcome: TxnOutcome::Failed(FailureKind::Deadlock),
            ..ok(1, 0.0, 0.0, 1)
        });
        let s = &t.total;
        assert_eq!(
            (s.cnt, s.skipped, s.failures(), s.total_cnt()),
            (2, 1, 2, 5)
        );
        assert_eq!((s.serialization_failures, s.deadlock_failures), (1, 1));
        assert_eq!((s.retried, s.retries), (2, 3));
        assert_eq!(s.late, 1);
        assert_eq!(
            (s.latency.count, s.latency.sum, s.lag.sum),
            (2, 2000.0, 30.0)
        );
        // Recorded once, in the script's histogram; the overall one is their sum.
        assert!(s.latency_hist.is_none());
        assert_eq!(t.overall().latency_hist.as_ref().map(|h| h.len()), Some(2));
        assert_eq!(t.overall().lag_hist.as_ref().map(|h| h.len()), Some(2));
        assert_eq!(
            t.scripts[1].txn.latency_hist.as_ref().map(|h| h.len()),
            Some(1)
        );
        assert_eq!(t.scripts[0].txn.cnt, 1);
        assert_eq!(t.scripts[1].txn.total_cnt(), 3);
    }

    /// One script: its transactions are counted once, and read back as the script's
    /// as well as the total, histograms included; several scripts: each its own.
    #[test]
    fn a_single_script_is_counted_once_and_reads_as_the_total() {
        let mut c = cfg();
        c.script_commands = vec![2];
        let mut t = ThreadStats::new(&c);
        t.record_txn(&ok(0, 500.0, 10.0, 1));
        t.record_txn(&ok(0, 700.0, 10.0, 2));
        assert_eq!(t.scripts[0].txn.total_cnt(), 0, "not counted twice");
        let one = t.script_txn(0).expect("script 0");
        assert!(std::ptr::eq(one, &t.total));
        assert_eq!((one.cnt, one.retried, one.latency.sum), (2, 1, 1200.0));
        assert_eq!(one.latency_hist.as_ref().map(|h| h.len()), Some(2));
        assert_eq!(t.overall().latency_hist.as_ref().map(|h| h.len()), Some(2));
        assert!(t.script_txn(1).is_none());

        let mut two = ThreadStats::new(&cfg());
        two.record_txn(&ok(1, 500.0, 10.0, 1));
        assert_eq!(two.script_txn(0).map(|s| s.cnt), Some(0));
        assert_eq!(two.script_txn(1).map(|s| s.cnt), Some(1));
        assert_eq!(two.total.cnt, 1);
    }

    #[test]
    fn not_detailed_accumulates_zero_latency() {
        let mut c = cfg();
        c.detailed = false;
        let mut t = ThreadStats::new(&c);
        t.record_txn(&ok(0, 5000.0, 7.0, 2));
        let s = &t.total;
        assert_eq!(
            (s.cnt, s.latency.count, s.latency.sum, s.late),
            (1, 1, 0.0, 0)
        );
        assert_eq!((s.retried, s.retries), (1, 1));
        assert_eq!(t.overall().latency_hist.as_ref().map(|h| h.len()), Some(0));
        assert!(pgbench_detailed(false, false, false, false, 2));
        assert!(!pgbench_detailed(false, false, false, false, 1));
    }

    #[test]
    fn lag_only_when_throttled() {
        let mut c = cfg();
        c.throttled = false;
        let mut t = ThreadStats::new(&c);
        t.record_txn(&ok(0, 5.0, 7.0, 1));
        assert_eq!(t.total.lag.count, 0);
        assert!(t.total.lag_hist.is_none());
    }

    #[test]
    fn merge_equals_single_thread() {
        let samples: Vec<TxnSample> = (0..200)
            .map(|i| {
                let outcome = match i % 7 {
                    0 => TxnOutcome::Skipped,
                    1 => TxnOutcome::Failed(FailureKind::Serialization),
                    _ => TxnOutcome::Success,
                };
                TxnSample {
                    script: i % 2,
                    outcome,
                    tries: (i % 3 + 1) as u32,
                    latency_us: f64::from(i as u32 * 13 % 2000),
                    lag_us: f64::from(i as u32 % 50),
                }
            })
            .collect();
        let mut one = ThreadStats::new(&cfg());
        let mut a = ThreadStats::new(&cfg());
        let mut b = ThreadStats::new(&cfg());
        for (i, s) in samples.iter().enumerate() {
            one.record_txn(s);
            one.record_command(s.script, 0, 3.0 * i as f64);
            let t = if i % 3 == 0 { &mut a } else { &mut b };
            t.record_txn(s);
            t.record_command(s.script, 0, 3.0 * i as f64);
        }
        a.record_command_failure(0, 2);
        b.record_command_retry(1, 0);
        a.record_connection(5);
        b.record_connection(7);
        a.merge(&b).expect("same shape");
        let (ao, oo) = (a.overall(), one.overall());
        for (x, y) in [(&*ao, &*oo), (&a.scripts[1].txn, &one.scripts[1].txn)] {
            assert_eq!(
                (x.cnt, x.skipped, x.retries, x.retried, x.failures(), x.late),
                (y.cnt, y.skipped, y.retries, y.retried, y.failures(), y.late)
            );
            assert_eq!(x.latency.count, y.latency.count);
            assert_eq!(x.latency.min, y.latency.min);
            assert_eq!(x.latency.max, y.latency.max);
            assert!((x.latency.sum - y.latency.sum).abs() < 1e-6);
            let (hx, hy) = (
                x.latency_hist.as_ref().unwrap(),
                y.latency_hist.as_ref().unwrap(),
            );
            assert_eq!(hx.value_at_percentile(90.0), hy.value_at_percentile(90.0));
        }
        assert_eq!(
            a.scripts[0].commands[0].latency.count,
            one.scripts[0].commands[0].latency.count
        );
        assert_eq!(a.scripts[0].commands[2].failures, 1);
        assert_eq!(a.scripts[1].commands[0].retries, 1);
        assert_eq!(a.conn_duration_us, 12);
    }

    #[test]
    fn merge_rejects_other_shapes() {
        let mut a = ThreadStats::new(&cfg());
        let mut c = cfg();
        c.script_commands = vec![3];
        assert!(a.merge(&ThreadStats::new(&c)).is_err());
    }

    #[test]
    fn out_of_range_indexes_are_ignored() {
        let mut t = ThreadStats::new(&cfg());
        t.record_command(9, 9, 1.0);
        t.record_command_retry(0, 99);
        t.record_txn(&ok(42, 1.0, 0.0, 1));
        assert_eq!(t.total.cnt, 1);
    }
}
