//! `-l` transaction logs (spec §7.4): per-thread file names, one line per
//! transaction, and `--aggregate-interval` lines (15 columns, pgbench 15+).
//! Writers are buffered (flushed on [`TxnLogWriter::finish`] /
//! [`AggregateLogWriter::finish`]) and format without allocating. Whether an
//! entry is sampled (`--sampling-rate`) is decided by the engine with the
//! thread's sample PRNG before calling in.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::error::ResultsError;
use crate::output::OutputFile;
use crate::pgfmt::f0;
use crate::simple::SimpleStats;
use crate::stats::{FailureKind, TxnOutcome};

/// Default `--log-prefix`.
pub const DEFAULT_LOG_PREFIX: &str = "pgbench_log";

/// pgbench's log file name: `PREFIX.PID` for thread 0, `PREFIX.PID.N` for thread N.
pub fn log_file_path(prefix: Option<&str>, pid: u32, thread: usize) -> PathBuf {
    let prefix = prefix.unwrap_or(DEFAULT_LOG_PREFIX);
    if thread == 0 {
        PathBuf::from(format!("{prefix}.{pid}"))
    } else {
        PathBuf::from(format!("{prefix}.{pid}.{thread}"))
    }
}

/// The log file for `path` (see [`OutputFile`]): a regular file appears when the run
/// commits it and is removed if the run fails to; a device or FIFO is written as the
/// run goes.
fn create(path: &Path) -> Result<OutputFile, ResultsError> {
    OutputFile::create(path, 64 * 1024).map_err(|source| ResultsError::OpenLog {
        path: path.to_path_buf(),
        source,
    })
}

/// Run options that change log lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LogOptions {
    /// `-R`: lag column / lag statistics.
    pub throttled: bool,
    /// `-L`: skipped count in aggregate lines.
    pub latency_limit: bool,
    /// `--max-tries`: when not 1, retries column / retry counts.
    pub max_tries: u32,
    /// `--failures-detailed`: `serialization`/`deadlock` instead of `failed`;
    /// failure counts in aggregate lines.
    pub failures_detailed: bool,
}

impl LogOptions {
    /// The log flags of a run with `options`.
    pub fn for_run(options: &crate::result::RunOptions) -> Self {
        LogOptions {
            throttled: options.rate_tps.is_some(),
            latency_limit: options.latency_limit_us.is_some(),
            max_tries: options.max_tries,
            failures_detailed: options.failures_detailed,
        }
    }
}

/// One logged transaction (or skipped slot).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TxnLogEntry {
    /// Client number (0-based, global).
    pub client_id: u32,
    /// The client's transaction counter after this transaction (starts at 1;
    /// counts successes, failures and skips).
    pub txn_no: u64,
    /// Script index (0-based).
    pub script: usize,
    /// How it ended.
    pub outcome: TxnOutcome,
    /// Latency (µs) of a success.
    pub latency_us: f64,
    /// Schedule lag (µs) of a success under `-R`.
    pub lag_us: f64,
    /// Tries (1 = no retry).
    pub tries: u32,
    /// Time of logging, Unix epoch µs.
    pub now_epoch_us: i64,
}

fn result_word(outcome: TxnOutcome, detailed: bool) -> &'static str {
    match (outcome, detailed) {
        (TxnOutcome::Skipped, _) => "skipped",
        (TxnOutcome::Failed(_), false) => "failed",
        (TxnOutcome::Failed(FailureKind::Serialization), true) => "serialization",
        (TxnOutcome::Failed(FailureKind::Deadlock), true) => "deadlock",
        (TxnOutcome::Failed(FailureKind::OtherSql), true) => "other",
        (TxnOutcome::Failed(FailureKind::ConnectionLost), true) => "connection_lost",
        (TxnOutcome::Failed(FailureKind::ReadOnly), true) => "read_only",
        (TxnOutcome::Failed(FailureKind::Cancelled), true) => "cancelled",
        (TxnOutcome::Success, _) => "",
    }
}

/// Per-transaction log of one thread.
#[derive(Debug)]
pub struct TxnLogWriter<W: Write = OutputFile> {
    out: W,
    opts: LogOptions,
}

impl TxnLogWriter<OutputFile> {
    /// Create (truncate) the file; the error text is pgbench's.
    pub fn create(path: &Path, opts: LogOptions) -> Result<Self, ResultsError> {
        Ok(TxnLogWriter::new(create(path)?, opts))
    }
}

impl<W: Write> TxnLogWriter<W> {
    /// Log into `out` (give it a buffered writer).
    pub fn new(out: W, opts: LogOptions) -> Self {
        TxnLogWriter { out, opts }
    }

