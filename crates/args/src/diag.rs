//! pgbench's diagnostics on stderr (PostgreSQL's common logging): `pgbench: error: …`,
//! `pgbench: detail: …`, `pgbench: hint: …`, and info lines without a level word.
//! Owns the prefix texts and the hint pgbench prints after a usage error.

use std::io::Write;

/// Program name in every message: pgsurge answers as pgbench, whatever its argv[0].
pub const PROGNAME: &str = "pgbench";

/// Log levels that have a prefix word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// No word (info, debug).
    Info,
    /// `error: `.
    Error,
    /// `warning: `.
    Warning,
    /// `detail: `.
    Detail,
    /// `hint: `.
    Hint,
}

/// SGR colours of PostgreSQL's common logging (`PG_COLOR`, `PG_COLORS`). The default
/// is no colour at all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogColors {
    error: Option<String>,
    warning: Option<String>,
    note: Option<String>,
    locus: Option<String>,
}

impl LogColors {
    /// Reads `PG_COLOR` (`always`, or `auto` when stderr is a terminal) and `PG_COLORS`
    /// (`error=01;31:warning=01;35:note=01;36:locus=01` are the defaults; when
    /// `PG_COLORS` is set, the kinds it does not name stay uncoloured).
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>, stderr_is_tty: bool) -> LogColors {
        let on = match (env)("PG_COLOR").as_deref() {
            Some("always") => true,
            Some("auto") => stderr_is_tty,
            _ => false,
        };
        if !on {
            return LogColors::default();
        }
        let Some(spec) = (env)("PG_COLORS") else {
            return LogColors {
                error: Some("01;31".into()),
                warning: Some("01;35".into()),
                note: Some("01;36".into()),
                locus: Some("01".into()),
            };
        };
        let mut c = LogColors::default();
        for token in spec.split(':') {
            if let Some((name, value)) = token.split_once('=') {
                let slot = match name {
                    "error" => &mut c.error,
                    "warning" => &mut c.warning,
                    "note" => &mut c.note,
                    "locus" => &mut c.locus,
                    _ => continue,
                };
                *slot = Some(value.to_string());
            }
        }
        c
    }

    /// The line prefix for `level`: `pgbench: ` and the level word, with colours.
    pub fn prefix(&self, level: Level) -> String {
        let paint = |sgr: &Option<String>, text: &str| match sgr {
            Some(code) => format!("\x1b[{code}m{text}\x1b[0m"),
            None => text.to_string(),
        };
        let word = match level {
            Level::Info => String::new(),
            Level::Error => paint(&self.error, "error: "),
            Level::Warning => paint(&self.warning, "warning: "),
            Level::Detail => paint(&self.note, "detail: "),
            Level::Hint => paint(&self.note, "hint: "),
        };
        format!("{}{word}", paint(&self.locus, &format!("{PROGNAME}: ")))
    }
}

/// A stderr writer that formats pgbench's log lines. Write errors are ignored, as
/// pgbench ignores them when logging.
pub struct Diag<'a> {
    err: &'a mut dyn Write,
    colors: LogColors,
}

impl<'a> Diag<'a> {
    /// Wraps the stderr sink.
    pub fn new(err: &'a mut dyn Write, colors: LogColors) -> Self {
        Diag { err, colors }
    }

    fn line(&mut self, level: Level, msg: &[u8]) {
        let mut buf = Vec::with_capacity(msg.len() + 24);
        buf.extend_from_slice(self.colors.prefix(level).as_bytes());
        // common logging strips one trailing newline of the message
        let msg = msg.strip_suffix(b"\n").unwrap_or(msg);
        buf.extend_from_slice(msg);
        buf.push(b'\n');
        let _ = self.err.write_all(&buf);
    }

    /// `pgbench: error: MSG`.
    pub fn error(&mut self, msg: impl AsRef<[u8]>) {
        self.line(Level::Error, msg.as_ref());
    }

    /// `pgbench: detail: MSG`.
    pub fn detail(&mut self, msg: impl AsRef<[u8]>) {
        self.line(Level::Detail, msg.as_ref());
    }

    /// `pgbench: hint: MSG`.
    pub fn hint(&mut self, msg: impl AsRef<[u8]>) {
        self.line(Level::Hint, msg.as_ref());
    }

    /// `pgbench: MSG` (info level).
    pub fn info(&mut self, msg: impl AsRef<[u8]>) {
        self.line(Level::Info, msg.as_ref());
    }

    /// A getopt complaint (`pgbench: invalid option -- 'x'`) followed by pgbench's hint.
    pub fn usage_error(&mut self, getopt_msg: &[u8]) {
        // glibc prints this one itself: never coloured
        let mut buf = format!("{PROGNAME}: ").into_bytes();
        buf.extend_from_slice(getopt_msg);
        buf.push(b'\n');
        let _ = self.err.write_all(&buf);
        self.try_help();
    }

    /// `pgbench: hint: Try "pgbench --help" for more information.`
    pub fn try_help(&mut self) {
        self.hint(format!("Try \"{PROGNAME} --help\" for more information."));
    }

    /// Raw bytes (builtin list, `--show-script`, script error context lines).
    pub fn raw(&mut self, bytes: impl AsRef<[u8]>) {
        let _ = self.err.write_all(bytes.as_ref());
    }
}

/// The text of an OS error as C's `%m` prints it (`strerror`), without Rust's
/// ` (os error N)` suffix.
pub fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) if e.raw_os_error().is_some() => s[..i].to_string(),
        _ => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn colours_follow_pg_color() {
        let none = LogColors::from_env(&env(&[]), true);
        assert_eq!(none.prefix(Level::Error), "pgbench: error: ");
        let auto_no_tty = LogColors::from_env(&env(&[("PG_COLOR", "auto")]), false);
        assert_eq!(auto_no_tty, LogColors::default());
        let always = LogColors::from_env(&env(&[("PG_COLOR", "always")]), false);
        assert_eq!(
            always.prefix(Level::Error),
            "\x1b[01mpgbench: \x1b[0m\x1b[01;31merror: \x1b[0m"
        );
        assert_eq!(always.prefix(Level::Info), "\x1b[01mpgbench: \x1b[0m");
        assert_eq!(
            always.prefix(Level::Hint),
            "\x1b[01mpgbench: \x1b[0m\x1b[01;36mhint: \x1b[0m"
        );
        let custom = LogColors::from_env(
            &env(&[("PG_COLOR", "always"), ("PG_COLORS", "error=01;32:locus=4")]),
            false,
        );
        assert_eq!(
            custom.prefix(Level::Error),
            "\x1b[4mpgbench: \x1b[0m\x1b[01;32merror: \x1b[0m"
        );
        assert_eq!(
            custom.prefix(Level::Detail),
            "\x1b[4mpgbench: \x1b[0mdetail: "
        );
    }
}
