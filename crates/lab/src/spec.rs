//! The campaign file (TOML): what to run, against which servers, in which order.
//!
//! This module owns parsing and validation only; [`crate::matrix`] expands a
//! [`CampaignSpec`] into the ordered list of tests. Every error names the key and says
//! what would be valid. See `examples/*.toml` at the repository root for documented
//! examples.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Errors in a campaign file.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// The file could not be read.
    #[error("cannot read campaign file {path}: {source}")]
    Read {
        /// The campaign file, as given on the command line.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// TOML syntax or an unknown/mistyped key.
    #[error("campaign file {path}: {message}")]
    Toml {
        /// The campaign file, as given on the command line.
        path: String,
        /// The TOML parser's message (with line and column).
        message: String,
    },
    /// A value is not valid.
    #[error("campaign file {path}: {key}: {message}")]
    Invalid {
        /// The campaign file, as given on the command line.
        path: String,
        /// The key, e.g. `matrix.clients`.
        key: String,
        /// What is wrong and what would be valid.
        message: String,
    },
}

/// A whole campaign file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CampaignSpec {
    /// `[campaign]`: name, description, order.
    pub campaign: CampaignSection,
    /// `[[target]]`: servers to test (at least one).
    #[serde(rename = "target")]
    pub targets: Vec<TargetSpec>,
    /// `[matrix]`: the values crossed with each other.
    pub matrix: MatrixSpec,
    /// `[run]`: options every test shares.
    #[serde(default)]
    pub run: RunSection,
    /// `[init]`: how `-i` builds each scale.
    #[serde(default)]
    pub init: InitSection,
    /// `[sampling]`: OS and PostgreSQL metric sampling.
    #[serde(default)]
    pub sampling: SamplingSection,
    /// `[hygiene]`: what is done between tests.
    #[serde(default)]
    pub hygiene: HygieneSection,
    /// `[thresholds]`: CI gates checked on every test (`p99 = "< 20ms"`,
    /// `tps = "> 5000"`; see [`crate::thresholds`]). Not part of the set's identity.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub thresholds: BTreeMap<String, String>,
    /// `[hooks]`: shell commands run at set start and around each test.
    #[serde(default, skip_serializing_if = "HooksSection::is_empty")]
    pub hooks: HooksSection,
    /// `[capacity]`: instead of the matrix's rates, search each cell for the highest
    /// rate that meets a latency objective.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacitySection>,
}

/// `[capacity]`: the highest rate (`-R`) whose latency percentile stays under a bound,
/// found per matrix cell by doubling the rate from `start_rate` until the objective is
/// missed, then bisecting until the passing and failing rates are within `resolution`.
/// Each step runs `repeats` times; a step passes when the median of its runs'
/// percentile is under the bound, every run ended ok, and the runs kept up with the rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacitySection {
    /// The percentile judged: 50, 90, 95, 99 or 99.9 (default 99).
    #[serde(default = "ninety_nine")]
    pub percentile: f64,
    /// The latency objective, e.g. "10ms".
    pub bound: DurationValue,
    /// The first rate tried, in tps.
    pub start_rate: f64,
    /// The highest rate tried (default: 1000 × start_rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rate: Option<f64>,
    /// Runs per step (default 3).
    #[serde(default = "three")]
    pub repeats: u32,
    /// Stop when the failing rate is within this fraction above the passing one
    /// (default 0.05).
    #[serde(default = "five_hundredths")]
    pub resolution: f64,
}

fn ninety_nine() -> f64 {
    99.0
}
fn three() -> u32 {
    3
}
fn five_hundredths() -> f64 {
    0.05
}

impl CapacitySection {
    /// The objective in milliseconds.
    pub fn bound_ms(&self) -> f64 {
        self.bound.seconds().unwrap_or(0.0) * 1000.0
    }

    /// The highest rate tried.
    pub fn max_rate(&self) -> f64 {
        self.max_rate.unwrap_or(self.start_rate * 1000.0)
    }
}

/// `[hooks]`: shell commands (`sh -c`) run by the campaign, pgbench-tools' per-test
/// reset done properly: each has a timeout, and its exit status, duration and output are
/// stored with the test. A failing `before_test` or `after_test` fails that test only; a
/// failing `set_start` stops the campaign before its first test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HooksSection {
    /// Run once when a campaign invocation starts (also on resume), before any test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_start: Option<String>,
    /// Run before each test (after its scale is loaded): restart the server, drop the
    /// caches, `pg_prewarm`…
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_test: Option<String>,
    /// Run after each test, before it is stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_test: Option<String>,
    /// How long a hook may run before it is killed and counted as failed (default 10
    /// minutes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<DurationValue>,
}

impl HooksSection {
    /// True when no hook is set.
    pub fn is_empty(&self) -> bool {
        self.set_start.is_none() && self.before_test.is_none() && self.after_test.is_none()
    }

    /// The timeout of each hook.
    pub fn timeout(&self) -> std::time::Duration {
        let secs = self
            .timeout
            .as_ref()
            .and_then(|t| t.seconds().ok())
            .unwrap_or(600.0);
        std::time::Duration::from_secs_f64(secs)
    }
}

/// `[campaign]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CampaignSection {
    /// Name of the campaign (and of its set in the store).
    pub name: String,
    /// Free text stored with the set.
    #[serde(default)]
    pub description: Option<String>,
    /// Seed of the test order shuffle and of each test's `--random-seed`.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Alternate targets test by test (A B A B …) instead of running all of A first.
    #[serde(default = "yes")]
    pub interleave_targets: bool,
    /// Shuffle the order of matrix cells within each repeat round (seeded), so drift
    /// over time does not masquerade as a difference between cells.
    #[serde(default = "yes")]
    pub shuffle: bool,
    /// A/A noise check: run the first target a second time as an identical target
    /// named "NAME (A-A)", interleaved with the others. Comparing the two measures the
    /// machine's noise floor; the report and `pgsurge compare --aa` show it next to
    /// the real comparison.
    #[serde(default)]
    pub aa_check: bool,
}

fn default_seed() -> u64 {
    1
}
fn yes() -> bool {
    true
}

