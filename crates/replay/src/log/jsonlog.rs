//! The jsonlog format (PostgreSQL 15 and later): one JSON object per line, keys left
//! out when empty. Owns turning those objects into [`LogEntry`] values.

use std::io::BufRead;

use super::entry::{LogEntry, Position, Severity, Unreadable};
use super::time::parse_timestamp;

/// The keys of a jsonlog object a replay reads.
#[derive(serde::Deserialize)]
struct Record {
    timestamp: Option<String>,
    user: Option<String>,
    dbname: Option<String>,
    session_id: Option<String>,
    error_severity: Option<String>,
    state_code: Option<String>,
    message: Option<String>,
    detail: Option<String>,
    statement: Option<String>,
}

/// Reads the entries of one jsonlog file.
pub struct JsonReader<R> {
    input: R,
    file: u32,
    line: u64,
    buf: Vec<u8>,
}

impl<R: BufRead> JsonReader<R> {
    /// Reads `input`, the `file`-th log.
    pub fn new(input: R, file: u32) -> Self {
        JsonReader {
            input,
            file,
            line: 0,
            buf: Vec::with_capacity(4096),
        }
    }

    fn entry(&self, at: Position) -> Result<Option<LogEntry>, String> {
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
        let time = r.timestamp.unwrap_or_default();
        let Some((time_us, _)) = parse_timestamp(&time) else {
            return Err(format!("timestamp \"{time}\" is not a timestamp"));
        };
        let word = r.error_severity.unwrap_or_default();
        let Some(severity) = Severity::from_word(&word) else {
            return Err(format!("error_severity \"{word}\" is not a severity"));
        };
        Ok(Some(LogEntry {
            at,
            time_us,
            session: r.session_id,
            user: r.user,
            database: r.dbname,
            severity: Some(severity),
            sqlstate: r.state_code,
            message: r.message.unwrap_or_default(),
            detail: r.detail,
            statement: r.statement,
        }))
    }
}

impl<R: BufRead> Iterator for JsonReader<R> {
    type Item = Result<LogEntry, Unreadable>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            self.buf.clear();
            self.line += 1;
            let at = Position {
                file: self.file,
                line: self.line,
            };
            match self.input.read_until(b'\n', &mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
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
        let e: Vec<_> = JsonReader::new(text.as_bytes(), 0).collect();
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
}
