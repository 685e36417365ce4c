//! Finding PostgreSQL server binaries on this machine and learning their version.
//!
//! Owns the search order (explicit directory, `PGSURGE_PG_BIN`, `PATH`,
//! `pg_config --bindir`, the highest `/usr/lib/postgresql/*/bin`) and the parsing of
//! `postgres --version`. Fetching binaries that are not installed lives in `fetch`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Result, ServerError};

/// Environment variable that names the binaries directory and overrides the search.
pub const PG_BIN_ENV: &str = "PGSURGE_PG_BIN";

/// A PostgreSQL version as the server reports it, e.g. 15.18 → `150018`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PgVersion {
    /// Major version (15 for 15.18; 9 for 9.6 is not supported).
    pub major: u32,
    /// Minor version (18 for 15.18; 0 for development or beta builds).
    pub minor: u32,
}

impl PgVersion {
    /// The `server_version_num` form: `major * 10000 + minor`.
    pub fn num(&self) -> u32 {
        self.major * 10000 + self.minor
    }

    /// Parses the output of `postgres --version`, e.g.
    /// `postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)` or `postgres (PostgreSQL) 18devel`.
    pub fn parse_version_output(output: &str) -> Result<PgVersion> {
        let unknown = || ServerError::UnknownVersion {
            output: output.trim().to_string(),
        };
        let rest = output
            .split_once("(PostgreSQL)")
            .map(|(_, r)| r)
            .unwrap_or(output);
        let word = rest.split_whitespace().next().ok_or_else(unknown)?;
        let digits_prefix = |s: &str| -> Option<u32> {
            let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
            s[..end].parse().ok()
        };
        let mut parts = word.splitn(2, '.');
        let major = parts.next().and_then(digits_prefix).ok_or_else(unknown)?;
        let minor = parts.next().and_then(digits_prefix).unwrap_or(0);
        if major < 10 {
            return Err(unknown());
        }
        Ok(PgVersion { major, minor })
    }
}

impl std::fmt::Display for PgVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// A directory of PostgreSQL server binaries (`initdb`, `postgres`, usually `psql`) and
/// the version of its `postgres`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgBinaries {
    bin_dir: PathBuf,
    version: PgVersion,
}

impl PgBinaries {
    /// Uses the binaries in `dir` (e.g. a self-built PostgreSQL's `bin`). Fails if
    /// `initdb` or `postgres` is missing there or `postgres --version` is not understood.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<PgBinaries> {
        let dir = dir.as_ref();
        let bin_dir = std::fs::canonicalize(dir).map_err(|e| ServerError::io(dir, e))?;
        for program in ["initdb", "postgres"] {
            if !is_executable(&bin_dir.join(program)) {
                return Err(ServerError::MissingProgram {
                    dir: bin_dir,
                    program: program.to_string(),
                });
            }
        }
        let postgres = bin_dir.join("postgres");
        let out = Command::new(&postgres)
            .arg("--version")
            .output()
            .map_err(|e| ServerError::io(&postgres, e))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let version = PgVersion::parse_version_output(&text)?;
        Ok(PgBinaries { bin_dir, version })
    }

    /// Finds local binaries: `PGSURGE_PG_BIN` if set, else the directory of `initdb` on
    /// `PATH`, else `pg_config --bindir`, else the highest `/usr/lib/postgresql/*/bin`,
    /// the highest `/usr/pgsql-*/bin`, `/usr/local/pgsql/bin`.
    pub fn discover() -> Result<PgBinaries> {
        if let Some(dir) = std::env::var_os(PG_BIN_ENV).filter(|v| !v.is_empty()) {
            return PgBinaries::from_dir(PathBuf::from(dir));
        }
        let mut searched = Vec::new();
        for dir in candidate_dirs() {
            searched.push(dir.display().to_string());
            if let Ok(found) = PgBinaries::from_dir(&dir) {
                return Ok(found);
            }
        }
        if searched.is_empty() {
            searched.push(
                "PATH, pg_config, /usr/lib/postgresql/*/bin, /usr/pgsql-*/bin, /usr/local/pgsql/bin"
                    .to_string(),
            );
        }
        Err(ServerError::BinariesNotFound {
            searched: searched.join(", "),
        })
    }

    /// Finds local binaries of the given major version (e.g. `/usr/lib/postgresql/15/bin`),
    /// looking at the same places as [`PgBinaries::discover`].
    pub fn discover_major(major: u32) -> Option<PgBinaries> {
        candidate_dirs()
            .into_iter()
            .filter_map(|d| PgBinaries::from_dir(d).ok())
            .find(|b| b.version.major == major)
    }

    /// The binaries directory.
    pub fn bin_dir(&self) -> &Path {
        &self.bin_dir
    }

    /// The version of `postgres` in this directory.
    pub fn version(&self) -> PgVersion {
        self.version
    }

    /// Path of a program in the binaries directory (whether or not it exists).
    pub fn program(&self, name: &str) -> PathBuf {
        self.bin_dir.join(name)
    }

    /// Whether the extension `name` is installed with these binaries: its control file
    /// and its library where their `pg_config` says (false without `pg_config`).
    pub fn has_extension(&self, name: &str) -> bool {
        let Ok(out) = Command::new(self.program("pg_config"))
            .args(["--sharedir", "--pkglibdir"])
            .output()
        else {
            return false;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines = text.lines();
        let (Some(share), Some(lib), true) = (lines.next(), lines.next(), out.status.success())
        else {
            return false;
        };
        Path::new(share)
            .join("extension")
            .join(format!("{name}.control"))
            .is_file()
            && Path::new(lib).join(format!("{name}.so")).is_file()
    }

    /// `psql` from the binaries directory, else from `PATH` (fetched server-only
    /// distributions may lack client programs).
    pub fn psql(&self) -> Option<PathBuf> {
        let own = self.program("psql");
        if is_executable(&own) {
            return Some(own);
        }
        find_on_path("psql")
    }
}

