//! One connection's side of the PostgreSQL v3 protocol, without I/O: bytes in, the
//! answers appended to an output buffer. Framing keeps a partial message until the rest
//! arrives; every complete message of a read is answered before the driver writes once.
//!
//! The least a server can answer: startup without authentication, a CommandComplete per
//! statement (no rows, no work), the extended protocol's completions, the transaction
//! status tracked from the statements' first words. What it cannot answer (an unknown
//! message type, a malformed message, a statement name never parsed) is an
//! ErrorResponse: inside the extended protocol the messages up to the next Sync are
//! then skipped, as a server does; a broken frame closes the connection.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::sql::{self, Command, Effect};

/// A message longer than this closes the connection (a server's own limit is 1 GB; a
/// replayed statement is far below it).
const MAX_MESSAGE: usize = 64 << 20;

/// The protocol codes of the requests that come before (or instead of) a startup message.
const SSL_REQUEST: u32 = 80_877_103;
const GSSENC_REQUEST: u32 = 80_877_104;
const CANCEL_REQUEST: u32 = 80_877_102;

/// What the driver does after the output is written.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    Continue,
    Close,
}

/// A parsed statement, or a portal bound from one: its parameters and its answer.
#[derive(Clone, Debug)]
struct Prepared {
    /// The parameter types the Parse declared, then unspecified (0) up to the count.
    types: Vec<u32>,
    /// `None` for a blank text (EmptyQueryResponse).
    command: Option<Command>,
}

/// One connection.
pub struct Session {
    pending: Vec<u8>,
    /// The answers not yet written; the driver writes and clears it.
    pub out: Vec<u8>,
    started: bool,
    /// `I` idle, `T` in a transaction block, `E` in a failed one.
    status: u8,
    /// An error in the extended protocol: messages are skipped up to the next Sync.
    skipping: bool,
    statements: HashMap<Vec<u8>, Prepared>,
    portals: HashMap<Vec<u8>, Prepared>,
    key: u32,
}

impl Session {
    /// A connection that has sent nothing; `key` is its BackendKeyData's process id.
    pub fn new(key: u32) -> Session {
        Session {
            pending: Vec::new(),
            out: Vec::with_capacity(4096),
            started: false,
            status: b'I',
            skipping: false,
            statements: HashMap::new(),
            portals: HashMap::new(),
            key,
        }
    }

    /// Answers every complete message of what has arrived with `input`.
    pub fn feed(&mut self, input: &[u8]) -> Next {
        // The common case, a read holding whole messages, is answered from the read's
        // own buffer; only a partial message's bytes are kept.
        let pending = std::mem::take(&mut self.pending);
        let data: Cow<[u8]> = if pending.is_empty() {
            Cow::Borrowed(input)
        } else {
            let mut joined = pending;
            joined.extend_from_slice(input);
            Cow::Owned(joined)
        };
        let mut at = 0;
        let next = loop {
            match self.frame(&data[at..]) {
                Ok(Some((len, step))) => {
                    at += len;
                    if step == Next::Close {
                        break Next::Close;
                    }
                }
                Ok(None) => break Next::Continue,
                Err(e) => {
                    fatal(&mut self.out, "08P01", &e);
                    break Next::Close;
                }
            }
        };
        if next == Next::Continue {
            self.pending.extend_from_slice(&data[at..]);
        }
        next
    }

    /// Answers the first message of `data` if it is whole: the bytes it took.
    fn frame(&mut self, data: &[u8]) -> Result<Option<(usize, Next)>, String> {
        let head = if self.started { 1 } else { 0 };
        if data.len() < head + 4 {
            return Ok(None);
        }
        let len = u32::from_be_bytes(data[head..head + 4].try_into().expect("4 bytes")) as usize;
        if !(4..=MAX_MESSAGE).contains(&len) || (!self.started && len < 8) {
            return Err(format!("invalid message length {len}"));
        }
        if data.len() < head + len {
            return Ok(None);
        }
        let body = &data[head + 4..head + len];
        let next = if self.started {
            self.message(data[0], body)
        } else {
            self.startup(body)?
        };
        Ok(Some((head + len, next)))
    }

