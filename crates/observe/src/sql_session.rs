//! A small blocking PostgreSQL helper over `pgsurge-wire` for the observers' own
//! queries and the campaign's (hygiene, counters, settings, manifest). Not used on the
//! benchmark's hot path.

use pgsurge_wire::redact::redact_with;
use pgsurge_wire::{ConnConfig, ConnectError, Connection};

use crate::error::{ObserveError, Result};

/// SQLSTATE `cannot_connect_now`: the server is starting up, in recovery or shutting
/// down.
const CANNOT_CONNECT_NOW: &str = "57P03";

/// A connection with text-result helpers.
pub struct Pg {
    conn: Connection,
    config: ConnConfig,
}

impl Pg {
    /// Connects with `config`.
    pub fn connect(config: &ConnConfig) -> Result<Pg> {
        Pg::opened(config, Connection::connect(config))
    }

    /// The outcome of a connection attempt with `config`, as a [`Pg`] or an error.
    fn opened(
        config: &ConnConfig,
        attempt: std::result::Result<Connection, ConnectError>,
    ) -> Result<Pg> {
        // Messages never carry the password (it may be quoted out of context).
        let secrets: Vec<String> = config.password().map(str::to_string).into_iter().collect();
        let mut conn = attempt.map_err(|e| ObserveError::Pg {
            context: "connecting".into(),
            message: redact_with(e.to_string().trim_end(), &secrets),
            class: e.class(),
        })?;
        conn.set_notice_handler(Box::new(|_| {}));
        Ok(Pg {
            conn,
            config: config.clone(),
        })
    }

    /// Like [`Pg::connect`], retrying for up to `patience` while the server refuses
    /// connections for now (SQLSTATE 57P03, `cannot_connect_now`: a server that just
    /// started may still be starting up or in recovery).
    pub fn connect_patiently(config: &ConnConfig, patience: std::time::Duration) -> Result<Pg> {
        let deadline = std::time::Instant::now() + patience;
        loop {
            let attempt = Connection::connect(config);
            let not_yet = matches!(&attempt, Err(e) if e.code() == Some(CANNOT_CONNECT_NOW));
            if not_yet && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(200));
                continue;
            }
            return Pg::opened(config, attempt);
        }
    }

    /// The connection parameters it was opened with.
    pub fn config(&self) -> &ConnConfig {
        &self.config
    }

    /// `server_version_num`.
    pub fn version_num(&self) -> i32 {
        self.conn.server_version_num()
    }

    /// Database name.
    pub fn dbname(&self) -> &str {
        self.conn.dbname()
    }

    /// Runs statements, discarding results.
    pub fn exec(&mut self, sql: &str) -> Result<()> {
        self.conn.execute(sql).map_err(|e| ObserveError::Pg {
            context: short(sql),
            message: e.pq_message().trim_end().to_string(),
            class: e.class(),
        })
    }

    /// Rows of the last statement, as text (None = NULL).
    pub fn rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>> {
        let res = self.conn.simple_query(sql).map_err(|e| ObserveError::Pg {
            context: short(sql),
            message: e.pq_message().trim_end().to_string(),
            class: e.class(),
        })?;
        Ok(res.into_iter().last().map(|r| r.rows).unwrap_or_default())
    }

    /// The first column of the first row.
    pub fn value(&mut self, sql: &str) -> Result<Option<String>> {
        Ok(self
            .rows(sql)?
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().next().flatten()))
    }

    /// Rows of (name, number) pairs; rows whose value is NULL or not a number are
    /// skipped.
    pub fn pairs(&mut self, sql: &str) -> Result<Vec<(String, f64)>> {
        Ok(self
            .rows(sql)?
            .into_iter()
            .filter_map(|r| {
                let name = r.first()?.clone()?;
                let v: f64 = r.get(1)?.as_deref()?.parse().ok()?;
                Some((name, v))
            })
            .collect())
    }

    /// The underlying wire connection (for `-i`).
    pub fn connection(&mut self) -> &mut Connection {
        &mut self.conn
    }

    /// The underlying wire connection, owned (an `--init-jobs` worker's).
    pub fn into_connection(self) -> Connection {
        self.conn
    }
}

fn short(sql: &str) -> String {
    let s: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() > 70 {
        format!("{}…", s.chars().take(70).collect::<String>())
    } else {
        s
    }
}

/// Quotes a string literal for SQL (standard_conforming_strings on or off).
pub fn literal(s: &str) -> String {
    let mut out = String::from("E'");
    for c in s.chars() {
        match c {
            '\'' => out.push_str("''"),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}
