//! Frontend encoders for the benchmark hot path: each function appends one message to a
//! caller's `Vec<u8>`, so a connection that reuses its output buffer sends transaction
//! after transaction without allocating once the buffer has grown to its working size.
//!
//! Owns exactly the messages a running benchmark sends (Query, Parse, Bind, Describe,
//! Execute, Sync, Terminate) and writes them byte for byte as libpq does for
//! `PQsendQuery`, `PQsendQueryParams`, `PQsendPrepare` and `PQsendQueryPrepared`: no
//! parameter types in Parse, text parameters and one text result-format code in Bind,
//! Describe of the unnamed portal. Bodies that are produced piecewise (SQL text with
//! substituted variables, parameter values written straight from variables) go through
//! [`MessageWriter`] and [`BindWriter`], which patch the length word at the end.
//!
//! The general-purpose encoders over `BytesMut` are in the parent module; this one must
//! not grow beyond what the hot path needs.

/// Appends a message header (`tag` + placeholder length) and returns the offset of the
/// length word, to be patched by [`patch_len`].
#[inline]
fn start(buf: &mut Vec<u8>, tag: u8) -> usize {
    buf.push(tag);
    let at = buf.len();
    buf.extend_from_slice(&[0, 0, 0, 0]);
    at
}

/// Writes the length of the message whose length word is at `at` (it counts itself and
/// the body, not the tag).
#[inline]
fn patch_len(buf: &mut [u8], at: usize) {
    let len = (buf.len() - at) as u32;
    buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

/// One frontend message whose body is appended piecewise (a Query whose SQL text has
/// variables substituted while it is written).
pub struct MessageWriter<'a> {
    buf: &'a mut Vec<u8>,
    len_at: usize,
}

impl<'a> MessageWriter<'a> {
    /// Starts a message with the given tag.
    #[inline]
    pub fn new(buf: &'a mut Vec<u8>, tag: u8) -> Self {
        let len_at = start(buf, tag);
        MessageWriter { buf, len_at }
    }

    /// The buffer to append body bytes to (it also holds earlier messages: remember
    /// `body().len()` before writing to find the bytes written since).
    pub fn body(&mut self) -> &mut Vec<u8> {
        self.buf
    }

    /// Writes the length word and ends the message.
    #[inline]
    pub fn finish(self) {
        patch_len(self.buf, self.len_at);
    }
}

/// Appends `Query` (simple protocol): the SQL text, NUL-terminated.
pub fn query(buf: &mut Vec<u8>, sql: &[u8]) {
    let at = start(buf, b'Q');
    buf.extend_from_slice(sql);
    buf.push(0);
    patch_len(buf, at);
}

/// Appends `Parse` of `sql` as statement `stmt` (`""` = unnamed) with no parameter types,
/// as libpq does when `paramTypes` is NULL: the server infers them.
pub fn parse(buf: &mut Vec<u8>, stmt: &[u8], sql: &[u8]) {
    let at = start(buf, b'P');
    buf.extend_from_slice(stmt);
    buf.push(0);
    buf.extend_from_slice(sql);
    buf.push(0);
    buf.extend_from_slice(&0u16.to_be_bytes());
    patch_len(buf, at);
}

/// A `Bind` of the unnamed portal with `nparams` text parameters: call
/// [`BindWriter::param`], [`BindWriter::param_with`] or [`BindWriter::null`] exactly
/// `nparams` times, then [`BindWriter::finish`].
pub struct BindWriter<'a> {
    buf: &'a mut Vec<u8>,
    len_at: usize,
    last_param_at: usize,
}

impl<'a> BindWriter<'a> {
    /// Starts `Bind` of the unnamed portal to statement `stmt` (`""` = unnamed).
    pub fn new(buf: &'a mut Vec<u8>, stmt: &[u8], nparams: u16) -> Self {
        // Three appends instead of seven: this runs once per statement.
        let len_at = buf.len() + 1;
        // tag, length (patched by `finish`), the unnamed portal's empty name
        buf.extend_from_slice(&[b'B', 0, 0, 0, 0, 0]);
        buf.extend_from_slice(stmt);
        let [hi, lo] = nparams.to_be_bytes();
        // end of the statement name, no format codes (every parameter is text), count
        buf.extend_from_slice(&[0, 0, 0, hi, lo]);
        let last_param_at = buf.len();
        BindWriter {
            buf,
            len_at,
            last_param_at,
        }
    }

    /// Starts a Bind from `head`, the bytes [`bind_head`] made for its statement.
    #[inline]
    pub fn from_head(buf: &'a mut Vec<u8>, head: &[u8]) -> Self {
        let len_at = buf.len() + 1;
        buf.extend_from_slice(head);
        let last_param_at = buf.len();
        BindWriter {
            buf,
            len_at,
            last_param_at,
        }
    }

