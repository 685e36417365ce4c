//! [`RunResult`]: the complete, serializable result of one benchmark run — the
//! one data structure every output (pgbench text report, JSON document, results
//! store) is rendered from. Field names are snake_case; times are µs unless a
//! field name says otherwise. Built once at the end of a run from the merged
//! [`ThreadStats`] by [`RunResult::build`].

use base64::Engine as _;
use hdrhistogram::serialization::{Serializer as _, V2DeflateSerializer};
use serde::{Deserialize, Serialize};

use crate::histogram::LatencyHistogram;
use crate::nullable::nullable_f64;
pub use crate::options::{QueryMode, RunOptions};
use crate::percentile::Percentile;
use crate::progress_counters::IntervalSample;
use crate::simple::SimpleStats;
use crate::stats::ThreadStats;
use crate::txn::TxnStats;

/// Version of the JSON document layout (`schema/run-result.v1.json`).
pub const SCHEMA_VERSION: u32 = 1;

/// Percentiles always computed into a [`RunResult`], in addition to `--percentiles`.
pub const DEFAULT_PERCENTILES: [f64; 6] = [50.0, 90.0, 95.0, 99.0, 99.9, 99.99];

/// A script as given to the run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct ScriptInfo {
    /// pgbench's description: file name or `<builtin: …>`.
    pub name: String,
    /// `@weight`.
    pub weight: u32,
    /// Full script text.
    pub text: String,
    /// First line of each command, as `-r` prints it.
    pub commands: Vec<String>,
}

/// Facts about the run that are not statistics, given by the engine to [`RunResult::build`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunInfo {
    /// Options.
    pub options: RunOptions,
    /// Scripts in order.
    pub scripts: Vec<ScriptInfo>,
    /// Scaling factor.
    pub scale: i64,
    /// Detected partition method (`range`/`hash`), if the accounts table is partitioned.
    pub partition_method: Option<String>,
    /// Number of partitions.
    pub partitions: u32,
    /// pgsurge version.
    pub pgsurge_version: String,
    /// Server `server_version` parameter.
    pub server_version: Option<String>,
    /// Start of the run (Unix epoch µs).
    pub start_time_unix_us: i64,
    /// End of the run (Unix epoch µs).
    pub end_time_unix_us: i64,
    /// pgbench's `total_duration`: end − earliest thread benchmark start (µs).
    pub bench_duration_us: i64,
    /// pgbench's `conn_elapsed_duration`: earliest benchmark start − run start (µs).
    pub initial_connection_us: i64,
    /// Stopped by SIGINT/SIGTERM.
    pub interrupted: bool,
    /// At least one client aborted.
    pub aborted: bool,
}

/// Summary of a latency-like quantity.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct LatencySummary {
    /// Exact running sums in µs (pgbench's numbers).
    pub sums_us: SimpleStats,
    /// Mean (ms), absent when nothing was measured.
    pub mean_ms: Option<f64>,
    /// Population standard deviation (ms), absent when nothing was measured.
    pub stddev_ms: Option<f64>,
    /// Minimum (ms), absent when nothing was measured.
    pub min_ms: Option<f64>,
    /// Maximum (ms), absent when nothing was measured.
    pub max_ms: Option<f64>,
    /// Percentiles from the HDR histogram (empty without one).
    pub percentiles: Vec<Percentile>,
    /// The HDR histogram (µs values), V2-deflate serialized and base64 encoded
    /// (the payload format of HdrHistogram interval logs), for exact merging.
    pub histogram: Option<String>,
}

impl LatencySummary {
    fn build(s: &SimpleStats, hist: Option<&LatencyHistogram>, ranks: &[f64]) -> Self {
        let finite = |v: f64| v.is_finite().then_some(v);
        let measured = s.count > 0;
        let hdr = hist.filter(|h| !h.is_empty()).map(LatencyHistogram::to_hdr);
        LatencySummary {
            sums_us: *s,
            mean_ms: s.mean().and_then(|m| finite(m / 1000.0)),
            stddev_ms: s.stddev().and_then(|m| finite(m / 1000.0)),
            min_ms: measured.then_some(s.min / 1000.0),
            max_ms: measured.then_some(s.max / 1000.0),
            percentiles: hdr
                .as_ref()
                .map(|h| crate::percentile::latency_percentiles(h, ranks))
                .unwrap_or_default(),
            histogram: hdr.as_ref().and_then(encode_hdr),
        }
    }

