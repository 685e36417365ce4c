//! `[[target]]` (an existing server or a throwaway one, and how its binaries are had)
//! and `[pinning]` (the CPUs of throwaway servers and of the load generator).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

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
    /// Throwaway server built from this PostgreSQL source: a tree, a git checkout or a
    /// release tarball (relative to the campaign file); cached by its inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<PathBuf>,
    /// Commit, branch or tag of a git `source` (default: its HEAD with the uncommitted
    /// changes to tracked files).
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    /// Patches applied to `source`, in order (relative to the campaign file).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<PathBuf>,
    /// Arguments for `configure` (or `meson setup`) when building `source`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub configure: Vec<String>,
    /// Build `source` for profiling (frame pointers and debug symbols, see
    /// `pgsurge server build --profiling`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub profiling: bool,
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
    /// (`http://host:9100/metrics`, or `https://user:password@host:9100/metrics` for
    /// TLS and basic auth); empty = none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_exporter: Option<String>,
    /// PEM file of the CA (or the self-signed certificate) of an `https://`
    /// node_exporter; none: the public web roots. Relative to the campaign file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_exporter_ca: Option<PathBuf>,
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
    /// Throwaway server: streaming standbys started with it (same binaries, settings
    /// and CPUs, each on its own port), stopped with it; the tests connect through a
    /// multi-host connection string that finds the one accepting writes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub replicas: u32,
    /// `async` (default) or `sync`: whether commits wait until a standby has flushed
    /// them (`synchronous_standby_names = 'ANY 1 (…)'`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replication: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
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

impl TargetSpec {
    /// Where a throwaway target's binaries come from: `built`, its `source` once built
    /// (None before: an error naming the target), `pg_bin`, `pg_version`, or found on
    /// this machine.
    pub fn binary_source(
        &self,
        built: Option<&std::path::Path>,
    ) -> Result<pgsurge_server::BinarySource, String> {
        use pgsurge_server::BinarySource;
        Ok(match (&self.pg_bin, &self.pg_version) {
            _ if self.source.is_some() => match built {
                Some(dir) => BinarySource::Dir(dir.to_path_buf()),
                None => {
                    return Err(format!(
                        "target \"{}\": its source is not built yet",
                        self.name
                    ))
                }
            },
            (Some(dir), _) => BinarySource::Dir(dir.clone()),
            (None, Some(v)) => BinarySource::Version(v.clone()),
            (None, None) => BinarySource::Auto,
        })
    }

    /// A throwaway-server target named `name`, every other key at its default
    /// (local binaries found by discovery, default settings).
    pub fn throwaway(name: &str) -> TargetSpec {
        TargetSpec {
            name: name.to_owned(),
            conninfo: None,
            pg_bin: None,
            pg_version: None,
            source: None,
            git_ref: None,
            patches: Vec::new(),
            configure: Vec::new(),
            profiling: false,
            settings: BTreeMap::new(),
            data_checksums: false,
            data_dir: None,
            node_exporter: None,
            node_exporter_ca: None,
            host_metrics: None,
            init: None,
            replicas: 0,
            replication: None,
        }
    }

    /// The builder of the target's throwaway primary: its binaries (`built` from
    /// source, or as `binary_source` finds them), data directory, settings and
    /// checksums, `pg_stat_statements`, the servers' CPUs and the benchmark database.
    pub fn cluster_builder(
        &self,
        built: Option<&std::path::Path>,
        cpus: Option<pgsurge_affinity::CpuList>,
        database: &str,
    ) -> Result<pgsurge_server::ClusterBuilder, String> {
        let mut builder = pgsurge_server::ClusterBuilder::new();
        if let Some(dir) = &self.data_dir {
            builder = builder.data_dir(dir);
        }
        Ok(builder
            .binaries(self.binary_source(built)?)
            .settings(self.settings_text())
            .data_checksums(self.data_checksums)
            .statements(true)
            .cpus(cpus)
            .database(database)
            .temp_prefix(format!("pgsurge-campaign-{}", self.name)))
    }

    /// Whether commits wait for a standby (`replication = "sync"`).
    pub fn sync_replication(&self) -> bool {
        self.replication.as_deref() == Some("sync")
    }

    /// The build request of a target with a `source`.
    pub fn build_request(&self) -> Option<pgsurge_server::source_build::BuildRequest> {
        let source = self.source.clone()?;
        Some(pgsurge_server::source_build::BuildRequest {
            source,
            git_ref: self.git_ref.clone(),
            patches: self.patches.clone(),
            configure: self.configure.clone(),
            profiling: self.profiling,
            ..Default::default()
        })
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
        (self.settings.iter())
            .map(|(k, v)| (k.clone(), setting_text(v)))
            .collect()
    }
}

/// `[pinning]`: CPU lists (`"0-3"`, `"4,6"`) for throwaway servers (the postmaster and
/// every backend) and for the load generator (its client threads and samplers).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinningSection {
    /// The throwaway servers' CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The load generator's CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
}

impl PinningSection {
    /// True when nothing is pinned.
    pub fn is_empty(&self) -> bool {
        self.server.is_none() && self.client.is_none()
    }
}

/// A setting's value as the server takes it (`true` is `on`).
pub fn setting_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Boolean(b) => if *b { "on" } else { "off" }.to_string(),
        other => other.to_string(),
    }
}
