//! Sans-I/O protocol codec for the hot path: frontend encoders that append to a
//! reusable buffer, and a zero-copy backend message decoder.
//!
//! # Using it from an event loop (the engine)
//!
//! Each connection owns an outgoing `BytesMut` and an incoming `BytesMut`, both
//! reused for the connection's lifetime (no allocation per transaction once they
//! have grown to their working size):
//!
//! ```no_run
//! use bytes::{Buf, BytesMut};
//! use pgsurge_wire::codec::{self, BackendMessage};
//! # fn demo(conn: &mut pgsurge_wire::Connection) -> std::io::Result<()> {
//! let mut out = BytesMut::with_capacity(1024);
//! let mut inp = BytesMut::with_capacity(16 * 1024);
//! // One write per request: Bind + Describe + Execute + Sync in one buffer.
//! codec::bind("", "P_0", [Some(&b"42"[..]), None], &mut out)?;
//! codec::describe_portal("", &mut out)?;
//! codec::execute("", 0, &mut out)?;
//! codec::sync(&mut out);
//! conn.set_nonblocking(true)?;
//! while !out.is_empty() {
//!     match conn.try_write(&out) {
//!         Ok(n) => out.advance(n),
//!         Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break, // wait for WRITABLE
//!         Err(e) => return Err(e),
//!     }
//! }
//! // On READABLE: read until WouldBlock, then decode every complete message.
//! loop {
//!     match conn.try_read(&mut inp) {
//!         Ok(0) => break, // EOF: the server closed the connection
//!         Ok(_) => continue,
//!         Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
//!         Err(e) => return Err(e),
//!     }
//! }
//! while let Some((msg, len)) = codec::decode(&inp).map_err(std::io::Error::other)? {
//!     match msg {
//!         BackendMessage::DataRow(row) => { let _first = row.values().next(); }
//!         BackendMessage::ReadyForQuery(status) => { let _ = status; }
//!         BackendMessage::ErrorResponse(fields) => { let _code = fields.code(); }
//!         _ => {}
//!     }
//!     inp.advance(len); // after the borrowed message is no longer used
//! }
//! # Ok(()) }
//! ```
//!
//! `decode` returns `Ok(None)` until a whole message is buffered; messages borrow
//! from the buffer, so handle a message before advancing past it. With TLS,
//! `Connection::try_write` may keep bytes inside the TLS layer when the socket is
//! full: check `Connection::wants_write` and call `Connection::flush` on WRITABLE.
//!
//! Encoders are thin wrappers over `postgres_protocol::message::frontend`; the
//! [`append`] module has the few the benchmark engine sends, writing into a plain
//! `Vec<u8>` piecewise (variables substituted while the message is written).
//!
//! An `ErrorResponse` is rendered as libpq's `PQerrorMessage` text straight from the
//! buffer with [`ErrorFields::pq_error_text`], with the `LINE n:` excerpt when the
//! caller knows the query text.

pub mod append;

use bytes::BytesMut;
use postgres_protocol::message::frontend;
use std::io;

use crate::DbError;

/// Appends a simple-protocol `Query`.
pub fn query(sql: &str, buf: &mut BytesMut) -> io::Result<()> {
    frontend::query(sql, buf)
}

/// Appends `Parse` (statement name, SQL, no parameter types: the server infers them,
/// as pgbench does).
pub fn parse(statement: &str, sql: &str, buf: &mut BytesMut) -> io::Result<()> {
    frontend::parse(statement, sql, std::iter::empty(), buf)
}

/// Appends `Bind` with all parameters in text format (`None` = SQL NULL) and one
/// result-format code (text), byte for byte what `PQsendQueryParams`/
/// `PQsendQueryPrepared` send with NULL formats and `resultFormat` 0.
pub fn bind<'a, I>(portal: &str, statement: &str, params: I, buf: &mut BytesMut) -> io::Result<()>
where
    I: IntoIterator<Item = Option<&'a [u8]>>,
{
    use postgres_protocol::IsNull;
    frontend::bind(
        portal,
        statement,
        std::iter::empty(),
        params,
        |p, out| match p {
            Some(v) => {
                out.extend_from_slice(v);
                Ok(IsNull::No)
            }
            None => Ok(IsNull::Yes),
        },
        std::iter::once(0),
        buf,
    )
    .map_err(|e| match e {
        frontend::BindError::Conversion(e) => io::Error::other(e),
        frontend::BindError::Serialization(e) => e,
    })
}