    /// A text parameter whose bytes `fill` appends to the buffer.
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

    /// Turns the parameter just written into SQL NULL (pgbench sends NULL for a variable
    /// that turns out to be undefined while it is being written).
    pub fn retract_last_as_null(&mut self) {
        self.buf.truncate(self.last_param_at);
        self.null();
    }

    /// A SQL NULL parameter.
    pub fn null(&mut self) {
        self.buf.extend_from_slice(&(-1i32).to_be_bytes());
    }

    /// Appends the single result-format code (text) libpq sends and ends the message.
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.pgsurge")]
    pub fn finish(self) {
        // one result-format code: text
        self.buf.extend_from_slice(&[0, 1, 0, 0]);
        patch_len(self.buf, self.len_at);
    }
}

/// What [`BindWriter::new`] writes before the first parameter of a Bind to statement
/// `stmt` with `nparams` parameters: built once per statement, then started from with
/// [`BindWriter::from_head`].
pub fn bind_head(stmt: &[u8], nparams: u16) -> Box<[u8]> {
    let mut head = Vec::new();
    BindWriter::new(&mut head, stmt, nparams);
    head.into_boxed_slice()
}

/// Appends `Describe` of the unnamed portal and `Execute` of it (what follows every Bind
/// on the hot path), in one append.
pub fn describe_execute(buf: &mut Vec<u8>) {
    buf.extend_from_slice(&[b'D', 0, 0, 0, 6, b'P', 0, b'E', 0, 0, 0, 9, 0, 0, 0, 0, 0]);
}

/// [`describe_execute`] then [`sync`], in one append.
#[cfg_attr(target_os = "linux", link_section = ".text.hot.pgsurge")]
pub fn describe_execute_sync(buf: &mut Vec<u8>) {
    buf.extend_from_slice(&[
        b'D', 0, 0, 0, 6, b'P', 0, b'E', 0, 0, 0, 9, 0, 0, 0, 0, 0, b'S', 0, 0, 0, 4,
    ]);
}

/// Appends `Sync`.
pub fn sync(buf: &mut Vec<u8>) {
    buf.extend_from_slice(&[b'S', 0, 0, 0, 4]);
}

/// Appends `Terminate`.
pub fn terminate(buf: &mut Vec<u8>) {
    buf.extend_from_slice(&[b'X', 0, 0, 0, 4]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;

    /// Each encoder here writes the same bytes as the `BytesMut` encoder of the parent
    /// module (which wraps `postgres-protocol`), so the two paths cannot drift apart.
    #[test]
    fn same_bytes_as_the_general_encoders() {
        let mut v = Vec::new();
        let mut b = BytesMut::new();
        query(&mut v, b"SELECT 1");
        super::super::query("SELECT 1", &mut b).unwrap();
        parse(&mut v, b"P_0", b"select $1, $2");
        super::super::parse("P_0", "select $1, $2", &mut b).unwrap();
        let mut w = BindWriter::new(&mut v, b"P_0", 3);
        w.param(b"42");
        w.param_with(|o| o.extend_from_slice(b"undefined"));
        w.retract_last_as_null();
        w.param_with(|o| o.extend_from_slice(b"x"));
        w.finish();
        super::super::bind("", "P_0", [Some(&b"42"[..]), None, Some(b"x")], &mut b).unwrap();
        describe_execute(&mut v);
        super::super::describe_portal("", &mut b).unwrap();
        super::super::execute("", 0, &mut b).unwrap();
        sync(&mut v);
        super::super::sync(&mut b);
        terminate(&mut v);
        super::super::terminate(&mut b);
        assert_eq!(v, &b[..]);
    }

    #[test]
    fn message_writer_patches_the_length() {
        let mut v = b"S\0\0\0\x04".to_vec();
        let mut w = MessageWriter::new(&mut v, b'Q');
        w.body().extend_from_slice(b"select ");
        w.body().extend_from_slice(b"7");
        w.body().push(0);
        w.finish();
        assert_eq!(v, b"S\0\0\0\x04Q\0\0\0\x0dselect 7\0");
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
        // The same message started from its pre-encoded head, after other bytes.
        let head = bind_head(b"P_0", 2);
        let mut c = b"S\0\0\0\x04".to_vec();
        let mut w = BindWriter::from_head(&mut c, &head);
        w.param(b"42");
        w.null();
        w.finish();
        assert_eq!(&c[5..], expect);
        let mut d = Vec::new();
        describe_execute(&mut d);
        sync(&mut d);
        let mut e = Vec::new();
        describe_execute_sync(&mut e);
        assert_eq!(d, e);
    }
}
