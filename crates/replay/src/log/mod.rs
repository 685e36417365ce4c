//! Reading PostgreSQL logs: the three formats, each file's format found from its name
//! or first line, and the files read one after the other as one log. Owns bytes →
//! [`LogEntry`] values; what the entries mean is `crate::sessions`'.
//!
//! | module | owns |
//! |---|---|
//! | `entry` | [`LogEntry`], [`Position`], [`Severity`], [`LogFormat`], [`Unreadable`] |
//! | `time` | timestamps of the three formats → µs |
//! | `prefix` | `log_line_prefix` templates and matching a line's prefix |
//! | `stderr` | the stderr format (prefix, severity, tab-continued lines) |
//! | `csvlog` | the csvlog format |
//! | `jsonlog` | the jsonlog format |
//! | `message` | what a message's English text says (statement, execute, duration…) |
//! | `params` | `DETAIL: parameters: …` and its check against the statement |

mod csvlog;
mod entry;
mod jsonlog;
pub mod message;
pub mod params;
pub mod prefix;
mod stderr;
mod time;

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

pub use entry::{LogEntry, LogFormat, Position, Severity, Unreadable};
pub use prefix::{Prefix, DEFAULT_PREFIX};

use crate::limits::{Limits, ENTRY_BYTES};

/// Read buffer of each log file.
const READ_BUFFER: usize = 256 * 1024;

/// Why the logs cannot be read at all.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// A file cannot be opened.
    #[error("{path}: {source}")]
    Io {
        /// Which.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `--log-line-prefix` is not usable.
    #[error("{0}")]
    Prefix(String),
    /// A stderr log's prefix has no session id.
    #[error("the log_line_prefix \"{0}\" has no session id (%c): a replay cannot tell sessions apart; log with log_line_prefix = '%m|%u|%d|%c|' (or give the prefix the log was written with, --log-line-prefix)")]
    NoSessionId(String),
}

/// The format of the file at `path`: from its name (`.csv`, `.json`), else from its
/// first bytes (`{` starts jsonlog; a timestamp and a comma start csvlog).
pub fn detect_format(path: &Path, head: &[u8]) -> LogFormat {
    match path.extension().and_then(|e| e.to_str()) {
        Some("csv") => return LogFormat::Csvlog,
        Some("json") => return LogFormat::Jsonlog,
        _ => {}
    }
    let first = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .map(|i| &head[i..]);
    match first {
        Some([b'{', ..]) => LogFormat::Jsonlog,
        Some(line) => {
            let line = &line[..line.iter().position(|&b| b == b'\n').unwrap_or(line.len())];
            let text = String::from_utf8_lossy(line);
            match text.find(',') {
                Some(comma)
                    if time::parse_timestamp(&text[..comma]).is_some_and(|(_, n)| n == comma) =>
                {
                    LogFormat::Csvlog
                }
                _ => LogFormat::Stderr,
            }
        }
        None => LogFormat::Stderr,
    }
}

/// What [`read_line`] read.
enum Line {
    /// The input is at its end.
    End,
    /// A line of so many bytes (its newline included, when it has one) is in the buffer.
    Read(usize),
    /// A line of so many bytes, longer than the limit: only its start is in the buffer,
    /// the rest was read past.
    TooLong(u64),
}

/// Reads the next line into `buf` (appended), holding no more than `limit` bytes of it:
/// a longer line is read through to its end without being kept.
fn read_line<R: BufRead>(input: &mut R, buf: &mut Vec<u8>, limit: usize) -> io::Result<Line> {
    let n = input.by_ref().take(limit as u64).read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(Line::End);
    }
    if n == limit && buf.last() != Some(&b'\n') {
        let rest = input.skip_until(b'\n')?;
        if rest > 0 {
            return Ok(Line::TooLong(n as u64 + rest as u64));
        }
    }
    Ok(Line::Read(n))
}

