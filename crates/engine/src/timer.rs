//! A microsecond-precision wake-up for the driver loop. `epoll_wait` only takes
//! milliseconds (mio rounds up), which would add up to 1 ms of schedule lag under `-R`;
//! pgbench waits with `ppoll` in microseconds. A `timerfd` registered in the same epoll
//! set gives the driver that precision.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// A monotonic one-shot timer file descriptor.
pub struct WakeTimer {
    fd: OwnedFd,
}

impl WakeTimer {
    /// Creates a non-blocking, close-on-exec timerfd on CLOCK_MONOTONIC.
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain syscall; the returned descriptor is checked and then owned.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor we own exclusively.
        Ok(WakeTimer {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Fires once after `us` microseconds (at least 1 µs).
    pub fn arm_in(&self, us: i64) -> io::Result<()> {
        self.set(0, us.max(1).saturating_mul(1000))
    }

    /// Fires once when `CLOCK_MONOTONIC` reaches `ns` (at once if it has already).
    pub fn arm_at_monotonic(&self, ns: i64) -> io::Result<()> {
        self.set(libc::TFD_TIMER_ABSTIME, ns.max(1))
    }

    /// One-shot expiry at `ns` nanoseconds: relative, or absolute with `TFD_TIMER_ABSTIME`.
    fn set(&self, flags: libc::c_int, ns: i64) -> io::Result<()> {
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (ns % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: valid fd and a fully initialised itimerspec; old value not requested.
        let rc = unsafe {
            libc::timerfd_settime(self.fd.as_raw_fd(), flags, &spec, std::ptr::null_mut())
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Consumes an expiration (after the fd became readable).
    pub fn drain(&self) {
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a local buffer; errors (EAGAIN) are ignored.
        let _ = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    }
}

impl AsRawFd for WakeTimer {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fires_after_the_requested_delay() {
        let t = WakeTimer::new().expect("timerfd");
        t.arm_in(2_000).expect("arm");
        let mut pfd = libc::pollfd {
            fd: t.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let start = std::time::Instant::now();
        // SAFETY: one valid pollfd.
        let rc = unsafe { libc::poll(&mut pfd, 1, 1000) };
        assert_eq!(rc, 1);
        assert!(start.elapsed() >= std::time::Duration::from_micros(1_900));
        t.drain();
    }

    /// An absolute time fires when the clock reaches it, a past one at once.
    #[test]
    fn fires_at_an_absolute_monotonic_time() {
        let now_ns = || {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: valid, writable timespec.
            unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
            ts.tv_sec * 1_000_000_000 + ts.tv_nsec
        };
        let wait = |t: &WakeTimer, ms: i32| {
            let mut pfd = libc::pollfd {
                fd: t.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut pfd, 1, ms) }
        };
        let t = WakeTimer::new().expect("timerfd");
        let start = now_ns();
        t.arm_at_monotonic(start + 30_000_000).expect("arm");
        // Not before its time (a thread that waited for a core past it finds it fired).
        if wait(&t, 10) == 1 {
            assert!(now_ns() - start >= 29_000_000, "fired before its time");
        }
        assert_eq!(wait(&t, 1000), 1);
        assert!(now_ns() - start >= 29_000_000);
        t.drain();
        t.arm_at_monotonic(start).expect("arm in the past");
        assert_eq!(wait(&t, 0), 1, "a past time fires at once");
    }
}