    /// The first message: a startup, or an SSL/GSS request (declined) or a cancel.
    fn startup(&mut self, body: &[u8]) -> Result<Next, String> {
        let code = u32::from_be_bytes(body[..4].try_into().expect("4 bytes"));
        match code {
            SSL_REQUEST | GSSENC_REQUEST => {
                self.out.push(b'N');
                return Ok(Next::Continue);
            }
            // The sink has nothing to cancel: the statements are answered at once.
            CANCEL_REQUEST => return Ok(Next::Close),
            _ if code >> 16 != 3 => {
                fatal(
                    &mut self.out,
                    "0A000",
                    &format!(
                        "unsupported frontend protocol {}.{}",
                        code >> 16,
                        code & 0xffff
                    ),
                );
                return Ok(Next::Close);
            }
            _ => {}
        }
        let mut params: Vec<(&[u8], &[u8])> = Vec::new();
        let mut fields = body[4..].split(|&b| b == 0);
        while let Some(name) = fields.next().filter(|n| !n.is_empty()) {
            let value = fields.next().ok_or("a startup parameter without a value")?;
            params.push((name, value));
        }
        let get = |k: &[u8]| params.iter().find(|p| p.0 == k).map(|p| p.1);
        let user = get(b"user").ok_or("no user in the startup message")?;
        // A newer minor version or protocol options: answer with what the sink speaks.
        let options: Vec<&[u8]> = params
            .iter()
            .map(|p| p.0)
            .filter(|n| n.starts_with(b"_pq_."))
            .collect();
        if code & 0xffff != 0 || !options.is_empty() {
            let at = begin(&mut self.out, b'v');
            self.out.extend_from_slice(&0x0003_0000u32.to_be_bytes());
            self.out
                .extend_from_slice(&(options.len() as u32).to_be_bytes());
            for o in options {
                cstr(&mut self.out, o);
            }
            finish(&mut self.out, at);
        }
        message(&mut self.out, b'R', &0u32.to_be_bytes());
        let encoding = get(b"client_encoding").filter(|e| !e.is_empty() && *e != b"auto");
        let settings: [(&[u8], &[u8]); 12] = [
            (b"server_version", b"18.0"),
            (b"server_encoding", b"UTF8"),
            (b"client_encoding", encoding.unwrap_or(b"UTF8")),
            (b"standard_conforming_strings", b"on"),
            (b"integer_datetimes", b"on"),
            (b"DateStyle", b"ISO, MDY"),
            (b"IntervalStyle", b"postgres"),
            (b"TimeZone", b"UTC"),
            (b"is_superuser", b"on"),
            (b"session_authorization", user),
            (b"application_name", get(b"application_name").unwrap_or(b"")),
            (b"default_transaction_read_only", b"off"),
        ];
        for (name, value) in settings {
            let at = begin(&mut self.out, b'S');
            cstr(&mut self.out, name);
            cstr(&mut self.out, value);
            finish(&mut self.out, at);
        }
        let mut key = self.key.to_be_bytes().to_vec();
        key.extend_from_slice(&self.key.wrapping_mul(2_654_435_761).to_be_bytes());
        message(&mut self.out, b'K', &key);
        self.started = true;
        self.ready();
        Ok(Next::Continue)
    }

    /// One message after startup.
    fn message(&mut self, kind: u8, body: &[u8]) -> Next {
        if self.skipping && kind != b'S' && kind != b'X' {
            return Next::Continue;
        }
        let done = match kind {
            b'Q' => self.query(body),
            b'P' => self.parse(body),
            b'B' => self.bind(body),
            b'D' => self.describe(body),
            b'E' => self.execute(body),
            b'C' => self.close(body),
            b'S' => {
                self.skipping = false;
                self.ready();
                Ok(())
            }
            b'H' => Ok(()),
            b'X' => return Next::Close,
            // Copy messages outside a COPY are ignored, as a server ignores them.
            b'd' | b'c' | b'f' => Ok(()),
            _ => {
                let what = if kind.is_ascii_graphic() {
                    format!("'{}'", kind as char)
                } else {
                    format!("{kind}")
                };
                fatal(
                    &mut self.out,
                    "08P01",
                    &format!("invalid frontend message type {what}"),
                );
                return Next::Close;
            }
        };
        if let Err((code, text)) = done {
            error(&mut self.out, "ERROR", code, &text);
            if self.status == b'T' {
                self.status = b'E';
            }
            if kind == b'Q' {
                self.ready();
            } else {
                self.skipping = true;
            }
        }
        Next::Continue
    }

    fn ready(&mut self) {
        message(&mut self.out, b'Z', &[self.status]);
    }