/// Why an entry longer than `limit` bytes is not read: the reason for the bound is
/// given only when it is the default one (a lowered bound holds out statements that
/// PostgreSQL does run).
fn too_long(what: &str, bytes: u64, limit: usize) -> String {
    let why = if limit >= ENTRY_BYTES {
        "PostgreSQL runs no statement of 1 GB or more"
    } else {
        "lowered from the default of 1 GiB"
    };
    format!(
        "{what} longer than {limit} bytes ({bytes} bytes or more), the most a replay reads of one ({why}): read past, not kept"
    )
}

/// A format's reader: entries in order, and entries given back to be filled again.
trait EntryReader: Iterator<Item = Result<LogEntry, Unreadable>> + Send {
    fn recycle(&mut self, e: LogEntry);
}

impl<R: BufRead + Send> EntryReader for stderr::StderrReader<R> {
    fn recycle(&mut self, e: LogEntry) {
        stderr::StderrReader::recycle(self, e);
    }
}

impl<R: Read + Send> EntryReader for csvlog::CsvReader<R> {
    fn recycle(&mut self, e: LogEntry) {
        csvlog::CsvReader::recycle(self, e);
    }
}

impl<R: BufRead + Send> EntryReader for jsonlog::JsonReader<R> {
    fn recycle(&mut self, e: LogEntry) {
        jsonlog::JsonReader::recycle(self, e);
    }
}

type Entries = Box<dyn EntryReader>;

/// Each file's SHA-256 (hex), once it was read to its end.
pub type Digests = Arc<Mutex<Vec<Option<String>>>>;

/// A file hashed as it is read: its digest is set when the end is reached.
struct Hashed {
    file: File,
    hasher: Option<Sha256>,
    digests: Digests,
    index: usize,
}

impl Read for Hashed {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read(buf)?;
        if n == 0 {
            if let Some(h) = self.hasher.take() {
                let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
                if let Ok(mut d) = self.digests.lock() {
                    if let Some(slot) = d.get_mut(self.index) {
                        *slot = Some(hex);
                    }
                }
            }
        } else if let Some(h) = self.hasher.as_mut() {
            h.update(&buf[..n]);
        }
        Ok(n)
    }
}

/// The entries of several log files, one after the other.
pub struct LogFiles {
    paths: Vec<PathBuf>,
    formats: Vec<LogFormat>,
    prefix: Prefix,
    next_file: usize,
    current: Option<Entries>,
    digests: Digests,
    entry_limit: usize,
}

impl LogFiles {
    /// Opens nothing yet: checks the prefix and finds each file's format (`forced`:
    /// every file is in this one). Files that cannot be opened are an error now.
    pub fn open(
        paths: &[PathBuf],
        forced: Option<LogFormat>,
        prefix: &str,
    ) -> Result<LogFiles, OpenError> {
        let prefix = Prefix::parse(prefix).map_err(OpenError::Prefix)?;
        let mut formats = Vec::new();
        for p in paths {
            let mut head = vec![0u8; 4096];
            let n = File::open(p)
                .and_then(|mut f| f.read(&mut head))
                .map_err(|source| OpenError::Io {
                    path: p.clone(),
                    source,
                })?;
            head.truncate(n);
            formats.push(forced.unwrap_or_else(|| detect_format(p, &head)));
        }
        if formats.contains(&LogFormat::Stderr) && !prefix.has_session() {
            return Err(OpenError::NoSessionId(prefix.text().to_string()));
        }
        Ok(LogFiles {
            digests: Arc::new(Mutex::new(vec![None; paths.len()])),
            paths: paths.to_vec(),
            formats,
            prefix,
            next_file: 0,
            current: None,
            entry_limit: Limits::current().entry_bytes,
        })
    }

    /// Reads entries of at most `bytes` (an entry longer is unreadable): the bound
    /// otherwise comes from [`Limits::current`].
    pub fn limit_entries(&mut self, bytes: usize) {
        self.entry_limit = bytes.max(1);
    }

    /// Each file's format.
    pub fn formats(&self) -> &[LogFormat] {
        &self.formats
    }

