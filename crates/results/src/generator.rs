//! [`GeneratorInfo`]: who produced a result in a distributed run and
//! when it started, for `pgsurge merge` to line generators up and report start skew.
//! Plain data: the engine fills it in, nothing here reads a clock.

use serde::{Deserialize, Serialize};

/// One load generator's identity and clock, recorded in [`crate::RunResult::generator`]
/// when `--start-at` or any `--generator-*` option was given.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct GeneratorInfo {
    /// `--generator-name`, else the host name.
    pub name: String,
    /// The host name of the machine (the UTS name, so a container's or namespace's).
    pub host: String,
    /// `--generator-index` (0-based).
    pub index: Option<u32>,
    /// `--generator-count`.
    pub count: Option<u32>,
    /// `--start-at`: the instant all clients were to start (Unix epoch µs).
    pub intended_start_unix_us: Option<i64>,
    /// When this generator's clients actually started (Unix epoch µs, its wall clock):
    /// the earliest driver thread's benchmark start.
    pub actual_start_unix_us: i64,
    /// When the last client finished (Unix epoch µs, its wall clock).
    pub end_unix_us: i64,
    /// The generator's wall clock (Unix epoch µs) at the moment it read its monotonic
    /// clock's origin: every other time here is that origin plus monotonic time, so
    /// a wall-clock step during the run does not distort the window.
    pub clock_origin_unix_us: i64,
}

/// One generator of a merged result ([`crate::RunResult::generators`]): who it was
/// and what it contributed, so the merged document alone says which generators it
/// is the union of.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct MergedGenerator {
    /// Its name (`--generator-name`, else its host name, else the input's label).
    pub name: String,
    /// Its host name, when recorded.
    pub host: Option<String>,
    /// `--generator-index`, when recorded.
    pub index: Option<u32>,
    /// `--generator-count`, when recorded.
    pub count: Option<u32>,
    /// Its clients (`-c`).
    pub clients: u32,
    /// Its successful transactions.
    pub transactions: u64,
    /// Its own tps (its transactions over its own benchmark duration).
    #[serde(deserialize_with = "crate::nullable::nullable_f64")]
    pub tps: f64,
    /// When its clients actually started (Unix epoch µs).
    pub actual_start_unix_us: i64,
    /// When its last client finished (Unix epoch µs).
    pub end_unix_us: i64,
}

/// The host name of this machine (`/proc/sys/kernel/hostname`, then `$HOSTNAME`),
/// or `unknown`.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "unknown".to_string())
}
