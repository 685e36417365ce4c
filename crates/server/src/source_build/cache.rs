//! The build cache: `<cache>/builds/<key>/` holds `install/` (the prefix), `build.log`
//! and, once the build is complete, `build.json`. A build holds `<key>.lock` (an
//! exclusive `flock`) from start to finish, so a second build of the same key waits and
//! then finds the first one's result; a killed build leaves no `build.json`, and the
//! next build of its key starts over.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::compile::BuildSystem;
use super::record::{hex, BuildInfo, PatchInfo};
use crate::error::{Result, ServerError};

/// The inputs that make a key.
pub(super) struct KeyParts<'a> {
    pub(super) source: &'a str,
    pub(super) patches: &'a [PatchInfo],
    pub(super) configure: &'a [String],
    pub(super) system: BuildSystem,
    pub(super) contrib: &'a [String],
    pub(super) compiler: &'a str,
    pub(super) profiling: bool,
    pub(super) layout_seed: Option<u64>,
}

/// The cache key of a build (hex SHA-256 of its inputs; patch names are left out, their
/// bytes count).
pub(super) fn key(parts: &KeyParts) -> String {
    let mut h = Sha256::new();
    let mut field = |name: &str, value: &str| {
        h.update(name.as_bytes());
        h.update([0]);
        h.update(value.as_bytes());
        h.update([0]);
    };
    field("format", "pgsurge-build-1");
    field("source", parts.source);
    for p in parts.patches {
        field("patch", &p.sha256);
    }
    for c in parts.configure {
        field("configure", c);
    }
    field("system", parts.system.name());
    for c in parts.contrib {
        field("contrib", c);
    }
    field("compiler", parts.compiler);
    // Only builds for profiling have the field, so other keys stay what they were.
    if parts.profiling {
        field("profiling", super::PROFILING_CFLAGS);
    }
    // Likewise only layout builds have a seed: the same objects, linked in its order,
    // the grammars and scanners generated without `#line` (which named the cache
    // entry's path in the binary: layouts made before have keys of their own).
    if let Some(seed) = parts.layout_seed {
        field("layout", &format!("{seed} without any #line"));
    }
    hex(&h.finalize())[..32].to_string()
}

pub(super) struct BuildCache {
    root: PathBuf,
}

impl BuildCache {
    pub(super) fn open() -> Result<BuildCache> {
        let root = crate::fetch::cache_root()?.join("builds");
        fs::create_dir_all(&root).map_err(|e| ServerError::io(&root, e))?;
        Ok(BuildCache { root })
    }

    pub(super) fn entry(&self, key: &str) -> Entry {
        Entry {
            dir: self.root.join(key),
            lock_path: self.root.join(format!("{key}.lock")),
        }
    }
}

pub(super) struct Entry {
    dir: PathBuf,
    lock_path: PathBuf,
}

impl Entry {
    pub(super) fn install_dir(&self) -> PathBuf {
        self.dir.join("install")
    }
    pub(super) fn bin_dir(&self) -> PathBuf {
        self.install_dir().join("bin")
    }
    pub(super) fn log_path(&self) -> PathBuf {
        self.dir.join("build.log")
    }
    pub(super) fn work_dir(&self) -> PathBuf {
        self.dir.join("work")
    }
    fn info_path(&self) -> PathBuf {
        self.dir.join("build.json")
    }

    /// The build's record when it is complete.
    pub(super) fn info(&self) -> Option<BuildInfo> {
        read_info(&self.dir)
    }

    /// Takes the key's lock, saying so when another build holds it.
    pub(super) fn lock(&self, progress: &mut dyn Write) -> Result<File> {
        let file = lock_file(&self.lock_path)?;
        if file.try_lock().is_err() {
            let _ = writeln!(
                progress,
                "pgsurge: another build of the same inputs is running; waiting for it"
            );
            file.lock()
                .map_err(|e| ServerError::io(&self.lock_path, e))?;
        }
        Ok(file)
    }

    /// Removes what an unfinished build left.
    pub(super) fn clear(&self) -> Result<()> {
        remove_all(&self.dir)?;
        fs::create_dir_all(&self.dir).map_err(|e| ServerError::io(&self.dir, e))
    }

    /// Removes everything of a failed build but its log.
    pub(super) fn abandon(&self) {
        let _ = remove_all(&self.work_dir());
        let _ = remove_all(&self.install_dir());
    }

    /// Removes the work directory (the source and the build tree) of a build that
    /// succeeded.
    pub(super) fn discard_work(&self) -> Result<()> {
        remove_all(&self.work_dir())
    }

    /// Records the build as complete (its work directory removed).
    pub(super) fn finish(&self, info: &BuildInfo) -> Result<()> {
        remove_all(&self.work_dir())?;
        let path = self.info_path();
        let tmp = self.dir.join("build.json.tmp");
        let text = serde_json::to_string_pretty(info)
            .map_err(|e| ServerError::Invalid(format!("build record: {e}")))?;
        fs::write(&tmp, text).map_err(|e| ServerError::io(&tmp, e))?;
        fs::rename(&tmp, &path).map_err(|e| ServerError::io(&path, e))
    }
}

fn lock_file(path: &Path) -> Result<File> {
    fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| ServerError::io(path, e))
}

fn read_info(dir: &Path) -> Option<BuildInfo> {
    let text = fs::read_to_string(dir.join("build.json")).ok()?;
    let info: BuildInfo = serde_json::from_str(&text).ok()?;
    dir.join("install/bin/postgres").is_file().then_some(info)
}

fn remove_all(path: &Path) -> Result<()> {
    match fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(ServerError::io(path, e)),
    }
}

