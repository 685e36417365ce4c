//! The results store: versioned schema on SQLite (default) or PostgreSQL.