/// The places searched for binaries, in order, without duplicates.
fn candidate_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut push = |d: PathBuf| {
        let d = std::fs::canonicalize(&d).unwrap_or(d);
        if !dirs.contains(&d) {
            dirs.push(d);
        }
    };
    if let Some(initdb) = find_on_path("initdb") {
        // Follow symlinks such as /usr/local/bin/initdb -> /usr/lib/postgresql/15/bin/initdb
        // so that the sibling programs are found too.
        let real = std::fs::canonicalize(&initdb).unwrap_or(initdb);
        if let Some(parent) = real.parent() {
            push(parent.to_path_buf());
        }
    }
    if let Some(pg_config) = find_on_path("pg_config") {
        if let Ok(out) = Command::new(pg_config).arg("--bindir").output() {
            if out.status.success() {
                let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
                if !dir.is_empty() {
                    push(PathBuf::from(dir));
                }
            }
        }
    }
    for d in packaged_dirs(Path::new("/")) {
        push(d);
    }
    dirs
}

/// The binaries directories of packaged and self-built servers under `root`, newest
/// major first within each layout: Debian/Ubuntu `/usr/lib/postgresql/N/bin`, the PGDG
/// RPMs' `/usr/pgsql-N/bin` (Red Hat family, SUSE), then `/usr/local/pgsql/bin`, where
/// `make install` of a source build puts them.
fn packaged_dirs(root: &Path) -> Vec<PathBuf> {
    let versioned = |parent: &str, prefix: &str| -> Vec<PathBuf> {
        let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(root.join(parent))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name();
                let major: u32 = name.to_str()?.strip_prefix(prefix)?.parse().ok()?;
                Some((major, e.path().join("bin")))
            })
            .collect();
        found.sort_by_key(|b| std::cmp::Reverse(b.0));
        found.into_iter().map(|(_, d)| d).collect()
    };
    let mut dirs = versioned("usr/lib/postgresql", "");
    dirs.extend(versioned("usr", "pgsql-"));
    let source_build = root.join("usr/local/pgsql/bin");
    if source_build.is_dir() {
        dirs.push(source_build);
    }
    dirs
}

/// Looks a program up on `PATH`.
pub(crate) fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packaged_layouts_are_searched_newest_first() {
        let root = tempfile::tempdir().unwrap();
        for d in [
            "usr/lib/postgresql/15/bin",
            "usr/lib/postgresql/17/bin",
            "usr/pgsql-16/bin",
            "usr/pgsql-18/bin",
            "usr/pgsql-x/bin",
            "usr/local/pgsql/bin",
        ] {
            std::fs::create_dir_all(root.path().join(d)).unwrap();
        }
        let got: Vec<String> = packaged_dirs(root.path())
            .iter()
            .map(|p| p.strip_prefix(root.path()).unwrap().display().to_string())
            .collect();
        assert_eq!(
            got,
            [
                "usr/lib/postgresql/17/bin",
                "usr/lib/postgresql/15/bin",
                "usr/pgsql-18/bin",
                "usr/pgsql-16/bin",
                "usr/local/pgsql/bin"
            ]
        );
    }

    #[test]
    fn parses_release_and_devel_versions() {
        let v = PgVersion::parse_version_output(
            "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)\n",
        )
        .unwrap();
        assert_eq!((v.major, v.minor, v.num()), (15, 18, 150018));
        let v = PgVersion::parse_version_output("postgres (PostgreSQL) 18devel").unwrap();
        assert_eq!(v.num(), 180000);
        let v = PgVersion::parse_version_output("postgres (PostgreSQL) 17beta1").unwrap();
        assert_eq!(v.num(), 170000);
        assert!(PgVersion::parse_version_output("hello").is_err());
        assert!(PgVersion::parse_version_output("postgres (PostgreSQL) 9.6.24").is_err());
    }
}
