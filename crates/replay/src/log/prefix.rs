//! `log_line_prefix`: the template of a stderr log line's prefix, parsed once, and the
//! matching of a line's start against it. Owns which escapes carry what a replay needs
//! (time, session, user, database, SQLSTATE); it does not read files.

use super::time::{parse_epoch, parse_timestamp};

/// The prefix pgreplay documents, the default of `--log-line-prefix`.
pub const DEFAULT_PREFIX: &str = "%m|%u|%d|%c|";

/// What an escape of the prefix stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    /// `%m`, `%t`: a timestamp with its zone.
    Timestamp,
    /// `%n`: epoch seconds.
    Epoch,
    /// `%s`: the session's start, a timestamp that is not the line's time.
    SessionStart,
    /// `%c`: session id.
    Session,
    /// `%u`.
    User,
    /// `%d`.
    Database,
    /// `%e`.
    Sqlstate,
    /// `%p`: the process id.
    Pid,
    /// Any other escape: read and dropped.
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Field(Field),
    /// `%q`: processes that are no session stop the prefix here.
    SessionOnly,
}

/// A parsed `log_line_prefix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prefix {
    parts: Vec<Part>,
    text: String,
}

/// The values a line's prefix held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PrefixValues<'a> {
    /// µs since the epoch.
    pub time_us: Option<i64>,
    /// `%c`.
    pub session: Option<&'a str>,
    /// `%u`.
    pub user: Option<&'a str>,
    /// `%d`.
    pub database: Option<&'a str>,
    /// `%e`.
    pub sqlstate: Option<&'a str>,
    /// `%p`.
    pub pid: Option<u32>,
}