/// A complete build in the cache.
#[derive(Debug, Clone)]
pub struct CachedBuild {
    /// What it was built from.
    pub info: BuildInfo,
    /// The installation's `bin` directory.
    pub bin_dir: PathBuf,
    /// Bytes on disk.
    pub bytes: u64,
}

/// The complete builds in the cache, oldest first.
pub fn list_builds() -> Result<Vec<CachedBuild>> {
    let cache = BuildCache::open()?;
    let mut builds = Vec::new();
    for entry in fs::read_dir(&cache.root).map_err(|e| ServerError::io(&cache.root, e))? {
        let Ok(entry) = entry else { continue };
        let dir = entry.path();
        if let Some(info) = read_info(&dir) {
            builds.push(CachedBuild {
                info,
                bin_dir: dir.join("install/bin"),
                bytes: disk_usage(&dir),
            });
        }
    }
    builds.sort_by_key(|b| b.info.finished_at);
    Ok(builds)
}

/// Something that uses a build: a recorded server's binaries or a running process's
/// executable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildUser {
    /// The directory or file it uses.
    pub path: PathBuf,
    /// Who it is, for people: `server /data (pid 4242, port 5433)`, `process 4243
    /// (postgres)`.
    pub who: String,
}

/// The users any build may have: the servers `pgsurge server start` recorded (their
/// binaries directory, whether or not they run now) and every running process whose
/// executable can be read (a campaign's throwaway servers, servers started by hand).
pub fn build_users(records: &[crate::state::ServerRecord]) -> Vec<BuildUser> {
    let mut users: Vec<BuildUser> = records
        .iter()
        .map(|r| BuildUser {
            path: fs::canonicalize(&r.bin_dir).unwrap_or_else(|_| r.bin_dir.clone()),
            who: format!(
                "server {} (pid {}, port {})",
                r.data_dir.display(),
                r.pid,
                r.port
            ),
        })
        .collect();
    let Ok(procs) = fs::read_dir("/proc") else {
        return users;
    };
    for e in procs.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(exe) = fs::read_link(e.path().join("exe")) else {
            continue;
        };
        let name = exe
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        users.push(BuildUser {
            path: exe,
            who: format!("process {pid} ({name})"),
        });
    }
    users
}

/// What [`prune_builds`] did.
#[derive(Debug, Clone, Default)]
pub struct Pruned {
    /// Entries removed.
    pub removed: usize,
    /// Bytes freed.
    pub freed: u64,
    /// Entries left alone because a build of their key is running.
    pub building: usize,
    /// Builds kept because something uses them: the key and who uses it.
    pub in_use: Vec<(String, Vec<String>)>,
}

/// Empties the cache except builds running now and builds that one of `users` uses.
pub fn prune_builds(users: &[BuildUser]) -> Result<Pruned> {
    let cache = BuildCache::open()?;
    let mut pruned = Pruned::default();
    for entry in fs::read_dir(&cache.root).map_err(|e| ServerError::io(&cache.root, e))? {
        let Ok(entry) = entry else { continue };
        let dir = entry.path();
        if !dir.is_dir() {
            continue;
        }
        let Some(key) = dir.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        let e = cache.entry(&key);
        let lock = lock_file(&e.lock_path)?;
        if lock.try_lock().is_err() {
            pruned.building += 1;
            continue;
        }
        let real = fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
        let who: Vec<String> = users
            .iter()
            .filter(|u| u.path.starts_with(&real) || u.path.starts_with(&dir))
            .map(|u| u.who.clone())
            .collect();
        if !who.is_empty() {
            pruned.in_use.push((key, who));
            continue;
        }
        pruned.freed += disk_usage(&dir);
        remove_all(&dir)?;
        let _ = fs::remove_file(&e.lock_path);
        pruned.removed += 1;
    }
    Ok(pruned)
}

fn disk_usage(path: &Path) -> u64 {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    fs::read_dir(path)
        .map(|rd| rd.flatten().map(|e| disk_usage(&e.path())).sum())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts<'a>(
        source: &'a str,
        patches: &'a [PatchInfo],
        configure: &'a [String],
    ) -> KeyParts<'a> {
        KeyParts {
            source,
            patches,
            configure,
            system: BuildSystem::Auto,
            contrib: &[],
            compiler: "gcc 12",
            profiling: false,
            layout_seed: None,
        }
    }

    #[test]
    fn the_key_follows_every_input_but_patch_names() {
        let p = |name: &str, sha: &str| PatchInfo {
            name: name.into(),
            sha256: sha.into(),
        };
        let base = key(&parts("git:abc", &[], &[]));
        assert_eq!(base, key(&parts("git:abc", &[], &[])));
        let profiling = KeyParts {
            profiling: true,
            ..parts("git:abc", &[], &[])
        };
        assert_ne!(base, key(&profiling));
        let layout = |seed| KeyParts {
            layout_seed: Some(seed),
            ..parts("git:abc", &[], &[])
        };
        assert_ne!(base, key(&layout(1)));
        assert_ne!(key(&layout(1)), key(&layout(2)));
        assert_eq!(key(&layout(2)), key(&layout(2)));
        assert_ne!(base, key(&parts("git:abd", &[], &[])));
        let one = key(&parts("git:abc", &[p("a.patch", "11")], &[]));
        assert_ne!(base, one);
        assert_eq!(
            one,
            key(&parts("git:abc", &[p("renamed.patch", "11")], &[]))
        );
        assert_ne!(
            key(&parts("git:abc", &[p("a", "11"), p("b", "22")], &[])),
            key(&parts("git:abc", &[p("b", "22"), p("a", "11")], &[]))
        );
        assert_ne!(
            base,
            key(&parts("git:abc", &[], &["--enable-debug".into()]))
        );
        let mut other = parts("git:abc", &[], &[]);
        other.compiler = "gcc 13";
        assert_ne!(base, key(&other));
    }
}
