//! Dropping root: which unprivileged user runs initdb and postgres, and handing
//! directories to that user. PostgreSQL refuses to run as root, so when pgsurge runs
//! as root the server runs as `postgres` (or the user given with `--run-as`).

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Result, ServerError};

/// The unprivileged account that runs the server processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    /// User name.
    pub name: String,
    /// Numeric user id.
    pub uid: u32,
    /// Primary group id.
    pub gid: u32,
    /// Home directory (used as `HOME` for the server processes).
    pub home: PathBuf,
}

impl RunAs {
    /// Decides who runs the server. Not root: the current user (returns `None`; asking
    /// for another user is an error). Root: `user` if given, else `postgres`; an error if
    /// that account does not exist or is itself root.
    pub fn resolve(user: Option<&str>) -> Result<Option<RunAs>> {
        if pgsurge_wire::os_user::effective_uid() != 0 {
            if let Some(name) = user {
                let me = pgsurge_wire::OsUser::effective();
                if me.map(|u| u.name).as_deref() != Some(name) {
                    return Err(ServerError::RunAs(format!(
                        "--run-as {name}: only root can run the server as another user"
                    )));
                }
            }
            return Ok(None);
        }
        let name = user.unwrap_or("postgres");
        let Some(u) = pgsurge_wire::OsUser::by_name(name) else {
            return Err(ServerError::RunAs(format!(
                "running as root, the server must run as an unprivileged user, but user `{name}` \
                 does not exist; create it (e.g. `useradd --system postgres`) or pass --run-as USER"
            )));
        };
        if u.is_root() {
            return Err(ServerError::RunAs(format!(
                "--run-as {name}: this user is root; PostgreSQL refuses to run as root"
            )));
        }
        Ok(Some(RunAs {
            name: u.name,
            uid: u.uid,
            gid: u.gid,
            home: u.home,
        }))
    }

    /// Makes `cmd` run as this user (std drops supplementary groups when root switches uid).
    pub fn apply(&self, cmd: &mut Command) {
        cmd.uid(self.uid)
            .gid(self.gid)
            .env("HOME", &self.home)
            .env("USER", &self.name);
    }

    /// Hands `path` (not recursively) to this user.
    pub fn chown(&self, path: &Path) -> Result<()> {
        std::os::unix::fs::chown(path, Some(self.uid), Some(self.gid))
            .map_err(|e| ServerError::io(path, e))
    }
}

impl RunAs {
    /// Checks that this user can reach `path`: execute permission on every existing
    /// directory from `/` down to it. A data directory under a private home (mode 0700)
    /// is the usual mistake; the error says which directory blocks and how to fix it.
    pub fn check_reachable(&self, path: &Path) -> Result<()> {
        use std::os::unix::fs::MetadataExt;
        let mut dirs: Vec<&Path> = path.ancestors().collect();
        dirs.reverse();
        for dir in dirs {
            let Ok(meta) = std::fs::metadata(dir) else {
                break;
            };
            if !meta.is_dir() {
                continue;
            }
            let mode = meta.mode();
            let ok = if meta.uid() == self.uid {
                mode & 0o100 != 0
            } else if meta.gid() == self.gid {
                mode & 0o010 != 0
            } else {
                mode & 0o001 != 0
            };
            if !ok {
                return Err(ServerError::RunAs(format!(
                    "{}: not accessible to user `{}`, who runs the server (needed to reach {}); \
                     choose a directory elsewhere (e.g. under /tmp or /var/lib) or `chmod o+x {}`",
                    dir.display(),
                    self.name,
                    path.display(),
                    dir.display()
                )));
            }
        }
        Ok(())
    }
}

/// Applies an optional [`RunAs`] to a command.
pub(crate) fn apply_opt(run_as: Option<&RunAs>, cmd: &mut Command) {
    if let Some(r) = run_as {
        r.apply(cmd);
    }
}

/// Hands `path` to the run-as user, if any.
pub(crate) fn chown_opt(run_as: Option<&RunAs>, path: &Path) -> Result<()> {
    match run_as {
        Some(r) => r.chown(path),
        None => Ok(()),
    }
}
