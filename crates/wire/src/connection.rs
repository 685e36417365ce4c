//! An established connection: accessors, blocking setup helpers (simple queries,
//! prepare, COPY FROM STDIN), and non-blocking raw access for the engine.
//!
//! Owns: reading/writing whole protocol exchanges on the blocking path, notice
//! delivery, and libpq's texts for a lost connection. Connection establishment
//! ([`Connection::connect`]) is in `auth.rs`; message framing is in `codec.rs`.

use bytes::{Buf, BufMut, BytesMut};
use std::io;
use std::os::fd::{AsRawFd, RawFd};

use crate::cancel::{CancelAddr, CancelToken};
use crate::codec::{self, BackendMessage, TransactionStatus};
use crate::conninfo::HostSpec;
use crate::error::{strerror, SERVER_CLOSED};
use crate::transport::Transport;
use crate::{DbError, QueryError};

/// Receives server notices (NOTICE, WARNING, ...). The default prints
/// [`DbError::pq_message`] to stderr, like libpq's default notice processor.
pub type NoticeHandler = Box<dyn FnMut(&DbError) + Send>;

/// A COPY data producer (see [`Connection::copy_in`]).
type CopySource<'a> = dyn FnMut(&mut Vec<u8>) -> io::Result<bool> + 'a;

pub(crate) fn default_notice_handler() -> NoticeHandler {
    Box::new(|n: &DbError| eprint!("{}", n.pq_message()))
}

/// The result of one statement of a simple query (one `PGresult`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimpleResult {
    /// Column names (empty for commands without a result set).
    pub columns: Vec<String>,
    /// Rows in text form; `None` is SQL NULL.
    pub rows: Vec<Vec<Option<String>>>,
    /// The command tag, e.g. `SELECT 1`, `VACUUM`, `COPY 100000`; empty for an
    /// empty query.
    pub command_tag: String,
}

impl SimpleResult {
    /// The value at (`row`, `col`), `None` if NULL or out of range.
    pub fn get(&self, row: usize, col: usize) -> Option<&str> {
        self.rows.get(row)?.get(col)?.as_deref()
    }

    /// The row count from the command tag (`PQcmdTuples`), if it has one.
    pub fn rows_affected(&self) -> Option<u64> {
        self.command_tag.rsplit(' ').next()?.parse().ok()
    }
}

/// A connection to a PostgreSQL server.
///
/// Blocking helpers (`simple_query`, `execute`, `prepare`, `copy_in`) switch the
/// socket to blocking mode for their duration. The hot-path calls (`try_read`,
/// `try_write`, `flush`) are meant for a non-blocking socket driven by the
/// caller's event loop; see the [`codec`](crate::codec) module docs.
pub struct Connection {
    pub(crate) transport: Transport,
    pub(crate) host: HostSpec,
    pub(crate) dbname: String,
    pub(crate) user: String,
    pub(crate) params: Vec<(String, String)>,
    pub(crate) process_id: i32,
    pub(crate) secret_key: Vec<u8>,
    pub(crate) tx_status: TransactionStatus,
    pub(crate) inbuf: BytesMut,
    pub(crate) outbuf: BytesMut,
    pub(crate) notice_handler: NoticeHandler,
    pub(crate) cancel_addr: CancelAddr,
    pub(crate) nonblocking: bool,
    pub(crate) terminated: bool,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("host", &self.host)
            .field("dbname", &self.dbname)
            .field("user", &self.user)
            .field("process_id", &self.process_id)
            .field("tls", &self.transport.is_tls())
            .finish_non_exhaustive()
    }
}

/// libpq's text for a connection the server closed (ends with a newline).
pub const SERVER_CLOSED_TEXT: &str = SERVER_CLOSED;

/// libpq's `PQerrorMessage` text (ending with a newline) for an I/O error on an
/// established connection: the "server closed the connection unexpectedly" text
/// for EOF, `EPIPE` and `ECONNRESET`, else `could not send data to server: ...` /
/// `could not receive data from server: ...`. For the engine's own socket errors.
pub fn io_error_text(e: &io::Error, sending: bool) -> String {
    match e.raw_os_error() {
        Some(libc::EPIPE) | Some(libc::ECONNRESET) => SERVER_CLOSED.to_string(),
        _ if e.kind() == io::ErrorKind::UnexpectedEof => SERVER_CLOSED.to_string(),
        _ if sending => format!("could not send data to server: {}\n", strerror(e)),
        _ => format!("could not receive data from server: {}\n", strerror(e)),
    }
}

