//! libpq-compatible PostgreSQL connections (conninfo, auth, TLS) and protocol helpers.
//!
//! This crate owns everything between "pgbench was given `-h -p -U -d` and some
//! environment" and "bytes on a socket":
//!
//! * [`ConnConfig`]: connection parameters resolved the way libpq resolves them
//!   (`key=value` strings, `postgresql://` URIs, `PG*` environment variables,
//!   `pg_service.conf`, `~/.pgpass`, built-in defaults).
//! * [`Connection`]: a blocking connect (TCP, Unix socket, TLS via rustls; trust,
//!   cleartext, MD5, SCRAM-SHA-256[-PLUS] authentication), blocking setup helpers
//!   (simple queries, COPY FROM STDIN, cancel), and non-blocking raw access for the
//!   benchmark engine's event loop.
//! * [`codec`]: sans-I/O frontend encoders into reusable buffers and a zero-copy
//!   backend message decoder.
//!
//! Error texts ([`ConnectError`], [`QueryError::pq_message`]) read like libpq's
//! `PQerrorMessage`, because pgbench prints those verbatim.
//!
//! Modules: `conninfo` (parameters resolved as libpq does), `keywords` (the keywords
//! libpq accepts), `uri` (`postgresql://` URIs), `service` (`pg_service.conf`), `pgpass`
//! (the password file), `os_user` (the operating system's accounts: libpq's default user,
//! the home of `~/.pgpass`, a server's run-as user), `pgbench`
//! (pgbench's `doConnect` and password prompt), `auth` (connecting: host list,
//! addresses, timeouts), `transport` (TCP or Unix socket, optionally TLS), `tls`
//! (rustls setup by `sslmode`), `startup` (startup packet and authentication),
//! `require_auth` (which authentications the server may ask for), `connection` (an
//! established connection), `cancel` (`PQcancel`), [`codec`] (the sans-I/O protocol
//! codec), `error` and `error_text` (errors rendered as libpq renders them), `redact`
//! (secrets masked in text that leaves the process), `fuzzing` (the bodies of the
//! decode and conninfo fuzz targets).
//!
//! Each module uses only modules below it in this order: `os_user`, `transport`,
//! `error_text`, `keywords` ← `error` ← `require_auth`, `uri`, `service` ← `conninfo` ← `pgpass`,
//! `redact`, `tls`, `codec`, `cancel` ← `connection` ← `startup` ← `auth` ← `pgbench`,
//! `fuzzing`.
//!
//! It does not know what a benchmark is.
//!
//! # Typical use
//!
//! ```no_run
//! use pgsurge_wire::{Connection, PgbenchConnector};
//!
//! // pgbench -h/-p/-U and DBNAME (a name, `key=value` string or URI), environment
//! // from the process; prompts "Password: " once if the server wants one.
//! let connector = PgbenchConnector::new(None, None, None, "bench", &pgsurge_wire::process_env);
//! let mut conn = match connector.connect() {
//!     Ok(c) => c,
//!     Err(e) => {
//!         // Exactly what pgbench prints after "pgbench: error: ".
//!         eprintln!("pgbench: error: {e}");
//!         std::process::exit(1);
//!     }
//! };
//! match conn.simple_query("select count(*) from pgbench_branches") {
//!     Ok(results) => println!("scale {}", results[0].get(0, 0).unwrap_or("?")),
//!     Err(e) => eprint!("{}", e.pq_message()),
//! }
//! conn.close();
//! ```
//!
//! For the benchmark loop, switch the connection to non-blocking mode and use
//! [`Connection::try_write`], [`Connection::try_read`], [`Connection::flush`] and
//! the [`codec`] module (its docs show the pattern).
#![warn(missing_docs)]

mod auth;
mod cancel;
pub mod codec;
mod connection;
mod conninfo;
mod error;
mod error_text;
#[doc(hidden)]
pub mod fuzzing;
mod keywords;
pub mod os_user;
mod pgbench;
mod pgpass;
pub mod redact;
mod require_auth;
mod service;
mod startup;
mod tls;
mod transport;
mod uri;

pub use cancel::CancelToken;
pub use codec::TransactionStatus;
pub use connection::{io_error_text, SERVER_CLOSED_TEXT};
pub use connection::{Connection, NoticeHandler, SimpleResult};
pub use conninfo::{
    default_socket_dir, process_env, quote_conninfo, HostKind, DEFAULT_PORT, DEFAULT_SOCKET_DIR,
    FALLBACK_SOCKET_DIR,
};
pub use conninfo::{ConfigError, ConnConfig, HostSpec, SslMode, TargetSessionAttrs};
pub use error::{ConnectError, ConnectErrorKind, DbError, ErrorClass, QueryError};
pub use os_user::OsUser;
pub use pgbench::{simple_prompt, PasswordPrompt, PgbenchConnector};
pub use transport::{read_plain, write_plain};

/// An SQL identifier quoted as libpq's `PQescapeIdentifier` quotes it: in double
/// quotes, inner double quotes doubled (`my "ts"` becomes `"my ""ts"""`).
pub fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// An SQL string literal as libpq's `PQescapeLiteral` writes it: in single quotes,
/// inner single quotes doubled; a text holding a backslash becomes an escape string
/// (` E'…'`, backslashes doubled), which reads the same whatever the server's
/// `standard_conforming_strings`.
pub fn quote_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 4);
    if text.contains('\\') {
        out.push_str(" E");
    }
    out.push('\'');
    for ch in text.chars() {
        if ch == '\'' || ch == '\\' {
            out.push(ch);
        }
        out.push(ch);
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_are_quoted_as_pq_escape_literal_quotes_them() {
        assert_eq!(quote_literal("plain"), "'plain'");
        assert_eq!(quote_literal("it's"), "'it''s'");
        assert_eq!(quote_literal(r"C:\data"), r" E'C:\\data'");
        assert_eq!(quote_literal(r"a'\b"), r" E'a''\\b'");
        assert_eq!(quote_literal(""), "''");
    }
}
