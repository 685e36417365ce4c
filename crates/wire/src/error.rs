//! Error types: invalid parameters ([`ConfigError`]), connection failures rendered like
//! libpq's `PQerrorMessage`, and server errors kept structured ([`DbError`]) with libpq's
//! default-verbosity text; the texts libpq gives to I/O errors; the [`ErrorClass`] of
//! each, which callers branch on instead of reading the text.
//!
//! pgbench prints libpq's messages verbatim (`pgbench: error: %s`, one trailing
//! newline stripped), so the `Display` impls here produce exactly that text, without
//! the trailing newline.

use std::borrow::Cow;
use std::fmt;
use std::io;

use crate::error_text::Report;

/// An invalid connection parameter; `Display` is libpq's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub(crate) String);

/// libpq's text for a connection the server closed.
pub(crate) const SERVER_CLOSED: &str = "server closed the connection unexpectedly\n\tThis probably means the server terminated abnormally\n\tbefore or while processing the request.\n";

/// `strerror` text of an I/O error ("Connection refused"), without Rust's
/// " (os error N)" suffix.
pub(crate) fn strerror(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(code) => {
            // SAFETY: strerror returns a pointer to a static or thread-local string.
            let p = unsafe { libc::strerror(code) };
            if p.is_null() {
                return e.to_string();
            }
            // SAFETY: non-null, NUL-terminated.
            unsafe { std::ffi::CStr::from_ptr(p) }
                .to_string_lossy()
                .into_owned()
        }
        None => e.to_string(),
    }
}

/// What a failure says of the connection, for callers that branch on it (a campaign
/// waits out an outage and runs the test again; a test failure is stored as one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The server could not be reached or the connection to it was lost: refused, reset,
    /// closed, timed out, or the server shutting down, starting up or in recovery
    /// (SQLSTATE class 08, `57P01`…`57P03`). Nothing the statements did.
    Connection,
    /// Anything else: an error of the statement, bad parameters, authentication, TLS.
    Other,
}

impl ErrorClass {
    /// The class of a SQLSTATE: class 08 (connection exception) and the shutdowns and
    /// start-ups of class 57 (`57P01` admin shutdown, `57P02` crash shutdown, `57P03`
    /// cannot connect now) are [`ErrorClass::Connection`].
    pub fn of_sqlstate(code: &str) -> ErrorClass {
        if code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03") {
            ErrorClass::Connection
        } else {
            ErrorClass::Other
        }
    }
}

/// What kind of failure a [`ConnectError`] is; the text is in its `Display`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectErrorKind {
    /// Invalid connection parameters (bad conninfo, unknown service, bad port...).
    Config,
    /// The server could not be reached (refused, no such socket, DNS failure...).
    Io,
    /// `connect_timeout` expired.
    Timeout,
    /// The server rejected the connection with an error (FATAL ...).
    Server,
    /// Authentication could not be carried out on the client side
    /// (no password supplied, unsupported method, SCRAM failure...).
    Auth,
    /// TLS negotiation or certificate verification failed.
    Tls,
    /// The server sent something that does not follow the protocol.
    Protocol,
}

/// A failed connection attempt. `Display` is libpq's `PQerrorMessage` as pgbench
/// prints it (all hosts tried, one `connection to server ... failed: ...` block each),
/// without the final newline.
#[derive(Debug, Clone)]
pub struct ConnectError {
    pub(crate) kind: ConnectErrorKind,
    pub(crate) message: String,
    pub(crate) db_error: Option<Box<DbError>>,
    pub(crate) needs_password: bool,
}

impl ConnectError {
    pub(crate) fn new(kind: ConnectErrorKind, message: impl Into<String>) -> ConnectError {
        ConnectError {
            kind,
            message: message.into(),
            db_error: None,
            needs_password: false,
        }
    }

    /// The kind of the last failure (when several hosts were tried: of the last host).
    pub fn kind(&self) -> ConnectErrorKind {
        self.kind
    }

    /// The server's error, when the server rejected the connection.
    pub fn db_error(&self) -> Option<&DbError> {
        self.db_error.as_deref()
    }

    /// libpq's `PQconnectionNeedsPassword`: the server asked for a password and none
    /// was available. pgbench then prompts `Password: ` once and retries.
    pub fn needs_password(&self) -> bool {
        self.needs_password
    }