/// Appends `Describe` of a portal (`'P'`).
pub fn describe_portal(portal: &str, buf: &mut BytesMut) -> io::Result<()> {
    frontend::describe(b'P', portal, buf)
}

/// Appends `Describe` of a prepared statement (`'S'`).
pub fn describe_statement(statement: &str, buf: &mut BytesMut) -> io::Result<()> {
    frontend::describe(b'S', statement, buf)
}

/// Appends `Execute` (`max_rows` 0 = all rows).
pub fn execute(portal: &str, max_rows: i32, buf: &mut BytesMut) -> io::Result<()> {
    frontend::execute(portal, max_rows, buf)
}

/// Appends `Close` of a statement (`'S'`).
pub fn close_statement(statement: &str, buf: &mut BytesMut) -> io::Result<()> {
    frontend::close(b'S', statement, buf)
}

/// Appends `Sync`.
pub fn sync(buf: &mut BytesMut) {
    frontend::sync(buf)
}

/// Appends `Flush`.
pub fn flush(buf: &mut BytesMut) {
    frontend::flush(buf)
}

/// Appends `Terminate`.
pub fn terminate(buf: &mut BytesMut) {
    frontend::terminate(buf)
}

/// A protocol violation found while decoding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProtocolError(pub String);

/// Transaction status from `ReadyForQuery`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionStatus {
    /// `I`: not in a transaction block.
    Idle,
    /// `T`: in a transaction block.
    InTransaction,
    /// `E`: in a failed transaction block.
    InError,
    /// Anything else (libpq's `PQTRANS_UNKNOWN`).
    Unknown,
}

impl TransactionStatus {
    /// The status a ReadyForQuery body byte stands for.
    #[inline]
    pub fn from_byte(b: u8) -> TransactionStatus {
        match b {
            b'I' => TransactionStatus::Idle,
            b'T' => TransactionStatus::InTransaction,
            b'E' => TransactionStatus::InError,
            _ => TransactionStatus::Unknown,
        }
    }
}

