//! libpq-compatible PostgreSQL connections (conninfo, auth, TLS) and protocol helpers.
