//! What each test runs: `[matrix]` (the values crossed into tests, its workloads) and
//! `[run]` (the options every test shares, how long it runs).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::DurationValue;

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
    /// One built-in or file script (with an optional weight, ignored alone), or a
    /// workload pack (`{ workload = "tpcc" }`).
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
    /// A workload pack, built-in name or directory (relative to the campaign file):
    /// its scripts with their weights, its loader and its metrics. A whole workload,
    /// never part of a mix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    /// A PostgreSQL log replayed as the workload (relative to the campaign file): every
    /// session onto the target's database, as its user. A whole workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<PathBuf>,
    /// The replay's speed factor (2: twice as fast as logged; default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<f64>,
    /// The replay sends each session's next statement as soon as its previous answer
    /// came (`pgsurge replay --max`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<bool>,
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
    /// Time run before each test and discarded (a separate, unrecorded run), or
    /// `"auto"`: the test runs until its detected steady window has lasted `duration`
    /// (at most `warmup_max` longer).
    #[serde(default)]
    pub warmup: Option<DurationValue>,
    /// With `warmup = "auto"`: the most a test may run beyond `duration` while its
    /// warm-up lasts (default 10 minutes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_max: Option<DurationValue>,
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
    /// [`crate::extra::extra_flags`] lists, each mapped to a typed run option.
    #[serde(default)]
    pub extra_args: Vec<String>,
    /// How long a test that cannot reach its server waits for it to come back
    /// (retrying with back-off) before the server's remaining tests are failed
    /// (default 3 minutes; 0 = do not wait). Not part of the campaign's identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outage_wait: Option<DurationValue>,
    /// With `[[fault]]`s: the table (`client_id`, `txn_seq` columns) whose rows the
    /// test's script writes, one per transaction; after each test the transactions
    /// its clients were told committed are looked for in it on the primary that
    /// answers, and those missing are stored as acknowledged commits lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_commits: Option<String>,
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
            warmup_max: None,
            max_tries: None,
            defines: BTreeMap::new(),
            database: default_db(),
            extra_args: Vec::new(),
            outage_wait: None,
            check_commits: None,
        }
    }
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
