//! The csvlog format: one CSV record per message (a statement's line breaks are inside
//! its quoted field), columns in PostgreSQL's order (`log_time`, `user_name`,
//! `database_name`, …, `session_id` sixth, `error_severity` twelfth, `message`
//! fourteenth). Owns turning records into [`LogEntry`] values; records are read into
//! two reused buffers and entries refilled from those given back, so a readable record
//! costs no allocation.

use std::io::Read;

use super::entry::{set_text, LogEntry, Position, Severity, Spare, Unreadable};
use super::time::parse_timestamp;

/// Fewest columns of a csvlog record (PostgreSQL 9.0 to 12 write 23).
const MIN_COLUMNS: usize = 23;

const LOG_TIME: usize = 0;
const USER: usize = 1;
const DATABASE: usize = 2;
const SESSION: usize = 5;
const SEVERITY: usize = 11;
const SQLSTATE: usize = 12;
const MESSAGE: usize = 13;
const DETAIL: usize = 14;
const QUERY: usize = 19;

/// A reader that remembers the last byte it gave, to tell a file cut short.
struct Tail<R> {
    inner: R,
    last: Option<u8>,
    eof: bool,
}

impl<R: Read> Read for Tail<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        match n {
            0 => self.eof = true,
            n => self.last = Some(buf[n - 1]),
        }
        Ok(n)
    }
}

/// Reads the entries of one csvlog file.
pub struct CsvReader<R: Read> {
    records: csv::Reader<Tail<R>>,
    file: u32,
    /// The record read ahead (in `ahead_record`), to know whether it is the file's last.
    ahead: Option<Result<u64, Unreadable>>,
    ahead_record: csv::ByteRecord,
    record: csv::ByteRecord,
    started: bool,
    spare: Spare,
}

impl<R: Read> CsvReader<R> {
    /// Reads `input`, the `file`-th log.
    pub fn new(input: R, file: u32) -> Self {
        let records = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(Tail {
                inner: input,
                last: None,
                eof: false,
            });
        CsvReader {
            records,
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
        match self.records.read_byte_record(&mut self.ahead_record) {
            Ok(false) => None,
            Ok(true) => Some(Ok(self.ahead_record.position().map_or(0, |p| p.line()))),
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line());
                Some(Err(Unreadable {
                    at: Position {
                        file: self.file,
                        line,
                    },
                    reason: format!("not a csvlog record: {e}"),
                }))
            }
        }
    }
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
        let tail = self.records.get_ref();
        if self.ahead.is_none() && tail.eof && tail.last != Some(b'\n') {
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
        let e: Vec<_> = CsvReader::new(text.as_bytes(), 3).collect();
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
        let e: Vec<_> = CsvReader::new(text.as_bytes(), 0).collect();
        assert!(e[0].is_ok());
        assert!(
            e[1].as_ref().unwrap_err().reason.contains("cut short"),
            "{e:?}"
        );
        let stderr = "2026-11-28 18:00:00.100 UTC|u|d|1.a|LOG:  statement: select 1\n";
        let e: Vec<_> = CsvReader::new(stderr.as_bytes(), 0).collect();
        assert!(
            e[0].as_ref().unwrap_err().reason.contains("columns"),
            "{e:?}"
        );
    }
}