/// `[[target]]`: an existing server (`conninfo`) or a throwaway one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSpec {
    /// Label, unique in the campaign.
    pub name: String,
    /// Existing server: libpq connection string or URI of the benchmark database.
    #[serde(default)]
    pub conninfo: Option<String>,
    /// Throwaway server from binaries in this directory.
    #[serde(default)]
    pub pg_bin: Option<PathBuf>,
    /// Throwaway server of this version (local binaries of that major, else fetched).
    #[serde(default)]
    pub pg_version: Option<String>,
    /// Settings for a throwaway server (`postgresql.auto.conf`).
    #[serde(default)]
    pub settings: BTreeMap<String, toml::Value>,
    /// initdb `--data-checksums` for a throwaway server.
    #[serde(default)]
    pub data_checksums: bool,
    /// Data directory of a throwaway server (default: a temporary directory, which is
    /// in memory where the temporary directory is tmpfs). Kept after the campaign;
    /// reused when it holds a cluster of the same major version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_dir: Option<PathBuf>,
    /// Existing server: URL of a Prometheus node_exporter on the server's host
    /// (`http://host:9100/metrics`); empty = none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_exporter: Option<String>,
    /// Where the server host's OS metrics come from: `auto` (default: node_exporter if
    /// given, else local for a throwaway or loopback/socket server, else the server's
    /// own files when the role may read them, else none), `local`, `node_exporter`,
    /// `pg_read_file` or `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_metrics: Option<String>,
    /// When to build the pgbench tables: `if-needed` (default: only when the tables of
    /// the scale are not there with the right size), `always`, `never`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init: Option<String>,
}

/// `init` of a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitMode {
    /// Re-initialize before the first test of every scale.
    Always,
    /// Only when the tables are missing or of another size.
    IfNeeded,
    /// Never: a test whose tables are missing fails.
    Never,
}

impl InitMode {
    /// Parses `always`, `if-needed`, `never`.
    pub fn parse(s: &str) -> Option<InitMode> {
        match s {
            "always" => Some(InitMode::Always),
            "if-needed" => Some(InitMode::IfNeeded),
            "never" => Some(InitMode::Never),
            _ => None,
        }
    }
}

impl CampaignSection {
    /// A `[campaign]` section with `name` and every other key at its default.
    pub fn named(name: &str) -> CampaignSection {
        CampaignSection {
            name: name.to_owned(),
            description: None,
            seed: default_seed(),
            interleave_targets: true,
            shuffle: true,
            aa_check: false,
        }
    }
}

impl TargetSpec {
    /// A throwaway-server target named `name`, every other key at its default
    /// (local binaries found by discovery, default settings).
    pub fn throwaway(name: &str) -> TargetSpec {
        TargetSpec {
            name: name.to_owned(),
            conninfo: None,
            pg_bin: None,
            pg_version: None,
            settings: BTreeMap::new(),
            data_checksums: false,
            data_dir: None,
            node_exporter: None,
            host_metrics: None,
            init: None,
        }
    }

    /// True for a throwaway server (no `conninfo`).
    pub fn is_throwaway(&self) -> bool {
        self.conninfo.is_none()
    }

    /// The target's init mode (validated: unknown text is refused at load).
    pub fn init_mode(&self) -> InitMode {
        self.init
            .as_deref()
            .and_then(InitMode::parse)
            .unwrap_or(InitMode::IfNeeded)
    }

    /// The node_exporter URL, when one is given (an empty string is none).
    pub fn node_exporter_url(&self) -> Option<&str> {
        self.node_exporter
            .as_deref()
            .map(str::trim)
            .filter(|u| !u.is_empty())
    }

    /// Settings as strings (`shared_buffers = "1GB"`, `fsync = false` → "off"...).
    pub fn settings_text(&self) -> Vec<(String, String)> {
        self.settings
            .iter()
            .map(|(k, v)| {
                let s = match v {
                    toml::Value::String(s) => s.clone(),
                    toml::Value::Boolean(b) => if *b { "on" } else { "off" }.to_string(),
                    other => other.to_string(),
                };
                (k.clone(), s)
            })
            .collect()
    }
}

/// `[matrix]`: every combination of these values is one test (per target and repeat).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixSpec {
    /// Scale factors (`-s` of `-i`); the database is re-initialized when it changes.
    pub scales: Vec<u32>,
    /// Client counts (`-c`).
    pub clients: Vec<u32>,
    /// Workloads: built-in names, `{ file = "x.sql" }`, or weighted mixes.
    #[serde(default = "default_scripts")]
    pub scripts: Vec<ScriptSpec>,
    /// Total target rates in transactions per second (`-R`); 0 = unthrottled.
    #[serde(default)]
    pub rates: Vec<f64>,
    /// Per-client target rates; the total rate is clients × rate. Not with `rates`.
    #[serde(default)]
    pub rates_per_client: Vec<f64>,
    /// How many times each cell runs.
    #[serde(default = "one")]
    pub repeats: u32,
    /// Query modes to run each cell in (replaces `run.query_mode`; adds `/M<mode>` to
    /// test keys).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub query_modes: Vec<String>,
    /// Thread counts (`-j`, clamped to the clients; replaces `run.threads`; adds `/j<n>`
    /// to test keys).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<u32>,
    /// Server settings swept over, e.g. `{ shared_buffers = ["128MB", "1GB"] }`: every
    /// combination is a dimension (adds `/<name>=<value>` to test keys). A throwaway
    /// server is restarted with each value (its data kept when it has a `data_dir`,
    /// otherwise initialized again); on an existing server each test's sessions get the
    /// value (`options=-c name=value`), so only settings a session may change are allowed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, Vec<toml::Value>>,
}

impl MatrixSpec {
    /// A matrix of `scales` × `clients` × `scripts`, no rates, one repeat.
    pub fn new(scales: Vec<u32>, clients: Vec<u32>, scripts: Vec<ScriptSpec>) -> MatrixSpec {
        MatrixSpec {
            scales,
            clients,
            scripts,
            rates: Vec::new(),
            rates_per_client: Vec::new(),
            repeats: one(),
            query_modes: Vec::new(),
            threads: Vec::new(),
            settings: BTreeMap::new(),
        }
    }
}

fn one() -> u32 {
    1
}
fn default_scripts() -> Vec<ScriptSpec> {
    vec![ScriptSpec::Builtin("tpcb-like".into())]
}

