//! The stderr format: lines that start with the `log_line_prefix`, a severity word and
//! two spaces; a message's `DETAIL:`, `STATEMENT:`… lines follow it with the same
//! prefix, and its text's further lines start with a tab. Owns grouping those lines
//! into [`LogEntry`] values; an unreadable line is an [`Unreadable`] with its position.
//! Lines are read into one buffer and entries refilled from those given back
//! ([`StderrReader::recycle`]): a readable line costs no allocation. An entry longer than
//! the reader's limit (its lines together) is unreadable, and is read past without
//! being held.

use std::collections::VecDeque;
use std::io::BufRead;

use super::entry::{set_text, LogEntry, Position, Severity, Spare, Unreadable};
use super::message::{classify, Measured, Message};
use super::prefix::{split_severity, Prefix};
use super::{read_line, too_long, Line};
use crate::sqlscan::outside_quotes;

/// The start of a line longer than the limit that is kept, to tell whose line it was.
const KEPT_HEAD: usize = 4096;

/// Which text of the entry a tab-started line continues.
#[derive(Clone, Copy)]
enum Field {
    Message,
    Detail,
    Statement,
    Ignored,
}

/// The words of the lines that belong to the message before them.
const SECONDARY: [&str; 6] = [
    "DETAIL",
    "STATEMENT",
    "HINT",
    "CONTEXT",
    "QUERY",
    "LOCATION",
];

/// The entry being read: its lines so far.
struct Current {
    entry: LogEntry,
    /// Bytes of its lines so far.
    bytes: usize,
    last: Field,
    /// Why the entry cannot be used (a line of it was unreadable).
    broken: Option<Unreadable>,
}

impl Current {
    /// Counts a further line of `len` bytes (`at`) into the entry; past `limit` the
    /// entry is broken (too long) and its further lines are ignored. Whether it is.
    fn grow(&mut self, len: usize, limit: usize, at: Position) -> bool {
        self.bytes = self.bytes.saturating_add(len + 1);
        if self.bytes <= limit {
            return false;
        }
        let bytes = self.bytes as u64;
        self.broken.get_or_insert_with(|| Unreadable {
            at,
            reason: too_long("entry", bytes, limit),
        });
        self.last = Field::Ignored;
        true
    }
}

/// Reads the entries of one stderr log.
pub struct StderrReader<R> {
    input: R,
    prefix: Prefix,
    file: u32,
    line: u64,
    buf: Vec<u8>,
    /// Longest entry read (bytes).
    limit: usize,
    current: Option<Current>,
    spare: Spare,
    /// Entries and unreadable lines ready to be given.
    ready: VecDeque<Result<LogEntry, Unreadable>>,
    done: bool,
}

impl<R: BufRead> StderrReader<R> {
    /// Reads `input`, the `file`-th log, whose lines start with `prefix`, in entries of
    /// at most `limit` bytes.
    pub fn new(input: R, prefix: Prefix, file: u32, limit: usize) -> Self {
        StderrReader {
            input,
            prefix,
            file,
            line: 0,
            buf: Vec::with_capacity(4096),
            limit,
            current: None,
            spare: Spare::default(),
            ready: VecDeque::new(),
            done: false,
        }
    }

    /// Takes back an entry it gave, to fill it again.
    pub fn recycle(&mut self, e: LogEntry) {
        self.spare.give(e);
    }

    fn at(&self) -> Position {
        Position {
            file: self.file,
            line: self.line,
        }
    }

    fn unreadable(&self, reason: impl Into<String>) -> Unreadable {
        Unreadable {
            at: self.at(),
            reason: reason.into(),
        }
    }

    /// Gives the entry being read (or why it is unusable), if there is one.
    fn finish(&mut self) {
        if let Some(c) = self.current.take() {
            self.ready.push_back(match c.broken {
                Some(u) => Err(u),
                None => Ok(c.entry),
            });
        }
    }

    /// Handles one line (its text, and why it is unusable if it is): entries it ends
    /// and unreadable lines go to `ready`. A line cut short with the next entry glued to
    /// it is an unreadable line and that entry.
    fn line(&mut self, text: &str, bad: Option<Unreadable>) {
        if let Some(u) = bad {
            self.bad_line(text, u);
            return;
        }
        let mut start = 0;
        while let Some(glued) = self.one_line(&text[start..]) {
            start += glued;
        }
    }