    /// Write one line: `client txn_no latency|word script epoch_s µs [lag] [retries]`.
    pub fn log(&mut self, e: &TxnLogEntry) -> io::Result<()> {
        let (secs, usecs) = (
            e.now_epoch_us.div_euclid(1_000_000),
            e.now_epoch_us.rem_euclid(1_000_000),
        );
        let success = e.outcome == TxnOutcome::Success;
        if success {
            write!(
                self.out,
                "{} {} {} {} {} {}",
                e.client_id,
                e.txn_no,
                f0(e.latency_us),
                e.script,
                secs,
                usecs
            )?;
        } else {
            write!(
                self.out,
                "{} {} {} {} {} {}",
                e.client_id,
                e.txn_no,
                result_word(e.outcome, self.opts.failures_detailed),
                e.script,
                secs,
                usecs
            )?;
        }
        if self.opts.throttled {
            write!(self.out, " {}", f0(if success { e.lag_us } else { 0.0 }))?;
        }
        if self.opts.max_tries != 1 {
            let retries = if e.outcome == TxnOutcome::Skipped {
                0
            } else {
                e.tries.saturating_sub(1)
            };
            write!(self.out, " {retries}")?;
        }
        self.out.write_all(b"\n")
    }

    /// Flush and return the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Counters of one aggregation interval.
#[derive(Debug, Clone, Copy, Default)]
struct Interval {
    cnt: u64,
    skipped: u64,
    retries: u64,
    retried: u64,
    serialization: u64,
    deadlock: u64,
    latency: SimpleStats,
    lag: SimpleStats,
}

/// `--aggregate-interval` log of one thread.
#[derive(Debug)]
pub struct AggregateLogWriter<W: Write = OutputFile> {
    out: W,
    opts: LogOptions,
    interval_us: i64,
    start_us: i64,
    cur: Interval,
}

impl AggregateLogWriter<OutputFile> {
    /// Create (truncate) the file. `bench_start_epoch_us`: the thread's benchmark
    /// start (Unix epoch µs); the first interval starts at its whole second.
    pub fn create(
        path: &Path,
        opts: LogOptions,
        interval_s: u32,
        bench_start_epoch_us: i64,
    ) -> Result<Self, ResultsError> {
        Ok(AggregateLogWriter::new(
            create(path)?,
            opts,
            interval_s,
            bench_start_epoch_us,
        ))
    }
}

impl<W: Write> AggregateLogWriter<W> {
    /// Aggregate into `out`.
    pub fn new(out: W, opts: LogOptions, interval_s: u32, bench_start_epoch_us: i64) -> Self {
        AggregateLogWriter {
            out,
            opts,
            interval_us: i64::from(interval_s.max(1)) * 1_000_000,
            start_us: bench_start_epoch_us.div_euclid(1_000_000) * 1_000_000,
            cur: Interval::default(),
        }
    }

    /// Write every interval that ended at or before `now_epoch_us` (empty ones too).
    fn flush_until(&mut self, now_epoch_us: i64) -> io::Result<()> {
        while self.start_us + self.interval_us <= now_epoch_us {
            let c = &self.cur;
            let o = &self.opts;
            write!(
                self.out,
                "{} {} {} {} {} {}",
                self.start_us / 1_000_000,
                c.cnt,
                f0(c.latency.sum),
                f0(c.latency.sum2),
                f0(c.latency.min),
                f0(c.latency.max)
            )?;
            let lag = if o.throttled {
                c.lag
            } else {
                SimpleStats::default()
            };
            write!(
                self.out,
                " {} {} {} {}",
                f0(lag.sum),
                f0(lag.sum2),
                f0(lag.min),
                f0(lag.max)
            )?;
            let skipped = if o.latency_limit { c.skipped } else { 0 };
            let (retried, retries) = if o.max_tries != 1 {
                (c.retried, c.retries)
            } else {
                (0, 0)
            };
            let (ser, dead) = if o.failures_detailed {
                (c.serialization, c.deadlock)
            } else {
                (0, 0)
            };
            writeln!(self.out, " {skipped} {retried} {retries} {ser} {dead}")?;
            self.cur = Interval::default();
            self.start_us += self.interval_us;
        }
        Ok(())
    }

    /// Account one transaction logged at `e.now_epoch_us`, first writing the
    /// intervals that ended before it.
    pub fn log(&mut self, e: &TxnLogEntry) -> io::Result<()> {
        self.flush_until(e.now_epoch_us)?;
        let c = &mut self.cur;
        if e.outcome == TxnOutcome::Skipped {
            c.skipped += 1;
            return Ok(());
        }
        if e.tries > 1 {
            c.retries += u64::from(e.tries - 1);
            c.retried += 1;
        }
        match e.outcome {
            TxnOutcome::Success => {
                c.cnt += 1;
                c.latency.add(e.latency_us);
                if self.opts.throttled {
                    c.lag.add(e.lag_us);
                }
            }
            TxnOutcome::Failed(FailureKind::Serialization) => c.serialization += 1,
            TxnOutcome::Failed(FailureKind::Deadlock) => c.deadlock += 1,
            TxnOutcome::Failed(_) | TxnOutcome::Skipped => {}
        }
        Ok(())
    }

    /// End of the thread at `now_epoch_us`: write the intervals that are
    /// complete; the last, partial interval is dropped (as pgbench does). Flushes.
    pub fn finish(mut self, now_epoch_us: i64) -> io::Result<W> {
        self.flush_until(now_epoch_us)?;
        self.out.flush()?;
        Ok(self.out)
    }
}
