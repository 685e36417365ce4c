//! SQLite backend (rusqlite, bundled SQLite): the default store, a single file.

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{params_from_iter, Connection, OpenFlags, ToSql};

use super::{insert_sql, table_list, Backend, Dialect};
use crate::error::{Result, SqliteContext};
use crate::value::{Row, Value};

pub(crate) struct SqliteBackend {
    conn: Connection,
    /// Opened as immutable: a snapshot of the file, which never shows what another
    /// process writes after.
    immutable: bool,
}

impl SqliteBackend {
    /// Opens (creating) a file for writing, or an in-memory database for ":memory:".
    /// A file that holds tables but is not a pgsurge store is refused before anything
    /// in it changes (in particular its journal mode).
    pub(crate) fn open(path: &str) -> Result<Self> {
        let conn = if path == ":memory:" {
            Connection::open_in_memory()
        } else {
            Connection::open(path)
        }
        .ctx(|| format!("opening {path}"))?;
        conn.busy_timeout(std::time::Duration::from_secs(30))
            .ctx(|| "setting busy timeout".into())?;
        let me = Self {
            conn,
            immutable: false,
        };
        me.refuse_foreign(path)?;
        // WAL keeps readers (a report) from blocking a running campaign; a SIGKILLed
        // writer leaves a WAL that SQLite recovers on the next open.
        if path != ":memory:" {
            me.enable_wal()?;
        }
        me.conn
            .execute_batch("PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL;")
            .ctx(|| "setting pragmas".into())?;
        Ok(me)
    }

    /// Switches the file to WAL mode. The switch needs the file to itself, and
    /// SQLite does not wait for that through the busy timeout: processes opening one
    /// new store at once get "database is locked". Retried for as long as the busy
    /// timeout would wait.
    fn enable_wal(&self) -> Result<()> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            match self
                .conn
                .query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))
            {
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if matches!(
                        e.code,
                        rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                    ) && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                other => return other.ctx(|| "enabling WAL".into()),
            }
        }
    }

    /// Opens an existing file read-only: nothing in the file or its directory changes,
    /// so this works on read-only media and on files of other programs. A WAL-mode
    /// store whose `-shm` cannot be created (read-only directory) is opened as
    /// immutable.
    pub(crate) fn open_read_only(path: &str) -> Result<Self> {
        if !std::path::Path::new(path).is_file() {
            return Err(crate::StoreError::BadLocation(format!(
                "{path} does not exist or is not a file"
            )));
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let probe = |conn: Connection| -> rusqlite::Result<Connection> {
            conn.busy_timeout(std::time::Duration::from_secs(30))?;
            conn.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))?;
            Ok(conn)
        };
        let (conn, immutable) = match Connection::open_with_flags(path, flags).and_then(probe) {
            Ok(c) => (c, false),
            Err(first) => {
                let uri = format!("file:{}?immutable=1", uri_path(path));
                let c = Connection::open_with_flags(&uri, flags | OpenFlags::SQLITE_OPEN_URI)
                    .and_then(probe)
                    .map_err(|_| first)
                    .ctx(|| format!("opening {path} read-only"))?;
                (c, true)
            }
        };
        let me = Self { conn, immutable };
        me.refuse_foreign(path)?;
        Ok(me)
    }

    /// Errors if the database holds tables but is not a store: tables without the
    /// store's (`sets`, `runs`), or any table without a schema version (the tables are
    /// read before the version, so a store being created by another process at the
    /// same moment is not mistaken for a foreign one).
    fn refuse_foreign(&self, path: &str) -> Result<()> {
        let tables =
            read_table_names(&self.conn).ctx(|| format!("reading the tables of {path}"))?;
        if tables.is_empty() {
            return Ok(());
        }
        let version: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .ctx(|| format!("reading the schema version of {path}"))?;
        let has = |name: &str| tables.iter().any(|t| t == name);
        if version > 0 && has("sets") && has("runs") {
            return Ok(());
        }
        let what = if version == 0 {
            format!(
                "no pgsurge schema version, but tables: {}",
                table_list(&tables)
            )
        } else {
            format!("its tables: {}", table_list(&tables))
        };
        Err(crate::StoreError::BadLocation(format!(
            "{path} is an SQLite database but not a pgsurge results store ({what}); \
             give another --store"
        )))
    }
}

/// The names of the tables of `conn`, without SQLite's own (`sqlite_%`), sorted.
fn read_table_names(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' \
         ORDER BY name",
    )?;
    let rows = stmt.query_map([], |r| r.get(0))?;
    rows.collect()
}

/// Percent-encodes the characters an SQLite URI filename treats specially.
fn uri_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        match c {
            '%' | '?' | '#' => out.push_str(&format!("%{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out
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

    fn snapshot_only(&self) -> bool {
        self.immutable
    }

    fn batch(&mut self, sql: &str) -> Result<()> {
        self.conn.execute_batch(sql).ctx(|| short(sql))
    }

    fn begin_exclusive(&mut self) -> Result<()> {
        self.batch("BEGIN IMMEDIATE")
    }

    /// `BEGIN IMMEDIATE`: the write lock is taken at the start, where the busy timeout
    /// waits for it. A deferred transaction that has read and then writes after another
    /// connection's commit cannot take the lock at all (its snapshot is stale) and fails
    /// at once with "database is locked", whatever the timeout.
    fn begin_write(&mut self) -> Result<()> {
        self.batch("BEGIN IMMEDIATE")
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

    fn table_names(&mut self) -> Result<Vec<String>> {
        read_table_names(&self.conn).ctx(|| "reading the tables".into())
    }
}
