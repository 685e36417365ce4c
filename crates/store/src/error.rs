//! The store's error type and what its errors carry (the holder of a busy set, a run
//! that does not decode). Every failure names what was being done.

/// Errors from opening, migrating, writing or reading the results store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite reported an error (on one line: without the statement SQLite quotes).
    #[error("results store (SQLite): {context}: {}", one_line(source))]
    Sqlite {
        /// What the store was doing.
        context: String,
        /// The driver's error.
        #[source]
        source: rusqlite::Error,
    },
    /// PostgreSQL reported an error.
    #[error("results store (PostgreSQL): {context}: {message}")]
    Postgres {
        /// What the store was doing.
        context: String,
        /// The server's or the connection's message.
        message: String,
    },
    /// The store was written by a newer pgsurge.
    #[error(
        "results store {location} has schema version {found}, newer than this pgsurge knows ({known}); upgrade pgsurge"
    )]
    TooNew {
        /// Path or URL of the store.
        location: String,
        /// Version found in the store.
        found: i64,
        /// Newest version this build knows.
        known: i64,
    },
    /// A test with the same identity is already stored in the set.
    #[error("test \"{test_key}\" is already stored in set {set_id}")]
    DuplicateTest {
        /// Id of the set the operation concerned.
        set_id: i64,
        /// The test's identity.
        test_key: String,
    },
    /// A requested row does not exist.
    #[error("{what} {id} not found in the results store")]
    NotFound {
        /// Kind of row ("run", "set").
        what: &'static str,
        /// Its id.
        id: i64,
    },
    /// A stored value does not have the expected type or format.
    #[error("results store: column {column}: {message}")]
    BadValue {
        /// Column name.
        column: String,
        /// What is wrong.
        message: String,
    },
    /// A histogram could not be encoded or decoded.
    #[error("results store: histogram: {0}")]
    Histogram(String),
    /// Another live process is running this set.
    #[error(
        "set {set_id} is being run by another campaign (pid {} on host {}, since {}, last heartbeat {:.0} s ago); \
         wait for it to end or stop it, then run this command again — two campaigns on one set would \
         benchmark the same servers at once",
.holder.pid, .holder.host, .holder.acquired_at, .holder.heartbeat_age_s
    )]
    SetBusy {
        /// Id of the set the operation concerned.
        set_id: i64,
        /// Who holds it.
        holder: LockHolder,
    },
    /// A run's row or histogram does not decode.
    #[error("results store: {0}")]
    UnreadableRun(UnreadableRun),
    /// A set given by id or name matches no set in the store.
    #[error("no set \"{given}\" in the store; sets: {known}")]
    NoSuchSet {
        /// The id or name as given.
        given: String,
        /// The store's sets as "id (name)", comma-separated, or "none".
        known: String,
    },
    /// The location is not something the store can open.
    #[error("results store: {0}")]
    BadLocation(String),
}

/// Who holds a set.
#[derive(Debug, Clone, PartialEq)]
pub struct LockHolder {
    /// Host name of the holder.
    pub host: String,
    /// Its process id.
    pub pid: i64,
    /// When it took the lock (RFC 3339).
    pub acquired_at: String,
    /// Seconds since its last heartbeat.
    pub heartbeat_age_s: f64,
}

/// A run the store holds but cannot read: a column whose value does not decode (a
/// damaged `result_json`), or a histogram that does not. Readers skip it and name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadableRun {
    /// Row id.
    pub run_id: i64,
    /// Its set, when that column could be read.
    pub set_id: Option<i64>,
    /// Its test key, when that column could be read.
    pub test_key: Option<String>,
    /// What could not be read.
    pub reason: String,
}

impl std::fmt::Display for UnreadableRun {
    /// `run 7 (set 2, test "KEY"): REASON`, on one line (control characters in the
    /// stored key and the reason escaped).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "run {}", self.run_id)?;
        let key = self.test_key.as_deref().map(str::escape_debug);
        match (self.set_id, key) {
            (Some(s), Some(k)) => write!(f, " (set {s}, test \"{k}\")")?,
            (Some(s), None) => write!(f, " (set {s})")?,
            (None, Some(k)) => write!(f, " (test \"{k}\")")?,
            (None, None) => {}
        }
        let reason: String = self
            .reason
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        write!(f, ": {reason}")
    }
}

/// The driver's message without the SQL text a syntax or schema error quotes (a
/// failed migration would otherwise print the whole migration), on one line.
fn one_line(e: &rusqlite::Error) -> String {
    let text = match e {
        rusqlite::Error::SqlInputError { msg, .. } => msg.clone(),
        other => other.to_string(),
    };
    let first = text.lines().next().unwrap_or("");
    let mut out: String = first.chars().take(300).collect();
    if out.len() < text.len() {
        out.push_str(" …");
    }
    out
}

/// Result alias for the store.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

pub(crate) trait SqliteContext<T> {
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T>;
}

impl<T> SqliteContext<T> for std::result::Result<T, rusqlite::Error> {
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| StoreError::Sqlite {
            context: context(),
            source,
        })
    }
}