fn lost(e: &io::Error, sending: bool) -> QueryError {
    let message = io_error_text(e, sending);
    QueryError::ConnectionLost {
        message,
        db_error: None,
    }
}

impl Connection {
    /// The host connected to, as `PQhost` shows it (socket directory, host name,
    /// or `hostaddr`).
    pub fn host(&self) -> &str {
        self.host.display_host()
    }

    /// The port connected to (`PQport`).
    pub fn port(&self) -> u16 {
        self.host.port
    }

    /// The connected host entry.
    pub fn host_spec(&self) -> &HostSpec {
        &self.host
    }

    /// Database name (`PQdb`).
    pub fn dbname(&self) -> &str {
        &self.dbname
    }

    /// User name (`PQuser`).
    pub fn user(&self) -> &str {
        &self.user
    }

    /// A parameter the server reported (`PQparameterStatus`), e.g.
    /// `server_version`, `server_encoding`, `standard_conforming_strings`.
    pub fn parameter(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// `PQserverVersion`: e.g. 150018 for "15.18", 90603 for "9.6.3"; 0 if unknown.
    pub fn server_version_num(&self) -> i32 {
        self.parameter("server_version")
            .map(parse_server_version)
            .unwrap_or(0)
    }

    /// The backend's process id (`PQbackendPID`).
    pub fn backend_pid(&self) -> i32 {
        self.process_id
    }

    /// Whether the connection is encrypted.
    pub fn is_tls(&self) -> bool {
        self.transport.is_tls()
    }

    /// The socket, when the connection is not encrypted: then [`crate::read_plain`] and
    /// [`crate::write_plain`] on it do what [`Connection::try_read`] and
    /// [`Connection::try_write`] do, without touching this object.
    pub fn plain_fd(&self) -> Option<std::os::fd::RawFd> {
        match &self.transport {
            crate::transport::Transport::Plain(s) => Some(std::os::fd::AsRawFd::as_raw_fd(s)),
            crate::transport::Transport::Tls(..) => None,
        }
    }

    /// Transaction status as of the last `ReadyForQuery` seen by this object's
    /// blocking helpers (the engine tracks its own from decoded messages).
    pub fn transaction_status(&self) -> TransactionStatus {
        self.tx_status
    }

    /// Replaces the notice handler.
    pub fn set_notice_handler(&mut self, handler: NoticeHandler) {
        self.notice_handler = handler;
    }

    /// Passes a notice to the handler (for the engine, which decodes its own input).
    pub fn handle_notice(&mut self, notice: &DbError) {
        (self.notice_handler)(notice);
    }

    /// A token to cancel the running query from another thread (`PQgetCancel`).
    pub fn cancel_token(&self) -> CancelToken {
        CancelToken::new(
            self.cancel_addr.clone(),
            self.process_id,
            self.secret_key.clone(),
        )
    }

    // ----- hot path ----------------------------------------------------------

    /// Switches the socket between blocking and non-blocking mode.
    pub fn set_nonblocking(&mut self, nonblocking: bool) -> io::Result<()> {
        self.transport.socket().set_nonblocking(nonblocking)?;
        self.nonblocking = nonblocking;
        Ok(())
    }

    /// Writes as much of `buf` as possible without blocking; returns the number of
    /// bytes accepted. With TLS, accepted bytes may still sit in the TLS layer:
    /// while [`Connection::wants_write`] is true, wait for writability and call
    /// [`Connection::flush`].
    pub fn try_write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.transport.try_write(buf)
    }

    /// Whether encrypted bytes are waiting to be written (always false without TLS).
    pub fn wants_write(&self) -> bool {
        self.transport.wants_write()
    }

    /// Writes bytes held in the TLS layer; `WouldBlock` if the socket is full.
    /// A no-op without TLS.
    pub fn flush(&mut self) -> io::Result<()> {
        self.transport.flush()
    }

    /// Appends what can be read now to `buf` (growing it if it has little spare
    /// room); `Ok(0)` means the server closed the connection, `WouldBlock` that
    /// nothing more is available. With TLS, decrypted bytes may be buffered
    /// inside the TLS layer, so with an edge-triggered poller keep calling until
    /// `WouldBlock`.
    pub fn try_read(&mut self, buf: &mut BytesMut) -> io::Result<usize> {
        self.transport.try_read(buf)
    }

