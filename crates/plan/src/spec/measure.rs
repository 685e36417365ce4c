//! What is measured beside each test's figures: `[sampling]` (OS and PostgreSQL
//! metrics) and `[profile]` (call stacks with `perf`).

use serde::{Deserialize, Serialize};

use super::yes;

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

/// `[profile]`: what each test profiles over its measured run, with `perf`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileSection {
    /// Profiles are taken (the default once the section is there).
    #[serde(default = "profile_on")]
    pub on: bool,
    /// On-CPU samples per second per running thread (default 99).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency: Option<u32>,
    /// Whose stacks: `server` (the default), `client` or `both`.
    #[serde(default)]
    pub processes: ProfileProcesses,
    /// The server's time off the CPU too (scheduler switches; needs root).
    #[serde(default)]
    pub off_cpu: bool,
}

fn profile_on() -> bool {
    true
}

/// `[profile] processes`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProfileProcesses {
    /// The target's postmaster and every process it has.
    #[default]
    Server,
    /// The load generator (this process).
    Client,
    /// Both.
    Both,
}