/// One workload of the matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ScriptSpec {
    /// A built-in script name: `tpcb-like`, `simple-update`, `select-only`.
    Builtin(String),
    /// A weighted mix of built-in and file scripts, with a display name.
    Mix {
        /// Display name of the mix.
        name: String,
        /// The scripts of the mix with their weights (`-b`/`-f NAME@W`).
        mix: Vec<ScriptPart>,
    },
    /// One built-in or file script (with an optional weight, ignored alone).
    Part(ScriptPart),
}

/// One part of a workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptPart {
    /// Built-in script name.
    #[serde(default)]
    pub builtin: Option<String>,
    /// Script file, relative to the campaign file.
    #[serde(default)]
    pub file: Option<PathBuf>,
    /// Weight in a mix (`@W`).
    #[serde(default = "one")]
    pub weight: u32,
}

/// How long each test runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    /// `-T` seconds.
    Duration(u32),
    /// `-t` transactions per client.
    Transactions(u32),
}

/// `[run]`: options shared by every test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSection {
    /// Duration of each test: seconds or a string such as "90s", "2m".
    #[serde(default)]
    pub duration: Option<DurationValue>,
    /// Transactions per client instead of a duration.
    #[serde(default)]
    pub transactions: Option<u32>,
    /// Threads: a number, or "auto" (min(clients, CPUs)).
    #[serde(default)]
    pub threads: Option<ThreadsValue>,
    /// simple / extended / prepared.
    #[serde(default = "default_mode")]
    pub query_mode: String,
    /// `-L`: transactions slower than this count as late (skipped under a rate).
    #[serde(default)]
    pub latency_limit: Option<DurationValue>,
    /// Time run before each test and discarded (a separate, unrecorded run).
    #[serde(default)]
    pub warmup: Option<DurationValue>,
    /// `--max-tries`.
    #[serde(default)]
    pub max_tries: Option<u32>,
    /// `-D NAME=VALUE` for every script.
    #[serde(default)]
    pub defines: BTreeMap<String, toml::Value>,
    /// Database name used on throwaway servers.
    #[serde(default = "default_db")]
    pub database: String,
    /// Extra pgbench flags (e.g. ["--failures-detailed"]); only the flags
    /// [`crate::execute::extra_flags`] lists, each mapped to a typed run option.
    #[serde(default)]
    pub extra_args: Vec<String>,
    /// How long a test that cannot reach its server waits for it to come back
    /// (retrying with back-off) before the server's remaining tests are failed
    /// (default 3 minutes; 0 = do not wait). Not part of the campaign's identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outage_wait: Option<DurationValue>,
}

fn default_mode() -> String {
    "simple".into()
}
fn default_db() -> String {
    "pgsurge".into()
}

impl Default for RunSection {
    fn default() -> Self {
        RunSection {
            duration: None,
            transactions: None,
            threads: None,
            query_mode: default_mode(),
            latency_limit: None,
            warmup: None,
            max_tries: None,
            defines: BTreeMap::new(),
            database: default_db(),
            extra_args: Vec::new(),
            outage_wait: None,
        }
    }
}

/// A duration: integer seconds or text with a unit (ms, s, m, h).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum DurationValue {
    /// Seconds.
    Seconds(f64),
    /// "500ms", "10s", "2m", "1h".
    Text(String),
}

impl DurationValue {
    /// The duration in seconds, or a message saying what is wrong.
    pub fn seconds(&self) -> Result<f64, String> {
        match self {
            DurationValue::Seconds(s) if *s >= 0.0 && s.is_finite() => Ok(*s),
            DurationValue::Seconds(s) => Err(format!("{s} is not a valid duration")),
            DurationValue::Text(t) => parse_duration(t),
        }
    }
}

/// Parses a bare number of seconds (`30`, `1.5`) or a duration with units, also
/// combined: `500ms`, `90s`, `1m30s`, `2h`, `1h 30m` (humantime's syntax).
pub fn parse_duration(t: &str) -> Result<f64, String> {
    let t = t.trim();
    if let Ok(n) = t.parse::<f64>() {
        return if n >= 0.0 && n.is_finite() {
            Ok(n)
        } else {
            Err(format!("\"{t}\" is not a valid duration"))
        };
    }
    humantime::parse_duration(t)
        .map(|d| d.as_secs_f64())
        .map_err(|e| {
            format!("\"{t}\" is not a duration ({e}; use e.g. 30, \"30s\", \"500ms\", \"1m30s\", \"2h\")")
        })
}

/// Threads: a number or "auto".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ThreadsValue {
    /// A fixed count (clamped to the client count).
    Count(u32),
    /// "auto".
    Auto(String),
}

/// `[init]`: how each scale is built; `[init.scale.N]` overrides for scale N.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InitSection {
    /// "client" (COPY from the client, `-I dtgvp`) or "server" (`-I dtGvp`).
    #[serde(default)]
    pub method: Option<String>,
    /// `--partitions`.
    #[serde(default)]
    pub partitions: Option<u32>,
    /// `--partition-method` (range / hash).
    #[serde(default)]
    pub partition_method: Option<String>,
    /// `-F`.
    #[serde(default)]
    pub fillfactor: Option<u32>,
    /// `--unlogged-tables`.
    #[serde(default)]
    pub unlogged: Option<bool>,
    /// `--foreign-keys`.
    #[serde(default)]
    pub foreign_keys: Option<bool>,
    /// `--init-jobs`: connections that load, vacuum and index `pgbench_accounts`
    /// (1 when absent: pgbench's serial `-i`).
    #[serde(default)]
    pub jobs: Option<u32>,
    /// Overrides per scale (keys are scale numbers as strings).
    #[serde(default)]
    pub scale: BTreeMap<String, InitOptionsSpec>,
}

