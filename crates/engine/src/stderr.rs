//! pgbench's diagnostics on stderr: `pgbench: error: …`, info and debug lines, raw server
//! notices. Flushes stdout first (pgbench's logging does) and strips one trailing newline.

use std::io::Write;

use crate::client::Diagnostics;

/// Writes pgbench-style messages to stderr.
#[derive(Debug, Clone, Copy)]
pub struct StderrDiag {
    debug: bool,
}

impl StderrDiag {
    /// `debug`: whether `--debug` lines are printed.
    pub fn new(debug: bool) -> Self {
        StderrDiag { debug }
    }

    fn line(&self, prefix: &str, msg: &str) {
        let _ = std::io::stdout().flush();
        let msg = msg.strip_suffix('\n').unwrap_or(msg);
        let mut e = std::io::stderr().lock();
        let _ = writeln!(e, "pgbench: {prefix}{msg}");
    }

    /// `pgbench: error: <msg>`.
    pub fn error_line(&self, msg: &str) {
        self.line("error: ", msg);
    }
}

impl Diagnostics for StderrDiag {
    fn error(&mut self, msg: &str) {
        self.line("error: ", msg);
    }
    fn info(&mut self, msg: &str) {
        self.line("", msg);
    }
    fn debug_enabled(&self) -> bool {
        self.debug
    }
    fn debug(&mut self, msg: &str) {
        if self.debug {
            self.line("", msg);
        }
    }
    fn notice(&mut self, text: &str) {
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().write_all(text.as_bytes());
    }
}
