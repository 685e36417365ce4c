//! pgbench's diagnostics on stderr: `pgbench: error: …`, info and debug lines, raw server
//! notices. Flushes stdout first (pgbench's logging does) and strips one trailing newline.
//!
//! An in-process caller can take the error, info and notice lines instead (see
//! [`RunHooks::on_diagnostic`](crate::RunHooks)): the run installs the caller's
//! [`DiagnosticSink`] on each of its threads, and [`StderrDiag`] hands a line to the
//! sink of its thread instead of printing it. Only the diagnostic path looks the sink up,
//! so a run without errors pays nothing for it. Debug lines (`--debug`) stay on stderr.

use std::cell::RefCell;
use std::io::Write;
use std::sync::Arc;

use crate::client::Diagnostics;

/// Kind of a diagnostic line handed to a [`DiagnosticSink`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiagnosticLevel {
    /// pgbench prints it as `pgbench: error: …` (a client aborted, a query failed, …).
    Error,
    /// pgbench prints it as `pgbench: …` (e.g. a failed transaction with
    /// `--verbose-errors`).
    Info,
    /// A server notice (`NOTICE:  …`), as libpq's notice processor prints it.
    Notice,
}

/// One diagnostic line: what pgbench would print, without the `pgbench: error: ` prefix
/// and without the trailing newline (it may span several lines, e.g. a server error with
/// its `LINE 1:` context).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Diagnostic<'a> {
    /// Its kind.
    pub level: DiagnosticLevel,
    /// Its text.
    pub message: &'a str,
}

/// Receives the diagnostics of a run from every thread of the run (clients' threads and
/// the main thread). It must be cheap or at least not block for long: a client thread
/// waits for it.
pub type DiagnosticSink = Arc<dyn Fn(&Diagnostic<'_>) + Send + Sync>;

thread_local! {
    static SINK: RefCell<Option<DiagnosticSink>> = const { RefCell::new(None) };
}

/// Installs a sink on the current thread until dropped (then the previous one is back).
pub(crate) struct SinkGuard {
    previous: Option<DiagnosticSink>,
    installed: bool,
}

impl SinkGuard {
    /// Installs `sink` (nothing happens for None).
    pub(crate) fn install(sink: Option<&DiagnosticSink>) -> SinkGuard {
        match sink {
            Some(s) => SinkGuard {
                previous: SINK.with(|c| c.replace(Some(Arc::clone(s)))),
                installed: true,
            },
            None => SinkGuard {
                previous: None,
                installed: false,
            },
        }
    }
}

impl Drop for SinkGuard {
    fn drop(&mut self) {
        if self.installed {
            let previous = self.previous.take();
            SINK.with(|c| *c.borrow_mut() = previous);
        }
    }
}

/// Hands `message` to the current thread's sink; false if there is none.
fn deliver(level: DiagnosticLevel, message: &str) -> bool {
    // Clone the Arc out so a sink that itself prints through StderrDiag cannot
    // re-borrow the cell.
    let Some(sink) = SINK.with(|c| c.borrow().clone()) else {
        return false;
    };
    sink(&Diagnostic { level, message });
    true
}

/// Writes pgbench-style messages to stderr (or to the thread's [`DiagnosticSink`]).
#[derive(Debug, Clone, Copy)]
pub struct StderrDiag {
    debug: bool,
}

impl StderrDiag {
    /// `debug`: whether `--debug` lines are printed.
    pub fn new(debug: bool) -> Self {
        StderrDiag { debug }
    }

    fn print(prefix: &str, msg: &str) {
        let _ = std::io::stdout().flush();
        let mut e = std::io::stderr().lock();
        let _ = writeln!(e, "pgbench: {prefix}{msg}");
    }

    fn line(&self, level: DiagnosticLevel, prefix: &str, msg: &str) {
        let msg = msg.strip_suffix('\n').unwrap_or(msg);
        if !deliver(level, msg) {
            Self::print(prefix, msg);
        }
    }

    /// `pgbench: error: <msg>`.
    pub fn error_line(&self, msg: &str) {
        self.line(DiagnosticLevel::Error, "error: ", msg);
    }
}

impl Diagnostics for StderrDiag {
    fn error(&mut self, msg: &str) {
        self.line(DiagnosticLevel::Error, "error: ", msg);
    }
    fn info(&mut self, msg: &str) {
        self.line(DiagnosticLevel::Info, "", msg);
    }
    fn debug_enabled(&self) -> bool {
        self.debug
    }
    fn debug(&mut self, msg: &str) {
        if self.debug {
            Self::print("", msg.strip_suffix('\n').unwrap_or(msg));
        }
    }
    fn notice(&mut self, text: &str) {
        if deliver(
            DiagnosticLevel::Notice,
            text.strip_suffix('\n').unwrap_or(text),
        ) {
            return;
        }
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().write_all(text.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn sink_takes_the_lines_of_its_thread_only_while_installed() {
        let got = Arc::new(Mutex::new(Vec::<(DiagnosticLevel, String)>::new()));
        let g = Arc::clone(&got);
        let sink: DiagnosticSink = Arc::new(move |d: &Diagnostic<'_>| {
            g.lock().unwrap().push((d.level, d.message.to_string()));
        });
        let mut diag = StderrDiag::new(false);
        {
            let _guard = SinkGuard::install(Some(&sink));
            diag.error("client 0 script 0 aborted in command 0 query 0: ERROR:  boom\n");
            diag.info("client 1 got an error");
            diag.notice("NOTICE:  hello\n");
            // Another thread has no sink: its line goes to stderr, not to ours.
            std::thread::spawn(|| StderrDiag::new(false).error_line("elsewhere"))
                .join()
                .unwrap();
        }
        diag.error_line("after the guard: printed, not delivered");
        let got = got.lock().unwrap();
        assert_eq!(
            *got,
            vec![
                (
                    DiagnosticLevel::Error,
                    "client 0 script 0 aborted in command 0 query 0: ERROR:  boom".to_string()
                ),
                (DiagnosticLevel::Info, "client 1 got an error".to_string()),
                (DiagnosticLevel::Notice, "NOTICE:  hello".to_string()),
            ]
        );
    }
}
