//! Run statistics and their renderers: the pgbench text report, progress lines,
//! transaction logs, the JSON document, HDR interval logs.
//!
//! This crate owns *what is measured and how it is printed*; it never opens a
//! socket, starts a thread or reads a clock. The engine records into
//! [`ThreadStats`] from each driver thread (no locks, no allocation), publishes
//! progress through [`SharedCounters`] read by a [`ProgressAggregator`], merges the
//! threads' stats at the end, builds a [`RunResult`] and hands it to the
//! renderers, which write to any `std::io::Write`.
//!
//! | module | owns |
//! |---|---|
//! | [`simple`] | pgbench's exact sums (`SimpleStats`) |
//! | `nullable` | JSON `null` read back as a NaN float |
//! | `options` | the run options that shape results (`RunOptions`) |
//! | [`histogram`] | HDR latency histograms |
//! | [`percentile`] | what a latency percentile is (rank → value) |
//! | `txn` | one transaction's sample and the sums over transactions (`TxnStats`) |
//! | [`stats`] | per-thread, per-script, per-command statistics |
//! | [`progress_counters`] | cross-thread progress counters and interval samples |
//! | [`costs`] | per-transaction costs of a run: their names, units and values |
//! | [`failure`] | what a failure cost a run: commits over time, outage, faults, lag, lost commits |
//! | [`profile`] | folded call stacks of a run's measured window (server, client, off-CPU) |
//! | [`result`] | the serializable `RunResult` |
//! | [`generator`] | a distributed run's generator identity and clock |
//! | [`report`] | the pgbench final report |
//! | [`progress`] | `-P` lines |
//! | [`txnlog`] | `-l` per-transaction and aggregate logs |
//! | [`hdrlog`] | `--hdr-log` HdrHistogram interval logs |
//! | [`json`] | `--json` document and its schema |
//! | [`pgfmt`] | PostgreSQL `printf` number formatting |
//! | [`output`] | writing an output file whole or not at all |
//! | [`error`] | the crate's error type |
//!
//! Each module uses only modules below it in this order: `simple`, `error`, `output`,
//! `pgfmt`, `nullable` ← `costs`, `failure`, `profile`, `options` ← `percentile` ← `histogram` ← `txn` ←
//! `progress_counters` ← `stats` ← `generator` ← `result` ← the renderers (`report`,
//! `progress`, `txnlog`, `hdrlog`, `json`).
//!
//! ## How a run uses it
//!
//! 1. Build one [`StatsConfig`] ([`pgbench_detailed`] gives pgbench's rule for
//!    measuring latencies; OR in `--percentiles`/`--json`/`--hdr-log`).
//! 2. Per driver thread: `ThreadStats::with_shared(&cfg, Arc::new(SharedCounters::new(h, n_scripts)))`
//!    (`h`: keep interval histograms, for percentiles in `-P` lines, the JSON
//!    series and `--hdr-log`), or `ThreadStats::new` when nobody reads progress.
//!    At the end of each transaction call [`ThreadStats::record_txn`]; with `-r`,
//!    [`ThreadStats::record_command`] per completed command, and
//!    `record_command_retry`/`record_command_failure` where pgbench charges them;
//!    `record_connection` for `-C` time. With `-l`, feed a [`TxnLogWriter`] or an
//!    [`AggregateLogWriter`] (file name from [`log_file_path`]; the sampling
//!    decision stays with the caller) and `finish` it when the thread ends.
//! 3. The progress thread owns a [`ProgressAggregator`] over all threads'
//!    counters and calls [`ProgressAggregator::tick`] every `-P` period (or every
//!    second when only the JSON series / HDR log need it): print the sample with
//!    [`format_progress_line`], keep it for [`RunResult::build`], and write
//!    [`ProgressAggregator::interval_histogram`] (and the per-script
//!    [`ProgressAggregator::script_histograms`] as tagged series) to an
//!    [`HdrIntervalLogWriter`].
//! 4. At the end, merge the threads' stats ([`ThreadStats::merge`]), build the
//!    [`RunResult`] from the run facts ([`RunInfo`]), then render it:
//!    [`write_pgbench_report`] (after the engine's `pgbench (…)` banner),
//!    [`write_json`].
#![warn(missing_docs)]

pub mod costs;
pub mod error;
pub mod failure;
pub mod generator;
pub mod hdrlog;
pub mod histogram;
pub mod json;
mod nullable;
mod options;
pub mod output;
pub mod percentile;
pub mod pgfmt;
pub mod profile;
pub mod progress;
pub mod progress_counters;
pub mod report;
pub mod result;
pub mod simple;
pub mod stats;
mod txn;
pub mod txnlog;

pub use costs::{TxnCost, TxnCosts, COST_KINDS};
pub use error::ResultsError;
pub use generator::{GeneratorInfo, MergedGenerator};
pub use hdrlog::{HdrIntervalLogWriter, HdrLogUnit};
pub use histogram::LatencyHistogram;
pub use json::{open_json, write_json, write_json_into, write_json_to, RUN_RESULT_SCHEMA};
pub use output::{write_output, OutputFile};
pub use progress::{format_progress_line, ProgressOptions};
pub use progress_counters::{
    IntervalSample, Percentile, ProgressAggregator, ProgressSnapshot, SharedCounters,
};
pub use report::{write_pgbench_report, PgCompat, ReportOptions};
pub use result::{
    CommandResult, LatencySummary, QueryMode, RunInfo, RunOptions, RunResult, ScriptInfo,
    ScriptResult, TxnSummary, WorkloadMetric, DEFAULT_PERCENTILES, SCHEMA_VERSION,
};
pub use simple::SimpleStats;
pub use stats::{
    pgbench_detailed, CommandStats, FailureKind, ScriptStats, StatsConfig, ThreadStats, TxnOutcome,
    TxnSample, TxnStats,
};
pub use txnlog::{log_file_path, AggregateLogWriter, LogOptions, TxnLogEntry, TxnLogWriter};
