//! The hot-path slice of the PostgreSQL v3 protocol: appending frontend messages to a
//! reusable buffer and framing backend messages out of a receive buffer, without I/O and
//! without allocation.
//!
//! Owns exactly the messages a running benchmark exchanges (Query, Parse, Bind, Describe,
//! Execute, Sync, Terminate and their answers). Connection start-up, authentication, TLS
//! and COPY belong to `pgsurge-wire`; this module never sees them. The byte sequences match
//! what libpq sends for `PQsendQuery`, `PQsendQueryParams`, `PQprepare` and
//! `PQsendQueryPrepared` (one result-format code 0 in Bind, Describe of the portal).

/// Appends a message header (`tag` + placeholder length) and returns the offset of the
/// length field, to be patched by [`finish`].
#[inline]
fn start(buf: &mut Vec<u8>, tag: u8) -> usize {
    buf.push(tag);
    let at = buf.len();
    buf.extend_from_slice(&[0, 0, 0, 0]);
    at
}

/// Patches the length field written by [`start`].
#[inline]
fn finish(buf: &mut [u8], at: usize) {
    let len = (buf.len() - at) as u32;
    buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

/// Incremental writer of one frontend message whose body is produced piecewise (used for
/// Query texts with substituted variables and for Bind parameter values).
pub struct MessageWriter<'a> {
    buf: &'a mut Vec<u8>,
    len_at: usize,
}

impl<'a> MessageWriter<'a> {
    /// Starts a message with the given tag.
    pub fn new(buf: &'a mut Vec<u8>, tag: u8) -> Self {
        let len_at = start(buf, tag);
        MessageWriter { buf, len_at }
    }
    /// The body buffer, to append raw bytes to.
    pub fn body(&mut self) -> &mut Vec<u8> {
        self.buf
    }
    /// Writes the length and ends the message.
    pub fn finish(self) {
        finish(self.buf, self.len_at);
    }
}

/// `Query` (simple protocol): the SQL text, NUL-terminated.
pub fn query(buf: &mut Vec<u8>, sql: &[u8]) {
    let at = start(buf, b'Q');
    buf.extend_from_slice(sql);
    buf.push(0);
    finish(buf, at);
}

/// `Parse` with no parameter types (libpq sends a zero count when `paramTypes` is NULL).
pub fn parse(buf: &mut Vec<u8>, stmt: &[u8], sql: &[u8]) {
    let at = start(buf, b'P');
    buf.extend_from_slice(stmt);
    buf.push(0);
    buf.extend_from_slice(sql);
    buf.push(0);
    buf.extend_from_slice(&0u16.to_be_bytes());
    finish(buf, at);
}

/// Writer of a `Bind` message for `nparams` text parameters; call
/// [`BindWriter::param`]/[`BindWriter::null`] exactly `nparams` times, then `finish`.
pub struct BindWriter<'a> {
    buf: &'a mut Vec<u8>,
    len_at: usize,
    last_param_at: usize,
}

impl<'a> BindWriter<'a> {
    /// Starts `Bind` of the unnamed portal to statement `stmt` ("" = unnamed).
    pub fn new(buf: &'a mut Vec<u8>, stmt: &[u8], nparams: u16) -> Self {
        let len_at = start(buf, b'B');
        buf.push(0); // unnamed portal
        buf.extend_from_slice(stmt);
        buf.push(0);
        buf.extend_from_slice(&0u16.to_be_bytes()); // all parameters in text format
        buf.extend_from_slice(&nparams.to_be_bytes());
        let last_param_at = buf.len();
        BindWriter {
            buf,
            len_at,
            last_param_at,
        }
    }
    /// A text parameter whose bytes are produced by `fill` (appended to the buffer).
    #[inline]
    pub fn param_with(&mut self, fill: impl FnOnce(&mut Vec<u8>)) {
        let at = self.buf.len();
        self.last_param_at = at;
        self.buf.extend_from_slice(&[0, 0, 0, 0]);
        fill(self.buf);
        let n = (self.buf.len() - at - 4) as u32;
        self.buf[at..at + 4].copy_from_slice(&n.to_be_bytes());
    }
    /// A text parameter given as bytes.
    pub fn param(&mut self, value: &[u8]) {
        self.param_with(|b| b.extend_from_slice(value));
    }
    /// Turns the parameter just written into a SQL NULL (for a variable found undefined
    /// while it was being written).
    pub fn retract_last_as_null(&mut self) {
        self.buf.truncate(self.last_param_at);
        self.null();
    }
    /// A SQL NULL parameter (pgbench sends NULL for undefined variables).
    pub fn null(&mut self) {
        self.buf.extend_from_slice(&(-1i32).to_be_bytes());
    }
    /// Appends the single result-format code (text) libpq sends and ends the message.
    pub fn finish(self) {
        self.buf.extend_from_slice(&1u16.to_be_bytes());
        self.buf.extend_from_slice(&0u16.to_be_bytes());
        finish(self.buf, self.len_at);
    }
}