    /// The SQLSTATE of the server's error, if any (e.g. `28P01`, `3D000`).
    pub fn code(&self) -> Option<&str> {
        self.db_error.as_deref().map(|e| e.code.as_str())
    }

    /// [`ErrorClass::Connection`] when the server was out of reach (I/O, timeout) or
    /// refused the connection because it is not accepting any ([`DbError::class`]).
    pub fn class(&self) -> ErrorClass {
        match self.kind {
            ConnectErrorKind::Io | ConnectErrorKind::Timeout => ErrorClass::Connection,
            ConnectErrorKind::Server => self.db_error().map_or(ErrorClass::Other, DbError::class),
            _ => ErrorClass::Other,
        }
    }
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message.trim_end_matches('\n'))
    }
}

impl std::error::Error for ConnectError {}

impl From<ConfigError> for ConnectError {
    /// Invalid parameters fail the connection with libpq's text, as
    /// `PQconnectdbParams` does.
    fn from(e: ConfigError) -> ConnectError {
        ConnectError::new(ConnectErrorKind::Config, e.0)
    }
}

/// A structured server error or notice (ErrorResponse / NoticeResponse fields).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DbError {
    /// Localized severity (`S`), e.g. `ERROR`, `FATAL`, `NOTICE`.
    pub severity: String,
    /// Non-localized severity (`V`), when the server sends it.
    pub severity_nonlocalized: Option<String>,
    /// SQLSTATE (`C`), e.g. `42P01`.
    pub code: String,
    /// Primary message (`M`).
    pub message: String,
    /// `D`.
    pub detail: Option<String>,
    /// `H`.
    pub hint: Option<String>,
    /// `P`: 1-based character position in the query.
    pub position: Option<u32>,
    /// `p`: position in `internal_query`.
    pub internal_position: Option<u32>,
    /// `q`.
    pub internal_query: Option<String>,
    /// `W`: context.
    pub where_: Option<String>,
    /// `s`.
    pub schema: Option<String>,
    /// `t`.
    pub table: Option<String>,
    /// `c`.
    pub column: Option<String>,
    /// `d`.
    pub datatype: Option<String>,
    /// `n`.
    pub constraint: Option<String>,
    /// `F`.
    pub file: Option<String>,
    /// `L`.
    pub line: Option<u32>,
    /// `R`.
    pub routine: Option<String>,
}

impl DbError {
    /// libpq's default-verbosity rendering (`PQresultErrorMessage` with
    /// `PQERRORS_DEFAULT` and context shown for errors), without a query text for
    /// the `LINE n:` caret. Ends with a newline, like libpq's.
    pub fn pq_message(&self) -> String {
        crate::error_text::render(&Report::of_db_error(self), None)
    }

    /// Like [`DbError::pq_message`], and when the error has a position and `query`
    /// is given, adds libpq's `LINE n: ...` excerpt with a caret under the position.
    pub fn pq_message_with_query(&self, query: Option<&str>) -> String {
        crate::error_text::render(&Report::of_db_error(self), query)
    }

    /// Whether this is a serialization failure or deadlock (`40001`, `40P01`),
    /// the errors pgbench retries.
    pub fn is_retryable(&self) -> bool {
        self.code == "40001" || self.code == "40P01"
    }

    /// The class of its SQLSTATE ([`ErrorClass::of_sqlstate`]).
    pub fn class(&self) -> ErrorClass {
        ErrorClass::of_sqlstate(&self.code)
    }
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:  {}", self.severity, self.message)
    }
}

impl std::error::Error for DbError {}

/// Failure of a blocking helper (`simple_query`, `execute`, `copy_in`, `prepare`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// The server reported an error; the connection is still usable.
    #[error("{0}")]
    Db(Box<DbError>),
    /// The connection was lost. `message` is libpq's text for it, e.g.
    /// `server closed the connection unexpectedly\n\tThis probably means ...`,
    /// preceded by the server's FATAL message when one arrived first.
    #[error("{}", message.trim_end_matches('\n'))]
    ConnectionLost {
        /// libpq-style text, ending with a newline.
        message: String,
        /// The FATAL error the server sent before closing, if any.
        db_error: Option<Box<DbError>>,
    },
    /// The server sent something unexpected.
    #[error("{0}")]
    Protocol(String),
    /// The COPY data source failed; a CopyFail was sent to the server.
    #[error("could not read COPY data: {0}")]
    CopySource(#[source] io::Error),
    /// Something else on the client side (e.g. a NUL byte in the SQL text).
    #[error("{0}")]
    Client(String),
}