impl Prefix {
    /// Parses a `log_line_prefix` value.
    pub fn parse(text: &str) -> Result<Prefix, String> {
        let mut parts = Vec::new();
        let mut lit = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                lit.push(c);
                continue;
            }
            // Padding (`%-10u`, `%5p`) changes widths, not what is read.
            while matches!(chars.peek(), Some('-' | '0'..='9')) {
                chars.next();
            }
            let Some(e) = chars.next() else {
                return Err(format!("log_line_prefix \"{text}\" ends with a lone %"));
            };
            let field = match e {
                '%' => {
                    lit.push('%');
                    continue;
                }
                'm' | 't' => Field::Timestamp,
                's' => Field::SessionStart,
                'n' => Field::Epoch,
                'c' => Field::Session,
                'u' => Field::User,
                'd' => Field::Database,
                'e' => Field::Sqlstate,
                'p' => Field::Pid,
                'q' => {
                    if !lit.is_empty() {
                        parts.push(Part::Literal(std::mem::take(&mut lit)));
                    }
                    parts.push(Part::SessionOnly);
                    continue;
                }
                'a' | 'r' | 'h' | 'L' | 'b' | 'P' | 'i' | 'l' | 'v' | 'x' | 'Q' => Field::Other,
                other => {
                    return Err(format!(
                        "log_line_prefix \"{text}\": unknown escape %{other}"
                    ))
                }
            };
            if !lit.is_empty() {
                parts.push(Part::Literal(std::mem::take(&mut lit)));
            }
            parts.push(Part::Field(field));
        }
        if !lit.is_empty() {
            parts.push(Part::Literal(lit));
        }
        parts.retain(|p| !matches!(p, Part::Literal(l) if l.is_empty()));
        let prefix = Prefix {
            parts,
            text: text.to_string(),
        };
        if !prefix.has(Field::Timestamp) && !prefix.has(Field::Epoch) {
            return Err(format!(
                "log_line_prefix \"{text}\" has no time (%m, %t or %n): a replay needs the time of each line"
            ));
        }
        Ok(prefix)
    }

    fn has(&self, f: Field) -> bool {
        self.parts.contains(&Part::Field(f))
    }

    /// Whether the prefix names the session (`%c`).
    pub fn has_session(&self) -> bool {
        self.has(Field::Session)
    }

    /// Whether the prefix has the SQLSTATE (`%e`).
    pub fn has_sqlstate(&self) -> bool {
        self.has(Field::Sqlstate)
    }

    /// The prefix as given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Matches the start of `line`: the values and the rest of the line, or `None`
    /// when the line does not start with this prefix.
    pub fn match_line<'a>(&self, line: &'a str) -> Option<(PrefixValues<'a>, &'a str)> {
        let mut v = PrefixValues::default();
        let mut rest = line;
        let mut i = 0;
        while i < self.parts.len() {
            match &self.parts[i] {
                Part::Literal(l) => rest = rest.strip_prefix(l.as_str())?,
                Part::SessionOnly => {
                    // A process that is no session ends its prefix here: its line goes
                    // on with the severity.
                    if looks_like_severity(rest) {
                        return Some((v, rest));
                    }
                }
                Part::Field(f) => {
                    let (value, len) = match f {
                        Field::Timestamp => {
                            let (t, len) = parse_timestamp(rest)?;
                            v.time_us.get_or_insert(t);
                            (None, len)
                        }
                        Field::SessionStart => (None, parse_timestamp(rest)?.1),
                        Field::Epoch => {
                            let (t, len) = parse_epoch(rest)?;
                            v.time_us.get_or_insert(t);
                            (None, len)
                        }
                        _ => {
                            let len = match self.next_literal(i) {
                                Some(l) => rest.find(l)?,
                                None => rest.find(": ").map_or(rest.len(), |p| {
                                    rest[..p].rfind(' ').map_or(0, |s| s + 1)
                                }),
                            };
                            (Some(&rest[..len]), len)
                        }
                    };
                    if let Some(value) = value {
                        let value = (!value.is_empty() && value != "[unknown]").then_some(value);
                        match f {
                            Field::Session => v.session = value,
                            Field::User => v.user = value,
                            Field::Database => v.database = value,
                            Field::Sqlstate => v.sqlstate = value,
                            Field::Pid => v.pid = value.and_then(|p| p.trim().parse().ok()),
                            _ => {}
                        }
                    }
                    rest = &rest[len..];
                }
            }
            i += 1;
        }
        Some((v, rest))
    }

    /// The first byte offset in `text` at or past `from` where an entry of this prefix
    /// starts: the prefix matches there, with its time, and its session id when it has
    /// one, followed by a severity and its colon. Where a line cut short has the next
    /// entry glued to it. Only a prefix that begins with its time or with a literal is
    /// looked for (other first escapes would match almost anywhere).
    pub fn entry_start(&self, text: &str, from: usize) -> Option<usize> {
        let b = text.as_bytes();
        let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
        let has_session = self.has_session();
        let starts = |i: usize| {
            i >= from
                && self.match_line(&text[i..]).is_some_and(|(v, rest)| {
                    v.time_us.is_some()
                        && v.session.map_or(!has_session, is_session_id)
                        && split_severity(rest).is_some()
                })
        };
        // The positions where the prefix's first part can start.
        match self.parts.first()? {
            Part::Literal(l) => text
                .match_indices(l.as_str())
                .map(|(i, _)| i)
                .find(|&i| starts(i)),
            // `2026-11-28 …`: four digits and a dash.
            Part::Field(Field::Timestamp) => text
                .match_indices('-')
                .map(|(i, _)| i)
                .filter(|&i| i >= 4 && digits(i - 4..i))
                .map(|i| i - 4)
                .find(|&i| starts(i)),
            // `1796025848.423`: ten digits and a dot.
            Part::Field(Field::Epoch) => text
                .match_indices('.')
                .map(|(i, _)| i)
                .filter(|&i| i >= 10 && digits(i - 10..i))
                .map(|i| i - 10)
                .find(|&i| starts(i)),
            _ => None,
        }
    }

    /// The literal that follows part `i` directly, if any.
    fn next_literal(&self, i: usize) -> Option<&str> {
        match self.parts.get(i + 1) {
            Some(Part::Literal(l)) => Some(l),
            _ => None,
        }
    }
}

/// Whether `s` is a session id as PostgreSQL writes one (`%c`: two hex numbers
/// joined by a dot).
fn is_session_id(s: &str) -> bool {
    let hex = |h: &str| !h.is_empty() && h.len() <= 16 && h.bytes().all(|b| b.is_ascii_hexdigit());
    s.split_once('.').is_some_and(|(a, b)| hex(a) && hex(b))
}

