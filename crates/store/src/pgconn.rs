//! Opens a PostgreSQL connection for the store's PostgreSQL backend (`pgsurge-wire`,
//! libpq-compatible: URLs, conninfo strings, PG* variables, .pgpass), as the
//! [`SimpleQuery`] the backend runs its statements on.

use crate::error::{Result, StoreError};

/// Text rows of a result (None = NULL) and the row count of its command tag.
pub(crate) type TextRows = (Vec<Vec<Option<String>>>, u64);

/// A simple-query connection: what the backend needs from a PostgreSQL client.
pub(crate) trait SimpleQuery: Send {
    /// Runs `sql` (one or more statements); returns the rows of the last result as text
    /// (None = NULL) and the row count of its command tag (0 when it has none).
    fn simple_query(&mut self, sql: &str) -> std::result::Result<TextRows, String>;
}

struct WireConn(pgsurge_wire::Connection);

impl SimpleQuery for WireConn {
    fn simple_query(&mut self, sql: &str) -> std::result::Result<TextRows, String> {
        let results = self
            .0
            .simple_query(sql)
            .map_err(|e| e.pq_message().trim_end().to_string())?;
        Ok(results
            .into_iter()
            .last()
            .map(|r| {
                let n = r.rows_affected().unwrap_or(0);
                (r.rows, n)
            })
            .unwrap_or_default())
    }
}

/// Connects to `location` (a `postgres://` URL or a conninfo string).
/// Messages may quote parts of the location (a parser's "invalid percent-encoded
/// token"): its passwords are masked wherever they appear.
pub(crate) fn connect(location: &str) -> Result<Box<dyn SimpleQuery>> {
    let secrets = pgsurge_wire::redact::passwords(location);
    let cfg = pgsurge_wire::ConnConfig::parse(location).map_err(|e| StoreError::Postgres {
        context: "parsing the store's connection string".into(),
        message: pgsurge_wire::redact::redact_with(&e.to_string(), &secrets),
    })?;
    let mut conn = pgsurge_wire::Connection::connect(&cfg).map_err(|e| StoreError::Postgres {
        context: "connecting to the store".into(),
        message: pgsurge_wire::redact::redact_with(e.to_string().trim_end(), &secrets),
    })?;
    // Notices (e.g. "relation already exists, skipping") are not the user's business.
    conn.set_notice_handler(Box::new(|_| {}));
    Ok(Box::new(WireConn(conn)))
}
