//! Directories and helper processes around a cluster: temporary and socket
//! directories, deciding whether an existing data directory is initialized, reused, or
//! held by a live or orphaned server, and running server programs (initdb, single-user
//! mode) as the unprivileged user.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::binaries::PgBinaries;
use crate::config_files::OwnerMarker;
use crate::deadline::output_within;
use crate::error::{Result, ServerError};
use crate::postmaster::{is_alive, looks_like_postgres, stop_postmaster, PidFile, StopTimeouts};
use crate::run_as::{apply_opt, chown_opt, RunAs};
use pgsurge_wire::quote_identifier;

/// A command for a server program: run as the unprivileged user, in a directory it can
/// read, without the caller's PG* variables (postgres reads PGDATA and PGPORT).
pub(crate) fn server_command(program: PathBuf, ra: Option<&RunAs>, data: &Path) -> Command {
    let mut cmd = Command::new(program);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("PG") {
            cmd.env_remove(&k);
        }
    }
    cmd.env("LC_ALL", "C");
    let cwd = data
        .parent()
        .filter(|p| p.exists())
        .unwrap_or(Path::new("/"));
    cmd.current_dir(cwd);
    apply_opt(ra, &mut cmd);
    cmd
}

pub(crate) fn run_checked(mut cmd: Command, what: &str) -> Result<()> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| ServerError::CommandFailed {
            what: what.into(),
            detail: e.to_string(),
        })?;
    if out.status.success() {
        return Ok(());
    }
    Err(ServerError::CommandFailed {
        what: what.into(),
        detail: format!(
            "{}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    })
}

/// Whether `data` holds a standby's data directory (`standby.signal`, as
/// `pg_basebackup -R` leaves it): a server started on it replays its primary's WAL and
/// takes no writes.
pub(crate) fn holds_standby(data: &Path) -> bool {
    data.join("standby.signal").exists()
}

/// Creates `extensions` in template1, then the database `db`, in single-user mode (needs
/// no client program, before start); stopped with an error if not done within `limit`.
pub(crate) fn create_database_single_user(
    binaries: &PgBinaries,
    ra: Option<&RunAs>,
    data: &Path,
    db: Option<&str>,
    extensions: &[&str],
    limit: Duration,
) -> Result<()> {
    let mut cmd = server_command(binaries.program("postgres"), ra, data);
    // The setup's commits never wait for a synchronous standby: none can connect to a
    // single-user server, and the settings may already name one that attaches later.
    cmd.args(["--single", "-F", "-c", "exit_on_error=true"])
        .args(["-c", "synchronous_commit=local", "-D"])
        .arg(data)
        .arg("template1");
    // Extensions first, in template1: every database created later has them.
    let mut input = String::new();
    for e in extensions {
        input.push_str(&format!(
            "CREATE EXTENSION IF NOT EXISTS {}\n",
            quote_identifier(e)
        ));
    }
    if let Some(db) = db {
        input.push_str(&format!("CREATE DATABASE {}\n", quote_identifier(db)));
    }
    let ended = output_within(cmd, Some(input.into_bytes()), limit).map_err(|e| {
        ServerError::CommandFailed {
            what: "postgres --single".into(),
            detail: e.to_string(),
        }
    })?;
    let detail = match ended.status {
        Some(status) if status.success() => return Ok(()),
        Some(status) => status.to_string(),
        None => format!("not done after {limit:?}; stopped"),
    };
    let stderr = ended.stderr;
    Err(ServerError::CommandFailed {
        what: match db {
            Some(db) => format!("creating database {db} (postgres --single)"),
            None => format!(
                "creating extensions {} (postgres --single)",
                extensions.join(", ")
            ),
        },
        detail: format!("{detail}\n{}", String::from_utf8_lossy(&stderr)),
    })
}

/// Decides what to do with an existing data directory. Returns true when initdb must run.
/// A server left running by a killed pgsurge run (owner dead, not detached) is stopped.
pub(crate) fn prepare_data_dir(
    data: &Path,
    binaries: &PgBinaries,
    timeouts: StopTimeouts,
) -> Result<bool> {
    let bad = |reason: String| ServerError::BadDataDir {
        data_dir: data.to_path_buf(),
        reason,
    };
    if !data.exists() {
        return Ok(true);
    }
    if !data.join("PG_VERSION").exists() {
        let empty = std::fs::read_dir(data)
            .map_err(|e| ServerError::io(data, e))?
            .next()
            .is_none();
        return if empty {
            Ok(true)
        } else {
            Err(bad(
                "exists, is not empty and is not a PostgreSQL data directory".into(),
            ))
        };
    }
    if let Some(pf) = PidFile::read(data) {
        if is_alive(pf.pid) && looks_like_postgres(pf.pid) {
            match OwnerMarker::read(data) {
                Some(m) if !m.detached && !is_alive(m.owner_pid) => {
                    // Orphan of a killed run: its watchdog may be stopping it already.
                    stop_postmaster(pf.pid, None, timeouts);
                    if let Some(w) = m.watchdog_pid {
                        wait_gone(w, Duration::from_secs(45));
                    }
                    remove_orphan_socket_dir(pf.socket_dir.as_deref());
                }
                _ => {
                    return Err(ServerError::AlreadyRunning {
                        pid: pf.pid,
                        data_dir: data.to_path_buf(),
                    })
                }
            }
        } else if let Some(m) = OwnerMarker::read(data) {
            if let Some(w) = m.watchdog_pid.filter(|_| !is_alive(m.owner_pid)) {
                wait_gone(w, Duration::from_secs(45));
            }
        }
        // A dead server's lock file: remove it so a reused pid cannot confuse the new one.
        let _ = std::fs::remove_file(data.join("postmaster.pid"));
    }
    if !data.exists() {
        // The killed run's watchdog removed it.
        return Ok(true);
    }
    let version = std::fs::read_to_string(data.join("PG_VERSION"))
        .map_err(|e| bad(format!("its PG_VERSION cannot be read: {e}")))?;
    let major = version.trim();
    if major != binaries.version().major.to_string() {
        return Err(bad(format!(
            "initialized by PostgreSQL {major}, but the binaries are {}; use another data directory",
            binaries.version()
        )));
    }
    Ok(false)
}

/// Removes the private socket directory of a killed run (its watchdog, which would have
/// removed it, may be dead too). Only directories pgsurge names `pgsurge-…` are touched.
pub(crate) fn remove_orphan_socket_dir(dir: Option<&str>) {
    let Some(dir) = dir.map(Path::new) else {
        return;
    };
    let ours = dir
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("pgsurge-"));
    if ours && dir.is_absolute() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

pub(crate) fn wait_gone(pid: i32, limit: Duration) {
    let deadline = Instant::now() + limit;
    while is_alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn absolute(p: &Path) -> Result<PathBuf> {
    if p.is_absolute() {
        Ok(p.to_path_buf())
    } else {
        std::env::current_dir()
            .map(|c| c.join(p))
            .map_err(|e| ServerError::io(p, e))
    }
}

/// A new private temporary directory, owned by the run-as user. Short paths: a Unix
/// socket path must fit in 107 bytes.
pub(crate) fn make_temp_dir(prefix: &str, ra: Option<&RunAs>) -> Result<PathBuf> {
    let root = crate::sweep::temp_root();
    // Names come from users (campaign target names): keep them short and path-safe,
    // since the socket path must stay under 107 bytes.
    let prefix: String = prefix
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(32)
        .collect();
    let prefix = if prefix.starts_with("pgsurge-") {
        prefix
    } else {
        format!("pgsurge-{prefix}")
    };
    let dir = tempfile::Builder::new()
        .prefix(&prefix)
        .tempdir_in(&root)
        .map_err(|e| ServerError::io(&root, e))?
        .keep();
    chown_opt(ra, &dir)?;
    Ok(dir)
}

pub(crate) fn make_subdir(path: &Path, ra: Option<&RunAs>) -> Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(path)
        .map_err(|e| ServerError::io(path, e))?;
    chown_opt(ra, path)?;
    Ok(path.to_path_buf())
}

pub(crate) fn check_socket_path_length(dir: &Path) -> Result<()> {
    // ".s.PGSQL.65535" plus a separator must fit in sun_path (108 bytes with the NUL).
    if dir.as_os_str().len() + 15 > 107 {
        return Err(ServerError::Invalid(format!(
            "{}: socket directory path too long for a Unix socket; choose a shorter one",
            dir.display()
        )));
    }
    Ok(())
}

/// The last `lines` lines of `path` written after byte `from`.
pub(crate) fn log_tail_since(path: &Path, from: u64, lines: usize) -> String {
    let bytes = std::fs::read(path).unwrap_or_default();
    let start = (from as usize).min(bytes.len());
    let text = String::from_utf8_lossy(&bytes[start..]);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_setup_that_never_ends_is_stopped_with_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        // A server that answers --version and otherwise never finishes, as a setup
        // stuck waiting on a lock or a standby would.
        let script = "#!/bin/sh\n\
                      [ \"$1\" = --version ] && { echo 'postgres (PostgreSQL) 17.2'; exit 0; }\n\
                      exec sleep 600\n";
        for program in ["postgres", "initdb"] {
            let p = bin.join(program);
            std::fs::write(&p, script).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let binaries = PgBinaries::from_dir(&bin).unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let err = create_database_single_user(
            &binaries,
            None,
            &data,
            Some("bench"),
            &[],
            Duration::from_millis(300),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("creating database bench"), "{err}");
        assert!(err.contains("not done after"), "{err}");
    }
}