/// Options of `-i`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InitOptionsSpec {
    /// "client" (COPY from the client, `-I dtgvp`) or "server" (`-I dtGvp`).
    #[serde(default)]
    pub method: Option<String>,
    /// `--partitions`.
    #[serde(default)]
    pub partitions: Option<u32>,
    /// `--partition-method` (range / hash).
    #[serde(default)]
    pub partition_method: Option<String>,
    /// `-F`.
    #[serde(default)]
    pub fillfactor: Option<u32>,
    /// `--unlogged-tables`.
    #[serde(default)]
    pub unlogged: Option<bool>,
    /// `--foreign-keys`.
    #[serde(default)]
    pub foreign_keys: Option<bool>,
    /// `--init-jobs`: connections that load, vacuum and index `pgbench_accounts`
    /// (1 when absent: pgbench's serial `-i`).
    #[serde(default)]
    pub jobs: Option<u32>,
}

impl InitSection {
    /// The effective options for `scale` (override fields win over defaults).
    pub fn for_scale(&self, scale: u32) -> InitOptionsSpec {
        let d = InitOptionsSpec {
            method: self.method.clone(),
            partitions: self.partitions,
            partition_method: self.partition_method.clone(),
            fillfactor: self.fillfactor,
            unlogged: self.unlogged,
            foreign_keys: self.foreign_keys,
            jobs: self.jobs,
        };
        match self.scale.get(&scale.to_string()) {
            None => d,
            Some(o) => InitOptionsSpec {
                method: o.method.clone().or_else(|| d.method.clone()),
                partitions: o.partitions.or(d.partitions),
                partition_method: o
                    .partition_method
                    .clone()
                    .or_else(|| d.partition_method.clone()),
                fillfactor: o.fillfactor.or(d.fillfactor),
                unlogged: o.unlogged.or(d.unlogged),
                foreign_keys: o.foreign_keys.or(d.foreign_keys),
                jobs: o.jobs.or(d.jobs),
            },
        }
    }
}

/// `[sampling]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SamplingSection {
    /// Sample OS metrics from /proc (client host = server host for throwaway servers).
    #[serde(default = "yes")]
    pub os: bool,
    /// Sample PostgreSQL statistics views.
    #[serde(default = "yes")]
    pub pg: bool,
    /// Seconds between samples.
    #[serde(default = "one_f")]
    pub interval: f64,
    /// Block devices to sample (default: every non-virtual device).
    #[serde(default)]
    pub devices: Vec<String>,
}

fn one_f() -> f64 {
    1.0
}

impl Default for SamplingSection {
    fn default() -> Self {
        SamplingSection {
            os: true,
            pg: true,
            interval: 1.0,
            devices: Vec::new(),
        }
    }
}

/// `[hygiene]`: the state reset before each test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HygieneSection {
    /// `TRUNCATE pgbench_history` before each test.
    #[serde(default = "yes")]
    pub truncate_history: bool,
    /// `VACUUM ANALYZE` of the pgbench tables before each test.
    #[serde(default = "yes")]
    pub vacuum: bool,
    /// `CHECKPOINT` (and wait for it) before each test.
    #[serde(default = "yes")]
    pub checkpoint: bool,
    /// `pg_stat_reset()` (and shared stats) before each test. Default: on for
    /// throwaway servers, off for existing ones (a shared server's cluster-wide
    /// statistics are left alone; deltas come from the before/after snapshots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_stats: Option<bool>,
    /// Server commits may differ from the client's count by this many percent before a
    /// warning is stored.
    #[serde(default = "five")]
    pub commit_tolerance_pct: f64,
}

fn five() -> f64 {
    5.0
}

impl Default for HygieneSection {
    fn default() -> Self {
        HygieneSection {
            truncate_history: true,
            vacuum: true,
            checkpoint: true,
            reset_stats: None,
            commit_tolerance_pct: 5.0,
        }
    }
}

impl HygieneSection {
    /// Whether statistics are reset before each test on a throwaway (true) or existing
    /// (false) server.
    pub fn resets_stats(&self, throwaway: bool) -> bool {
        self.reset_stats.unwrap_or(throwaway)
    }
}

/// Replaces `${VAR}` and `${VAR:-default}` in a campaign file's text (`$$` is a literal
/// `$`; comment lines are left alone). A variable that is unset, with no default, is
/// an error naming it and its line.
pub fn interpolate(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    for (no, line) in text.split_inclusive('\n').enumerate() {
        if line.trim_start().starts_with('#') {
            out.push_str(line);
            continue;
        }
        interpolate_line(line, no + 1, env, &mut out)?;
    }
    Ok(out)
}

fn interpolate_line(
    line: &str,
    no: usize,
    env: &dyn Fn(&str) -> Option<String>,
    out: &mut String,
) -> Result<(), String> {
    let mut rest = line;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(r) = after.strip_prefix('$') {
            out.push('$');
            rest = r;
            continue;
        }
        let Some(body) = after.strip_prefix('{') else {
            out.push('$');
            rest = after;
            continue;
        };
        let end = body
            .find('}')
            .ok_or_else(|| format!("line {no}: \"${{\" without a closing \"}}\""))?;
        let inner = &body[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "line {no}: \"${{{inner}}}\" is not a variable reference (use ${{NAME}} or ${{NAME:-default}})"
            ));
        }
        // As in the shell, `:-` also replaces a variable set to the empty string.
        let value = env(name).filter(|v| default.is_none() || !v.is_empty());
        match value.or_else(|| default.map(str::to_string)) {
            Some(v) => out.push_str(&v),
            None => {
                return Err(format!(
                    "line {no}: environment variable {name} is not set (set it, or write ${{{name}:-default}})"
                ))
            }
        }
        rest = &body[end + 1..];
    }
    out.push_str(rest);
    Ok(())
}

/// A parsed and validated campaign with where it came from.
#[derive(Debug, Clone)]
pub struct Campaign {
    /// The parsed, validated campaign (after `${VAR}` interpolation).
    pub spec: CampaignSpec,
    /// The file's text, verbatim (stored with the set).
    pub text: String,
    /// Directory script files are relative to.
    pub base_dir: PathBuf,
    /// Path of the file, for messages.
    pub path: String,
}