    /// An unreadable line whose text ends where an entry glued to it starts, at byte
    /// `glued` (read next).
    fn cut(&mut self, reason: &str, glued: usize) -> Option<usize> {
        let u = self.unreadable(format!(
            "{reason}: the line was cut short, and the next entry, glued to it, starts at column {} (a server stopped while writing it, or processes writing one file without the logging collector)",
            glued + 1
        ));
        self.finish();
        self.ready.push_back(Err(u));
        Some(glued)
    }

    /// Where an entry starts inside the statement of `message`, the end of `text`,
    /// outside the statement's strings, quoted identifiers and comments (a
    /// statement PostgreSQL ran holds no log line there); the byte in `text`.
    fn glued_to_statement(&self, text: &str, message: &str) -> Option<usize> {
        let sql = match classify(message) {
            Message::Simple(sql)
            | Message::Execute { sql, .. }
            | Message::Duration {
                of: Measured::Simple(sql) | Measured::Execute { sql, .. },
                ..
            } => sql,
            _ => return None,
        };
        let mut from = 0;
        while let Some(p) = self.prefix.entry_start(sql, from) {
            if outside_quotes(sql, p) {
                return Some(text.len() - sql.len() + p);
            }
            from = p + 1;
        }
        None
    }

    /// Handles one readable line; `Some(n)`: an entry glued to it starts at byte `n`.
    fn one_line(&mut self, text: &str) -> Option<usize> {
        if let Some(cont) = text.strip_prefix('\t') {
            let at = self.at();
            let limit = self.limit;
            let Some(c) = self.current.as_mut() else {
                let u = self.unreadable(
                    "a continuation line (starting with a tab) without a message before it",
                );
                self.ready.push_back(Err(u));
                return None;
            };
            if c.grow(text.len(), limit, at) {
                return None;
            }
            let field = match c.last {
                Field::Message => Some(&mut c.entry.message),
                Field::Detail => c.entry.detail.as_mut(),
                Field::Statement => c.entry.statement.as_mut(),
                Field::Ignored => None,
            };
            if let Some(f) = field {
                f.push('\n');
                f.push_str(cont);
            }
            return None;
        }
        let Some((values, rest)) = self.prefix.match_line(text) else {
            if !text.is_empty() {
                let reason = format!(
                    "does not start with the log_line_prefix \"{}\"",
                    self.prefix.text()
                );
                if let Some(glued) = self.prefix.entry_start(text, 1) {
                    return self.cut(&reason, glued);
                }
                let u = self.unreadable(reason);
                self.finish();
                self.ready.push_back(Err(u));
            }
            return None;
        };
        let Some((word, message)) = split_severity(rest) else {
            let reason = "no severity (LOG:, ERROR:, DETAIL:…) after the log_line_prefix";
            if let Some(glued) = self.prefix.entry_start(text, 1) {
                return self.cut(reason, glued);
            }
            let u = self.unreadable(reason);
            self.finish();
            self.ready.push_back(Err(u));
            return None;
        };
        let secondary = match word {
            "DETAIL" => Some(Field::Detail),
            "STATEMENT" => Some(Field::Statement),
            "HINT" | "CONTEXT" | "QUERY" | "LOCATION" => Some(Field::Ignored),
            _ => None,
        };
        if let Some(field) = secondary {
            let same = self
                .current
                .as_ref()
                .is_some_and(|c| c.entry.session.as_deref() == values.session);
            if !same {
                let u = self.unreadable(format!("{word}: without the message it belongs to"));
                self.finish();
                self.ready.push_back(Err(u));
                return None;
            }
            let limit = self.limit;
            let at = self.at();
            let c = self.current.as_mut().expect("checked above");
            if c.grow(text.len(), limit, at) {
                return None;
            }
            match field {
                Field::Detail => self.spare.set(&mut c.entry.detail, Some(message)),
                Field::Statement => self.spare.set(&mut c.entry.statement, Some(message)),
                _ => {}
            }
            c.last = field;
            return None;
        }
        let Some(time_us) = values.time_us else {
            let u = self.unreadable("no time in the line's prefix");
            self.finish();
            self.ready.push_back(Err(u));
            return None;
        };
        if word == "LOG" {
            if let Some(glued) = self.glued_to_statement(text, message) {
                return self.cut("a statement's line holds the start of another entry", glued);
            }
        }
        self.finish();
        let mut entry = self.spare.entry();
        entry.at = self.at();
        entry.time_us = time_us;
        entry.pid = values.pid;
        entry.severity = Severity::from_word(word);
        set_text(&mut entry.message, message);
        let spare = &mut self.spare;
        spare.set(&mut entry.session, values.session);
        spare.set(&mut entry.user, values.user);
        spare.set(&mut entry.database, values.database);
        spare.set(&mut entry.sqlstate, values.sqlstate);
        spare.set(&mut entry.detail, None);
        spare.set(&mut entry.statement, None);
        self.current = Some(Current {
            entry,
            bytes: text.len() + 1,
            last: Field::Message,
            broken: None,
        });
        None
    }

