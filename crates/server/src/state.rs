//! Where `pgsurge server start` leaves what `stop` and `status` need: one small JSON
//! file per detached server (keyed by its data directory) under the user's state
//! directory (`~/.local/state/pgsurge/servers`, or `PGSURGE_STATE_DIR`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Result, ServerError};

/// Environment variable that overrides the state directory.
pub const STATE_DIR_ENV: &str = "PGSURGE_STATE_DIR";

/// A detached server as recorded at start.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ServerRecord {
    /// The data directory (the key).
    pub data_dir: PathBuf,
    /// The postmaster's pid at start.
    pub pid: i32,
    /// TCP port on 127.0.0.1.
    pub port: u16,
    /// Unix socket directory.
    pub socket_dir: PathBuf,
    /// The binaries directory.
    pub bin_dir: PathBuf,
    /// `server_version_num` of the binaries.
    pub version_num: u32,
    /// Superuser name.
    pub superuser: String,
    /// The database the printed connection string names.
    pub database: String,
    /// The server log.
    pub log_file: PathBuf,
    /// Directories removed at stop (temporary data and socket directories).
    pub remove_on_stop: Vec<PathBuf>,
    /// When it was started, in Unix epoch milliseconds (0 in records that predate the
    /// field: the record file's time stands in).
    #[serde(default)]
    pub started_at_ms: u64,
    /// The streaming standbys started with it (`server start --replicas N`), stopped
    /// with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<ServerRecord>,
}

/// The default state directory.
pub fn default_state_dir() -> Result<PathBuf> {
    if let Some(d) = std::env::var_os(STATE_DIR_ENV).filter(|d| !d.is_empty()) {
        return Ok(d.into());
    }
    dirs::state_dir()
        .or_else(dirs::cache_dir)
        .map(|d| d.join("pgsurge").join("servers"))
        .ok_or_else(|| {
            ServerError::Invalid(format!(
                "no state directory known for this user; set {STATE_DIR_ENV}"
            ))
        })
}

fn file_for(state_dir: &Path, data_dir: &Path) -> PathBuf {
    let key: String = data_dir
        .to_string_lossy()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    state_dir.join(format!("{key}.json"))
}

/// Records a started server (replacing an older record for the same data directory).
pub fn save(state_dir: &Path, rec: &ServerRecord) -> Result<()> {
    std::fs::create_dir_all(state_dir).map_err(|e| ServerError::io(state_dir, e))?;
    let path = file_for(state_dir, &rec.data_dir);
    let tmp = path.with_extension("json.tmp");
    let text =
        serde_json::to_string_pretty(rec).map_err(|e| ServerError::Invalid(e.to_string()))?;
    std::fs::write(&tmp, text).map_err(|e| ServerError::io(&tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| ServerError::io(&path, e))
}

/// All recorded servers (unreadable records are skipped), sorted by data directory.
pub fn load_all(state_dir: &Path) -> Vec<ServerRecord> {
    let mut out: Vec<ServerRecord> = std::fs::read_dir(state_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| {
            let mut r: ServerRecord =
                serde_json::from_str(&std::fs::read_to_string(e.path()).ok()?).ok()?;
            if r.started_at_ms == 0 {
                r.started_at_ms = e
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_millis() as u64);
            }
            Some(r)
        })
        .collect();
    out.sort_by(|a, b| a.data_dir.cmp(&b.data_dir));
    out
}

/// Forgets a server.
pub fn remove(state_dir: &Path, data_dir: &Path) -> Result<()> {
    let path = file_for(state_dir, data_dir);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(ServerError::io(&path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_load_remove_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let rec = ServerRecord {
            data_dir: "/tmp/some data".into(),
            pid: 42,
            port: 5000,
            socket_dir: "/tmp/s".into(),
            bin_dir: "/usr/bin".into(),
            version_num: 150018,
            superuser: "postgres".into(),
            database: "pgsurge".into(),
            log_file: "/tmp/l".into(),
            remove_on_stop: vec!["/tmp/s".into()],
            started_at_ms: 1_795_000_000_000,
            replicas: Vec::new(),
        };
        save(dir.path(), &rec).unwrap();
        assert_eq!(load_all(dir.path()), vec![rec.clone()]);
        remove(dir.path(), &rec.data_dir).unwrap();
        assert!(load_all(dir.path()).is_empty());
    }
}
