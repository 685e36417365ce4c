//! One log entry as every format reads it: the time, the session, the severity and the
//! texts of a message (its detail and the statement it names), with where it was read.
//! The formats (`stderr`, `csvlog`, `jsonlog`) produce these, refilling the entries
//! their reader gives back ([`Spare`]); nothing here reads bytes.

use std::fmt;

/// Where an entry (or an unreadable line) is in the logs: the file's index among the
/// logs given and its 1-based line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Position {
    /// Index of the file in the list of logs.
    pub file: u32,
    /// 1-based line number of the entry's first line.
    pub line: u64,
}

/// A message's severity as PostgreSQL writes it (English).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Severity {
    /// `DEBUG1`…`DEBUG5`.
    Debug,
    /// `LOG`.
    Log,
    /// `INFO`.
    Info,
    /// `NOTICE`.
    Notice,
    /// `WARNING`.
    Warning,
    /// `ERROR`: the statement failed, the session goes on.
    Error,
    /// `FATAL`: the session ends.
    Fatal,
    /// `PANIC`: the server restarts.
    Panic,
}

impl Severity {
    /// The severity named by a word of the log, or `None`.
    pub fn from_word(word: &str) -> Option<Severity> {
        Some(match word {
            "LOG" => Severity::Log,
            "ERROR" => Severity::Error,
            "FATAL" => Severity::Fatal,
            "PANIC" => Severity::Panic,
            "WARNING" => Severity::Warning,
            "NOTICE" => Severity::Notice,
            "INFO" => Severity::Info,
            w if w.starts_with("DEBUG") => Severity::Debug,
            _ => return None,
        })
    }

    /// An error the session's statement ended with (`ERROR`, `FATAL`, `PANIC`).
    pub fn is_error(self) -> bool {
        matches!(self, Severity::Error | Severity::Fatal | Severity::Panic)
    }
}

/// One message of the log, whatever its format.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LogEntry {
    /// Where it starts.
    pub at: Position,
    /// Its time: µs since the Unix epoch, in the log's time zone when it names none
    /// that can be read as an offset (only differences between entries matter).
    pub time_us: i64,
    /// The session it belongs to (`%c`, `session_id`); `None` for lines of processes
    /// that are no session (checkpointer, autovacuum…).
    pub session: Option<String>,
    /// The process that wrote it (`%p`, `process_id`, `pid`), when the log has it.
    pub pid: Option<u32>,
    /// The session's user (`%u`), when the log has it.
    pub user: Option<String>,
    /// The session's database (`%d`), when the log has it.
    pub database: Option<String>,
    /// Severity (`None`: the entry could not name one, it is ignored).
    pub severity: Option<Severity>,
    /// SQLSTATE (`%e`, `sql_state_code`), when the log has it.
    pub sqlstate: Option<String>,
    /// The primary message.
    pub message: String,
    /// `DETAIL:`.
    pub detail: Option<String>,
    /// `STATEMENT:` (`query` in csvlog, `statement` in jsonlog).
    pub statement: Option<String>,
}

/// Entries given back by the reader's consumer, and texts of fields left empty: a
/// format fills these again, so reading allocates nothing per entry once they are as
/// large as the log's texts.
#[derive(Debug, Default)]
pub(crate) struct Spare {
    entries: Vec<LogEntry>,
    texts: Vec<String>,
}

/// Entries kept for refilling (a reader gives at most a few at a time).
const SPARE_ENTRIES: usize = 8;

/// Texts kept for optional fields that come and go (a detail, a statement).
const SPARE_TEXTS: usize = 16;

impl Spare {
    /// An entry to fill: a given-back one (its texts still there, to be overwritten)
    /// or a new one.
    pub(crate) fn entry(&mut self) -> LogEntry {
        self.entries.pop().unwrap_or_default()
    }

    /// Takes an entry back.
    pub(crate) fn give(&mut self, e: LogEntry) {
        if self.entries.len() < SPARE_ENTRIES {
            self.entries.push(e);
        }
    }

    /// Sets an optional field to `value`, reusing its text or a spare one.
    pub(crate) fn set(&mut self, field: &mut Option<String>, value: Option<&str>) {
        match (field.as_mut(), value) {
            (Some(t), Some(v)) => {
                t.clear();
                t.push_str(v);
            }
            (None, Some(v)) => {
                let mut t = self.texts.pop().unwrap_or_default();
                t.clear();
                t.push_str(v);
                *field = Some(t);
            }
            (Some(_), None) => {
                if let Some(t) = field.take() {
                    if self.texts.len() < SPARE_TEXTS {
                        self.texts.push(t);
                    }
                }
            }
            (None, None) => {}
        }
    }
}

/// Sets `field` to `value`, reusing its buffer.
pub(crate) fn set_text(field: &mut String, value: &str) {
    field.clear();
    field.push_str(value);
}

/// The three formats PostgreSQL writes logs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// `log_destination = stderr`, read with a `log_line_prefix`.
    Stderr,
    /// `log_destination = csvlog`.
    Csvlog,
    /// `log_destination = jsonlog` (PostgreSQL 15 and later).
    Jsonlog,
}

impl fmt::Display for LogFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LogFormat::Stderr => "stderr",
            LogFormat::Csvlog => "csvlog",
            LogFormat::Jsonlog => "jsonlog",
        })
    }
}

impl std::str::FromStr for LogFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "stderr" => Ok(LogFormat::Stderr),
            "csvlog" | "csv" => Ok(LogFormat::Csvlog),
            "jsonlog" | "json" => Ok(LogFormat::Jsonlog),
            other => Err(format!(
                "unknown log format \"{other}\" (stderr, csvlog or jsonlog)"
            )),
        }
    }
}

/// A line that could not be read as a log entry, with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// Where.
    pub at: Position,
    /// Why, in words.
    pub reason: String,
}