    /// A simple query: a CommandComplete per statement, then ReadyForQuery.
    fn query(&mut self, body: &[u8]) -> Result<(), (&'static str, String)> {
        let text = cstr_at(body, 0)
            .ok_or(("08P01", "a Query without its terminator".to_string()))?
            .0;
        if setup_answer(&mut self.out, text) {
            self.ready();
            return Ok(());
        }
        let statements = sql::statements(text);
        if statements.is_empty() {
            message(&mut self.out, b'I', &[]);
        }
        for stmt in statements {
            if let Some(command) = sql::command(stmt) {
                self.complete(&command);
            }
        }
        self.ready();
        Ok(())
    }

    fn complete(&mut self, command: &Command) {
        match command.effect {
            Effect::Begin if self.status == b'I' => self.status = b'T',
            Effect::End if self.status == b'E' => {
                self.status = b'I';
                message(&mut self.out, b'C', b"ROLLBACK\0");
                return;
            }
            Effect::End => self.status = b'I',
            _ => {}
        }
        let at = begin(&mut self.out, b'C');
        cstr(&mut self.out, command.tag.as_bytes());
        finish(&mut self.out, at);
    }

    fn parse(&mut self, body: &[u8]) -> Result<(), (&'static str, String)> {
        let malformed = || ("08P01", "a malformed Parse".to_string());
        let (name, at) = cstr_at(body, 0).ok_or_else(malformed)?;
        let (text, at) = cstr_at(body, at).ok_or_else(malformed)?;
        let declared = body.get(at..at + 2).ok_or_else(malformed)?;
        let declared = u16::from_be_bytes([declared[0], declared[1]]) as usize;
        let oids = body
            .get(at + 2..at + 2 + 4 * declared)
            .ok_or_else(malformed)?;
        let mut types: Vec<u32> = oids
            .chunks(4)
            .map(|c| u32::from_be_bytes(c.try_into().expect("4 bytes")))
            .collect();
        let count = (sql::highest_param(text) as usize).max(declared);
        if count > u16::MAX as usize {
            return Err(("54000", format!("a statement of {count} parameters")));
        }
        types.resize(count, 0);
        let prepared = Prepared {
            types,
            command: sql::statements(text).first().and_then(|s| sql::command(s)),
        };
        if !name.is_empty() && self.statements.contains_key(name) {
            return Err((
                "42P05",
                format!(
                    "prepared statement \"{}\" already exists",
                    String::from_utf8_lossy(name)
                ),
            ));
        }
        self.statements.insert(name.to_vec(), prepared);
        message(&mut self.out, b'1', &[]);
        Ok(())
    }

    fn bind(&mut self, body: &[u8]) -> Result<(), (&'static str, String)> {
        let malformed = || ("08P01", "a malformed Bind".to_string());
        let (portal, at) = cstr_at(body, 0).ok_or_else(malformed)?;
        let (name, _) = cstr_at(body, at).ok_or_else(malformed)?;
        let prepared = self
            .statements
            .get(name)
            .ok_or_else(|| unknown("prepared statement", name))?;
        self.portals.insert(portal.to_vec(), prepared.clone());
        message(&mut self.out, b'2', &[]);
        Ok(())
    }

    fn describe(&mut self, body: &[u8]) -> Result<(), (&'static str, String)> {
        let malformed = || ("08P01", "a malformed Describe".to_string());
        let (&what, rest) = body.split_first().ok_or_else(malformed)?;
        let (name, _) = cstr_at(rest, 0).ok_or_else(malformed)?;
        match what {
            b'S' => {
                let prepared = self
                    .statements
                    .get(name)
                    .ok_or_else(|| unknown("prepared statement", name))?;
                let at = begin(&mut self.out, b't');
                self.out
                    .extend_from_slice(&(prepared.types.len() as u16).to_be_bytes());
                for t in &prepared.types {
                    self.out.extend_from_slice(&t.to_be_bytes());
                }
                finish(&mut self.out, at);
            }
            b'P' => {
                self.portals
                    .get(name)
                    .ok_or_else(|| unknown("portal", name))?;
            }
            _ => return Err(malformed()),
        }
        message(&mut self.out, b'n', &[]);
        Ok(())
    }