    /// Bytes the blocking helpers read past the last message they consumed (none in
    /// practice); an engine taking over the connection should start from these.
    pub fn take_buffered_input(&mut self) -> BytesMut {
        std::mem::take(&mut self.inbuf)
    }

    // ----- blocking helpers --------------------------------------------------

    fn blocking<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<T, QueryError>,
    ) -> Result<T, QueryError> {
        let was_nb = self.nonblocking;
        if was_nb {
            self.set_nonblocking(false).map_err(|e| lost(&e, true))?;
        }
        let r = f(self);
        if was_nb {
            let _ = self.set_nonblocking(true);
        }
        r
    }

    fn send_outbuf(&mut self) -> Result<(), QueryError> {
        let r = self.transport.write_all(&self.outbuf);
        self.outbuf.clear();
        r.map_err(|e| lost(&e, true))
    }

    /// Reads more input (blocking). A FATAL error seen before EOF is kept in
    /// `fatal` so the lost-connection text can include it.
    fn fill(&mut self, fatal: &mut Option<Box<DbError>>) -> Result<(), QueryError> {
        match self.transport.try_read(&mut self.inbuf) {
            Ok(0) => {
                let mut message = String::new();
                if let Some(f) = fatal.as_ref() {
                    message.push_str(&f.pq_message());
                }
                message.push_str(SERVER_CLOSED);
                Err(QueryError::ConnectionLost {
                    message,
                    db_error: fatal.take(),
                })
            }
            Ok(_) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
            Err(e) => {
                let mut err = lost(&e, false);
                if let (QueryError::ConnectionLost { message, db_error }, Some(f)) =
                    (&mut err, fatal.take())
                {
                    *message = format!("{}{}", f.pq_message(), message);
                    *db_error = Some(f);
                }
                Err(err)
            }
        }
    }

    /// Runs `sql` with the simple query protocol (may hold several statements) and
    /// returns one result per statement. A server error is returned after the
    /// server is ready again (the connection stays usable).
    pub fn simple_query(&mut self, sql: &str) -> Result<Vec<SimpleResult>, QueryError> {
        if sql.contains('\0') {
            return Err(QueryError::Client("query contains a NUL byte".into()));
        }
        self.blocking(|c| {
            codec::query(sql, &mut c.outbuf).map_err(|e| QueryError::Client(e.to_string()))?;
            c.send_outbuf()?;
            c.collect_results(None)
        })
    }

    /// Runs `sql` (simple protocol), discarding any rows.
    pub fn execute(&mut self, sql: &str) -> Result<(), QueryError> {
        self.simple_query(sql).map(|_| ())
    }

    /// `PQexecParams`: runs one statement with the extended protocol (unnamed
    /// statement, text parameters, `None` = SQL NULL, text results).
    pub fn query_params(
        &mut self,
        sql: &str,
        params: &[Option<&str>],
    ) -> Result<Vec<SimpleResult>, QueryError> {
        if sql.contains('\0') {
            return Err(QueryError::Client("query contains a NUL byte".into()));
        }
        self.blocking(|c| {
            let client = |e: io::Error| QueryError::Client(e.to_string());
            codec::parse("", sql, &mut c.outbuf).map_err(client)?;
            codec::bind(
                "",
                "",
                params.iter().map(|p| p.map(str::as_bytes)),
                &mut c.outbuf,
            )
            .map_err(client)?;
            codec::describe_portal("", &mut c.outbuf).map_err(client)?;
            codec::execute("", 0, &mut c.outbuf).map_err(client)?;
            codec::sync(&mut c.outbuf);
            c.send_outbuf()?;
            c.collect_results(None)
        })
    }

    /// Prepares a named statement (Parse + Sync), as `PQprepare` with no types.
    pub fn prepare(&mut self, name: &str, sql: &str) -> Result<(), QueryError> {
        if sql.contains('\0') || name.contains('\0') {
            return Err(QueryError::Client("query contains a NUL byte".into()));
        }
        self.blocking(|c| {
            codec::parse(name, sql, &mut c.outbuf)
                .map_err(|e| QueryError::Client(e.to_string()))?;
            codec::sync(&mut c.outbuf);
            c.send_outbuf()?;
            c.collect_results(None).map(|_| ())
        })
    }

    /// Reads until ReadyForQuery, collecting results. With `copy_source`, answers a
    /// CopyInResponse by streaming from it.
    fn collect_results(
        &mut self,
        mut copy_source: Option<&mut CopySource<'_>>,
    ) -> Result<Vec<SimpleResult>, QueryError> {
        let mut results = Vec::new();
        let mut current: Option<SimpleResult> = None;
        let mut error: Option<QueryError> = None;
        let mut fatal: Option<Box<DbError>> = None;
        loop {
            let decoded =
                codec::decode(&self.inbuf).map_err(|e| QueryError::Protocol(e.to_string()))?;
            let Some((msg, len)) = decoded else {
                self.fill(&mut fatal)?;
                continue;
            };
            let mut start_copy = false;
            let mut ready = false;
            match msg {
                BackendMessage::RowDescription(desc) => {
                    current = Some(SimpleResult {
                        columns: desc.names().map(str::to_string).collect(),
                        ..Default::default()
                    });
                }
                BackendMessage::DataRow(row) => {
                    let r = current.get_or_insert_with(SimpleResult::default);
                    r.rows.push(
                        row.values()
                            .map(|v| v.map(|b| String::from_utf8_lossy(b).into_owned()))
                            .collect(),
                    );
                }
                BackendMessage::CommandComplete(tag) => {
                    let mut r = current.take().unwrap_or_default();
                    r.command_tag = tag.to_string();
                    results.push(r);
                }
                BackendMessage::EmptyQueryResponse => {
                    results.push(SimpleResult::default());
                }
                BackendMessage::ErrorResponse(fields) => {
                    let e = fields.to_db_error();
                    if e.severity_nonlocalized.as_deref().unwrap_or(&e.severity) == "FATAL" {
                        fatal = Some(Box::new(e.clone()));
                    }
                    current = None;
                    if error.is_none() {
                        error = Some(QueryError::Db(Box::new(e)));
                    }
                }
                BackendMessage::NoticeResponse(fields) => {
                    let n = fields.to_db_error();
                    (self.notice_handler)(&n);
                }
                BackendMessage::ParameterStatus { name, value } => {
                    set_param(&mut self.params, name, value);
                }
                BackendMessage::ReadyForQuery(status) => {
                    self.tx_status = status;
                    ready = true;
                }
                BackendMessage::CopyInResponse(_) => start_copy = true,
                BackendMessage::CopyOutResponse(_)
                | BackendMessage::CopyData(_)
                | BackendMessage::CopyDone
                | BackendMessage::ParseComplete
                | BackendMessage::BindComplete
                | BackendMessage::CloseComplete
                | BackendMessage::NoData
                | BackendMessage::ParameterDescription(_)
                | BackendMessage::NotificationResponse { .. } => {}
                _ => {}
            }
            self.inbuf.advance(len);
            if start_copy {
                match copy_source.as_mut() {
                    Some(src) => {
                        if let Err(e) = self.stream_copy(&mut **src) {
                            if error.is_none() {
                                error = Some(e);
                            }
                        }
                    }
                    None => {
                        frontend_copy_fail(
                            "COPY FROM STDIN is not supported here",
                            &mut self.outbuf,
                        );
                        self.send_outbuf()?;
                    }
                }
            }
            if ready {
                return match error {
                    Some(e) => Err(e),
                    None => Ok(results),
                };
            }
        }
    }

    /// Sends the COPY data: CopyData messages then CopyDone, or CopyFail when the
    /// source fails (the source error is returned).
    fn stream_copy(
        &mut self,
        src: &mut dyn FnMut(&mut Vec<u8>) -> io::Result<bool>,
    ) -> Result<(), QueryError> {
        let mut chunk: Vec<u8> = Vec::with_capacity(64 * 1024);
        loop {
            chunk.clear();
            let more = match src(&mut chunk) {
                Ok(m) => m,
                Err(e) => {
                    frontend_copy_fail(&format!("could not read COPY data: {e}"), &mut self.outbuf);
                    self.send_outbuf()?;
                    return Err(QueryError::CopySource(e));
                }
            };
            if !chunk.is_empty() {
                self.outbuf.reserve(chunk.len() + 5);
                self.outbuf.put_u8(b'd');
                self.outbuf.put_u32((chunk.len() + 4) as u32);
                self.outbuf.extend_from_slice(&chunk);
                self.send_outbuf()?;
            }
            if !more {
                break;
            }
        }
        postgres_protocol::message::frontend::copy_done(&mut self.outbuf);
        self.send_outbuf()
    }

    /// Runs a `COPY ... FROM STDIN` statement, streaming data from `fill`.
    ///
    /// `fill` is called repeatedly with an empty buffer to append the next chunk to
    /// (64 KiB or so is a good size); it returns `Ok(true)` while more data follows
    /// and `Ok(false)` with (or after) the last chunk. If it fails, the COPY is
    /// aborted with CopyFail and [`QueryError::CopySource`] is returned. Returns the
    /// number of rows copied.
    pub fn copy_in(
        &mut self,
        sql: &str,
        mut fill: impl FnMut(&mut Vec<u8>) -> io::Result<bool>,
    ) -> Result<u64, QueryError> {
        if sql.contains('\0') {
            return Err(QueryError::Client("query contains a NUL byte".into()));
        }
        self.blocking(|c| {
            codec::query(sql, &mut c.outbuf).map_err(|e| QueryError::Client(e.to_string()))?;
            c.send_outbuf()?;
            let results = c.collect_results(Some(&mut fill))?;
            Ok(results
                .last()
                .and_then(SimpleResult::rows_affected)
                .unwrap_or(0))
        })
    }

    /// Sends Terminate and closes the socket (`PQfinish`).
    pub fn close(mut self) {
        self.terminate();
    }

    /// Sends Terminate (and TLS close_notify) once, best effort, without waiting
    /// on a full socket.
    fn terminate(&mut self) {
        if self.terminated {
            return;
        }
        self.terminated = true;
        self.outbuf.clear();
        codec::terminate(&mut self.outbuf);
        let _ = self.transport.try_write(&self.outbuf);
        if let Transport::Tls(tls, _) = &mut self.transport {
            tls.send_close_notify();
        }
        let _ = self.transport.flush();
    }
}