impl Campaign {
    /// Reads and validates a campaign file.
    pub fn load(path: &Path) -> Result<Campaign, SpecError> {
        let text = std::fs::read_to_string(path).map_err(|source| SpecError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Campaign::parse(&text, &path.display().to_string(), &base)
    }

    /// Parses and validates campaign text.
    pub fn parse(text: &str, path: &str, base_dir: &Path) -> Result<Campaign, SpecError> {
        Campaign::parse_with_env(text, path, base_dir, &|k| std::env::var(k).ok())
    }

    /// A campaign built in code (no file): validated like a file, and stored with the
    /// TOML form of `spec` as its text. `path` names it in messages.
    pub fn from_spec(
        spec: CampaignSpec,
        path: &str,
        base_dir: &Path,
    ) -> Result<Campaign, SpecError> {
        let text = toml::to_string(&spec).map_err(|e| SpecError::Toml {
            path: path.to_string(),
            message: e.to_string(),
        })?;
        let c = Campaign {
            spec,
            text,
            base_dir: base_dir.to_path_buf(),
            path: path.to_string(),
        };
        c.validate()?;
        Ok(c)
    }

    /// [`Campaign::parse`] with `${VAR}` / `${VAR:-default}` taken from `env`. The
    /// stored text keeps the references, not the values (a password in a variable
    /// stays out of the store).
    pub fn parse_with_env(
        text: &str,
        path: &str,
        base_dir: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Campaign, SpecError> {
        let expanded = interpolate(text, env).map_err(|message| SpecError::Toml {
            path: path.to_string(),
            message,
        })?;
        let spec: CampaignSpec = toml::from_str(&expanded).map_err(|e| SpecError::Toml {
            path: path.to_string(),
            message: e.to_string().trim_end().to_string(),
        })?;
        let mut spec = spec;
        if spec.campaign.aa_check {
            if let Some(first) = spec.targets.first() {
                let mut twin = first.clone();
                twin.name = format!("{} (A-A)", first.name);
                spec.targets.insert(1, twin);
            }
        }
        let c = Campaign {
            spec,
            text: text.to_string(),
            base_dir: base_dir.to_path_buf(),
            path: path.to_string(),
        };
        c.validate()?;
        Ok(c)
    }

    fn invalid(&self, key: &str, message: impl Into<String>) -> SpecError {
        SpecError::Invalid {
            path: self.path.clone(),
            key: key.to_string(),
            message: message.into(),
        }
    }

    fn validate(&self) -> Result<(), SpecError> {
        let spec = &self.spec;
        if spec.campaign.name.trim().is_empty() {
            return Err(self.invalid("campaign.name", "must not be empty"));
        }
        if spec.targets.is_empty() {
            return Err(self.invalid("target", "at least one [[target]] is needed"));
        }
        let mut names = std::collections::BTreeSet::new();
        for (i, t) in spec.targets.iter().enumerate() {
            let key = format!("target[{i}]");
            if t.name.is_empty() || t.name.contains('/') {
                return Err(self.invalid(
                    &format!("{key}.name"),
                    "must be non-empty and contain no '/'",
                ));
            }
            if !names.insert(t.name.clone()) {
                return Err(self.invalid(
                    &format!("{key}.name"),
                    format!("\"{}\" is used twice", t.name),
                ));
            }
            if t.conninfo.is_some()
                && (t.pg_bin.is_some() || t.pg_version.is_some() || !t.settings.is_empty())
            {
                return Err(self.invalid(
                    &key,
                    "give either conninfo (an existing server) or pg_bin/pg_version/settings (a throwaway server), not both",
                ));
            }
            if t.pg_bin.is_some() && t.pg_version.is_some() {
                return Err(self.invalid(&key, "give pg_bin or pg_version, not both"));
            }
            if t.conninfo.is_some() && t.data_dir.is_some() {
                return Err(self.invalid(
                    &format!("{key}.data_dir"),
                    "data_dir is for throwaway servers; an existing server keeps its own",
                ));
            }
            if let Some(i) = t.init.as_deref().filter(|i| InitMode::parse(i).is_none()) {
                return Err(self.invalid(
                    &format!("{key}.init"),
                    format!("\"{i}\" is not an init mode (always, if-needed or never)"),
                ));
            }
            if let Some(h) = t
                .host_metrics
                .as_deref()
                .filter(|h| !["auto", "local", "node_exporter", "pg_read_file", "none"].contains(h))
            {
                return Err(self.invalid(
                    &format!("{key}.host_metrics"),
                    format!("\"{h}\" is not a source (auto, local, node_exporter, pg_read_file or none)"),
                ));
            }
            if let Some(u) = t.node_exporter_url().filter(|u| !u.starts_with("http://")) {
                return Err(self.invalid(
                    &format!("{key}.node_exporter"),
                    format!("\"{u}\" is not an http:// URL (e.g. http://db1:9100/metrics)"),
                ));
            }
            if t.host_metrics.as_deref() == Some("node_exporter") && t.node_exporter_url().is_none()
            {
                return Err(self.invalid(
                    &format!("{key}.host_metrics"),
                    "node_exporter needs the target's node_exporter URL",
                ));
            }
        }
        let matrix = &spec.matrix;
        if matrix.scales.is_empty() || matrix.scales.contains(&0) {
            return Err(self.invalid("matrix.scales", "needs at least one scale, each ≥ 1"));
        }
        if matrix.clients.is_empty() || matrix.clients.contains(&0) {
            return Err(self.invalid(
                "matrix.clients",
                "needs at least one client count, each ≥ 1",
            ));
        }
        if matrix.scripts.is_empty() {
            return Err(self.invalid("matrix.scripts", "needs at least one script"));
        }
        if matrix.repeats == 0 {
            return Err(self.invalid("matrix.repeats", "must be ≥ 1"));
        }
        if !matrix.rates.is_empty() && !matrix.rates_per_client.is_empty() {
            return Err(self.invalid("matrix", "give rates (total) or rates_per_client, not both"));
        }
        for r in matrix.rates.iter().chain(&matrix.rates_per_client) {
            if !(r.is_finite() && *r >= 0.0) {
                return Err(self.invalid(
                    "matrix.rates",
                    format!("{r} is not a rate (tps ≥ 0; 0 = unthrottled)"),
                ));
            }
        }
        if let Some(cap) = &spec.capacity {
            if !matrix.rates.is_empty() || !matrix.rates_per_client.is_empty() {
                return Err(self.invalid(
                    "capacity",
                    "a capacity search chooses the rates: remove matrix.rates / rates_per_client",
                ));
            }
            if ![50.0, 90.0, 95.0, 99.0, 99.9].contains(&cap.percentile) {
                return Err(self.invalid("capacity.percentile", "one of 50, 90, 95, 99, 99.9"));
            }
            match cap.bound.seconds() {
                Ok(s) if s > 0.0 => {}
                Ok(_) => return Err(self.invalid("capacity.bound", "must be more than 0")),
                Err(e) => return Err(self.invalid("capacity.bound", e)),
            }
            if !(cap.start_rate.is_finite() && cap.start_rate >= 1.0) {
                return Err(self.invalid("capacity.start_rate", "a rate ≥ 1 tps"));
            }
            if !(cap.max_rate().is_finite() && cap.max_rate() >= cap.start_rate) {
                return Err(self.invalid("capacity.max_rate", "must be ≥ start_rate"));
            }
            if cap.repeats == 0 {
                return Err(self.invalid("capacity.repeats", "must be ≥ 1"));
            }
            if !(cap.resolution > 0.0 && cap.resolution < 1.0) {
                return Err(self.invalid("capacity.resolution", "a fraction between 0 and 1"));
            }
            if spec.run.duration.is_none() {
                return Err(self.invalid(
                    "capacity",
                    "a capacity search needs run.duration (tests at a rate run for a time)",
                ));
            }
        }
        if let Some(t) = &spec.hooks.timeout {
            match t.seconds() {
                Ok(s) if s > 0.0 => {}
                Ok(_) => return Err(self.invalid("hooks.timeout", "must be more than 0")),
                Err(e) => return Err(self.invalid("hooks.timeout", e)),
            }
        }
        for m in &matrix.query_modes {
            if pgsurge_engine::QueryMode::parse(m).is_none() {
                return Err(self.invalid(
                    "matrix.query_modes",
                    format!("\"{m}\" is not a query mode (simple, extended, prepared)"),
                ));
            }
        }
        if matrix.threads.contains(&0) {
            return Err(self.invalid("matrix.threads", "each thread count must be ≥ 1"));
        }
        for (name, values) in &matrix.settings {
            if values.is_empty() {
                return Err(self.invalid(
                    &format!("matrix.settings.{name}"),
                    "needs at least one value",
                ));
            }
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            {
                return Err(self.invalid(
                    "matrix.settings",
                    format!("\"{name}\" is not a setting name"),
                ));
            }
            for v in values {
                if matches!(v, toml::Value::Array(_) | toml::Value::Table(_)) {
                    return Err(self.invalid(
                        &format!("matrix.settings.{name}"),
                        "values are strings, numbers or booleans",
                    ));
                }
            }
        }
        for (i, sc) in matrix.scripts.iter().enumerate() {
            crate::matrix::Workload::from_spec(sc, &self.base_dir)
                .map_err(|e| self.invalid(&format!("matrix.scripts[{i}]"), e))?;
        }
        let r = &spec.run;
        match (&r.duration, r.transactions) {
            (Some(_), Some(_)) => {
                return Err(self.invalid("run", "give duration or transactions, not both"))
            }
            (Some(d), None) => {
                let secs = d.seconds().map_err(|e| self.invalid("run.duration", e))?;
                if secs < 1.0 || secs.fract() != 0.0 {
                    return Err(
                        self.invalid("run.duration", "must be a whole number of seconds ≥ 1")
                    );
                }
            }
            (None, Some(0)) => return Err(self.invalid("run.transactions", "must be ≥ 1")),
            _ => {}
        }
        if !["simple", "extended", "prepared"].contains(&r.query_mode.as_str()) {
            return Err(self.invalid("run.query_mode", "must be simple, extended or prepared"));
        }
        crate::execute::extra_flags(&r.extra_args)
            .map_err(|e| self.invalid("run.extra_args", e))?;
        if let Some(ThreadsValue::Auto(a)) = &r.threads {
            if a != "auto" {
                return Err(self.invalid("run.threads", "must be a number or \"auto\""));
            }
        }
        if let Some(ThreadsValue::Count(0)) = &r.threads {
            return Err(self.invalid("run.threads", "must be ≥ 1"));
        }
        for (key, v) in [
            ("run.latency_limit", &r.latency_limit),
            ("run.warmup", &r.warmup),
            ("run.outage_wait", &r.outage_wait),
        ] {
            if let Some(v) = v {
                v.seconds().map_err(|e| self.invalid(key, e))?;
            }
        }
        for scale in &matrix.scales {
            let init = spec.init.for_scale(*scale);
            if let Some(method) = &init.method {
                if method != "client" && method != "server" {
                    return Err(self.invalid("init.method", "must be \"client\" or \"server\""));
                }
            }
            if let Some(pm) = &init.partition_method {
                if pm != "range" && pm != "hash" {
                    return Err(
                        self.invalid("init.partition_method", "must be \"range\" or \"hash\"")
                    );
                }
            }
            if let Some(ff) = init.fillfactor {
                if !(10..=100).contains(&ff) {
                    return Err(self.invalid("init.fillfactor", "must be in 10..100"));
                }
            }
            if let Some(jobs) = init.jobs {
                if !(1..=1000).contains(&jobs) {
                    return Err(self.invalid("init.jobs", "must be in 1..1000"));
                }
            }
        }
        for k in spec.init.scale.keys() {
            if k.parse::<u32>().is_err() {
                return Err(self.invalid(&format!("init.scale.{k}"), "keys must be scale numbers"));
            }
        }
        let tol = spec.hygiene.commit_tolerance_pct;
        if !(tol.is_finite() && (0.0..=100.0).contains(&tol)) {
            return Err(self.invalid(
                "hygiene.commit_tolerance_pct",
                format!("{tol} is not a tolerance: give a percentage between 0 and 100"),
            ));
        }
        for (k, v) in &spec.thresholds {
            crate::thresholds::parse(k, v)
                .map_err(|e| self.invalid(&format!("thresholds.{k}"), e))?;
        }
        if !(spec.sampling.interval >= 0.1 && spec.sampling.interval <= 60.0) {
            return Err(self.invalid("sampling.interval", "must be between 0.1 and 60 seconds"));
        }
        Ok(())
    }

    /// The test limit (default: 60 s).
    pub fn limit(&self) -> Limit {
        let r = &self.spec.run;
        match (&r.duration, r.transactions) {
            (_, Some(t)) => Limit::Transactions(t),
            (Some(d), None) => Limit::Duration(d.seconds().unwrap_or(60.0) as u32),
            (None, None) => Limit::Duration(60),
        }
    }

    /// How long to wait for an unreachable server ([`RunSection::outage_wait`]).
    pub fn outage_wait(&self) -> std::time::Duration {
        let secs = self
            .spec
            .run
            .outage_wait
            .as_ref()
            .and_then(|w| w.seconds().ok())
            .unwrap_or(180.0);
        std::time::Duration::from_secs_f64(secs)
    }

    /// Warm-up seconds (0 when none).
    pub fn warmup_s(&self) -> f64 {
        self.spec
            .run
            .warmup
            .as_ref()
            .and_then(|w| w.seconds().ok())
            .unwrap_or(0.0)
    }

    /// The parsed `[thresholds]` (validated at load).
    pub fn thresholds(&self) -> Vec<crate::thresholds::Threshold> {
        self.spec
            .thresholds
            .iter()
            .filter_map(|(k, v)| crate::thresholds::parse(k, v).ok())
            .collect()
    }

    /// Hash of everything that makes tests comparable: the spec without the matrix value
    /// lists and the description. Rerunning a campaign with the same hash resumes (or
    /// extends) its set; changing anything else starts a new set.
    pub fn identity_hash(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut spec = self.spec.clone();
        spec.campaign.description = None;
        spec.run.outage_wait = None;
        // The hash is stored: it must not be a function of a password (a weak one could
        // be found by hashing guesses). Masking changes nothing when there is none.
        for t in &mut spec.targets {
            if let Some(ci) = &t.conninfo {
                t.conninfo = Some(pgsurge_wire::redact::redact(ci));
            }
        }
        spec.matrix.scales.clear();
        spec.matrix.clients.clear();
        spec.matrix.scripts.clear();
        spec.matrix.rates.clear();
        spec.matrix.rates_per_client.clear();
        spec.matrix.repeats = 0;
        spec.matrix.query_modes.clear();
        spec.matrix.threads.clear();
        spec.matrix.settings.clear();
        spec.campaign.shuffle = false;
        spec.campaign.interleave_targets = false;
        spec.thresholds.clear();
        let json = serde_json::to_string(&spec).unwrap_or_default();
        let digest = Sha256::digest(json.as_bytes());
        digest.iter().take(12).map(|b| format!("{b:02x}")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[campaign]
name = "t"
[[target]]
name = "a"
conninfo = "dbname=x"
[matrix]
scales = [1, 2]
clients = [1, 4]
scripts = ["select-only", { name = "mix", mix = [{ builtin = "tpcb-like", weight = 1 }, { builtin = "select-only", weight = 9 }] }]
repeats = 2
[run]
duration = "2s"
threads = "auto"
[init.scale.2]
method = "server"
"#;

    fn parse(t: &str) -> Result<Campaign, SpecError> {
        Campaign::parse(t, "test.toml", Path::new("."))
    }

    #[test]
    fn aa_check_adds_an_identical_twin_of_the_first_target() {
        let c = parse(
            "[campaign]\nname = \"x\"\naa_check = true\n[[target]]\nname = \"pg\"\nsettings = { shared_buffers = \"1GB\" }\n[[target]]\nname = \"other\"\n[matrix]\nscales = [1]\nclients = [1]\n",
        )
        .unwrap();
        let names: Vec<&str> = c.spec.targets.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["pg", "pg (A-A)", "other"]);
        assert_eq!(c.spec.targets[1].settings, c.spec.targets[0].settings);
        let off = parse("[campaign]\nname = \"x\"\n[[target]]\nname = \"pg\"\n[matrix]\nscales = [1]\nclients = [1]\n").unwrap();
        assert_eq!(off.spec.targets.len(), 1);
    }

    #[test]
    fn commit_tolerance_must_be_a_percentage() {
        let with = |v: &str| {
            parse(&GOOD.replace(
                "[init.scale.2]",
                &format!("[hygiene]\ncommit_tolerance_pct = {v}\n[init.scale.2]"),
            ))
        };
        for bad in ["-5", "-0.1", "101", "nan", "inf"] {
            let e = with(bad).unwrap_err().to_string();
            assert!(e.contains("hygiene.commit_tolerance_pct"), "{bad}: {e}");
        }
        for good in ["0", "5", "12.5", "100"] {
            assert!(with(good).is_ok(), "{good}");
        }
    }

    #[test]
    fn outage_wait_is_parsed_and_not_part_of_the_identity() {
        let a = parse(GOOD).unwrap();
        assert_eq!(a.outage_wait(), std::time::Duration::from_secs(180));
        let b = parse(&GOOD.replace(
            "threads = \"auto\"",
            "threads = \"auto\"\noutage_wait = \"20s\"",
        ))
        .unwrap();
        assert_eq!(b.outage_wait(), std::time::Duration::from_secs(20));
        assert_eq!(a.identity_hash(), b.identity_hash());
        assert!(parse(&GOOD.replace(
            "threads = \"auto\"",
            "threads = \"auto\"\noutage_wait = \"soon\""
        ))
        .is_err());
    }

    #[test]
    fn identity_hash_does_not_depend_on_the_password() {
        let with = |ci: &str| {
            parse(&GOOD.replace("conninfo = \"dbname=x\"", &format!("conninfo = \"{ci}\"")))
                .unwrap()
        };
        let a = with("dbname=x password=one");
        let b = with("dbname=x password=two");
        assert_eq!(a.identity_hash(), b.identity_hash());
        // A spec without a password keeps the hash it had (stored sets still resume).
        assert_eq!(
            parse(GOOD).unwrap().identity_hash(),
            with("dbname=x").identity_hash()
        );
        assert_ne!(
            with("dbname=x").identity_hash(),
            with("dbname=y").identity_hash()
        );
    }

    #[test]
    fn parses_a_good_file_with_defaults() {
        let c = parse(GOOD).unwrap();
        assert_eq!(c.limit(), Limit::Duration(2));
        assert_eq!(c.spec.run.query_mode, "simple");
        assert_eq!(c.spec.init.for_scale(2).method.as_deref(), Some("server"));
        assert_eq!(c.spec.init.for_scale(1).method, None);
        assert!(c.spec.hygiene.vacuum);
        assert_eq!(c.spec.matrix.scripts.len(), 2);
    }

    #[test]
    fn identity_ignores_matrix_values_but_not_run_options() {
        let a = parse(GOOD).unwrap();
        let b = parse(&GOOD.replace("clients = [1, 4]", "clients = [1, 4, 8]")).unwrap();
        let c = parse(&GOOD.replace("duration = \"2s\"", "duration = \"3s\"")).unwrap();
        assert_eq!(a.identity_hash(), b.identity_hash());
        assert_ne!(a.identity_hash(), c.identity_hash());
    }

    #[test]
    fn errors_name_the_key() {
        let e = parse(&GOOD.replace("clients = [1, 4]", "clients = []")).unwrap_err();
        assert!(e.to_string().contains("matrix.clients"), "{e}");
        let e = parse(&GOOD.replace("threads = \"auto\"", "threads = \"many\"")).unwrap_err();
        assert!(e.to_string().contains("run.threads"), "{e}");
        let e =
            parse(&GOOD.replace("duration = \"2s\"", "duration = \"2 fortnights\"")).unwrap_err();
        assert!(e.to_string().contains("run.duration"), "{e}");
        let e = parse(&GOOD.replace("repeats = 2", "repeats = 2\nbogus = 1")).unwrap_err();
        assert!(e.to_string().contains("bogus"), "{e}");
        let e = parse(&GOOD.replace("\"select-only\", {", "\"no-such\", {")).unwrap_err();
        assert!(e.to_string().contains("matrix.scripts[0]"), "{e}");
    }

    #[test]
    fn thresholds_are_validated_and_not_part_of_the_identity() {
        let with = |t: &str| parse(&format!("{GOOD}\n[thresholds]\n{t}\n"));
        let c = with("p99 = \"< 20ms\"\ntps = \"> 5\"").unwrap();
        assert_eq!(c.thresholds().len(), 2);
        assert_eq!(c.identity_hash(), parse(GOOD).unwrap().identity_hash());
        let e = with("p98 = \"< 20ms\"").unwrap_err();
        assert!(e.to_string().contains("thresholds.p98"), "{e}");
    }

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("500ms").unwrap(), 0.5);
        assert_eq!(parse_duration("2m").unwrap(), 120.0);
        assert_eq!(parse_duration("7").unwrap(), 7.0);
        assert_eq!(parse_duration("90s").unwrap(), 90.0);
        assert_eq!(parse_duration("1m30s").unwrap(), 90.0);
        assert_eq!(parse_duration("2h").unwrap(), 7200.0);
        assert_eq!(parse_duration("1h 30m").unwrap(), 5400.0);
        assert!(parse_duration("-3").is_err());
        assert!(parse_duration("").is_err());
        assert!(parse_duration("x").is_err());
        assert!(parse_duration("3 parsecs").is_err());
    }
}

#[cfg(test)]
mod example_tests {
    use super::*;

