//! Stopping a run early: the shared stop flag the drivers poll (set by `-T`'s deadline in
//! each driver, by a library caller, or by SIGINT/SIGTERM), and the signal watcher that
//! turns the first SIGINT/SIGTERM into a graceful stop and the second into an immediate
//! exit. pgbench itself has no handler (Ctrl-C loses the report); pgsurge finishes the
//! transactions in flight and still reports.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;

/// Why a run stopped before its natural end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopCause {
    /// A signal (SIGINT/SIGTERM) asked for it.
    Signal(i32),
    /// The library caller's stop flag was raised.
    Requested,
}

/// A cloneable handle that asks a running benchmark to stop starting transactions.
#[derive(Debug, Clone, Default)]
pub struct StopFlag {
    inner: Arc<StopInner>,
}

#[derive(Debug, Default)]
struct StopInner {
    stop: AtomicBool,
    signal: AtomicI32,
}

impl StopFlag {
    /// A flag that is not raised.
    pub fn new() -> Self {
        Self::default()
    }
    /// Asks the run to stop: clients finish their current transaction and start no other.
    pub fn raise(&self) {
        self.inner.stop.store(true, Ordering::Release);
    }
    /// Whether the run was asked to stop.
    #[inline]
    pub fn is_raised(&self) -> bool {
        self.inner.stop.load(Ordering::Relaxed)
    }
    /// The flag itself, for code that polls an `AtomicBool` (e.g. `-i`'s cancel
    /// watcher, which sends the server a cancel request once it is raised).
    pub fn as_atomic(&self) -> &AtomicBool {
        &self.inner.stop
    }
    /// Records the signal that raised the flag and raises it.
    fn raise_for_signal(&self, sig: i32) {
        self.inner.signal.store(sig, Ordering::Release);
        self.raise();
    }
    /// Why the run stopped, if it was asked to.
    pub fn cause(&self) -> Option<StopCause> {
        if !self.is_raised() {
            return None;
        }
        match self.inner.signal.load(Ordering::Acquire) {
            0 => Some(StopCause::Requested),
            s => Some(StopCause::Signal(s)),
        }
    }
}

/// Watches SIGINT and SIGTERM while it lives: the first raises `flag`, a second one exits
/// the process at once with the default action of that signal.
pub struct SignalWatcher {
    handle: signal_hook::iterator::Handle,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SignalWatcher {
    /// Installs the handlers. Fails only if the OS refuses to install them.
    pub fn install(flag: StopFlag) -> std::io::Result<Self> {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
        let handle = signals.handle();
        let thread = std::thread::Builder::new()
            .name("pgsurge-signals".into())
            .spawn(move || {
                for sig in signals.forever() {
                    if flag.is_raised() {
                        // Second signal: end the process now, killed by that signal as
                        // if no handler were installed (the parent sees the signal, not an
                        // exit status). signal-hook restores the default disposition and
                        // re-raises it; a library must not end the process by exiting, and does
                        // not need to: the default action of SIGINT/SIGTERM terminates.
                        // Should the re-raise fail, the stop flag is already raised, so
                        // the run still ends gracefully.
                        let _ = signal_hook::low_level::emulate_default_handler(sig);
                        continue;
                    }
                    flag.raise_for_signal(sig);
                }
            })?;
        Ok(SignalWatcher {
            handle,
            thread: Some(thread),
        })
    }
}

impl Drop for SignalWatcher {
    fn drop(&mut self) {
        self.handle.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The name pgbench users know a signal by (`SIGINT`, `SIGTERM`).
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_reports_cause() {
        let f = StopFlag::new();
        assert_eq!(f.cause(), None);
        let g = f.clone();
        g.raise();
        assert!(f.is_raised());
        assert_eq!(f.cause(), Some(StopCause::Requested));
        let h = StopFlag::new();
        h.raise_for_signal(libc::SIGTERM);
        assert_eq!(h.cause(), Some(StopCause::Signal(libc::SIGTERM)));
        assert_eq!(signal_name(libc::SIGTERM), "SIGTERM");
    }
}
