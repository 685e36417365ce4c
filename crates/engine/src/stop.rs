//! Stopping a run early: the shared stop flag the drivers watch (raised by a library
//! caller, or by SIGINT/SIGTERM), and the signal watcher that turns the first
//! SIGINT/SIGTERM into a prompt stop and the second into an immediate exit. pgbench itself
//! has no handler (Ctrl-C loses the report); pgsurge stops its clients where they are,
//! cancels the statements they have running on the server, and still reports the
//! transactions completed before the stop.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Why a run stopped before its natural end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopCause {
    /// A signal (SIGINT/SIGTERM) asked for it.
    Signal(i32),
    /// The library caller's stop flag was raised.
    Requested,
}

/// A cloneable handle that asks a running benchmark to stop.
#[derive(Debug, Clone)]
pub struct StopFlag {
    inner: Arc<StopInner>,
}

#[derive(Debug)]
struct StopInner {
    stop: AtomicBool,
    signal: AtomicI32,
    /// An eventfd that becomes readable when the flag is raised, so a driver waiting in
    /// its poll wakes at once. `None` if the system refused one: drivers then notice
    /// the flag at their next wake-up, which their longest poll bounds.
    wake: Option<OwnedFd>,
}

impl Default for StopFlag {
    fn default() -> Self {
        Self::new()
    }
}

/// A non-blocking, close-on-exec eventfd, if the system gives one.
fn new_eventfd() -> Option<OwnedFd> {
    // SAFETY: plain syscall; the result is checked before it is owned.
    let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
    // SAFETY: a fresh descriptor nothing else owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

impl StopFlag {
    /// A flag that is not raised.
    pub fn new() -> Self {
        StopFlag {
            inner: Arc::new(StopInner {
                stop: AtomicBool::new(false),
                signal: AtomicI32::new(0),
                wake: new_eventfd(),
            }),
        }
    }
    /// A flag with no wake descriptor, for a stop the drivers notice at their next
    /// wake-up (the engine's own halt after `--exit-on-abort`): it costs no file
    /// descriptor.
    pub fn polled() -> Self {
        StopFlag {
            inner: Arc::new(StopInner {
                stop: AtomicBool::new(false),
                signal: AtomicI32::new(0),
                wake: None,
            }),
        }
    }
    /// Asks the run to stop: clients end where they are (a sleep or a `-R` wait ends at
    /// once, a statement running on the server is cancelled), and the run reports the
    /// transactions completed before.
    pub fn raise(&self) {
        self.inner.stop.store(true, Ordering::SeqCst);
        if let Some(fd) = &self.inner.wake {
            let one = 1u64.to_ne_bytes();
            // SAFETY: writes 8 bytes from a local buffer to an eventfd we own; a full
            // counter (EAGAIN) still leaves it readable, which is all that matters.
            let _ = unsafe { libc::write(fd.as_raw_fd(), one.as_ptr().cast(), one.len()) };
        }
    }
    /// A descriptor that becomes readable once the flag is raised (and stays so), for a
    /// poll set; `None` when the system gave none.
    pub fn wake_fd(&self) -> Option<RawFd> {
        self.inner.wake.as_ref().map(AsRawFd::as_raw_fd)
    }
    /// Blocks until the flag is raised or `timeout` has passed; whether it is raised.
    pub fn wait(&self, timeout: Duration) -> bool {
        let Some(fd) = self.wake_fd() else {
            // No descriptor to wait on: look at the flag often enough to stop promptly.
            let end = std::time::Instant::now() + timeout;
            while !self.is_raised() {
                let left = end.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    break;
                }
                std::thread::sleep(left.min(Duration::from_millis(50)));
            }
            return self.is_raised();
        };
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // Rounded up to whole milliseconds, so a short wait does not turn into a spin.
        let ms = timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd; an interrupted or failed poll just returns early.
        let _ = unsafe { libc::poll(&mut pfd, 1, ms) };
        self.is_raised()
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

/// Watches SIGINT and SIGTERM while it lives: the first raises `flag`, a second one ends
/// the process at once with the default action of that signal.
///
/// The handlers act in the signal's own context (an atomic store and a write to the
/// flag's eventfd, both async-signal-safe), so watching costs no thread and no file
/// descriptor: a run at the open-files limit pgbench fits in has none to spare.
pub struct SignalWatcher {
    ids: Vec<signal_hook::SigId>,
}

impl SignalWatcher {
    /// Installs the handlers. Fails only if the OS refuses to install them.
    pub fn install(flag: StopFlag) -> std::io::Result<Self> {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let mut ids = Vec::with_capacity(2);
        for sig in [SIGINT, SIGTERM] {
            let flag = flag.clone();
            let action = move || {
                if flag.is_raised() {
                    // Second signal: end the process now, killed by that signal as if no
                    // handler were installed (the parent sees the signal, not an exit
                    // status). signal-hook restores the default disposition and
                    // re-raises it (async-signal-safe); a library must not end the
                    // process by exiting, and does not need to. Should the re-raise
                    // fail, the stop flag is already raised, so the run still ends.
                    let _ = signal_hook::low_level::emulate_default_handler(sig);
                    return;
                }
                flag.raise_for_signal(sig);
            };
            // SAFETY: the action only does async-signal-safe work: atomic loads and
            // stores, a write(2) to an eventfd, and signal-hook's default emulation. It
            // allocates nothing and takes no lock.
            match unsafe { signal_hook::low_level::register(sig, action) } {
                Ok(id) => ids.push(id),
                Err(e) => {
                    for id in ids {
                        signal_hook::low_level::unregister(id);
                    }
                    return Err(e);
                }
            }
        }
        Ok(SignalWatcher { ids })
    }
}

impl Drop for SignalWatcher {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
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

    /// The wake descriptor is quiet until the flag is raised, then readable, in every
    /// clone.
    #[test]
    fn raising_makes_the_wake_fd_readable() {
        let f = StopFlag::new();
        let g = f.clone();
        let fd = g.wake_fd().expect("eventfd");
        let readable = |ms: i32| {
            let mut pfd = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut pfd, 1, ms) == 1 }
        };
        assert!(!readable(0), "readable before the flag was raised");
        let raiser = std::thread::spawn(move || f.raise());
        assert!(readable(5_000), "not readable after the flag was raised");
        raiser.join().expect("raiser");
        assert!(g.is_raised());
        assert!(readable(0), "no longer readable");
    }

    /// `wait` returns when its time is over, or as soon as the flag is raised.
    #[test]
    fn wait_ends_at_its_timeout_or_when_raised() {
        let f = StopFlag::new();
        let start = std::time::Instant::now();
        assert!(!f.wait(Duration::from_millis(30)));
        assert!(start.elapsed() >= Duration::from_millis(29));
        let g = f.clone();
        let raiser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            g.raise();
        });
        let start = std::time::Instant::now();
        assert!(f.wait(Duration::from_secs(30)));
        assert!(start.elapsed() < Duration::from_secs(10));
        raiser.join().expect("raiser");
    }
}
