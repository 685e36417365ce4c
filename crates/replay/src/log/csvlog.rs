//! The csvlog format: one CSV record per message (a statement's line breaks are inside
//! its quoted field), columns in PostgreSQL's order (`log_time`, `user_name`,
//! `database_name`, …, `session_id` sixth, `error_severity` twelfth, `message`
//! fourteenth). Owns turning records into [`LogEntry`] values; records are read into
//! two reused buffers and entries refilled from those given back, so a readable record
//! costs no allocation. A record longer than the reader's limit is unreadable: it is
//! read past, without being held, to the next line that starts a record.

use std::io::{self, Read};

use super::entry::{set_text, LogEntry, Position, Severity, Spare, Unreadable};
use super::time::parse_timestamp;
use super::too_long;

/// Fewest columns of a csvlog record (PostgreSQL 9.0 to 12 write 23).
const MIN_COLUMNS: usize = 23;

const LOG_TIME: usize = 0;
const USER: usize = 1;
const DATABASE: usize = 2;
const PID: usize = 3;
const SESSION: usize = 5;
const SEVERITY: usize = 11;
const SQLSTATE: usize = 12;
const MESSAGE: usize = 13;
const DETAIL: usize = 14;
const QUERY: usize = 19;

/// What the CSV parser reads: it remembers the last byte it gave, to tell a file cut
/// short, and gives no more than `limit` bytes past the start of the record being read.
struct Tail<R> {
    inner: R,
    last: Option<u8>,
    eof: bool,
    /// Bytes given to the parser since it was made.
    given: u64,
    /// Where the record being read starts (in bytes given).
    record_start: u64,
    limit: u64,
    /// The start of the input left to read, read already (by [`Tail::read_past`]).
    pending: Vec<u8>,
    /// Line breaks given to the parser.
    given_lines: u64,
    /// Line breaks read past, not given.
    lines_past: u64,
}

/// The parser asked for more of a record than the limit allows.
#[derive(Debug)]
struct TooLong;

impl std::fmt::Display for TooLong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("record too long")
    }
}

impl std::error::Error for TooLong {}

impl<R: Read> Read for Tail<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let allowed = (self.record_start + self.limit).saturating_sub(self.given);
        if allowed == 0 {
            return Err(io::Error::other(TooLong));
        }
        let want = buf
            .len()
            .min(usize::try_from(allowed).unwrap_or(usize::MAX));
        let n = if self.pending.is_empty() {
            self.inner.read(&mut buf[..want])?
        } else {
            let n = want.min(self.pending.len());
            buf[..n].copy_from_slice(&self.pending[..n]);
            self.pending.drain(..n);
            n
        };
        match n {
            0 => self.eof = true,
            n => self.last = Some(buf[n - 1]),
        }
        self.given += n as u64;
        self.given_lines += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
        Ok(n)
    }
}

impl<R: Read> Tail<R> {
    /// Reads past the rest of a record too long to keep, to the next line that starts a
    /// record (kept in `pending`, to be read next) or the end of the input.
    fn read_past(&mut self) -> io::Result<()> {
        let mut chunk = vec![0u8; 64 * 1024];
        // Bytes read and not yet read past: a line's start too short to tell whether it
        // starts a record.
        let mut held = std::mem::take(&mut self.pending);
        // Whether `held` starts a line.
        let mut line_start = false;
        loop {
            let mut pos = 0;
            while pos < held.len() {
                let rest = &held[pos..];
                if line_start {
                    let end = rest.iter().position(|&b| b == b'\n');
                    if end.is_none() && rest.len() < 48 {
                        break;
                    }
                    if starts_record(rest) {
                        self.pending = rest.to_vec();
                        return Ok(());
                    }
                }
                match rest.iter().position(|&b| b == b'\n') {
                    Some(i) => {
                        self.lines_past += 1;
                        pos += i + 1;
                        line_start = true;
                    }
                    None => {
                        pos = held.len();
                        line_start = false;
                    }
                }
            }
            held.drain(..pos);
            let n = loop {
                match self.inner.read(&mut chunk) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    r => break r?,
                }
            };
            if n == 0 {
                self.eof = true;
                self.last = Some(b'\n');
                return Ok(());
            }
            held.extend_from_slice(&chunk[..n]);
        }
    }
}

/// Reads the entries of one csvlog file.
pub struct CsvReader<R: Read> {
    /// The parser (`None` only while it is made again past a record too long).
    records: Option<csv::Reader<Tail<R>>>,
    /// Lines before the parser's first (it counts from 1 again when it is made again).
    line_base: u64,
    file: u32,
    /// The record read ahead (in `ahead_record`), to know whether it is the file's last.
    ahead: Option<Result<u64, Unreadable>>,
    ahead_record: csv::ByteRecord,
    record: csv::ByteRecord,
    started: bool,
    spare: Spare,
}

