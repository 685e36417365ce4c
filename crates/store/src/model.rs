//! The rows of the store as Rust types. Each record type lists its columns once; the
//! [`record!`] macro derives the column list, the parameter list for INSERT and the
//! reader for SELECT from it, so a new column is one line here plus one migration.

use serde::{Deserialize, Serialize};

use crate::error::Result;
pub use crate::error::UnreadableRun;
use crate::value::{FromValue, Row, ToValue, Value};

macro_rules! record {
    (
        $(#[$m:meta])*
        pub struct $name:ident {
            $( $(#[$fm:meta])* $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$m])*
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        pub struct $name {
            $( $(#[$fm])* pub $field: $ty, )*
        }

        impl $name {
            /// Column names, in the order of [`Self::values`].
            pub const COLUMNS: &'static [&'static str] = &[$(stringify!($field)),*];

            /// The values of the columns, in the order of [`Self::COLUMNS`].
            pub fn values(&self) -> Vec<Value> {
                vec![$( ToValue::to_value(&self.$field) ),*]
            }

            /// Reads the record from `row`, whose columns start at `offset` in the
            /// order of [`Self::COLUMNS`].
            pub fn from_row(row: &Row, offset: usize) -> Result<Self> {
                let mut _i = offset;
                Ok(Self {
                    $( $field: {
                        let v = <$ty as FromValue>::from_value(row.get(_i), stringify!($field))?;
                        _i += 1;
                        v
                    }, )*
                })
            }

            /// `a, b, c` for a SELECT list, each column prefixed by `alias.`.
            pub(crate) fn select_list(alias: &str) -> String {
                Self::COLUMNS
                    .iter()
                    .map(|c| format!("{alias}.{c}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        }
    };
}

/// Kind of a set (stored as text).
pub mod set_kind {
    /// A campaign file's matrix.
    pub const CAMPAIGN: &str = "campaign";
    /// `pgsurge quickstart`.
    pub const QUICKSTART: &str = "quickstart";
    /// Runs imported from pgbench outputs.
    pub const IMPORT: &str = "import";
    /// Anything else.
    pub const ADHOC: &str = "adhoc";
    /// The generators of one distributed run (`bench --store --group`): one run per
    /// generator, merged by `dist wait` and `results show`.
    pub const GROUP: &str = "group";
}

/// The spec hash of the group sets `bench --group` creates (a group has no campaign
/// file to hash); whoever waits for a group looks it up by this hash.
pub const GROUP_SPEC_HASH: &str = "bench --group";

/// The test key of generator `index` of `count` in a group set (`bench --group`).
pub fn generator_test_key(index: u32, count: u32) -> String {
    format!("generator {index}/{count}")
}

/// Status of a set (stored as text).
pub mod set_status {
    /// Tests are still being run (or the campaign was killed: resumable).
    pub const RUNNING: &str = "running";
    /// Every planned test is stored.
    pub const COMPLETE: &str = "complete";
    /// The campaign stopped with tests left (interrupted by the user).
    pub const INCOMPLETE: &str = "incomplete";
    /// The campaign ended in an error before running all its tests (a warning of
    /// code `campaign` says why); running it again resumes it.
    pub const FAILED: &str = "failed";
    /// The campaign's process ended without finishing the set and without saying so
    /// (killed, or its machine went down): found `running` with no live holder by a
    /// later run of the campaign. Running the same file again resumes it.
    pub const INTERRUPTED: &str = "interrupted";
}

/// Status of a run (stored as text).
pub mod run_status {
    /// The test ran to its end.
    pub const OK: &str = "ok";
    /// The test failed; `runs.error` says why.
    pub const FAILED: &str = "failed";
    /// The test was interrupted (Ctrl-C); partial results.
    pub const ABORTED: &str = "aborted";
    /// Imported from a pgbench output.
    pub const IMPORTED: &str = "imported";
}

record! {
    /// A machine (`servers` table).
    pub struct ServerRecord {
        /// Label, unique in the store (normally the host name).
        name: String,
        /// Host name.
        hostname: Option<String>,
        /// CPU model name.
        cpu_model: Option<String>,
        /// Logical CPUs.
        cpu_count: Option<i64>,
        /// Physical memory.
        memory_bytes: Option<i64>,
        /// `uname -r`.
        kernel: Option<String>,
        /// PRETTY_NAME from os-release.
        os_release: Option<String>,
        /// Anything else (JSON).
        details: Option<serde_json::Value>,
    }
}

record! {
    /// A new set (`sets` table) as written by [`crate::Store::create_set`].
    pub struct SetRecord {
        /// Name (campaign name, "quickstart", file name of an import…).
        name: String,
        /// One of [`set_kind`].
        kind: String,
        /// Free text.
        description: Option<String>,
        /// Hash of the normalized spec: a rerun of the same campaign finds its set by it.
        spec_hash: Option<String>,
        /// The spec's text (campaign TOML).
        spec: Option<String>,
        /// How many tests the matrix holds.
        planned_tests: Option<i64>,
        /// One of [`set_status`].
        status: String,
        /// RFC 3339 UTC.
        created_at: String,
        /// RFC 3339 UTC.
        finished_at: Option<String>,
    }
}

/// A stored set with its id and run counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Set {
    /// Row id.
    pub id: i64,
    /// The row's columns, without the id.
    #[serde(flatten)]
    pub record: SetRecord,
    /// Runs stored with status ok (or imported).
    pub runs_ok: i64,
    /// Runs stored with status failed or aborted.
    pub runs_failed: i64,
}

record! {
    /// A target of a set (`targets` table).
    pub struct TargetRecord {
        /// Id of the set (`sets.id`) this row belongs to.
        set_id: i64,
        /// Name from the campaign file, unique in the set.
        name: String,
        /// Id of the server host record (`servers.id`) describing the machine it ran on.
        server_id: Option<i64>,
        /// "conninfo" or "throwaway".
        kind: String,
        /// Connection string without password.
        conninfo: Option<String>,
        /// PostgreSQL binaries used (throwaway).
        bin_dir: Option<String>,
        /// `server_version`.
        server_version: Option<String>,
        /// `server_version_num`.
        server_version_num: Option<i64>,
        /// Requested settings (JSON object).
        settings: Option<serde_json::Value>,
    }
}

/// A stored target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Target {
    /// Row id.
    pub id: i64,
    /// The row's columns, without the id.
    #[serde(flatten)]
    pub record: TargetRecord,
}

record! {
    /// One test (`runs` table). Latencies in milliseconds, rates in transactions per
    /// second; summary numbers exclude the warm-up.
    pub struct RunRecord {
        /// Id of the set (`sets.id`) this row belongs to.
        set_id: i64,
        /// Id of the target (`targets.id`) the test ran against; none for imported runs.
        target_id: Option<i64>,
        /// Identity of the matrix cell + repeat, unique within the set.
        test_key: String,
        /// Position in the planned order.
        seq: Option<i64>,
        /// Repeat number, from 1.
        repeat_no: i64,
        /// One of [`run_status`].
        status: String,
        /// Why the test failed.
        error: Option<String>,
        /// RFC 3339 UTC.
        started_at: Option<String>,
        /// RFC 3339 UTC.
        finished_at: Option<String>,
        /// Epoch seconds.
        start_epoch: Option<f64>,
        /// Epoch seconds.
        end_epoch: Option<f64>,
        /// Display name of the script or mix.
        script: Option<String>,
        /// JSON array of {name, weight, text, sha256}.
        scripts: Option<serde_json::Value>,
        /// JSON object of every option.
        options: Option<serde_json::Value>,
        /// Equivalent pgbench command line.
        command_line: Option<String>,
        /// Random seed used.
        seed: Option<String>,
        /// Scale factor.
        scale: Option<i64>,
        /// Clients.
        clients: Option<i64>,
        /// Threads.
        threads: Option<i64>,
        /// Total target rate (tps); None = unthrottled.
        rate: Option<f64>,
        /// Per-client rate when the campaign gave one.
        rate_per_client: Option<f64>,
        /// `-L`.
        latency_limit_ms: Option<f64>,
        /// `-T`.
        duration_s: Option<f64>,
        /// `-t`.
        transactions_per_client: Option<i64>,
        /// simple / extended / prepared.
        query_mode: Option<String>,
        /// client / server (data generation of `-i`).
        init_method: Option<String>,
        /// Seconds discarded at the start.
        warmup_s: Option<f64>,
        /// Server version text.
        server_version: Option<String>,
        /// Server version number.
        server_version_num: Option<i64>,
        /// Seconds measured (after warm-up).
        measured_s: Option<f64>,
        /// Transactions per second (measured window).
        tps: Option<f64>,
        /// Transactions (measured window).
        transactions: Option<i64>,
        /// Failed transactions.
        failures: Option<i64>,
        /// Serialization failures.
        serialization_failures: Option<i64>,
        /// Deadlock failures.
        deadlock_failures: Option<i64>,
        /// Transactions retried.
        retried: Option<i64>,
        /// Total retries.
        retries: Option<i64>,
        /// Skipped (latency limit under rate).
        skipped: Option<i64>,
        /// Above the latency limit.
        late: Option<i64>,
        /// Mean latency.
        latency_mean_ms: Option<f64>,
        /// Latency standard deviation.
        latency_stddev_ms: Option<f64>,
        /// Minimum latency.
        latency_min_ms: Option<f64>,
        /// Median.
        latency_p50_ms: Option<f64>,
        /// 90th percentile.
        latency_p90_ms: Option<f64>,
        /// 95th percentile.
        latency_p95_ms: Option<f64>,
        /// 99th percentile.
        latency_p99_ms: Option<f64>,
        /// 99.9th percentile.
        latency_p999_ms: Option<f64>,
        /// Maximum latency.
        latency_max_ms: Option<f64>,
        /// Mean schedule lag (rate runs).
        lag_mean_ms: Option<f64>,
        /// Maximum schedule lag.
        lag_max_ms: Option<f64>,
        /// `pg_stat_database.xact_commit` delta over the test.
        server_commits: Option<i64>,
        /// `pg_stat_database.xact_rollback` delta.
        server_rollbacks: Option<i64>,
        /// 100 × |server − client| / client.
        commit_mismatch_pct: Option<f64>,
        /// WAL bytes written during the test.
        wal_bytes: Option<i64>,
        /// Database size before.
        db_size_start: Option<i64>,
        /// Database size after.
        db_size_end: Option<i64>,
        /// Seconds spent on cleanup after the test.
        cleanup_s: Option<f64>,
        /// The engine's RunResult document.
        result_json: Option<serde_json::Value>,
    }
}

/// A stored run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Row id.
    pub id: i64,
    /// The row's columns, without the id.
    #[serde(flatten)]
    pub record: RunRecord,
}

impl Run {
    /// The workload pack's metrics of the run (`NOPM`…), from its result document;
    /// empty for a run of pgbench scripts or one stored without a document.
    pub fn workload_metrics(&self) -> Vec<pgsurge_results::WorkloadMetric> {
        self.record
            .result_json
            .as_ref()
            .and_then(|doc| doc.get("workload_metrics"))
            .and_then(|m| serde_json::from_value(m.clone()).ok())
            .unwrap_or_default()
    }

    /// The run's per-transaction costs, when they were measured.
    pub fn txn_costs(&self) -> Option<pgsurge_results::TxnCosts> {
        self.record
            .result_json
            .as_ref()
            .and_then(|doc| doc.get("txn_costs"))
            .and_then(|m| serde_json::from_value(m.clone()).ok())
    }
}

record! {
    /// One interval of a run (`run_intervals`), normally one second.
    pub struct IntervalRecord {
        /// Interval start, epoch seconds.
        ts: f64,
        /// Interval start, seconds since the run began.
        elapsed_s: f64,
        /// Interval length.
        duration_s: f64,
        /// Inside the discarded warm-up.
        warmup: bool,
        /// Transactions that ended in the interval.
        transactions: i64,
        /// Their rate.
        tps: f64,
        /// Failed.
        failures: Option<i64>,
        /// Retried.
        retried: Option<i64>,
        /// Skipped.
        skipped: Option<i64>,
        /// Mean latency.
        latency_mean_ms: Option<f64>,
        /// Min latency.
        latency_min_ms: Option<f64>,
        /// Max latency.
        latency_max_ms: Option<f64>,
        /// Median.
        latency_p50_ms: Option<f64>,
        /// p90.
        latency_p90_ms: Option<f64>,
        /// p99.
        latency_p99_ms: Option<f64>,
        /// Mean lag.
        lag_mean_ms: Option<f64>,
        /// Max lag.
        lag_max_ms: Option<f64>,
        /// Latency histogram of the interval, encoded like [`HistogramRecord::data`]
        /// (schema version 1; superseded by [`IntervalHistogramRecord`] in
        /// `run_interval_histograms`, and left empty by pgsurge since).
        histogram: Option<Vec<u8>>,
    }
}

/// Encodings of stored histograms.
pub mod histogram_encoding {
    /// HdrHistogram V2 serialization, uncompressed (`hdrhistogram::serialization::V2Serializer`).
    pub const HDR_V2: &str = "hdr-v2";
    /// HdrHistogram V2 serialization, deflate-compressed (`V2DeflateSerializer`; what
    /// the engine's RunResult carries, base64-decoded).
    pub const HDR_V2_DEFLATE: &str = "hdr-v2-deflate";
}

record! {
    /// A whole-run histogram (`run_histograms`).
    pub struct HistogramRecord {
        /// "latency" or "lag".
        kind: String,
        /// Script number, -1 = all scripts together.
        script_index: i64,
        /// Script name.
        script_name: Option<String>,
        /// Unit of recorded values ("us").
        unit: String,
        /// See [`histogram_encoding`].
        encoding: String,
        /// Values recorded.
        count: i64,
        /// The histogram, serialized in the `encoding` above (HdrHistogram V2, possibly deflated).
        data: Vec<u8>,
    }
}

record! {
    /// The histogram of one interval of a run (`run_interval_histograms`, schema
    /// version 3). Only intervals that recorded a value have one.
    pub struct IntervalHistogramRecord {
        /// "latency".
        kind: String,
        /// Interval start, epoch seconds (as [`IntervalRecord::ts`]).
        ts: f64,
        /// Interval start, seconds since the measured run began.
        elapsed_s: f64,
        /// Interval length, seconds.
        duration_s: f64,
        /// Unit of recorded values ("us").
        unit: String,
        /// See [`histogram_encoding`].
        encoding: String,
        /// Values recorded.
        count: i64,
        /// The histogram, serialized in the `encoding` above (HdrHistogram V2, possibly deflated).
        data: Vec<u8>,
    }
}

/// A stored interval histogram with the run it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalHistogram {
    /// Id of the run (`runs.id`) the histogram belongs to.
    pub run_id: i64,
    /// The row's columns, without the id.
    #[serde(flatten)]
    pub record: IntervalHistogramRecord,
}

/// Which intervals [`crate::Store::interval_histograms`] returns: those whose start
/// (`elapsed_s`, seconds since the measured run began) is in `[from_s, to_s)`; an open
/// bound is unbounded.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct IntervalWindow {
    /// First second, inclusive.
    pub from_s: Option<f64>,
    /// Last second, exclusive.
    pub to_s: Option<f64>,
}

record! {
    /// One sample of a metric (`run_metrics`).
    pub struct MetricSample {
        /// Epoch seconds.
        ts: f64,
        /// Metric name (see [`MetricInfo`]).
        metric: String,
        /// Value in the metric's unit.
        value: f64,
    }
}

record! {
    /// What a metric name means (`metrics_info`).
    pub struct MetricInfo {
        /// Name, e.g. "os.cpu.user_pct".
        metric: String,
        /// Group for reports, e.g. "os.cpu".
        category: String,
        /// Unit, e.g. "%", "MB/s", "1/s", "bytes".
        unit: String,
        /// One line.
        description: Option<String>,
    }
}

record! {
    /// A server counter before and after the test (`run_counters`).
    pub struct CounterRecord {
        /// e.g. "pg_stat_database.xact_commit".
        name: String,
        /// Value before the test.
        before_value: Option<f64>,
        /// Value after.
        after_value: Option<f64>,
        /// after − before.
        delta: Option<f64>,
    }
}

record! {
    /// A non-default setting during the run (`run_settings`).
    pub struct SettingRecord {
        /// GUC name.
        name: String,
        /// `setting`.
        setting: Option<String>,
        /// `unit`.
        unit: Option<String>,
        /// `source`.
        source: Option<String>,
        /// `boot_val`.
        boot_val: Option<String>,
    }
}

record! {
    /// A warning (`warnings`).
    pub struct WarningRecord {
        /// Set it concerns.
        set_id: Option<i64>,
        /// Run it concerns.
        run_id: Option<i64>,
        /// Machine-readable code, e.g. "commit_mismatch".
        code: String,
        /// What a person reads.
        message: String,
        /// RFC 3339 UTC.
        created_at: String,
    }
}

record! {
    /// A named fact about a run (`run_facts`): where its server-host metrics came from,
    /// whether the client was the bottleneck, how the data was initialized...
    pub struct FactRecord {
        /// Fact name, e.g. `server_host_metrics_source`.
        name: String,
        /// Its value as text.
        value: Option<String>,
    }
}

impl FactRecord {
    /// A fact named `name` with a value (facts without a value are stored as NULL by other constructors).
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> FactRecord {
        FactRecord {
            name: name.into(),
            value: Some(value.into()),
        }
    }
}

record! {
    /// A profile of a run's measured window (`run_profiles`); see [`crate::profile`].
    pub struct ProfileRecord {
        /// `server-cpu`, `client-cpu` or `server-offcpu`.
        kind: String,
        /// What a count is: `samples` or `us`.
        unit: String,
        /// On-CPU sampling frequency, Hz.
        frequency_hz: Option<i64>,
        /// Sum of the counts.
        total: i64,
        /// Notes for a reader, one per line.
        notes: Option<String>,
        /// `folded-deflate`.
        encoding: String,
        /// The folded stacks, encoded.
        data: Vec<u8>,
    }
}

/// Everything about one test, written in one transaction by [`crate::Store::write_run`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunWrite {
    /// The `runs` row.
    pub run: RunRecord,
    /// Per-interval results.
    pub intervals: Vec<IntervalRecord>,
    /// Whole-run histograms.
    pub histograms: Vec<HistogramRecord>,
    /// Per-interval histograms (intervals with values only).
    #[serde(default)]
    pub interval_histograms: Vec<IntervalHistogramRecord>,
    /// OS and PostgreSQL samples.
    pub metrics: Vec<MetricSample>,
    /// Descriptions of the metric names used (upserted).
    pub metric_info: Vec<MetricInfo>,
    /// Counters before/after.
    pub counters: Vec<CounterRecord>,
    /// Non-default settings.
    pub settings: Vec<SettingRecord>,
    /// Environment manifest (JSON).
    pub environment: Option<serde_json::Value>,
    /// Warnings about this run (`run_id`/`set_id` are filled in on write).
    pub warnings: Vec<WarningRecord>,
    /// Named facts (`run_facts`, schema with 0005_run_facts.sql).
    #[serde(default)]
    pub facts: Vec<FactRecord>,
    /// Profiles of the measured window (`run_profiles`, schema with
    /// 0006_run_profiles.sql).
    #[serde(default)]
    pub profiles: Vec<ProfileRecord>,
}

/// A run with everything stored about it, as returned by [`crate::Store::load_run`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadedRun {
    /// The `runs` row (id and columns).
    pub run: Run,
    /// Its target.
    pub target: Option<Target>,
    /// Per-interval results, by time.
    pub intervals: Vec<IntervalRecord>,
    /// Whole-run histograms.
    pub histograms: Vec<HistogramRecord>,
    /// Samples, by metric then time.
    pub metrics: Vec<MetricSample>,
    /// Counters.
    pub counters: Vec<CounterRecord>,
    /// Non-default settings.
    pub settings: Vec<SettingRecord>,
    /// Environment manifest.
    pub environment: Option<serde_json::Value>,
    /// Warnings about the run.
    pub warnings: Vec<WarningRecord>,
    /// Named facts (empty on stores older than `run_facts`).
    #[serde(default)]
    pub facts: Vec<FactRecord>,
}

/// The latency percentile ranks a run stores in its own columns
/// (`latency_p50_ms` .. `latency_p999_ms`).
pub const STORED_PERCENTILES: [f64; 5] = [50.0, 90.0, 95.0, 99.0, 99.9];

impl RunRecord {
    /// The stored latency (ms) at percentile `rank`, one of [`STORED_PERCENTILES`]
    /// (`None` for another rank or when not measured).
    pub fn latency_percentile_ms(&self, rank: f64) -> Option<f64> {
        match rank {
            50.0 => self.latency_p50_ms,
            90.0 => self.latency_p90_ms,
            95.0 => self.latency_p95_ms,
            99.0 => self.latency_p99_ms,
            99.9 => self.latency_p999_ms,
            _ => None,
        }
    }

    /// Sets every stored latency percentile column: `at(rank)` is the value (ms) at
    /// each of [`STORED_PERCENTILES`].
    pub fn set_latency_percentiles(&mut self, mut at: impl FnMut(f64) -> Option<f64>) {
        self.latency_p50_ms = at(50.0);
        self.latency_p90_ms = at(90.0);
        self.latency_p95_ms = at(95.0);
        self.latency_p99_ms = at(99.0);
        self.latency_p999_ms = at(99.9);
    }

    /// The values no run can have — a negative or non-finite rate, latency, duration
    /// or count — as `name = value` texts (empty when there is none). A damaged or
    /// hand-edited store can hold them; readers flag them rather than compute with them.
    pub fn impossible_values(&self) -> Vec<String> {
        let reals = [
            ("tps", self.tps),
            ("measured_s", self.measured_s),
            ("latency_mean_ms", self.latency_mean_ms),
            ("latency_stddev_ms", self.latency_stddev_ms),
            ("latency_min_ms", self.latency_min_ms),
            ("latency_p50_ms", self.latency_p50_ms),
            ("latency_p90_ms", self.latency_p90_ms),
            ("latency_p95_ms", self.latency_p95_ms),
            ("latency_p99_ms", self.latency_p99_ms),
            ("latency_p999_ms", self.latency_p999_ms),
            ("latency_max_ms", self.latency_max_ms),
            ("lag_mean_ms", self.lag_mean_ms),
            ("lag_max_ms", self.lag_max_ms),
        ];
        let counts = [
            ("transactions", self.transactions),
            ("failures", self.failures),
            ("serialization_failures", self.serialization_failures),
            ("deadlock_failures", self.deadlock_failures),
            ("retried", self.retried),
            ("retries", self.retries),
            ("skipped", self.skipped),
            ("late", self.late),
            ("clients", self.clients),
            ("threads", self.threads),
        ];
        let mut out: Vec<String> = reals
            .iter()
            .filter_map(|(name, v)| {
                v.filter(|v| !(v.is_finite() && *v >= 0.0))
                    .map(|v| format!("{name} = {v}"))
            })
            .collect();
        out.extend(
            counts
                .iter()
                .filter_map(|(name, v)| v.filter(|v| *v < 0).map(|v| format!("{name} = {v}"))),
        );
        out
    }
}

#[cfg(test)]
mod impossible_tests {
    use super::RunRecord;

    #[test]
    fn negative_and_non_finite_values_are_impossible() {
        let ok = RunRecord {
            tps: Some(0.0),
            transactions: Some(0),
            latency_p99_ms: Some(1.5),
            ..Default::default()
        };
        assert!(ok.impossible_values().is_empty());
        let bad = RunRecord {
            tps: Some(-3.0),
            latency_p99_ms: Some(f64::NAN),
            lag_max_ms: Some(f64::INFINITY),
            failures: Some(-1),
            ..ok
        };
        assert_eq!(
            bad.impossible_values(),
            [
                "tps = -3",
                "latency_p99_ms = NaN",
                "lag_max_ms = inf",
                "failures = -1"
            ]
        );
    }
}

/// Which runs [`crate::Store::list_runs`] returns.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    /// Only this set.
    pub set_id: Option<i64>,
    /// Only this target id.
    pub target_id: Option<i64>,
    /// Only this status.
    pub status: Option<String>,
}

/// Current time as RFC 3339 UTC text with milliseconds (`2026-11-22T00:41:22.123Z`).
pub fn now_rfc3339() -> String {
    epoch_to_rfc3339(now_epoch())
}

/// Current time as fractional Unix epoch seconds.
pub fn now_epoch() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Formats epoch seconds as RFC 3339 UTC text with milliseconds (always three digits,
/// so stored times sort as text). An instant past the years ±9999 is clamped to the
/// nearest end of that range.
pub fn epoch_to_rfc3339(epoch: f64) -> String {
    let millis = (epoch * 1000.0).round() as i128;
    let at = time::OffsetDateTime::from_unix_timestamp_nanos(millis.saturating_mul(1_000_000))
        .unwrap_or(if millis < 0 {
            time::PrimitiveDateTime::MIN.assume_utc()
        } else {
            time::PrimitiveDateTime::MAX.assume_utc()
        });
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second(),
        at.millisecond()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_formats_known_instants() {
        assert_eq!(epoch_to_rfc3339(0.0), "1970-01-01T00:00:00.000Z");
        assert_eq!(epoch_to_rfc3339(951_782_400.5), "2000-02-29T00:00:00.500Z");
        assert_eq!(
            epoch_to_rfc3339(1_795_307_482.123),
            "2026-11-22T00:31:22.123Z"
        );
        assert_eq!(epoch_to_rfc3339(-0.25), "1969-12-31T23:59:59.750Z");
        assert_eq!(
            epoch_to_rfc3339(4_107_542_400.0),
            "2100-03-01T00:00:00.000Z"
        );
        assert!(epoch_to_rfc3339(1e18).starts_with("9999-12-31T23:59:59.999"));
    }

    #[test]
    fn record_round_trips_through_a_row() {
        let m = MetricSample {
            ts: 1.5,
            metric: "os.cpu.user_pct".into(),
            value: 12.0,
        };
        let row = Row(m.values());
        assert_eq!(MetricSample::from_row(&row, 0).unwrap(), m);
        assert_eq!(MetricSample::COLUMNS, &["ts", "metric", "value"]);
    }
}

/// A stored server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Server {
    /// Row id.
    pub id: i64,
    /// The row's columns, without the id.
    #[serde(flatten)]
    pub record: ServerRecord,
}

/// A stored warning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Warning {
    /// Row id.
    pub id: i64,
    /// The row's columns, without the id.
    #[serde(flatten)]
    pub record: WarningRecord,
}
