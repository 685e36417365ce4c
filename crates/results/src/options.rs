//! [`RunOptions`]: the options of a run that shape its statistics and their rendering,
//! as recorded in the run's result.

use serde::{Deserialize, Serialize};

/// `-M`: the suite's one query-mode type (defined where SQL is rewritten for it).
pub use pgsurge_script::QueryMode;

/// Serde form of [`QueryMode`]: its report name (`simple`, `extended`, `prepared`).
mod query_mode_name {
    use super::QueryMode;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(mode: &QueryMode, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(mode.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<QueryMode, D::Error> {
        let name = String::deserialize(d)?;
        QueryMode::parse(&name).ok_or_else(|| {
            serde::de::Error::unknown_variant(&name, &["simple", "extended", "prepared"])
        })
    }
}

/// The run options that shape results and their rendering.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct RunOptions {
    /// `-M`.
    #[serde(with = "query_mode_name")]
    pub query_mode: QueryMode,
    /// `-c`.
    pub clients: u32,
    /// `-j` after clamping to the number of clients.
    pub threads: u32,
    /// `--max-tries` (0 = unlimited; default 1).
    pub max_tries: u32,
    /// `-t` (absent in `-T` mode).
    pub transactions_per_client: Option<u32>,
    /// `-T` in seconds (absent in `-t` mode).
    pub duration_s: Option<u32>,
    /// `-R` target rate in transactions per second.
    pub rate_tps: Option<f64>,
    /// `-L` in µs (pgbench keeps it as whole µs).
    pub latency_limit_us: Option<i64>,
    /// `-C`: a new connection per transaction.
    pub connect_per_transaction: bool,
    /// `-P` period in seconds.
    pub progress_s: Option<u32>,
    /// `--progress-timestamp`.
    pub progress_timestamp: bool,
    /// `--failures-detailed`.
    pub failures_detailed: bool,
    /// `--reconnect`: clients survive a lost connection (absent when off).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reconnect: bool,
    /// `-r`.
    pub report_per_command: bool,
    /// `-l`.
    pub log: bool,
    /// `--sampling-rate`.
    pub sampling_rate: Option<f64>,
    /// `--aggregate-interval` in seconds.
    pub aggregate_interval_s: Option<u32>,
    /// `--percentiles` ranks (empty: not requested, no percentile lines in the text report).
    pub percentiles: Vec<f64>,
    /// The random seed in use.
    pub random_seed: Option<u64>,
}
