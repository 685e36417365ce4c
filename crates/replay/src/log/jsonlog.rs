//! The jsonlog format (PostgreSQL 15 and later): one JSON object per line, keys left
//! out when empty. Owns turning those objects into [`LogEntry`] values; a line's texts
//! are read in place (unless escapes make a copy needed) into entries refilled from
//! those given back. A line longer than the reader's limit is unreadable, and is read
//! past without being held.

use std::borrow::Cow;
use std::io::BufRead;

use super::entry::{set_text, LogEntry, Position, Severity, Spare, Unreadable};
use super::time::parse_timestamp;
use super::{read_line, too_long, Line};

/// A string of the line: borrowed from it, unless escapes had to be undone.
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Text<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visitor<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_str(Visitor(std::marker::PhantomData))
    }
}

/// The text of an optional string.
fn field<'b>(t: &'b Option<Text<'_>>) -> Option<&'b str> {
    t.as_ref().map(|t| t.0.as_ref())
}

/// The keys of a jsonlog object a replay reads.
#[derive(serde::Deserialize)]
struct Record<'a> {
    #[serde(borrow)]
    timestamp: Option<Text<'a>>,
    #[serde(borrow)]
    user: Option<Text<'a>>,
    #[serde(borrow)]
    dbname: Option<Text<'a>>,
    #[serde(borrow)]
    session_id: Option<Text<'a>>,
    /// Any JSON value: a pid that is not a number is left unknown (it only tells when a
    /// session ended).
    pid: Option<serde_json::Value>,
    #[serde(borrow)]
    error_severity: Option<Text<'a>>,
    #[serde(borrow)]
    state_code: Option<Text<'a>>,
    #[serde(borrow)]
    message: Option<Text<'a>>,
    #[serde(borrow)]
    detail: Option<Text<'a>>,
    #[serde(borrow)]
    statement: Option<Text<'a>>,
}

/// Reads the entries of one jsonlog file.
pub struct JsonReader<R> {
    input: R,
    file: u32,
    line: u64,
    buf: Vec<u8>,
    /// Longest line read (bytes).
    limit: usize,
    spare: Spare,
}

impl<R: BufRead> JsonReader<R> {
    /// Reads `input`, the `file`-th log, in lines of at most `limit` bytes.
    pub fn new(input: R, file: u32, limit: usize) -> Self {
        JsonReader {
            input,
            file,
            line: 0,
            buf: Vec::with_capacity(4096),
            limit,
            spare: Spare::default(),
        }
    }

    /// Takes back an entry it gave, to fill it again.
    pub fn recycle(&mut self, e: LogEntry) {
        self.spare.give(e);
    }

    fn entry(&mut self, at: Position) -> Result<Option<LogEntry>, String> {
        let text = self.buf.strip_suffix(b"\n").unwrap_or(&self.buf);
        if text.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        if let Err(e) = std::str::from_utf8(text) {
            return Err(format!(
                "not UTF-8 (byte 0x{:02x} at column {}); lc_messages and the database encoding should be UTF-8, or the file converted (iconv)",
                text[e.valid_up_to()],
                e.valid_up_to() + 1
            ));
        }
        let r: Record =
            serde_json::from_slice(text).map_err(|e| format!("not a jsonlog object: {e}"))?;
        let time = field(&r.timestamp).unwrap_or_default();
        let Some((time_us, _)) = parse_timestamp(time) else {
            return Err(format!("timestamp \"{time}\" is not a timestamp"));
        };
        let word = field(&r.error_severity).unwrap_or_default();
        let Some(severity) = Severity::from_word(word) else {
            return Err(format!("error_severity \"{word}\" is not a severity"));
        };
        let spare = &mut self.spare;
        let mut e = spare.entry();
        e.at = at;
        e.time_us = time_us;
        e.pid = r
            .pid
            .and_then(|p| p.as_u64())
            .and_then(|p| u32::try_from(p).ok());
        e.severity = Some(severity);
        set_text(&mut e.message, field(&r.message).unwrap_or_default());
        spare.set(&mut e.session, field(&r.session_id));
        spare.set(&mut e.user, field(&r.user));
        spare.set(&mut e.database, field(&r.dbname));
        spare.set(&mut e.sqlstate, field(&r.state_code));
        spare.set(&mut e.detail, field(&r.detail));
        spare.set(&mut e.statement, field(&r.statement));
        Ok(Some(e))
    }
}

