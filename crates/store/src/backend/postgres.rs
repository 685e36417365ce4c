//! PostgreSQL backend: the store in a PostgreSQL database given by a URL or conninfo.
//!
//! Statements go through the simple query protocol with parameters rendered as quoted
//! literals ([`render`]), so the backend needs nothing but `simple_query`; values come
//! back as text and are converted by [`crate::value`].

use super::{Backend, Dialect};
use crate::error::{Result, StoreError};
use crate::pgconn::SimpleQuery;
use crate::value::{Row, Value};

/// Renders `sql`, replacing each `?` outside quotes with the next parameter as a literal.
pub(crate) fn render(sql: &str, params: &[Value]) -> Result<String> {
    let mut out = String::with_capacity(sql.len() + params.len() * 8);
    let mut next = params.iter();
    let mut in_quote = false;
    for c in sql.chars() {
        match c {
            '\'' => {
                in_quote = !in_quote;
                out.push(c);
            }
            '?' if !in_quote => {
                let v = next.next().ok_or_else(|| StoreError::Postgres {
                    context: "rendering a statement".into(),
                    message: format!("more placeholders than parameters in: {sql}"),
                })?;
                push_literal(&mut out, v);
            }
            _ => out.push(c),
        }
    }
    if next.next().is_some() {
        return Err(StoreError::Postgres {
            context: "rendering a statement".into(),
            message: format!("more parameters than placeholders in: {sql}"),
        });
    }
    Ok(out)
}

/// Appends `v` as a PostgreSQL literal that is correct whatever
/// `standard_conforming_strings` says (E'' strings, hex-decoded bytea).
pub(crate) fn push_literal(out: &mut String, v: &Value) {
    use std::fmt::Write;
    match v {
        Value::Null => out.push_str("NULL"),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Real(f) if f.is_finite() => {
            let _ = write!(out, "{f:?}::float8");
        }
        Value::Real(f) => {
            let _ = write!(out, "'{f}'::float8");
        }
        Value::Text(s) => {
            out.push_str("E'");
            for c in s.chars() {
                match c {
                    '\'' => out.push_str("''"),
                    '\\' => out.push_str("\\\\"),
                    '\0' => {} // PostgreSQL text cannot hold NUL
                    c => out.push(c),
                }
            }
            out.push('\'');
        }
        Value::Blob(b) => {
            out.push_str("decode('");
            for byte in b {
                let _ = write!(out, "{byte:02x}");
            }
            out.push_str("', 'hex')");
        }
    }
}

/// Key of the advisory lock that serializes the store's schema changes and set locks
/// (arbitrary, fixed: "pgsurge" in ASCII).
const STORE_LOCK_KEY: i64 = 0x0070_6773_7572_6765;

pub(crate) struct PostgresBackend {
    conn: Box<dyn SimpleQuery>,
}

impl PostgresBackend {
    pub(crate) fn connect(location: &str) -> Result<Self> {
        let conn = crate::pgconn::connect(location)?;
        let mut me = Self { conn };
        me.batch("SET client_min_messages = warning")?;
        Ok(me)
    }

    fn run(&mut self, sql: &str) -> Result<Vec<Row>> {
        self.run_counted(sql).map(|(rows, _)| rows)
    }

    fn run_counted(&mut self, sql: &str) -> Result<(Vec<Row>, u64)> {
        let (rows, affected) =
            self.conn
                .simple_query(sql)
                .map_err(|message| StoreError::Postgres {
                    context: sql.chars().take(80).collect(),
                    message,
                })?;
        let rows = rows
            .into_iter()
            .map(|r| {
                Row(r
                    .into_iter()
                    .map(|v| v.map_or(Value::Null, Value::Text))
                    .collect())
            })
            .collect();
        Ok((rows, affected))
    }
}

impl Backend for PostgresBackend {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn batch(&mut self, sql: &str) -> Result<()> {
        self.run(sql).map(|_| ())
    }

    fn begin_exclusive(&mut self) -> Result<()> {
        // The lock first, then a new transaction: a transaction begun before the lock
        // was granted would keep stale catalog caches (a table the previous holder
        // created would look missing to to_regclass).
        self.batch(&format!("SELECT pg_advisory_lock({STORE_LOCK_KEY})"))?;
        if let Err(e) = self.batch("BEGIN") {
            let _ = self.batch(&format!("SELECT pg_advisory_unlock({STORE_LOCK_KEY})"));
            return Err(e);
        }
        Ok(())
    }

    fn end_exclusive(&mut self, commit: bool) -> Result<()> {
        let ended = self.batch(if commit { "COMMIT" } else { "ROLLBACK" });
        let unlocked = self.batch(&format!("SELECT pg_advisory_unlock({STORE_LOCK_KEY})"));
        ended.and(unlocked)
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64> {
        let sql = render(sql, params)?;
        self.run_counted(&sql).map(|(_, n)| n)
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>> {
        let sql = render(sql, params)?;
        self.run(&sql)
    }

    fn insert_many(&mut self, table: &str, columns: &[&str], rows: &[Vec<Value>]) -> Result<()> {
        // Multi-row VALUES in chunks: one round trip per 500 rows.
        for chunk in rows.chunks(500) {
            let mut sql = format!("INSERT INTO {table} ({}) VALUES ", columns.join(", "));
            for (i, row) in chunk.iter().enumerate() {
                if i > 0 {
                    sql.push_str(", ");
                }
                sql.push('(');
                for (j, v) in row.iter().enumerate() {
                    if j > 0 {
                        sql.push_str(", ");
                    }
                    push_literal(&mut sql, v);
                }
                sql.push(')');
            }
            self.run(&sql)?;
        }
        Ok(())
    }

    fn schema_version(&mut self) -> Result<i64> {
        // Read only: a reader must not create anything (and two writers creating the
        // table at once would race; the migration creates it under the store lock).
        let exists = self.run("SELECT to_regclass('pgsurge_schema') IS NOT NULL")?;
        let exists = match exists.first() {
            Some(r) => r.read::<bool>(0, "to_regclass")?,
            None => false,
        };
        if !exists {
            return Ok(0);
        }
        let rows = self.run("SELECT coalesce(max(version), 0) FROM pgsurge_schema")?;
        rows.first()
            .map(|r| r.read::<i64>(0, "pgsurge_schema.version"))
            .unwrap_or(Ok(0))
    }

    fn table_names(&mut self) -> Result<Vec<String>> {
        self.run("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1")?
            .iter()
            .map(|r| r.read(0, "pg_tables.tablename"))
            .collect()
    }

    fn set_schema_version(&mut self, version: i64) -> Result<()> {
        self.batch(&format!(
            "CREATE TABLE IF NOT EXISTS pgsurge_schema (version BIGINT NOT NULL); \
             DELETE FROM pgsurge_schema; INSERT INTO pgsurge_schema VALUES ({version})"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_quotes_every_kind_of_value() {
        let sql = render(
            "INSERT INTO t VALUES (?, ?, ?, ?, ?, '?')",
            &[
                Value::Null,
                Value::Int(-3),
                Value::Real(0.5),
                Value::Text("it's a \\ test".into()),
                Value::Blob(vec![0, 0xab]),
            ],
        )
        .unwrap();
        assert_eq!(
            sql,
            "INSERT INTO t VALUES (NULL, -3, 0.5::float8, E'it''s a \\\\ test', decode('00ab', 'hex'), '?')"
        );
    }

    #[test]
    fn render_rejects_count_mismatch() {
        assert!(render("SELECT ?", &[]).is_err());
        assert!(render("SELECT 1", &[Value::Int(1)]).is_err());
    }
}
