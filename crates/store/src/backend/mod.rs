//! The two storage backends behind one small trait: statements with `?` placeholders,
//! rows of [`Value`]s, transactions, and the schema version. SQL written against this
//! trait must be portable between SQLite (3.35+) and PostgreSQL (RETURNING, no
//! dialect functions); dialect-specific DDL is produced by [`crate::schema`].

pub(crate) mod postgres;
pub(crate) mod sqlite;

use crate::error::Result;
use crate::value::{Row, Value};

/// Which SQL dialect a backend speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite (bundled).
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

/// A connection to a store.
pub(crate) trait Backend: Send {
    fn dialect(&self) -> Dialect;
    /// Whether the store was opened as a snapshot that never shows later writes (a
    /// SQLite file opened immutable).
    fn snapshot_only(&self) -> bool {
        false
    }
    /// Runs statements without parameters (DDL, BEGIN/COMMIT).
    fn batch(&mut self, sql: &str) -> Result<()>;
    /// Begins a transaction that will write.
    fn begin_write(&mut self) -> Result<()> {
        self.batch("BEGIN")
    }
    /// Begins a transaction that excludes every other writer of the store until it
    /// ends (SQLite: `BEGIN IMMEDIATE`; PostgreSQL: a session advisory lock taken before the
    /// transaction begins, so the transaction sees everything the previous holder did),
    /// so a read-then-write inside it (schema version, set lock) cannot race.
    fn begin_exclusive(&mut self) -> Result<()>;
    /// Ends a transaction begun by [`Backend::begin_exclusive`] (commit or roll back)
    /// and lets the next writer in.
    fn end_exclusive(&mut self, commit: bool) -> Result<()> {
        self.batch(if commit { "COMMIT" } else { "ROLLBACK" })
    }
    /// Runs one statement; returns the number of rows changed.
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64>;
    /// Runs one query and returns every row.
    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>>;
    /// Inserts many rows into `table(columns)`.
    fn insert_many(&mut self, table: &str, columns: &[&str], rows: &[Vec<Value>]) -> Result<()>;
    /// The schema version stored in the database (0 = none).
    fn schema_version(&mut self) -> Result<i64>;
    /// The tables the store's own tables would sit beside (SQLite: the file's;
    /// PostgreSQL: those of the schema new tables go to), sorted. Without a schema
    /// version, any table means the database belongs to something else.
    fn table_names(&mut self) -> Result<Vec<String>>;
    /// Records the schema version (inside the migration's transaction).
    fn set_schema_version(&mut self, version: i64) -> Result<()>;
}

/// `INSERT INTO table (a, b) VALUES (?, ?)` for `columns`.
pub(crate) fn insert_sql(table: &str, columns: &[&str]) -> String {
    let marks = vec!["?"; columns.len()].join(", ");
    format!(
        "INSERT INTO {table} ({}) VALUES ({marks})",
        columns.join(", ")
    )
}

/// At most five table names, for a message.
pub(crate) fn table_list(tables: &[String]) -> String {
    let mut shown: Vec<&str> = tables.iter().take(5).map(String::as_str).collect();
    if tables.len() > 5 {
        shown.push("…");
    }
    shown.join(", ")
}
