//! pgbench's diagnostics on stderr (PostgreSQL's common logging): `pgbench: error: …`,
//! `pgbench: detail: …`, `pgbench: hint: …`, and info lines without a level word.
//! Owns the prefix texts and the hint pgbench prints after a usage error.

use std::io::Write;

/// Program name in every message: pgsurge answers as pgbench, whatever its argv[0].
pub const PROGNAME: &str = "pgbench";

/// A stderr writer that formats pgbench's log lines. Write errors are ignored, as
/// pgbench ignores them when logging.
pub struct Diag<'a> {
    err: &'a mut dyn Write,
}

impl<'a> Diag<'a> {
    /// Wraps the stderr sink.
    pub fn new(err: &'a mut dyn Write) -> Self {
        Diag { err }
    }

    fn line(&mut self, level: &str, msg: &[u8]) {
        let mut buf = Vec::with_capacity(msg.len() + 24);
        buf.extend_from_slice(PROGNAME.as_bytes());
        buf.extend_from_slice(b": ");
        buf.extend_from_slice(level.as_bytes());
        // common logging strips one trailing newline of the message
        let msg = msg.strip_suffix(b"\n").unwrap_or(msg);
        buf.extend_from_slice(msg);
        buf.push(b'\n');
        let _ = self.err.write_all(&buf);
    }

    /// `pgbench: error: MSG`.
    pub fn error(&mut self, msg: impl AsRef<[u8]>) {
        self.line("error: ", msg.as_ref());
    }

    /// `pgbench: detail: MSG`.
    pub fn detail(&mut self, msg: impl AsRef<[u8]>) {
        self.line("detail: ", msg.as_ref());
    }

    /// `pgbench: hint: MSG`.
    pub fn hint(&mut self, msg: impl AsRef<[u8]>) {
        self.line("hint: ", msg.as_ref());
    }

    /// `pgbench: MSG` (info level).
    pub fn info(&mut self, msg: impl AsRef<[u8]>) {
        self.line("", msg.as_ref());
    }

    /// A getopt complaint (`pgbench: invalid option -- 'x'`) followed by pgbench's hint.
    pub fn usage_error(&mut self, getopt_msg: &[u8]) {
        self.line("", getopt_msg);
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
