//! Live targets: a throwaway cluster started for the campaign, or an existing server.

use pgsurge_server::{BinarySource, Cluster, ClusterBuilder};

use crate::error::{LabError, Result};
use crate::spec::TargetSpec;
use crate::sql_session::Pg;

/// A target ready for tests.
pub struct LiveTarget {
    /// Name from the campaign.
    pub name: String,
    /// Conninfo of the benchmark database.
    pub conninfo: String,
    /// Conninfo for monitoring queries: the `postgres` database when reachable, so the
    /// monitor's own transactions do not count in the benchmark database's statistics.
    pub monitor_conninfo: String,
    /// Benchmark database name.
    pub dbname: String,
    /// `server_version_num`.
    pub version_num: i32,
    /// `server_version`.
    pub server_version: String,
    /// Binaries directory (throwaway).
    pub bin_dir: Option<String>,
    /// The cluster, stopped when dropped (throwaway).
    pub cluster: Option<Cluster>,
    /// Scale the database holds now (None: unknown, re-initialize before the next test).
    pub current_scale: Option<u32>,
    /// Row id in the store.
    pub target_id: i64,
    /// Host + server manifest.
    pub manifest: serde_json::Value,
}

/// Starts (throwaway) or connects to (conninfo) a target.
pub fn start(spec: &TargetSpec, database: &str) -> Result<LiveTarget> {
    let (cluster, conninfo, monitor, bin_dir) = match &spec.conninfo {
        Some(ci) => {
            let monitor = if ci.contains("://") {
                ci.clone()
            } else {
                format!("{ci} dbname=postgres")
            };
            let monitor = match Pg::connect(&monitor) {
                Ok(_) => monitor,
                Err(_) => ci.clone(),
            };
            (None, ci.clone(), monitor, None)
        }
        None => {
            let source = match (&spec.pg_bin, &spec.pg_version) {
                (Some(dir), _) => BinarySource::Dir(dir.clone()),
                (None, Some(v)) => BinarySource::Version(v.clone()),
                (None, None) => BinarySource::Auto,
            };
            let cluster = ClusterBuilder::new()
                .binaries(source)
                .settings(spec.settings_text())
                .data_checksums(spec.data_checksums)
                .database(database)
                .temp_prefix(format!("pgsurge-campaign-{}", spec.name))
                .start()?;
            let conninfo = cluster.conninfo(database);
            let monitor = cluster.conninfo("postgres");
            let bin = cluster.binaries().bin_dir().display().to_string();
            (Some(cluster), conninfo, monitor, Some(bin))
        }
    };
    let mut pg = Pg::connect_patiently(&conninfo, std::time::Duration::from_secs(60)).map_err(
        |e| match e {
            LabError::Pg { message, .. } => LabError::Pg {
                context: format!("target \"{}\"", spec.name),
                message,
            },
            other => other,
        },
    )?;
    let server_version = pg.value("SHOW server_version")?.unwrap_or_default();
    let mut manifest = crate::manifest::host_manifest();
    manifest["server"] = crate::manifest::server_manifest(&mut pg);
    Ok(LiveTarget {
        name: spec.name.clone(),
        dbname: pg.dbname().to_string(),
        version_num: pg.version_num(),
        server_version,
        conninfo,
        monitor_conninfo: monitor,
        bin_dir,
        cluster,
        current_scale: None,
        target_id: 0,
        manifest,
    })
}
