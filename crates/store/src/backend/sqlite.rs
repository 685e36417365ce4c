//! SQLite backend (rusqlite, bundled SQLite): the default store, a single file.

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{params_from_iter, Connection, ToSql};

use super::{insert_sql, Backend, Dialect};
use crate::error::{Result, SqliteContext};
use crate::value::{Row, Value};

pub(crate) struct SqliteBackend {
    conn: Connection,
}

impl SqliteBackend {
    /// Opens (creating) a file, or an in-memory database for ":memory:".
    pub(crate) fn open(path: &str) -> Result<Self> {
        let conn = if path == ":memory:" {
            Connection::open_in_memory()
        } else {
            Connection::open(path)
        }
        .ctx(|| format!("opening {path}"))?;
        conn.busy_timeout(std::time::Duration::from_secs(30))
            .ctx(|| "setting busy timeout".into())?;
        // WAL keeps readers (a report) from blocking a running campaign; a SIGKILLed
        // writer leaves a WAL that SQLite recovers on the next open.
        if path != ":memory:" {
            conn.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))
                .ctx(|| "enabling WAL".into())?;
        }
        conn.execute_batch("PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL;")
            .ctx(|| "setting pragmas".into())?;
        Ok(Self { conn })
    }
}

impl ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Value::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Value::Int(i) => ToSqlOutput::Borrowed(ValueRef::Integer(*i)),
            Value::Real(f) => ToSqlOutput::Borrowed(ValueRef::Real(*f)),
            Value::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            Value::Blob(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
        })
    }
}

fn from_ref(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        ValueRef::Real(f) => Value::Real(f),
        ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
    }
}

fn short(sql: &str) -> String {
    let one_line: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    one_line.chars().take(80).collect()
}

impl Backend for SqliteBackend {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn batch(&mut self, sql: &str) -> Result<()> {
        self.conn.execute_batch(sql).ctx(|| short(sql))
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64> {
        let mut stmt = self.conn.prepare_cached(sql).ctx(|| short(sql))?;
        let n = stmt
            .execute(params_from_iter(params.iter()))
            .ctx(|| short(sql))?;
        Ok(n as u64)
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>> {
        let mut stmt = self.conn.prepare_cached(sql).ctx(|| short(sql))?;
        let ncol = stmt.column_count();
        let mut rows = stmt
            .query(params_from_iter(params.iter()))
            .ctx(|| short(sql))?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().ctx(|| short(sql))? {
            let mut vals = Vec::with_capacity(ncol);
            for i in 0..ncol {
                vals.push(from_ref(r.get_ref(i).ctx(|| short(sql))?));
            }
            out.push(Row(vals));
        }
        Ok(out)
    }

    fn insert_many(&mut self, table: &str, columns: &[&str], rows: &[Vec<Value>]) -> Result<()> {
        let sql = insert_sql(table, columns);
        let mut stmt = self.conn.prepare_cached(&sql).ctx(|| short(&sql))?;
        for row in rows {
            stmt.execute(params_from_iter(row.iter()))
                .ctx(|| short(&sql))?;
        }
        Ok(())
    }

    fn schema_version(&mut self) -> Result<i64> {
        self.conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .ctx(|| "reading PRAGMA user_version".into())
    }

    fn set_schema_version(&mut self, version: i64) -> Result<()> {
        self.conn
            .execute_batch(&format!("PRAGMA user_version = {version}"))
            .ctx(|| "writing PRAGMA user_version".into())
    }
}