    /// An unusable line: when it continues the entry being read (a tab line, or a
    /// `DETAIL:`… of its session) the entry goes with it (its text would be cut); when
    /// it starts an entry, that entry's further lines go with it.
    fn bad_line(&mut self, text: &str, u: Unreadable) {
        if text.starts_with('\t') {
            match self.current.as_mut() {
                Some(c) => {
                    c.broken.get_or_insert(u);
                }
                None => self.ready.push_back(Err(u)),
            }
            return;
        }
        let parsed = self
            .prefix
            .match_line(text)
            .and_then(|(v, rest)| split_severity(rest).map(|(word, _)| (v.session, word)));
        match parsed {
            Some((session, word)) if SECONDARY.contains(&word) => match self.current.as_mut() {
                Some(c) if c.entry.session.as_deref() == session => {
                    c.broken.get_or_insert(u);
                }
                _ => {
                    self.finish();
                    self.ready.push_back(Err(u));
                }
            },
            Some((session, _)) => {
                self.finish();
                self.current = Some(Current {
                    entry: LogEntry {
                        session: session.map(str::to_string),
                        ..LogEntry::default()
                    },
                    bytes: 0,
                    last: Field::Ignored,
                    broken: Some(u),
                });
            }
            None => {
                self.finish();
                self.ready.push_back(Err(u));
            }
        }
    }

    /// Reads the next line into `buf`, without its line end: `None` at the end of the
    /// input, else why it is unusable before its text is looked at (it could not be
    /// read, or the file ends inside it).
    fn read_line(&mut self) -> Option<Option<Unreadable>> {
        if self.buf.capacity() > KEPT_HEAD.max(self.limit.min(1 << 20)) {
            // A long line's buffer is not kept for the lines after it.
            self.buf = Vec::with_capacity(4096);
        }
        self.buf.clear();
        let n = match read_line(&mut self.input, &mut self.buf, self.limit) {
            Ok(Line::End) => return None,
            Ok(Line::Read(n)) => n,
            Ok(Line::TooLong(bytes)) => {
                self.line += 1;
                self.buf.truncate(KEPT_HEAD);
                let what = what(&self.buf);
                return Some(Some(self.unreadable(too_long(what, bytes, self.limit))));
            }
            Err(e) => {
                self.done = true;
                self.line += 1;
                self.buf.clear();
                return Some(Some(self.unreadable(format!("cannot be read: {e}"))));
            }
        };
        self.line += 1;
        if self.buf.last() != Some(&b'\n') {
            let what = what(&self.buf);
            return Some(Some(self.unreadable(format!(
                "{what} cut short: the file ends without a newline ({n} bytes)"
            ))));
        }
        self.buf.pop();
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        Some(None)
    }