impl<R: Read> CsvReader<R> {
    /// Reads `input`, the `file`-th log, in records of at most `limit` bytes.
    pub fn new(input: R, file: u32, limit: usize) -> Self {
        let tail = Tail {
            inner: input,
            last: None,
            eof: false,
            given: 0,
            record_start: 0,
            limit: limit as u64,
            pending: Vec::new(),
            given_lines: 0,
            lines_past: 0,
        };
        CsvReader {
            records: Some(parser(tail)),
            line_base: 0,
            file,
            ahead: None,
            ahead_record: csv::ByteRecord::new(),
            record: csv::ByteRecord::new(),
            started: false,
            spare: Spare::default(),
        }
    }

    /// Takes back an entry it gave, to fill it again.
    pub fn recycle(&mut self, e: LogEntry) {
        self.spare.give(e);
    }

    /// Reads the next record into `ahead_record`: its line, or why it is unreadable.
    fn read_record(&mut self) -> Option<Result<u64, Unreadable>> {
        let records = self.records.as_mut()?;
        let starts = records.position().line();
        let read = records.read_byte_record(&mut self.ahead_record);
        let next = records.position().byte();
        records.get_mut().record_start = next;
        let base = self.line_base;
        match read {
            Ok(false) => None,
            Ok(true) => Some(Ok(
                base + self.ahead_record.position().map_or(0, |p| p.line())
            )),
            Err(e) if matches!(e.kind(), csv::ErrorKind::Io(io) if io.get_ref().is_some_and(|i| i.is::<TooLong>())) =>
            {
                let limit = records.get_ref().limit;
                let at = Position {
                    file: self.file,
                    line: base + starts,
                };
                Some(Err(match self.read_past() {
                    Ok(()) => Unreadable {
                        at,
                        reason: too_long("record", limit + 1, limit as usize),
                    },
                    Err(e) => Unreadable {
                        at,
                        reason: format!("cannot be read: {e}"),
                    },
                }))
            }
            Err(e) => {
                let line = e.position().map_or(starts, |p| p.line());
                Some(Err(Unreadable {
                    at: Position {
                        file: self.file,
                        line: base + line,
                    },
                    reason: format!("not a csvlog record: {e}"),
                }))
            }
        }
    }

    /// Reads past the record too long that the parser stopped in, and makes the parser
    /// again to read on from the next record.
    fn read_past(&mut self) -> io::Result<()> {
        let Some(records) = self.records.take() else {
            return Ok(());
        };
        let mut tail = records.into_inner();
        let read = tail.read_past();
        let lines = tail.given_lines + tail.lines_past;
        self.line_base += lines;
        tail.given = 0;
        tail.record_start = 0;
        tail.given_lines = 0;
        tail.lines_past = 0;
        read?;
        self.records = Some(parser(tail));
        Ok(())
    }
}

/// A CSV parser over `tail`.
fn parser<R: Read>(tail: Tail<R>) -> csv::Reader<Tail<R>> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(tail)
}

/// Column `i` of `rec` as text; `Err` names the column when it is not UTF-8.
fn column(rec: &csv::ByteRecord, i: usize) -> Result<Option<&str>, String> {
    match rec.get(i) {
        None | Some(b"") => Ok(None),
        Some(b) => match std::str::from_utf8(b) {
            Ok(s) => Ok(Some(s)),
            Err(e) => Err(format!(
                "column {} is not UTF-8 (byte 0x{:02x} at offset {}); lc_messages and the database encoding should be UTF-8, or the file converted (iconv)",
                i + 1,
                b[e.valid_up_to()],
                e.valid_up_to()
            )),
        },
    }
}

/// The first column of `rec` (0-based) holding the start of another record: a line
/// break followed by a csvlog time and its comma. A record cut short inside a quoted
/// column (a server stopped in the middle of writing it, then went on in the same file)
/// takes the lines after it in so, up to the next quote.
fn swallowed(rec: &csv::ByteRecord) -> Option<usize> {
    rec.iter().position(|field| {
        field.contains(&b'\n') && field.split(|&b| b == b'\n').skip(1).any(starts_record)
    })
}

/// Whether `line` starts as a csvlog record does: a time, then a comma.
fn starts_record(line: &[u8]) -> bool {
    let head = &line[..line.len().min(48)];
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default(),
    };
    parse_timestamp(text).is_some_and(|(_, n)| text.as_bytes().get(n) == Some(&b','))
}