impl<R: BufRead> Iterator for JsonReader<R> {
    type Item = Result<LogEntry, Unreadable>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.buf.capacity() > self.limit.clamp(4096, 1 << 20) {
                // A long line's buffer is not kept for the lines after it.
                self.buf = Vec::with_capacity(4096);
            }
            self.buf.clear();
            self.line += 1;
            let at = Position {
                file: self.file,
                line: self.line,
            };
            match read_line(&mut self.input, &mut self.buf, self.limit) {
                Ok(Line::End) => return None,
                Ok(Line::Read(_)) => {}
                Ok(Line::TooLong(bytes)) => {
                    return Some(Err(Unreadable {
                        at,
                        reason: too_long("line", bytes, self.limit),
                    }))
                }
                Err(e) => {
                    return Some(Err(Unreadable {
                        at,
                        reason: format!("cannot be read: {e}"),
                    }))
                }
            }
            if self.buf.last() != Some(&b'\n') {
                return Some(Err(Unreadable {
                    at,
                    reason: "line cut short: the file ends without a newline".into(),
                }));
            }
            match self.entry(at) {
                Ok(Some(e)) => return Some(Ok(e)),
                Ok(None) => continue,
                Err(reason) => return Some(Err(Unreadable { at, reason })),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_objects_and_refuses_other_lines() {
        let text = concat!(
            r#"{"timestamp":"2026-11-28 18:00:00.100 UTC","user":"u","dbname":"d","pid":1,"session_id":"65.1","error_severity":"LOG","message":"statement: select 1\nfrom t"}"#,
            "\n",
            "2026-11-28 18:00:00.100 UTC|u|d|1.a|LOG:  statement: select 1\n",
            r#"{"timestamp":"2026-11-28 18:00:00.200 UTC","session_id":"65.1","error_severity":"ERROR","state_code":"22012","message":"division by zero","statement":"select 1/0"}"#,
        );
        let e: Vec<_> = JsonReader::new(text.as_bytes(), 0, 1 << 20).collect();
        assert_eq!(e.len(), 3);
        let a = e[0].as_ref().unwrap();
        assert_eq!(a.message, "statement: select 1\nfrom t");
        assert!(e[1]
            .as_ref()
            .unwrap_err()
            .reason
            .contains("not a jsonlog object"));
        assert!(e[2].as_ref().unwrap_err().reason.contains("cut short"));
    }

    #[test]
    fn a_line_past_the_limit_is_read_past_and_the_next_one_read() {
        let long = format!(
            r#"{{"timestamp":"2026-11-28 18:00:00.100 UTC","session_id":"65.1","error_severity":"LOG","message":"statement: select '{}'"}}"#,
            "x".repeat(10_000)
        );
        let next = r#"{"timestamp":"2026-11-28 18:00:00.200 UTC","session_id":"65.1","error_severity":"LOG","message":"statement: select 2"}"#;
        let text = format!("{long}\n{next}\n");
        let mut r = JsonReader::new(text.as_bytes(), 0, 1000);
        let u = r.next().unwrap().unwrap_err();
        assert_eq!(u.at.line, 1);
        assert!(u.reason.contains("longer than 1000 bytes"), "{u:?}");
        assert!(r.buf.len() <= 1000, "the long line is not held");
        let e = r.next().unwrap().unwrap();
        assert_eq!((e.at.line, e.message.as_str()), (2, "statement: select 2"));
        assert!(r.next().is_none());
    }
}