/// `Describe` of the unnamed portal.
pub fn describe_portal(buf: &mut Vec<u8>) {
    buf.extend_from_slice(&[b'D', 0, 0, 0, 6, b'P', 0]);
}

/// `Execute` of the unnamed portal, all rows.
pub fn execute(buf: &mut Vec<u8>) {
    buf.extend_from_slice(&[b'E', 0, 0, 0, 9, 0, 0, 0, 0, 0]);
}

/// `Sync`.
pub fn sync(buf: &mut Vec<u8>) {
    buf.extend_from_slice(&[b'S', 0, 0, 0, 4]);
}

/// `Terminate`.
pub fn terminate(buf: &mut Vec<u8>) {
    buf.extend_from_slice(&[b'X', 0, 0, 0, 4]);
}

/// A framed message: tag, body, bytes used.
pub type Frame<'a> = (u8, &'a [u8], usize);

/// Frames one complete backend message at the start of `data`: returns
/// `(tag, body, total_len)` or `None` when more bytes are needed. A length below 4 is a
/// protocol violation reported as `Err`.
#[inline]
pub fn frame(data: &[u8]) -> Result<Option<Frame<'_>>, ProtocolError> {
    if data.len() < 5 {
        return Ok(None);
    }
    let len = u32::from_be_bytes([data[1], data[2], data[3], data[4]]) as usize;
    if len < 4 {
        return Err(ProtocolError(format!(
            "invalid message length {len} for message type \"{}\"",
            data[0] as char
        )));
    }
    let total = len + 1;
    if data.len() < total {
        return Ok(None);
    }
    Ok(Some((data[0], &data[5..total], total)))
}

/// A malformed message from the server (the connection cannot be used any more).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProtocolError(pub String);

/// Fields of an ErrorResponse/NoticeResponse body, borrowed.
#[derive(Debug, Default, Clone, Copy)]
pub struct ErrorFields<'a> {
    /// `S` (localized severity).
    pub severity: &'a str,
    /// `C` SQLSTATE.
    pub code: &'a str,
    /// `M` primary message.
    pub message: &'a str,
    /// `D` detail.
    pub detail: Option<&'a str>,
    /// `H` hint.
    pub hint: Option<&'a str>,
    /// `P` position (1-based character index into the query).
    pub position: Option<usize>,
    /// `q` internal query.
    pub internal_query: Option<&'a str>,
    /// `p` internal position.
    pub internal_position: Option<usize>,
    /// `W` context.
    pub context: Option<&'a str>,
}

/// Parses an ErrorResponse/NoticeResponse body into its fields.
pub fn error_fields(body: &[u8]) -> ErrorFields<'_> {
    let mut f = ErrorFields::default();
    let mut rest = body;
    while let Some((&code, tail)) = rest.split_first() {
        if code == 0 {
            break;
        }
        let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
        let val = std::str::from_utf8(&tail[..end]).unwrap_or("?");
        match code {
            b'S' => f.severity = val,
            b'C' => f.code = val,
            b'M' => f.message = val,
            b'D' => f.detail = Some(val),
            b'H' => f.hint = Some(val),
            b'P' => f.position = val.parse().ok(),
            b'q' => f.internal_query = Some(val),
            b'p' => f.internal_position = val.parse().ok(),
            b'W' => f.context = Some(val),
            _ => {}
        }
        rest = tail.get(end + 1..).unwrap_or(&[]);
    }
    f
}