    /// The stored percentile at `rank`, if computed.
    pub fn percentile(&self, rank: f64) -> Option<f64> {
        self.percentiles
            .iter()
            .find(|p| p.percentile == rank)
            .map(|p| p.latency_ms)
    }
}

/// Serialize a histogram as base64 of its V2-deflate encoding.
pub fn encode_histogram(h: &LatencyHistogram) -> Option<String> {
    encode_hdr(&h.to_hdr())
}

/// The histogram of an encoded [`LatencySummary::histogram`] or interval histogram;
/// None when it is not one.
fn decode_histogram(encoded: &str) -> Option<hdrhistogram::Histogram<u64>> {
    use hdrhistogram::serialization::Deserializer;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    Deserializer::new().deserialize(&mut bytes.as_slice()).ok()
}

/// Latency percentiles at `ranks` of the encoded histograms merged (intervals of a
/// window); empty when one is missing, cannot be decoded, or all are empty.
pub fn percentiles_of_encoded<'a>(
    encoded: impl IntoIterator<Item = Option<&'a str>>,
    ranks: &[f64],
) -> Vec<Percentile> {
    let mut merged: Option<hdrhistogram::Histogram<u64>> = None;
    for e in encoded {
        let Some(h) = e.and_then(decode_histogram) else {
            return Vec::new();
        };
        match merged.as_mut() {
            None => merged = Some(h),
            Some(m) => {
                if m.add(&h).is_err() {
                    return Vec::new();
                }
            }
        }
    }
    match merged {
        Some(h) if !h.is_empty() => crate::percentile::latency_percentiles(&h, ranks),
        _ => Vec::new(),
    }
}

fn encode_hdr(h: &hdrhistogram::Histogram<u64>) -> Option<String> {
    let mut buf = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut buf).ok()?;
    Some(base64::engine::general_purpose::STANDARD.encode(buf))
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Counts and latencies of a set of transactions.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct TxnSummary {
    /// Successful transactions.
    pub transactions: u64,
    /// Skipped transactions (`-R` with `-L`).
    pub skipped: u64,
    /// Failed transactions of every kind.
    pub failures: u64,
    /// Serialization failures.
    pub serialization_failures: u64,
    /// Deadlock failures.
    pub deadlock_failures: u64,
    /// Other SQL failures (always 0 with pgbench 18 semantics).
    pub other_sql_failures: u64,
    /// Failures by a lost connection (`--reconnect`; absent when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub connection_lost_failures: u64,
    /// Failures of writes refused as read-only (`--reconnect`; absent when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub read_only_failures: u64,
    /// Failures by a cancelled statement (`--reconnect`; absent when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cancelled_failures: u64,
    /// Transactions retried at least once.
    pub retried: u64,
    /// Total number of retries.
    pub retries: u64,
    /// Successful transactions above `-L`.
    pub late: u64,
    /// Latency of successful transactions.
    pub latency: LatencySummary,
    /// Schedule lag of successful transactions (`-R`).
    pub lag: LatencySummary,
}

impl TxnSummary {
    fn build(s: &TxnStats, ranks: &[f64]) -> Self {
        TxnSummary {
            transactions: s.cnt,
            skipped: s.skipped,
            failures: s.failures(),
            serialization_failures: s.serialization_failures,
            deadlock_failures: s.deadlock_failures,
            other_sql_failures: s.other_sql_failures,
            connection_lost_failures: s.connection_lost_failures,
            read_only_failures: s.read_only_failures,
            cancelled_failures: s.cancelled_failures,
            retried: s.retried,
            retries: s.retries,
            late: s.late,
            latency: LatencySummary::build(&s.latency, s.latency_hist.as_ref(), ranks),
            lag: LatencySummary::build(&s.lag, s.lag_hist.as_ref(), ranks),
        }
    }

    /// `transactions + skipped + failures`.
    pub fn total_cnt(&self) -> u64 {
        self.transactions + self.skipped + self.failures
    }

    /// [`TxnSummary::total_cnt`], or `None` when it does not fit in a `u64` (a
    /// document read from outside can carry any counts).
    pub fn checked_total_cnt(&self) -> Option<u64> {
        self.transactions
            .checked_add(self.skipped)?
            .checked_add(self.failures)
    }
}

/// One command's statistics (`-r`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct CommandResult {
    /// 0-based command number within the script.
    pub index: usize,
    /// The command's first line.
    pub first_line: String,
    /// Latency of completed executions.
    pub latency: LatencySummary,
    /// Failures charged to this command.
    pub failures: u64,
    /// Retries charged to this command.
    pub retries: u64,
}