    /// Handles the line in `buf` (`bad`: why it is unusable already): its text when it
    /// is UTF-8, else the text with invalid bytes replaced, as an unusable line.
    fn take_line(&mut self, bad: Option<Unreadable>) {
        let buf = std::mem::take(&mut self.buf);
        match (bad, std::str::from_utf8(&buf)) {
            (None, Ok(text)) => self.line(text, None),
            (bad, utf8) => {
                let u = bad.unwrap_or_else(|| {
                    let at = utf8.err().map_or(0, |e| e.valid_up_to());
                    self.unreadable(format!(
                        "{} is not UTF-8 (byte 0x{:02x} at column {}); lc_messages and the database encoding should be UTF-8, or the file converted (iconv)",
                        what(&buf),
                        buf.get(at).copied().unwrap_or(0),
                        at + 1
                    ))
                });
                let text = String::from_utf8_lossy(&buf).into_owned();
                self.line(&text, Some(u));
            }
        }
        self.buf = buf;
    }
}

/// What a line is, for messages.
fn what(line: &[u8]) -> &'static str {
    if line.first() == Some(&b'\t') {
        "continuation line"
    } else {
        "line"
    }
}

impl<R: BufRead> Iterator for StderrReader<R> {
    type Item = Result<LogEntry, Unreadable>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.ready.pop_front() {
                return Some(r);
            }
            if self.done {
                return None;
            }
            match self.read_line() {
                Some(bad) => self.take_line(bad),
                None => {
                    self.done = true;
                    self.finish();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::prefix::DEFAULT_PREFIX;
    use super::*;

    fn read(text: &[u8]) -> Vec<Result<LogEntry, Unreadable>> {
        StderrReader::new(text, Prefix::parse(DEFAULT_PREFIX).unwrap(), 0, 1 << 20).collect()
    }

    #[test]
    fn groups_details_statements_and_continued_lines() {
        let log = b"2026-11-28 18:00:00.100 UTC|u|d|1.a|LOG:  execute P_1: select $1\n\t+ $2\n\
2026-11-28 18:00:00.100 UTC|u|d|1.a|DETAIL:  parameters: $1 = '1', $2 = '2'\n\
2026-11-28 18:00:00.200 UTC|u|d|1.a|ERROR:  division by zero\n\
2026-11-28 18:00:00.200 UTC|u|d|1.a|STATEMENT:  select 1/0\n";
        let e = read(log);
        assert_eq!(e.len(), 2, "{e:?}");
        let a = e[0].as_ref().unwrap();
        assert_eq!(a.message, "execute P_1: select $1\n+ $2");
        assert_eq!(a.detail.as_deref(), Some("parameters: $1 = '1', $2 = '2'"));
        assert_eq!(a.at.line, 1);
        let b = e[1].as_ref().unwrap();
        assert_eq!(b.severity, Some(Severity::Error));
        assert_eq!(b.statement.as_deref(), Some("select 1/0"));
        assert_eq!(b.at.line, 4);
    }

    #[test]
    fn truncated_non_utf8_and_foreign_lines_are_unreadable() {
        let log = b"2026-11-28 18:00:00.100 UTC|u|d|1.a|LOG:  statement: select 'caf\xe9'\n\
hello\n\
2026-11-28 18:00:00.300 UTC|u|d|1.a|LOG:  statement: sel";
        let e = read(log);
        assert_eq!(e.len(), 3, "{e:?}");
        let u: Vec<_> = e.iter().map(|r| r.as_ref().unwrap_err()).collect();
        assert!(u[0].reason.contains("not UTF-8"), "{:?}", u[0]);
        assert_eq!(u[0].at.line, 1);
        assert!(u[1].reason.contains("log_line_prefix"), "{:?}", u[1]);
        assert!(u[2].reason.contains("cut short"), "{:?}", u[2]);
        assert_eq!(u[2].at.line, 3);
    }

    #[test]
    fn a_broken_continuation_loses_its_whole_entry() {
        let log = b"2026-11-28 18:00:00.100 UTC|u|d|1.a|LOG:  statement: select 1\n\t, '\xff'\n\
2026-11-28 18:00:00.200 UTC|u|d|1.a|LOG:  statement: select 2\n";
        let e = read(log);
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e[0]
            .as_ref()
            .unwrap_err()
            .reason
            .contains("continuation line is not UTF-8"));
        assert_eq!(e[0].as_ref().unwrap_err().at.line, 2);
        assert_eq!(e[1].as_ref().unwrap().message, "statement: select 2");
    }

    #[test]
    fn an_entry_glued_to_a_cut_line_is_read_after_it() {
        let p = "2026-11-28 18:00:00.100 UTC|u|d|";
        let log = format!(
            "{p}65.a|LOG:  statement: select * from t where x = 1 and{p}65.b|LOG:  execute P_1: select $1\n\
{p}65.b|DETAIL:  parameters: $1 = '5'\n\
{p}65.a|LO{p}65.c|LOG:  statement: select 2\n\
ere x = 1{p}65.d|LOG:  duration: 0.5 ms\n\
{p}65.e|LOG:  statement: select 3\n"
        );
        let e = read(log.as_bytes());
        assert_eq!(e.len(), 7, "{e:?}");
        let cut = e[0].as_ref().unwrap_err();
        assert_eq!(cut.at.line, 1);
        assert!(
            cut.reason.contains("cut short") && cut.reason.contains("column 86"),
            "{cut:?}"
        );
        let glued = e[1].as_ref().unwrap();
        assert_eq!(glued.session.as_deref(), Some("65.b"));
        assert_eq!(glued.message, "execute P_1: select $1");
        assert_eq!(glued.detail.as_deref(), Some("parameters: $1 = '5'"));
        assert!(e[2].as_ref().unwrap_err().reason.contains("no severity"));
        assert_eq!(e[3].as_ref().unwrap().message, "statement: select 2");
        assert!(e[4]
            .as_ref()
            .unwrap_err()
            .reason
            .contains("log_line_prefix"));
        assert_eq!(e[5].as_ref().unwrap().session.as_deref(), Some("65.d"));
        assert_eq!(e[6].as_ref().unwrap().message, "statement: select 3");
    }

    #[test]
    fn a_statement_that_holds_a_log_line_in_its_text_is_one_statement() {
        let p = "2026-11-28 18:00:00.100 UTC|u|d|";
        let line = format!("{p}65.b|LOG:  statement: x");
        let statements = [
            format!("insert into logs values ('{line}')"),
            format!("insert into logs values ($${line}$$) -- {line}"),
            format!("select 1 /* {line} */"),
            format!("select \"{line}\" from t"),
            // Timestamps outside quotes, no entry after them.
            "select 2026-11-28 - 1, now() > '2026-11-28 18:00:00 UTC'".to_string(),
            // A line cut inside a string cannot be told from a string that holds a log
            // line: it is read as one statement.
            format!("select 'abc{line}"),
        ];
        for sql in statements {
            let log = format!("{p}65.a|LOG:  statement: {sql}\n");
            let e = read(log.as_bytes());
            assert_eq!(e.len(), 1, "{sql}: {e:?}");
            assert_eq!(e[0].as_ref().unwrap().message, format!("statement: {sql}"));
        }
    }

    #[test]
    fn an_entry_past_the_limit_is_read_past_and_the_next_one_read() {
        let long = "x".repeat(10_000);
        let log = format!(
            "2026-11-28 18:00:00.100 UTC|u|d|1.a|LOG:  statement: select '{long}'\n\
2026-11-28 18:00:00.100 UTC|u|d|1.a|DETAIL:  more\n\
2026-11-28 18:00:00.200 UTC|u|d|1.a|LOG:  statement: select 1\n\
{}\
2026-11-28 18:00:00.300 UTC|u|d|1.a|LOG:  statement: select 3\n",
            "\t, 2\n".repeat(400)
        );
        let mut r = StderrReader::new(
            log.as_bytes(),
            Prefix::parse(DEFAULT_PREFIX).unwrap(),
            0,
            1000,
        );
        let u = r.next().unwrap().unwrap_err();
        assert_eq!(u.at.line, 1);
        assert!(u.reason.contains("longer than 1000 bytes"), "{u:?}");
        // An entry of many lines, each short, is as long as its lines together.
        let u = r.next().unwrap().unwrap_err();
        assert!(u.reason.contains("entry longer than 1000"), "{u:?}");
        let e = r.next().unwrap().unwrap();
        assert_eq!(
            (e.at.line, e.message.as_str()),
            (404, "statement: select 3")
        );
        assert!(r.next().is_none());
        assert!(r.buf.capacity() <= 4096, "the long line is not held");
    }
}