/// Reads a big-endian i16 at `at`.
#[inline]
pub fn be_i16(b: &[u8], at: usize) -> Option<i16> {
    b.get(at..at + 2).map(|s| i16::from_be_bytes([s[0], s[1]]))
}

/// Reads a big-endian i32 at `at`.
#[inline]
pub fn be_i32(b: &[u8], at: usize) -> Option<i32> {
    b.get(at..at + 4)
        .map(|s| i32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

/// Iterates the column names of a RowDescription body.
pub fn row_description_names(body: &[u8]) -> impl Iterator<Item = &[u8]> {
    let n = be_i16(body, 0).unwrap_or(0).max(0) as usize;
    let mut pos = 2usize;
    (0..n).map_while(move |_| {
        let rest = body.get(pos..)?;
        let end = rest.iter().position(|&b| b == 0)?;
        let name = &rest[..end];
        pos += end + 1 + 18; // table oid, attnum, type oid, typlen, typmod, format
        Some(name)
    })
}

/// Iterates the values of a DataRow body (`None` = SQL NULL).
pub fn data_row_values(body: &[u8]) -> impl Iterator<Item = Option<&[u8]>> {
    let n = be_i16(body, 0).unwrap_or(0).max(0) as usize;
    let mut pos = 2usize;
    (0..n).map_while(move |_| {
        let len = be_i32(body, pos)?;
        pos += 4;
        if len < 0 {
            return Some(None);
        }
        let v = body.get(pos..pos + len as usize)?;
        pos += len as usize;
        Some(Some(v))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_message_bytes() {
        let mut b = Vec::new();
        query(&mut b, b"SELECT 1");
        assert_eq!(b, b"Q\0\0\0\x0dSELECT 1\0");
    }

    #[test]
    fn bind_matches_libpq_layout() {
        let mut b = Vec::new();
        let mut w = BindWriter::new(&mut b, b"P_0", 2);
        w.param(b"42");
        w.null();
        w.finish();
        let expect: &[u8] = b"B\0\0\0\x1b\0P_0\0\0\0\0\x02\0\0\0\x0242\xff\xff\xff\xff\0\x01\0\0";
        assert_eq!(b, expect);
        let (tag, body, total) = frame(&b).unwrap().unwrap();
        assert_eq!((tag, total), (b'B', b.len()));
        assert_eq!(body.len(), b.len() - 5);
    }

    #[test]
    fn frame_needs_whole_message() {
        let mut b = Vec::new();
        sync(&mut b);
        execute(&mut b);
        for cut in 0..5 {
            assert_eq!(frame(&b[..cut]).unwrap(), None);
        }
        let (tag, body, total) = frame(&b).unwrap().unwrap();
        assert_eq!((tag, body.len(), total), (b'S', 0, 5));
        let (tag, body, _) = frame(&b[5..]).unwrap().unwrap();
        assert_eq!((tag, body), (b'E', &[0u8, 0, 0, 0, 0][..]));
        assert!(frame(b"Z\0\0\0\x01").is_err());
    }

    #[test]
    fn error_fields_parsed() {
        let body = b"SERROR\0C40001\0Mcould not serialize\0P8\0\0";
        let f = error_fields(body);
        assert_eq!(f.severity, "ERROR");
        assert_eq!(f.code, "40001");
        assert_eq!(f.message, "could not serialize");
        assert_eq!(f.position, Some(8));
        assert_eq!(f.detail, None);
    }

    #[test]
    fn row_description_and_data_row() {
        // two columns "a", "bb"
        let mut body = vec![0, 2];
        for name in [&b"a"[..], b"bb"] {
            body.extend_from_slice(name);
            body.push(0);
            body.extend_from_slice(&[0; 18]);
        }
        let names: Vec<&[u8]> = row_description_names(&body).collect();
        assert_eq!(names, vec![&b"a"[..], b"bb"]);
        let row = b"\0\x02\0\0\0\x015\xff\xff\xff\xff";
        let vals: Vec<Option<&[u8]>> = data_row_values(row).collect();
        assert_eq!(vals, vec![Some(&b"5"[..]), None]);
    }
}