/// One script's statistics.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct ScriptResult {
    /// Description (file name or `<builtin: …>`).
    pub name: String,
    /// Weight.
    pub weight: u32,
    /// Script text.
    pub text: String,
    /// Transactions of this script.
    pub stats: TxnSummary,
    /// Per-command statistics (latencies are zero unless `-r`).
    pub commands: Vec<CommandResult>,
}

/// The complete result of one run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct RunResult {
    /// JSON layout version ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// pgsurge version.
    pub pgsurge_version: String,
    /// Server version string, if connected.
    pub server_version: Option<String>,
    /// Start (Unix epoch µs).
    pub start_time_unix_us: i64,
    /// End (Unix epoch µs).
    pub end_time_unix_us: i64,
    /// Stopped early by SIGINT/SIGTERM.
    pub interrupted: bool,
    /// At least one client aborted (results incomplete; exit status 2).
    pub aborted: bool,
    /// `transaction type:` — the script description, or `multiple scripts`.
    pub transaction_type: String,
    /// Scaling factor.
    pub scale: i64,
    /// Partition method, if partitioned.
    pub partition_method: Option<String>,
    /// Number of partitions.
    pub partitions: u32,
    /// Options.
    pub options: RunOptions,
    /// Benchmark duration (µs): end − earliest thread start.
    pub bench_duration_us: i64,
    /// Initial connection time (µs), without `-C`.
    pub initial_connection_us: i64,
    /// Total time spent connecting under `-C` (µs).
    pub connection_total_us: u64,
    /// Successful transactions per second over `bench_duration_us`.
    #[serde(deserialize_with = "nullable_f64")]
    pub tps: f64,
    /// All transactions.
    pub totals: TxnSummary,
    /// Per script, in order.
    pub scripts: Vec<ScriptResult>,
    /// Per reporting interval (progress period, or 1 s), in order.
    pub intervals: Vec<IntervalSample>,
    /// The generator that produced this result, when run as one generator of a
    /// distributed run (`--start-at`, `--generator-*`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<crate::generator::GeneratorInfo>,
    /// In a merged result (`pgsurge merge`, `pgsurge dist`): the generators it is
    /// the union of, in input order; empty (and absent from the JSON) otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub generators: Vec<crate::generator::MergedGenerator>,
    /// The metrics of a workload pack's run (`bench --workload`), read on the server
    /// before and after it; empty (and absent from the JSON) otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workload_metrics: Vec<WorkloadMetric>,
    /// Per-transaction costs of the measured window (`bench --costs`, every campaign
    /// test); absent from the JSON when not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txn_costs: Option<crate::costs::TxnCosts>,
    /// What a failure cost the run (`bench --reconnect`, a campaign's faults).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_cost: Option<crate::failure::FailureCost>,
    /// Transactions run on a standby and the stale reads among them
    /// (`bench --replica-file`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_reads: Option<crate::failure::ReplicaReads>,
    /// Commits per 10 ms (`--reconnect`), for [`RunResult::failure_cost`]; not in JSON.
    #[serde(skip)]
    pub commit_timeline: Option<crate::failure::CommitTimeline>,
    /// Profiles of the measured window (`bench --profile`, a campaign's `[profile]`).
    /// Not part of the JSON document: the store keeps them.
    #[serde(skip)]
    pub profiles: Vec<crate::profile::Profile>,
    /// Where the run's warm-up ended and its figures after it (judged from
    /// `intervals`); absent when the run has too few intervals to judge (fewer than 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_state: Option<SteadyState>,
    /// Outputs written during the run that failed (e.g. `--hdr-log` on a full disk),
    /// one message each: the caller reports them and exits non-zero. Not part of
    /// the JSON document.
    #[serde(skip)]
    pub output_errors: Vec<String>,
    /// A client aborted because its connection was lost or could not be made (the
    /// `Connection` class of `pgsurge_wire::ErrorClass`): the server went away, the
    /// scripts did not fail. Not part of the JSON document.
    #[serde(skip)]
    pub connection_lost: bool,
}