impl QueryError {
    /// The text pgbench prints for this error, like libpq's `PQerrorMessage` /
    /// `PQresultErrorMessage` at default verbosity; ends with a newline.
    pub fn pq_message(&self) -> String {
        match self {
            QueryError::Db(e) => e.pq_message(),
            QueryError::ConnectionLost { message, .. } => message.clone(),
            QueryError::Protocol(m) | QueryError::Client(m) => format!("{m}\n"),
            QueryError::CopySource(e) => format!("could not read COPY data: {e}\n"),
        }
    }

    /// The server error, if this is one.
    pub fn db_error(&self) -> Option<&DbError> {
        match self {
            QueryError::Db(e) => Some(e),
            QueryError::ConnectionLost { db_error, .. } => db_error.as_deref(),
            _ => None,
        }
    }

    /// The SQLSTATE, if the server sent one.
    pub fn code(&self) -> Option<&str> {
        self.db_error().map(|e| e.code.as_str())
    }

    /// [`ErrorClass::Connection`] for a lost connection and for a server error of that
    /// class; [`ErrorClass::Other`] otherwise.
    pub fn class(&self) -> ErrorClass {
        match self {
            QueryError::ConnectionLost { .. } => ErrorClass::Connection,
            QueryError::Db(e) => e.class(),
            _ => ErrorClass::Other,
        }
    }
}

impl<'a> Report<'a> {
    /// The parts of an owned error; CONTEXT is shown for error severities.
    pub(crate) fn of_db_error(e: &'a DbError) -> Report<'a> {
        Report {
            severity: Cow::Borrowed(&e.severity),
            message: Cow::Borrowed(&e.message),
            detail: e.detail.as_deref().map(Cow::Borrowed),
            hint: e.hint.as_deref().map(Cow::Borrowed),
            position: e.position.map(|p| Cow::Owned(p.to_string())),
            internal_position: e.internal_position.map(|p| Cow::Owned(p.to_string())),
            internal_query: e.internal_query.as_deref().map(Cow::Borrowed),
            context: e.where_.as_deref().map(Cow::Borrowed),
            show_context: is_error_severity(e),
        }
    }
}

/// Whether the severity is one libpq shows CONTEXT for (an error, not a notice).
fn is_error_severity(e: &DbError) -> bool {
    let sev = e.severity_nonlocalized.as_deref().unwrap_or(&e.severity);
    matches!(sev, "ERROR" | "FATAL" | "PANIC")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_errors_are_told_from_others_by_kind_and_sqlstate() {
        let db = |code: &str| DbError {
            severity: "FATAL".into(),
            code: code.into(),
            ..Default::default()
        };
        for code in ["57P01", "57P02", "57P03", "08006", "08001"] {
            assert_eq!(db(code).class(), ErrorClass::Connection, "{code}");
        }
        for code in ["42P01", "28P01", "40001", "57014", "3D000"] {
            assert_eq!(db(code).class(), ErrorClass::Other, "{code}");
        }
        let lost = QueryError::ConnectionLost {
            message: SERVER_CLOSED.into(),
            db_error: None,
        };
        assert_eq!(lost.class(), ErrorClass::Connection);
        assert_eq!(
            QueryError::Db(Box::new(db("42601"))).class(),
            ErrorClass::Other
        );
        assert_eq!(
            ConnectError::new(ConnectErrorKind::Io, "refused").class(),
            ErrorClass::Connection
        );
        assert_eq!(
            ConnectError::new(ConnectErrorKind::Auth, "no password").class(),
            ErrorClass::Other
        );
        let mut starting = ConnectError::new(ConnectErrorKind::Server, "starting up");
        starting.db_error = Some(Box::new(db("57P03")));
        assert_eq!(starting.class(), ErrorClass::Connection);
        let mut refused = ConnectError::new(ConnectErrorKind::Server, "bad password");
        refused.db_error = Some(Box::new(db("28P01")));
        assert_eq!(refused.class(), ErrorClass::Other);
    }
}