    /// The files.
    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// Gives back an entry read from these files: its texts are filled again with a
    /// later entry's, so a log is read without an allocation per entry.
    pub fn recycle(&mut self, e: LogEntry) {
        if let Some(cur) = self.current.as_mut() {
            cur.recycle(e);
        }
    }

    /// Where each file's SHA-256 appears once it was read through.
    pub fn digests(&self) -> Digests {
        Arc::clone(&self.digests)
    }

    fn open_next(&mut self) -> Option<Result<Entries, Unreadable>> {
        let i = self.next_file;
        let path = self.paths.get(i)?;
        self.next_file += 1;
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) => {
                return Some(Err(Unreadable {
                    at: Position {
                        file: i as u32,
                        line: 0,
                    },
                    reason: format!("cannot be opened: {e}"),
                }))
            }
        };
        let hashed = Hashed {
            file,
            hasher: Some(Sha256::new()),
            digests: Arc::clone(&self.digests),
            index: i,
        };
        let input = BufReader::with_capacity(READ_BUFFER, hashed);
        let n = i as u32;
        let limit = self.entry_limit;
        let entries: Entries = match self.formats[i] {
            LogFormat::Stderr => Box::new(stderr::StderrReader::new(
                input,
                self.prefix.clone(),
                n,
                limit,
            )),
            LogFormat::Csvlog => Box::new(csvlog::CsvReader::new(input, n, limit)),
            LogFormat::Jsonlog => Box::new(jsonlog::JsonReader::new(input, n, limit)),
        };
        Some(Ok(entries))
    }
}

impl Iterator for LogFiles {
    type Item = Result<LogEntry, Unreadable>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(cur) = self.current.as_mut() {
                match cur.next() {
                    Some(r) => return Some(r),
                    None => self.current = None,
                }
            }
            match self.open_next()? {
                Ok(entries) => self.current = Some(entries),
                Err(u) => return Some(Err(u)),
            }
        }
    }
}

/// Reads entries of any format from a `BufRead` (tests, fuzzing), of at most `limit`
/// bytes each.
pub fn read_entries<'a, R: BufRead + Send + 'a>(
    input: R,
    format: LogFormat,
    prefix: &Prefix,
    limit: usize,
) -> Box<dyn Iterator<Item = Result<LogEntry, Unreadable>> + Send + 'a> {
    let limit = limit.max(1);
    match format {
        LogFormat::Stderr => Box::new(stderr::StderrReader::new(input, prefix.clone(), 0, limit)),
        LogFormat::Csvlog => Box::new(csvlog::CsvReader::new(input, 0, limit)),
        LogFormat::Jsonlog => Box::new(jsonlog::JsonReader::new(input, 0, limit)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_too_long_names_the_bound_in_force() {
        let lowered = too_long("line", 5000, 4096);
        assert!(lowered.contains("longer than 4096 bytes"), "{lowered}");
        assert!(
            lowered.contains("lowered") && !lowered.contains("1 GB or more"),
            "{lowered}"
        );
        let default = too_long("line", 1 << 31, ENTRY_BYTES);
        assert!(
            default.contains(&format!("longer than {ENTRY_BYTES} bytes"))
                && default.contains("PostgreSQL runs no statement of 1 GB or more"),
            "{default}"
        );
    }

    #[test]
    fn formats_are_found_from_names_and_first_lines() {
        let p = Path::new("postgresql.log");
        assert_eq!(detect_format(p, b"{\"timestamp\":1}"), LogFormat::Jsonlog);
        assert_eq!(
            detect_format(p, b"2026-11-28 18:00:00.100 UTC,\"u\",\"d\",1\n"),
            LogFormat::Csvlog
        );
        assert_eq!(
            detect_format(p, b"2026-11-28 18:00:00.100 UTC|u|d|1.a|LOG:  x\n"),
            LogFormat::Stderr
        );
        assert_eq!(detect_format(Path::new("a.csv"), b""), LogFormat::Csvlog);
    }
}