/// A record → `e` (refilled), or why it cannot be an entry.
fn fill(
    rec: &csv::ByteRecord,
    at: Position,
    e: &mut LogEntry,
    spare: &mut Spare,
) -> Result<(), String> {
    if let Some(i) = swallowed(rec) {
        return Err(format!(
            "column {} holds the start of another record: a record cut short inside a quoted column took in the lines after it",
            i + 1
        ));
    }
    if rec.len() < MIN_COLUMNS {
        return Err(format!(
            "{} columns where csvlog has at least {MIN_COLUMNS} (a cut record, or not csvlog)",
            rec.len()
        ));
    }
    let time = column(rec, LOG_TIME)?.unwrap_or_default();
    let Some((time_us, _)) = parse_timestamp(time) else {
        return Err(format!("log_time \"{time}\" is not a timestamp"));
    };
    let severity_word = column(rec, SEVERITY)?.unwrap_or_default();
    let Some(severity) = Severity::from_word(severity_word) else {
        return Err(format!(
            "error_severity \"{severity_word}\" is not a severity"
        ));
    };
    // Every column is checked before the entry changes.
    let texts = [SESSION, USER, DATABASE, SQLSTATE, MESSAGE, DETAIL, QUERY].map(|i| column(rec, i));
    if let Some(Err(why)) = texts.iter().find(|t| t.is_err()) {
        return Err(why.clone());
    }
    let [session, user, database, sqlstate, message, detail, query] =
        texts.map(|t| t.ok().flatten());
    e.at = at;
    e.time_us = time_us;
    // A pid that is not a number is left unknown: it only tells when a session ended.
    e.pid = rec
        .get(PID)
        .and_then(|b| std::str::from_utf8(b).ok())
        .and_then(|p| p.parse().ok());
    e.severity = Some(severity);
    set_text(&mut e.message, message.unwrap_or_default());
    spare.set(&mut e.session, session);
    spare.set(&mut e.user, user);
    spare.set(&mut e.database, database);
    spare.set(&mut e.sqlstate, sqlstate);
    spare.set(&mut e.detail, detail);
    spare.set(&mut e.statement, query);
    Ok(())
}

impl<R: Read> Iterator for CsvReader<R> {
    type Item = Result<LogEntry, Unreadable>;

    fn next(&mut self) -> Option<Self::Item> {
        if !self.started {
            self.started = true;
            self.ahead = self.read_record();
        }
        let current = self.ahead.take()?;
        std::mem::swap(&mut self.record, &mut self.ahead_record);
        self.ahead = self.read_record();
        let line = match current {
            Ok(line) => line,
            Err(u) => return Some(Err(u)),
        };
        let at = Position {
            file: self.file,
            line,
        };
        let cut = self
            .records
            .as_ref()
            .is_some_and(|r| r.get_ref().eof && r.get_ref().last != Some(b'\n'));
        if self.ahead.is_none() && cut {
            return Some(Err(Unreadable {
                at,
                reason: "record cut short: the file ends without a newline".into(),
            }));
        }
        let mut e = self.spare.entry();
        match fill(&self.record, at, &mut e, &mut self.spare) {
            Ok(()) => Some(Ok(e)),
            Err(reason) => {
                self.spare.give(e);
                Some(Err(Unreadable { at, reason }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = "2026-11-28 18:00:00.100 UTC,\"u\",\"d\",12,\"[local]\",65.c,1,\"SELECT\",2026-11-28 18:00:00 UTC,3/1,0,LOG,00000,\"execute <unnamed>: select $1,\n'a''b'\",\"parameters: $1 = 'x'\",,,,,,,,\"psql\",\"client backend\",,0\n";

    #[test]
    fn reads_records_with_line_breaks_inside() {
        let text = format!("{LINE}{LINE}");
        let e: Vec<_> = CsvReader::new(text.as_bytes(), 3, 1 << 20).collect();
        assert_eq!(e.len(), 2);
        let a = e[0].as_ref().unwrap();
        assert_eq!(a.message, "execute <unnamed>: select $1,\n'a''b'");
        assert_eq!(a.detail.as_deref(), Some("parameters: $1 = 'x'"));
        assert_eq!(a.session.as_deref(), Some("65.c"));
        assert_eq!(a.at, Position { file: 3, line: 1 });
        assert_eq!(e[1].as_ref().unwrap().at.line, 3);
    }

    #[test]
    fn cut_records_and_other_formats_are_unreadable() {
        let text = format!("{LINE}{}", &LINE[..60]);
        let e: Vec<_> = CsvReader::new(text.as_bytes(), 0, 1 << 20).collect();
        assert!(e[0].is_ok());
        assert!(
            e[1].as_ref().unwrap_err().reason.contains("cut short"),
            "{e:?}"
        );
        let stderr = "2026-11-28 18:00:00.100 UTC|u|d|1.a|LOG:  statement: select 1\n";
        let e: Vec<_> = CsvReader::new(stderr.as_bytes(), 0, 1 << 20).collect();
        assert!(
            e[0].as_ref().unwrap_err().reason.contains("columns"),
            "{e:?}"
        );
    }

    #[test]
    fn a_record_past_the_limit_is_read_past_and_the_next_one_read() {
        let long = LINE.replace("'a''b'", &"'a''b'\n".repeat(4000));
        for limit in [1000, 4096, 20_000] {
            let text = format!("{LINE}{long}{LINE}{long}");
            let e: Vec<_> = CsvReader::new(text.as_bytes(), 0, limit).collect();
            assert_eq!(e.len(), 4, "{e:?}");
            assert_eq!(e[0].as_ref().unwrap().at.line, 1);
            let u = e[1].as_ref().unwrap_err();
            assert_eq!(u.at.line, 3, "{u:?}");
            assert!(
                u.reason.contains(&format!("longer than {limit} bytes")),
                "{u:?}"
            );
            let third = e[2].as_ref().unwrap();
            assert_eq!(third.at.line, 4005);
            assert_eq!(third.message, "execute <unnamed>: select $1,\n'a''b'");
            assert_eq!(e[3].as_ref().unwrap_err().at.line, 4007);
        }
    }
}
