//! Opens a PostgreSQL connection for the store's PostgreSQL backend.

use crate::backend::postgres::SimpleQuery;
use crate::error::{Result, StoreError};

/// Connects to `location` (a `postgres://` URL or a conninfo string).
pub(crate) fn connect(location: &str) -> Result<Box<dyn SimpleQuery>> {
    Err(StoreError::BadLocation(format!(
        "cannot open {location}: the PostgreSQL backend is not available in this build yet"
    )))
}
