//! What is done before and between tests: `[init]` (how each scale is built),
//! `[hygiene]` (the state reset before each test) and `[hooks]` (the user's commands
//! around tests).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{yes, DurationValue};

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
    /// Throwaway servers: a new cluster (initdb, then freshly loaded data) before every
    /// test (`test`), whenever the test's scale differs from the last one's (`scale`),
    /// or never (`never`, the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fresh_cluster: Option<String>,
    /// Drop the OS page cache before each test (root only; otherwise a stored warning).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub drop_caches: bool,
}

/// `[hygiene] fresh_cluster`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FreshCluster {
    /// A new cluster before every test.
    Test,
    /// A new cluster when the scale changes.
    Scale,
    /// Keep the cluster for the whole campaign.
    Never,
}

impl FreshCluster {
    /// Parses `test`, `scale`, `never`.
    pub fn parse(text: &str) -> Option<FreshCluster> {
        match text {
            "test" => Some(FreshCluster::Test),
            "scale" => Some(FreshCluster::Scale),
            "never" => Some(FreshCluster::Never),
            _ => None,
        }
    }
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
            fresh_cluster: None,
            drop_caches: false,
        }
    }
}

impl HygieneSection {
    /// `fresh_cluster` (validated; `never` when not given).
    pub fn fresh_cluster(&self) -> FreshCluster {
        self.fresh_cluster
            .as_deref()
            .and_then(FreshCluster::parse)
            .unwrap_or(FreshCluster::Never)
    }

    /// Whether statistics are reset before each test on a throwaway (true) or existing
    /// (false) server.
    pub fn resets_stats(&self, throwaway: bool) -> bool {
        self.reset_stats.unwrap_or(throwaway)
    }
}

/// `[hooks]`: shell commands (`sh -c`) run by the campaign, pgbench-tools' per-test
/// reset done properly: each has a timeout, and its exit status, duration and output are
/// stored with the test. A command is taken as written: `${VAR}` in it is the shell's. A failing `before_test` or `after_test` fails that test only; a
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