    fn execute(&mut self, body: &[u8]) -> Result<(), (&'static str, String)> {
        let (name, _) = cstr_at(body, 0).ok_or(("08P01", "a malformed Execute".to_string()))?;
        let command = self
            .portals
            .get(name)
            .ok_or_else(|| unknown("portal", name))?
            .command
            .clone();
        match command {
            Some(command) => self.complete(&command),
            None => message(&mut self.out, b'I', &[]),
        }
        Ok(())
    }

    fn close(&mut self, body: &[u8]) -> Result<(), (&'static str, String)> {
        let malformed = || ("08P01", "a malformed Close".to_string());
        let (&what, rest) = body.split_first().ok_or_else(malformed)?;
        let (name, _) = cstr_at(rest, 0).ok_or_else(malformed)?;
        match what {
            b'S' => self.statements.remove(name),
            b'P' => self.portals.remove(name),
            _ => return Err(malformed()),
        };
        message(&mut self.out, b'3', &[]);
        Ok(())
    }
}

fn unknown(what: &str, name: &[u8]) -> (&'static str, String) {
    let code = if what == "portal" { "34000" } else { "26000" };
    (
        code,
        format!(
            "{what} \"{}\" does not exist",
            String::from_utf8_lossy(name)
        ),
    )
}

/// The result rows pgbench's built-in scripts read before they start: the number of
/// branches (the scale) and the partitioning of `pgbench_accounts`. The sink has no
/// tables; it answers as a database of scale 1 without partitions would.
fn setup_answer(out: &mut Vec<u8>, text: &[u8]) -> bool {
    let text = &text[text.iter().take_while(|b| b.is_ascii_whitespace()).count()..];
    let starts = |prefix: &[u8]| {
        text.get(..prefix.len())
            .is_some_and(|t| t.eq_ignore_ascii_case(prefix))
    };
    let (columns, row): (&[(&str, u32)], &[Option<&str>]) =
        if starts(b"select count(*) from pgbench_branches") {
            (&[("count", 20)], &[Some("1")])
        } else if starts(b"select o.n, p.partstrat,") {
            (
                &[("n", 23), ("partstrat", 18), ("count", 20)],
                &[Some("1"), None, Some("0")],
            )
        } else {
            return false;
        };
    let at = begin(out, b'T');
    out.extend_from_slice(&(columns.len() as u16).to_be_bytes());
    for (name, oid) in columns {
        cstr(out, name.as_bytes());
        out.extend_from_slice(&0u32.to_be_bytes()); // table
        out.extend_from_slice(&0u16.to_be_bytes()); // column
        out.extend_from_slice(&oid.to_be_bytes());
        out.extend_from_slice(&(-1i16).to_be_bytes()); // size
        out.extend_from_slice(&(-1i32).to_be_bytes()); // modifier
        out.extend_from_slice(&0u16.to_be_bytes()); // text format
    }
    finish(out, at);
    let at = begin(out, b'D');
    out.extend_from_slice(&(row.len() as u16).to_be_bytes());
    for value in row {
        match value {
            Some(v) => {
                out.extend_from_slice(&(v.len() as u32).to_be_bytes());
                out.extend_from_slice(v.as_bytes());
            }
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
    finish(out, at);
    message(out, b'C', b"SELECT 1\0");
    true
}

/// The NUL-terminated string at `at`, and where what follows it starts.
fn cstr_at(body: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let rest = body.get(at..)?;
    let end = rest.iter().position(|&b| b == 0)?;
    Some((&rest[..end], at + end + 1))
}

fn begin(out: &mut Vec<u8>, kind: u8) -> usize {
    out.push(kind);
    out.extend_from_slice(&[0; 4]);
    out.len() - 4
}

fn finish(out: &mut [u8], at: usize) {
    let len = (out.len() - at) as u32;
    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

fn cstr(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(s);
    out.push(0);
}

fn message(out: &mut Vec<u8>, kind: u8, body: &[u8]) {
    out.push(kind);
    out.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    out.extend_from_slice(body);
}

fn error(out: &mut Vec<u8>, severity: &str, code: &str, text: &str) {
    let at = begin(out, b'E');
    for (field, value) in [
        (b'S', severity),
        (b'V', severity),
        (b'C', code),
        (b'M', text),
    ] {
        out.push(field);
        cstr(out, value.as_bytes());
    }
    out.push(0);
    finish(out, at);
}

fn fatal(out: &mut Vec<u8>, code: &str, text: &str) {
    error(out, "FATAL", code, text);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        message(&mut out, kind, body);
        out
    }

    fn startup() -> Vec<u8> {
        let mut body = 0x0003_0000u32.to_be_bytes().to_vec();
        body.extend_from_slice(b"user\0bench\0database\0bench\0\0");
        let mut out = ((body.len() + 4) as u32).to_be_bytes().to_vec();
        out.extend_from_slice(&body);
        out
    }

    /// The kinds of the messages in `buf`, in order.
    fn kinds(buf: &[u8]) -> Vec<u8> {
        let mut at = 0;
        let mut out = Vec::new();
        while at < buf.len() {
            out.push(buf[at]);
            at += 1 + u32::from_be_bytes(buf[at + 1..at + 5].try_into().unwrap()) as usize;
        }
        assert_eq!(at, buf.len(), "messages overrun the buffer");
        out
    }

    fn started() -> Session {
        let mut s = Session::new(7);
        assert_eq!(s.feed(&startup()), Next::Continue);
        let k = kinds(&s.out);
        assert_eq!((k[0], *k.last().unwrap()), (b'R', b'Z'));
        s.out.clear();
        s
    }

    #[test]
    fn a_message_split_across_reads_is_answered_once_whole() {
        let mut s = Session::new(1);
        let mut input = startup();
        input.extend(msg(b'Q', b"BEGIN; SELECT 1\0"));
        input.extend(msg(b'Q', b"COMMIT\0"));
        // Every split point of the whole exchange, the startup message's included.
        for cut in 1..input.len() {
            let mut s2 = Session::new(1);
            assert_eq!(s2.feed(&input[..cut]), Next::Continue);
            assert_eq!(s2.feed(&input[cut..]), Next::Continue);
            assert_eq!(
                kinds(&s2.out),
                kinds(&{
                    let mut whole = Session::new(1);
                    whole.feed(&input);
                    whole.out
                })
            );
        }
        s.feed(&input);
        let k = kinds(&s.out);
        let tail: Vec<u8> = k[k.len() - 5..].to_vec();
        assert_eq!(tail, b"CCZCZ");
        assert!(s.out.ends_with(b"Z\0\0\0\x05I"));
    }

    #[test]
    fn an_unknown_message_type_is_an_error_and_the_end() {
        let mut s = started();
        assert_eq!(s.feed(&msg(b'y', b"")), Next::Close);
        assert_eq!(kinds(&s.out), b"E");
        assert!(s.out.windows(8).any(|w| w == b"C08P01\0M"));
        let mut s = started();
        assert_eq!(s.feed(&[b'Q', 0, 0, 0, 2]), Next::Close);
        assert_eq!(kinds(&s.out), b"E");
    }

    #[test]
    fn extended_protocol_counts_parameters_and_tracks_the_transaction() {
        let mut s = started();
        let mut input = msg(b'P', b"s1\0BEGIN\0\0\0");
        input.extend(msg(b'P', b"\0UPDATE t SET a = $3 WHERE b = $1\0\0\0"));
        input.extend(msg(b'D', b"S\0"));
        input.extend(msg(b'B', b"\0s1\0\0\0\0\0\0\0"));
        input.extend(msg(b'E', b"\0\0\0\0\0"));
        input.extend(msg(b'S', b""));
        assert_eq!(s.feed(&input), Next::Continue);
        assert_eq!(kinds(&s.out), b"11tn2CZ");
        // ParameterDescription: three parameters.
        let t = s.out.iter().position(|&b| b == b't').unwrap();
        assert_eq!(&s.out[t + 5..t + 7], &[0, 3]);
        assert!(s.out.ends_with(b"BEGIN\0Z\0\0\0\x05T"));
        // An unknown statement: an error, the rest skipped up to Sync.
        s.out.clear();
        let mut input = msg(b'B', b"\0nope\0\0\0\0\0\0\0");
        input.extend(msg(b'E', b"\0\0\0\0\0"));
        input.extend(msg(b'S', b""));
        s.feed(&input);
        assert_eq!(kinds(&s.out), b"EZ");
        assert!(s.out.ends_with(b"Z\0\0\0\x05E"));
        s.out.clear();
        s.feed(&msg(b'Q', b"COMMIT\0"));
        assert_eq!(kinds(&s.out), b"CZ");
        assert!(s.out.ends_with(b"ROLLBACK\0Z\0\0\0\x05I"));
    }
}
