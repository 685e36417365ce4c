//! Cleaning up after runs that were killed together with their watchdog (e.g. a whole
//! container or process tree SIGKILLed): temporary cluster directories named `pgsurge-…`
//! whose owner process and watchdog are gone. A server still running there is stopped
//! first. Only directories pgsurge made for a temporary cluster (tagged when made) are
//! candidates: a data directory a user gave, even one under a `pgsurge-…` directory, a
//! kept temporary one, detached servers (`pgsurge server start`) and directories of live
//! processes are never touched.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::config_files::OwnerMarker;
use crate::postmaster::{is_alive, looks_like_postgres, stop_postmaster, PidFile, StopTimeouts};

/// Directories without an owner marker (a run killed during initdb) are removed only
/// when older than this, so that a run starting right now is not disturbed.
const UNMARKED_MIN_AGE: Duration = Duration::from_secs(3600);

/// The file that marks a directory as a temporary cluster's base, removable by a sweep
/// once its run is gone.
const TEMPORARY_TAG: &str = "pgsurge.temporary";

/// Marks `base` (a directory made by `make_temp_dir` for a temporary cluster that is not
/// kept) as removable by a sweep once its run is gone.
pub(crate) fn tag_temporary(base: &Path) -> std::io::Result<()> {
    std::fs::write(base.join(TEMPORARY_TAG), b"")
}

/// The directory temporary clusters are created in.
pub(crate) fn temp_root() -> PathBuf {
    let root = std::env::temp_dir();
    if root.as_os_str().len() > 60 {
        PathBuf::from("/tmp")
    } else {
        root
    }
}

/// Removes stale temporary cluster directories of killed runs under the temporary
/// directory; returns the directories removed.
pub fn sweep_stale_temp_clusters() -> Vec<PathBuf> {
    let root = temp_root();
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(&root) else {
        return removed;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.starts_with("pgsurge-") || !e.path().is_dir() {
            continue;
        }
        let base = e.path();
        let data = base.join("data");
        if !data.is_dir() {
            continue;
        }
        if is_stale(&base, &data) {
            let _ = std::fs::remove_dir_all(&base);
            if !base.exists() {
                removed.push(base);
            }
        }
    }
    removed
}

fn is_stale(base: &Path, data: &Path) -> bool {
    if !base.join(TEMPORARY_TAG).is_file() {
        return false;
    }
    match OwnerMarker::read(data) {
        Some(m) => {
            if m.detached || is_alive(m.owner_pid) || m.watchdog_pid.is_some_and(is_alive) {
                return false;
            }
            if let Some(pf) = PidFile::read(data) {
                if is_alive(pf.pid) && looks_like_postgres(pf.pid) {
                    let quick = StopTimeouts {
                        fast: Duration::from_secs(10),
                        immediate: Duration::from_secs(5),
                    };
                    if !stop_postmaster(pf.pid, None, quick) {
                        return false;
                    }
                }
            }
            true
        }
        None => {
            // Killed before the server ran (no marker): only old ones, and never with
            // a live postmaster.
            let old = std::fs::metadata(base)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| SystemTime::now().duration_since(t).ok())
                .is_some_and(|age| age > UNMARKED_MIN_AGE);
            let running = PidFile::read(data).is_some_and(|pf| is_alive(pf.pid));
            old && !running
        }
    }
}