impl RunResult {
    /// Build the result from the run facts, the merged statistics of all threads
    /// and the interval series.
    pub fn build(info: RunInfo, stats: &ThreadStats, intervals: Vec<IntervalSample>) -> Self {
        let mut ranks: Vec<f64> = DEFAULT_PERCENTILES.to_vec();
        for &p in &info.options.percentiles {
            if !ranks.contains(&p) {
                ranks.push(p);
            }
        }
        ranks.sort_by(f64::total_cmp);
        let bench_s = info.bench_duration_us as f64 / 1e6;
        let scripts = info
            .scripts
            .iter()
            .enumerate()
            .map(|(i, sc)| {
                let st = stats.scripts.get(i);
                let commands = sc
                    .commands
                    .iter()
                    .enumerate()
                    .map(|(j, line)| {
                        let c = st.and_then(|s| s.commands.get(j));
                        CommandResult {
                            index: j,
                            first_line: line.clone(),
                            latency: c
                                .map(|c| LatencySummary::build(&c.latency, c.hist.as_ref(), &ranks))
                                .unwrap_or_default(),
                            failures: c.map_or(0, |c| c.failures),
                            retries: c.map_or(0, |c| c.retries),
                        }
                    })
                    .collect();
                ScriptResult {
                    name: sc.name.clone(),
                    weight: sc.weight,
                    text: sc.text.clone(),
                    stats: stats
                        .script_txn(i)
                        .map(|t| TxnSummary::build(t, &ranks))
                        .unwrap_or_default(),
                    commands,
                }
            })
            .collect();
        let transaction_type = match info.scripts.as_slice() {
            [one] => one.name.clone(),
            _ => "multiple scripts".to_string(),
        };
        RunResult {
            schema_version: SCHEMA_VERSION,
            pgsurge_version: info.pgsurge_version,
            server_version: info.server_version,
            start_time_unix_us: info.start_time_unix_us,
            end_time_unix_us: info.end_time_unix_us,
            interrupted: info.interrupted,
            aborted: info.aborted,
            transaction_type,
            scale: info.scale,
            partition_method: info.partition_method,
            partitions: info.partitions,
            options: info.options,
            bench_duration_us: info.bench_duration_us,
            initial_connection_us: info.initial_connection_us,
            connection_total_us: stats.conn_duration_us,
            tps: stats.total.cnt as f64 / bench_s,
            totals: TxnSummary::build(&stats.overall(), &ranks),
            scripts,
            intervals,
            generator: None,
            generators: Vec::new(),
            workload_metrics: Vec::new(),
            txn_costs: None,
            failure_cost: None,
            replica_reads: None,
            commit_timeline: None,
            profiles: Vec::new(),
            steady_state: None,
            output_errors: Vec::new(),
            connection_lost: false,
        }
    }
}

/// A run's steady state: where its warm-up ended (detected from its per-interval
/// throughput and latency), whether the rest is steady, and the run's figures over
/// that steady window, beside the raw ones of the whole run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SteadyState {
    /// How the warm-up end was found (`mser-5`).
    pub method: String,
    /// Length of the detected warm-up, seconds from the first interval's start.
    pub warmup_s: f64,
    /// Length of the steady window (the intervals after the warm-up), seconds.
    pub window_s: f64,
    /// Intervals judged.
    pub intervals: usize,
    /// Intervals of warm-up.
    pub warmup_intervals: usize,
    /// True when its steady window (the whole run when it did not settle within its
    /// first half) does not drift.
    pub steady: bool,
    /// Why it is not steady, in words (empty when it is).
    pub reasons: Vec<String>,
    /// Successful transactions per second over the steady window.
    #[serde(deserialize_with = "nullable_f64")]
    pub tps: f64,
    /// Successful transactions in the steady window.
    pub transactions: u64,
    /// Mean latency (ms) over the steady window.
    pub latency_mean_ms: Option<f64>,
    /// Latency percentiles over the steady window, from the merged interval
    /// histograms (empty when the intervals carry none).
    pub percentiles: Vec<Percentile>,
    /// Fitted change of the throughput from the window's start to its end, relative
    /// to its mean (−0.1 = falling by 10 %).
    pub throughput_drift: Option<f64>,
    /// Two-sided p-value of that drift's slope.
    pub throughput_drift_p: Option<f64>,
}

/// One metric of a workload pack's run (`NOPM`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct WorkloadMetric {
    /// Its name in the pack.
    pub name: String,
    /// Its value, in `unit`.
    pub value: f64,
    /// `per minute`, `per second`, `in the run`, `ms` (a latency) or `%` (of a ceiling).
    pub unit: String,
    /// What it counts, as the pack says.
    pub description: String,
}