    /// Every campaign under `examples/` parses, validates and expands.
    #[test]
    fn repository_examples_are_valid() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().and_then(|x| x.to_str()) == Some("toml") {
                // remote-server.toml needs its target from the environment.
                let env =
                    |k: &str| (k == "PGSURGE_TARGET").then(|| "host=db1 dbname=bench".to_string());
                let text = std::fs::read_to_string(&p).unwrap();
                let c = Campaign::parse_with_env(&text, &p.display().to_string(), &dir, &env)
                    .unwrap_or_else(|e| panic!("{e}"));
                let m = crate::matrix::expand(&c).unwrap();
                assert!(!m.tests.is_empty(), "{}", p.display());
                n += 1;
            }
        }
        assert!(n >= 4, "examples found: {n}");
    }
}

#[cfg(test)]
mod interpolation_tests {
    use super::*;

    fn env(k: &str) -> Option<String> {
        match k {
            "PGSURGE_TARGET" => Some("host=db1 dbname=bench".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn variables_and_defaults_are_replaced() {
        let t = "# ${UNSET_IN_COMMENT}\na = \"${PGSURGE_TARGET}\"\nb = \"${PGSURGE_NODE_EXPORTER:-}\"\nc = \"${X:-http://h:9100}\"\nd = \"$$HOME ${EMPTY:-x}\"\n";
        assert_eq!(
            interpolate(t, &env).unwrap(),
            "# ${UNSET_IN_COMMENT}\na = \"host=db1 dbname=bench\"\nb = \"\"\nc = \"http://h:9100\"\nd = \"$HOME x\"\n"
        );
    }

    #[test]
    fn a_missing_variable_is_a_clear_error() {
        let e = interpolate("x = 1\nc = \"${NOPE}\"\n", &env).unwrap_err();
        assert_eq!(
            e,
            "line 2: environment variable NOPE is not set (set it, or write ${NOPE:-default})"
        );
        assert!(interpolate("c = \"${NOPE\"", &env)
            .unwrap_err()
            .contains("closing"));
        assert!(interpolate("c = \"${A B}\"", &env)
            .unwrap_err()
            .contains("not a variable"));
    }

    #[test]
    fn the_stored_text_keeps_the_references() {
        let text = "[campaign]\nname = \"r\"\n[[target]]\nname = \"t\"\nconninfo = \"${PGSURGE_TARGET}\"\nnode_exporter = \"${PGSURGE_NODE_EXPORTER:-}\"\n[matrix]\nscales = [1]\nclients = [1]\n";
        let c = Campaign::parse_with_env(text, "r.toml", Path::new("."), &env).unwrap();
        assert_eq!(
            c.spec.targets[0].conninfo.as_deref(),
            Some("host=db1 dbname=bench")
        );
        assert_eq!(c.spec.targets[0].node_exporter_url(), None);
        assert!(c.text.contains("${PGSURGE_TARGET}"));
        let e = Campaign::parse_with_env(
            &text.replace("PGSURGE_TARGET", "UNSET_X"),
            "r.toml",
            Path::new("."),
            &env,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("r.toml") && e.contains("UNSET_X is not set"),
            "{e}"
        );
    }
}