impl Drop for Connection {
    /// Like `PQfinish`: the server sees a Terminate rather than a dropped socket.
    fn drop(&mut self) {
        self.terminate();
    }
}

impl AsRawFd for Connection {
    fn as_raw_fd(&self) -> RawFd {
        self.transport.socket().as_raw_fd()
    }
}

fn frontend_copy_fail(msg: &str, buf: &mut BytesMut) {
    // A message with a NUL byte cannot be encoded; fall back to a fixed text.
    if postgres_protocol::message::frontend::copy_fail(msg, buf).is_err() {
        let _ = postgres_protocol::message::frontend::copy_fail("COPY aborted", buf);
    }
}

pub(crate) fn set_param(params: &mut Vec<(String, String)>, name: &str, value: &str) {
    match params.iter_mut().find(|(k, _)| k == name) {
        Some((_, v)) => *v = value.to_string(),
        None => params.push((name.to_string(), value.to_string())),
    }
}

/// Converts a `server_version` string to libpq's number form.
pub(crate) fn parse_server_version(v: &str) -> i32 {
    let nums: Vec<i32> = v
        .split(|c: char| !c.is_ascii_digit())
        .take_while(|s| !s.is_empty())
        .take(3)
        .filter_map(|s| s.parse().ok())
        .collect();
    match nums.as_slice() {
        [] => 0,
        [maj] if *maj >= 10 => maj * 10000,
        [maj, min, ..] if *maj >= 10 => maj * 10000 + min,
        [maj, min] => (maj * 100 + min) * 100,
        [maj, min, rev, ..] => (maj * 100 + min) * 100 + rev,
        [_] => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_version_numbers() {
        assert_eq!(
            parse_server_version("15.18 (Debian 15.18-0+deb12u1)"),
            150018
        );
        assert_eq!(parse_server_version("18.1"), 180001);
        assert_eq!(parse_server_version("18devel"), 180000);
        assert_eq!(parse_server_version("9.6.3"), 90603);
        assert_eq!(parse_server_version("garbage"), 0);
    }

    #[test]
    fn rows_affected_from_tag() {
        let r = SimpleResult {
            command_tag: "INSERT 0 5".into(),
            ..Default::default()
        };
        assert_eq!(r.rows_affected(), Some(5));
        let r = SimpleResult {
            command_tag: "VACUUM".into(),
            ..Default::default()
        };
        assert_eq!(r.rows_affected(), None);
    }

    #[test]
    fn strerror_has_no_rust_suffix() {
        let e = io::Error::from_raw_os_error(libc::ECONNREFUSED);
        assert_eq!(strerror(&e), "Connection refused");
    }
}