/// A backend message borrowed from the input buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BackendMessage<'a> {
    /// `R`: authentication request; `code` then the rest of the body.
    Authentication {
        /// 0 = Ok, 3 = cleartext, 5 = MD5, 10 = SASL, 11 = SASLContinue, 12 = SASLFinal...
        code: i32,
        /// The bytes after the code.
        data: &'a [u8],
    },
    /// `K`: process id and secret key (the key may be longer than 4 bytes in protocol 3.2).
    BackendKeyData {
        /// Backend PID.
        process_id: i32,
        /// Cancel key.
        secret_key: &'a [u8],
    },
    /// `S`.
    ParameterStatus {
        /// Name.
        name: &'a str,
        /// Value.
        value: &'a str,
    },
    /// `Z`.
    ReadyForQuery(TransactionStatus),
    /// `T`.
    RowDescription(RowDescription<'a>),
    /// `D`.
    DataRow(DataRow<'a>),
    /// `C`: the command tag, e.g. `SELECT 1`, `UPDATE 1`.
    CommandComplete(&'a str),
    /// `I`.
    EmptyQueryResponse,
    /// `E`.
    ErrorResponse(ErrorFields<'a>),
    /// `N`.
    NoticeResponse(ErrorFields<'a>),
    /// `1`.
    ParseComplete,
    /// `2`.
    BindComplete,
    /// `3`.
    CloseComplete,
    /// `n`.
    NoData,
    /// `s`.
    PortalSuspended,
    /// `t`: parameter type OIDs (raw body).
    ParameterDescription(&'a [u8]),
    /// `G`: COPY FROM STDIN may start (raw body).
    CopyInResponse(&'a [u8]),
    /// `H`: COPY TO STDOUT started (raw body).
    CopyOutResponse(&'a [u8]),
    /// `W`.
    CopyBothResponse(&'a [u8]),
    /// `d`.
    CopyData(&'a [u8]),
    /// `c`.
    CopyDone,
    /// `A`: LISTEN/NOTIFY.
    NotificationResponse {
        /// Sender PID.
        process_id: i32,
        /// Channel.
        channel: &'a str,
        /// Payload.
        payload: &'a str,
    },
    /// `v`.
    NegotiateProtocolVersion(&'a [u8]),
    /// Any other tag, with its body.
    Other {
        /// Message type byte.
        tag: u8,
        /// Body.
        body: &'a [u8],
    },
}

/// Largest message accepted (guards against a corrupted length word).
const MAX_MESSAGE_LEN: usize = 1 << 30;

/// Decodes one message from the front of `buf`.
///
/// Returns `Ok(None)` if `buf` does not yet hold a whole message, else the message
/// and the number of bytes it occupies (advance the buffer by that much after use).
pub fn decode(buf: &[u8]) -> Result<Option<(BackendMessage<'_>, usize)>, ProtocolError> {
    if buf.len() < 5 {
        return Ok(None);
    }
    let tag = buf[0];
    let len = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
    if !(4..=MAX_MESSAGE_LEN).contains(&len) {
        return Err(ProtocolError(format!(
            "invalid message length {len} for message type \"{}\"",
            tag as char
        )));
    }
    let total = len + 1;
    if buf.len() < total {
        return Ok(None);
    }
    let body = &buf[5..total];
    let msg = parse_body(tag, body)?;
    Ok(Some((msg, total)))
}

/// Whether a `RowDescription` (`T`) or `DataRow` (`D`) body is well formed, as
/// [`decode`] checks it, for readers that only count rows and skip [`decode`].
pub fn row_message_ok(tag: u8, body: &[u8]) -> bool {
    match tag {
        b'T' => RowDescription::new(body).is_some(),
        b'D' => DataRow::new(body).is_some(),
        _ => false,
    }
}

/// The length of the message at the front of `buf`, once its header is buffered
/// (lets a reader reserve space for a large message).
pub fn peek_len(buf: &[u8]) -> Option<usize> {
    if buf.len() < 5 {
        return None;
    }
    Some(u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize + 1)
}

fn bad(tag: u8) -> ProtocolError {
    ProtocolError(format!(
        "malformed message of type \"{}\" from server",
        tag as char
    ))
}

fn i32_at(body: &[u8], at: usize, tag: u8) -> Result<i32, ProtocolError> {
    body.get(at..at + 4)
        .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or_else(|| bad(tag))
}

/// Reads a NUL-terminated UTF-8 string at `at`; returns it and the offset after it.
fn cstr_at(body: &[u8], at: usize, tag: u8) -> Result<(&str, usize), ProtocolError> {
    let rest = body.get(at..).ok_or_else(|| bad(tag))?;
    let nul = rest.iter().position(|&b| b == 0).ok_or_else(|| bad(tag))?;
    let s = std::str::from_utf8(&rest[..nul]).map_err(|_| bad(tag))?;
    Ok((s, at + nul + 1))
}

fn parse_body(tag: u8, body: &[u8]) -> Result<BackendMessage<'_>, ProtocolError> {
    Ok(match tag {
        b'R' => BackendMessage::Authentication {
            code: i32_at(body, 0, tag)?,
            data: &body[4..],
        },
        b'K' => BackendMessage::BackendKeyData {
            process_id: i32_at(body, 0, tag)?,
            secret_key: &body[4..],
        },
        b'S' => {
            let (name, next) = cstr_at(body, 0, tag)?;
            let (value, _) = cstr_at(body, next, tag)?;
            BackendMessage::ParameterStatus { name, value }
        }
        b'Z' => BackendMessage::ReadyForQuery(TransactionStatus::from_byte(
            *body.first().ok_or_else(|| bad(tag))?,
        )),
        b'T' => BackendMessage::RowDescription(RowDescription::new(body).ok_or_else(|| bad(tag))?),
        b'D' => BackendMessage::DataRow(DataRow::new(body).ok_or_else(|| bad(tag))?),
        b'C' => BackendMessage::CommandComplete(cstr_at(body, 0, tag)?.0),
        b'I' => BackendMessage::EmptyQueryResponse,
        b'E' => BackendMessage::ErrorResponse(ErrorFields::new(body).ok_or_else(|| bad(tag))?),
        b'N' => BackendMessage::NoticeResponse(ErrorFields::new(body).ok_or_else(|| bad(tag))?),
        b'1' => BackendMessage::ParseComplete,
        b'2' => BackendMessage::BindComplete,
        b'3' => BackendMessage::CloseComplete,
        b'n' => BackendMessage::NoData,
        b's' => BackendMessage::PortalSuspended,
        b't' => BackendMessage::ParameterDescription(body),
        b'G' => BackendMessage::CopyInResponse(body),
        b'H' => BackendMessage::CopyOutResponse(body),
        b'W' => BackendMessage::CopyBothResponse(body),
        b'd' => BackendMessage::CopyData(body),
        b'c' => BackendMessage::CopyDone,
        b'A' => {
            let process_id = i32_at(body, 0, tag)?;
            let (channel, next) = cstr_at(body, 4, tag)?;
            let (payload, _) = cstr_at(body, next, tag)?;
            BackendMessage::NotificationResponse {
                process_id,
                channel,
                payload,
            }
        }
        b'v' => BackendMessage::NegotiateProtocolVersion(body),
        _ => BackendMessage::Other { tag, body },
    })
}

/// A `DataRow` body; iterate its values without copying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataRow<'a> {
    count: u16,
    body: &'a [u8],
}

impl<'a> DataRow<'a> {
    fn new(body: &'a [u8]) -> Option<DataRow<'a>> {
        let count = u16::from_be_bytes([*body.first()?, *body.get(1)?]);
        // Validate once so iteration cannot fail.
        let mut at = 2usize;
        for _ in 0..count {
            let len = i32::from_be_bytes(body.get(at..at + 4)?.try_into().ok()?);
            at += 4;
            if len >= 0 {
                at = at.checked_add(len as usize)?;
                if at > body.len() {
                    return None;
                }
            } else if len != -1 {
                return None;
            }
        }
        Some(DataRow { count, body })
    }

    /// Number of columns.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether the row has no columns.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The column values (`None` = SQL NULL), text format for pgbench.
    pub fn values(&self) -> DataRowValues<'a> {
        DataRowValues {
            body: self.body,
            at: 2,
            left: self.count,
        }
    }
}

/// Iterator over a [`DataRow`]'s values.
#[derive(Debug, Clone)]
pub struct DataRowValues<'a> {
    body: &'a [u8],
    at: usize,
    left: u16,
}

impl<'a> Iterator for DataRowValues<'a> {
    type Item = Option<&'a [u8]>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let b = self.body.get(self.at..self.at + 4)?;
        let len = i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        self.at += 4;
        if len < 0 {
            return Some(None);
        }
        let v = self.body.get(self.at..self.at + len as usize)?;
        self.at += len as usize;
        Some(Some(v))
    }
}

/// A `RowDescription` body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowDescription<'a> {
    count: u16,
    body: &'a [u8],
}

impl<'a> RowDescription<'a> {
    fn new(body: &'a [u8]) -> Option<RowDescription<'a>> {
        let count = u16::from_be_bytes([*body.first()?, *body.get(1)?]);
        let mut at = 2usize;
        for _ in 0..count {
            let nul = body.get(at..)?.iter().position(|&b| b == 0)?;
            at += nul + 1 + 18;
            if at > body.len() {
                return None;
            }
        }
        Some(RowDescription { count, body })
    }

    /// Number of columns.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether there are no columns.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Column names, in order (`""` for a name that is not UTF-8, which a server with a
    /// single-byte client encoding may send; [`RowDescription::name_bytes`] has it).
    pub fn names(&self) -> impl Iterator<Item = &'a str> + 'a {
        self.name_bytes()
            .map(|n| std::str::from_utf8(n).unwrap_or(""))
    }

    /// Column names as sent, in the client encoding.
    pub fn name_bytes(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let body = self.body;
        let mut at = 2usize;
        (0..self.count).map(move |_| {
            let nul = body[at..].iter().position(|&b| b == 0).unwrap_or(0);
            let name = &body[at..at + nul];
            at += nul + 1 + 18;
            name
        })
    }
}

/// The fields of an `ErrorResponse`/`NoticeResponse`, borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorFields<'a> {
    body: &'a [u8],
}

impl<'a> ErrorFields<'a> {
    fn new(body: &'a [u8]) -> Option<ErrorFields<'a>> {
        let mut at = 0;
        loop {
            let t = *body.get(at)?;
            if t == 0 {
                return Some(ErrorFields { body });
            }
            let nul = body.get(at + 1..)?.iter().position(|&b| b == 0)?;
            at += 1 + nul + 1;
        }
    }

    /// Iterates `(field type, value)`; values that are not UTF-8 are converted lossily
    /// only by [`ErrorFields::to_db_error`].
    pub fn iter(&self) -> impl Iterator<Item = (u8, &'a [u8])> + 'a {
        let body = self.body;
        let mut at = 0;
        std::iter::from_fn(move || {
            let t = *body.get(at)?;
            if t == 0 {
                return None;
            }
            let rest = &body[at + 1..];
            let nul = rest.iter().position(|&b| b == 0)?;
            at += 1 + nul + 1;
            Some((t, &rest[..nul]))
        })
    }

    /// One field by type byte (e.g. `b'C'` for the SQLSTATE).
    pub fn field(&self, kind: u8) -> Option<&'a [u8]> {
        self.iter().find(|(t, _)| *t == kind).map(|(_, v)| v)
    }

    /// The SQLSTATE (`C`), without allocating; `""` if missing.
    pub fn code(&self) -> &'a str {
        self.field(b'C')
            .and_then(|v| std::str::from_utf8(v).ok())
            .unwrap_or("")
    }

    /// libpq's default-verbosity text of this `ErrorResponse` (what `PQerrorMessage`
    /// returns, ending with a newline): severity and message, the `LINE n:` excerpt with
    /// a caret when `query` (the text libpq remembered for the command) is given and the
    /// error has a position, else ` at character N`; then DETAIL, HINT, QUERY and
    /// CONTEXT lines. Allocates only the returned text (and lossy copies of fields that
    /// are not UTF-8).
    pub fn pq_error_text(&self, query: Option<&str>) -> String {
        crate::error_text::render(&self.report(true), query)
    }

    /// The same for a `NoticeResponse`, as libpq's default notice processor prints it:
    /// no CONTEXT line.
    pub fn pq_notice_text(&self, query: Option<&str>) -> String {
        crate::error_text::render(&self.report(false), query)
    }

    /// Whether the error has a statement position (`P`), i.e. whether its text depends
    /// on the query text.
    pub fn has_position(&self) -> bool {
        self.field(b'P').is_some()
    }

    fn report(&self, show_context: bool) -> crate::error_text::Report<'a> {
        let mut r = crate::error_text::Report {
            show_context,
            ..Default::default()
        };
        for (t, v) in self.iter() {
            let v = String::from_utf8_lossy(v);
            match t {
                b'S' => r.severity = v,
                b'M' => r.message = v,
                b'D' => r.detail = Some(v),
                b'H' => r.hint = Some(v),
                b'P' => r.position = Some(v),
                b'p' => r.internal_position = Some(v),
                b'q' => r.internal_query = Some(v),
                b'W' => r.context = Some(v),
                _ => {}
            }
        }
        r
    }

    /// Copies the fields into a [`DbError`].
    pub fn to_db_error(&self) -> DbError {
        let mut e = DbError::default();
        for (t, v) in self.iter() {
            let s = String::from_utf8_lossy(v).into_owned();
            match t {
                b'S' => e.severity = s,
                b'V' => e.severity_nonlocalized = Some(s),
                b'C' => e.code = s,
                b'M' => e.message = s,
                b'D' => e.detail = Some(s),
                b'H' => e.hint = Some(s),
                b'P' => e.position = s.parse().ok(),
                b'p' => e.internal_position = s.parse().ok(),
                b'q' => e.internal_query = Some(s),
                b'W' => e.where_ = Some(s),
                b's' => e.schema = Some(s),
                b't' => e.table = Some(s),
                b'c' => e.column = Some(s),
                b'd' => e.datatype = Some(s),
                b'n' => e.constraint = Some(s),
                b'F' => e.file = Some(s),
                b'L' => e.line = s.parse().ok(),
                b'R' => e.routine = Some(s),
                _ => {}
            }
        }
        if e.severity.is_empty() {
            if let Some(v) = &e.severity_nonlocalized {
                e.severity = v.clone();
            }
        }
        e
    }
}

#[cfg(test)]
mod tests;