/// Whether `s` starts with a severity word and its colon (`LOG:  `).
pub fn looks_like_severity(s: &str) -> bool {
    split_severity(s).is_some()
}

/// `LOG:  message` → (`LOG`, `message`); the words of secondary lines (`DETAIL`,
/// `STATEMENT`…) too.
pub fn split_severity(s: &str) -> Option<(&str, &str)> {
    let colon = s.find(":  ")?;
    let word = &s[..colon];
    let known = matches!(
        word,
        "LOG"
            | "ERROR"
            | "FATAL"
            | "PANIC"
            | "WARNING"
            | "NOTICE"
            | "INFO"
            | "DETAIL"
            | "HINT"
            | "CONTEXT"
            | "STATEMENT"
            | "QUERY"
            | "LOCATION"
    ) || (word.starts_with("DEBUG") && word.len() == 6);
    known.then(|| (word, &s[colon + 3..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_documented_prefix() {
        let p = Prefix::parse(DEFAULT_PREFIX).unwrap();
        let (v, rest) = p
            .match_line(
                "2026-11-28 18:00:00.123 UTC|alice|shop|6565a1b2.1f3|LOG:  statement: select 1",
            )
            .unwrap();
        assert_eq!(v.user, Some("alice"));
        assert_eq!(v.database, Some("shop"));
        assert_eq!(v.session, Some("6565a1b2.1f3"));
        assert!(v.time_us.is_some());
        assert_eq!(rest, "LOG:  statement: select 1");
        assert!(p.match_line("garbage").is_none());
    }

    #[test]
    fn reads_prefixes_with_spaces_and_session_only_parts() {
        let p = Prefix::parse("%m [%p] %q%u@%d %c ").unwrap();
        let (v, rest) = p
            .match_line("2026-11-28 18:00:00.123 UTC [42] bob@db 65.2a LOG:  statement: x")
            .unwrap();
        assert_eq!(
            (v.user, v.database, v.session),
            (Some("bob"), Some("db"), Some("65.2a"))
        );
        assert_eq!(rest, "LOG:  statement: x");
        assert_eq!(v.pid, Some(42));
        let (v, rest) = p
            .match_line("2026-11-28 18:00:00.123 UTC [43] LOG:  checkpoint starting: time")
            .unwrap();
        assert_eq!((v.session, v.pid), (None, Some(43)));
        assert_eq!(rest, "LOG:  checkpoint starting: time");
    }

    #[test]
    fn finds_an_entry_glued_inside_a_line() {
        let line = "select 2026-11-28 - 1, '2026-11-28 18:00:00.123 UTC|u|d|'2026-11-28 18:00:00.200 UTC|u|d|65.b|LOG:  statement: x";
        let p = Prefix::parse(DEFAULT_PREFIX).unwrap();
        assert_eq!(p.entry_start(line, 0), line.rfind("'2026").map(|i| i + 1));
        assert_eq!(
            p.entry_start("a timestamp 2026-11-28 18:00:00.200 UTC alone", 0),
            None
        );
        let p = Prefix::parse("[%m] %c ").unwrap();
        let line = "x [2026-11-28 18:00:00.2 UTC] 65.b LOG:  statement: y";
        assert_eq!(p.entry_start(line, 0), Some(2));
        assert_eq!(p.entry_start(line, 3), None);
        let p = Prefix::parse("%n|%c|").unwrap();
        let line = "select 1796025848.12|65.b|LOG:  statement: y";
        assert_eq!(p.entry_start(line, 0), Some(7));
        // A prefix that starts with another escape is not looked for.
        let p = Prefix::parse("%c|%m|").unwrap();
        assert_eq!(
            p.entry_start("x65.b|2026-11-28 18:00:00.2 UTC|LOG:  y", 0),
            None
        );
    }

    #[test]
    fn refuses_prefixes_without_time_and_unknown_escapes() {
        assert!(Prefix::parse("%u|%d|").unwrap_err().contains("no time"));
        assert!(Prefix::parse("%m %z").unwrap_err().contains("%z"));
        assert!(!Prefix::parse("%m|%u|%d|").unwrap().has_session());
    }
}
