//! The run clock: monotonic microseconds since a fixed origin, plus the shift to Unix
//! epoch time that pgbench applies to log timestamps (`epoch_shift`). Drivers read it;
//! the client state machine gets a [`Now`], which reads it only when the machine first
//! needs the time (a fixed time in tests).

use std::time::{SystemTime, UNIX_EPOCH};

/// Monotonic µs clock shared by all threads of a run.
#[derive(Debug, Clone, Copy)]
pub struct RunClock {
    /// `CLOCK_MONOTONIC` at the origin, in ns.
    origin_ns: i64,
    epoch_shift_us: i64,
}

/// `CLOCK_MONOTONIC` in ns (what `Instant` reads on Linux), read directly: it is read
/// several times per transaction, and `Instant` arithmetic (normalised differences,
/// 128-bit µs) costs more than the read itself. Through libc's vDSO call rather than
/// rustix's: rustix's own vDSO lookup crashes under valgrind, which would make the
/// client impossible to profile.
#[inline]
pub fn monotonic_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux
    // (the call cannot fail with these arguments).
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

impl RunClock {
    /// A clock starting now.
    pub fn new() -> Self {
        let origin_ns = monotonic_ns();
        let epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as i64)
            .unwrap_or(0);
        RunClock {
            origin_ns,
            epoch_shift_us: epoch,
        }
    }

    /// µs since the origin.
    #[inline]
    pub fn now(&self) -> i64 {
        self.at_monotonic_ns(monotonic_ns())
    }

    /// The run-clock time (µs) of a `CLOCK_MONOTONIC` reading in ns.
    #[inline]
    pub(crate) fn at_monotonic_ns(&self, ns: i64) -> i64 {
        (ns - self.origin_ns) / 1000
    }

    /// `CLOCK_MONOTONIC` (ns) at run-clock time `t` (µs): what an absolute timer is set
    /// to so that it fires when [`RunClock::now`] reaches `t`.
    pub fn monotonic_ns_at(&self, t: i64) -> i64 {
        self.origin_ns.saturating_add(t.saturating_mul(1000))
    }

    /// Converts a run-clock time to Unix epoch µs.
    #[inline]
    pub fn to_epoch_us(&self, t: i64) -> i64 {
        t + self.epoch_shift_us
    }
}

impl Default for RunClock {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// A lazy time is read at the first `get` and kept, read again after `reset`; a time
    /// read already is kept until `reset`; a fixed time never changes.
    #[test]
    fn now_is_read_once_until_reset() {
        let clock = RunClock::new();
        let mut lazy = Now::lazy(&clock);
        let first = lazy.get();
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(lazy.get(), first, "kept, not read again");
        lazy.reset();
        assert!(lazy.get() >= first + 2000, "read again after reset");

        let mut read = Now::read_at(&clock, 7);
        assert_eq!(read.get(), 7);
        read.reset();
        assert!(read.get() >= first + 2000);

        let mut fixed = Now::fixed(42);
        fixed.reset();
        assert_eq!(fixed.get(), 42);
    }

    #[test]
    fn counts_microseconds_from_its_origin() {
        let before = Instant::now();
        let clock = RunClock::new();
        let start = Instant::now();
        let t0 = clock.now();
        // No more than the time since just before the clock was made (however long
        // this thread waited for a core in between).
        let since_before = before.elapsed().as_micros() as i64;
        std::thread::sleep(Duration::from_millis(20));
        let t1 = clock.now();
        let elapsed = start.elapsed().as_micros() as i64;
        assert!((0..=since_before).contains(&t0), "{t0} > {since_before}");
        assert!(t1 - t0 >= 20_000, "{t0} {t1}");
        // the same clock as Instant: it cannot run ahead of an Instant started later
        assert!(t1 <= elapsed + t0 + 1, "{t1} vs {elapsed}");
    }
}

/// Not read yet.
const UNREAD: i64 = i64::MIN;

/// The time for one call of a client's machine, read from the run clock only when the
/// machine first needs it, then kept (pgbench's `pg_time_now_lazy`): a statement in the
/// middle of a transaction, without `-r`, costs no clock read.
#[derive(Debug)]
pub struct Now<'c> {
    /// `None`: a fixed time.
    clock: Option<&'c RunClock>,
    t: i64,
}

impl<'c> Now<'c> {
    /// Read from `clock` at the first [`Now::get`].
    pub fn lazy(clock: &'c RunClock) -> Self {
        Now {
            clock: Some(clock),
            t: UNREAD,
        }
    }

    /// Already read from `clock`: `t`.
    pub fn read_at(clock: &'c RunClock, t: i64) -> Self {
        Now {
            clock: Some(clock),
            t,
        }
    }

    /// Always `t`, whatever [`Now::reset`] says.
    pub fn fixed(t: i64) -> Now<'static> {
        Now { clock: None, t }
    }

    /// The time (µs on the run clock).
    #[inline]
    pub fn get(&mut self) -> i64 {
        if self.t == UNREAD {
            self.read();
        }
        self.t
    }

    /// Reads the clock, out of line: [`Now::get`] is inlined at every place the machine
    /// asks for the time, and the read would otherwise be copied into each of them.
    #[inline(never)]
    fn read(&mut self) {
        if let Some(c) = self.clock {
            self.t = c.now();
        }
    }

    /// Takes `t`, just read from the clock, as the time (a fixed time stays).
    #[inline]
    pub fn set_read(&mut self, t: i64) {
        if self.clock.is_some() {
            self.t = t;
        }
    }

    /// Forgets the time read: work that may have taken a while (an expression, a shell
    /// command) was done since, as pgbench resets its time after a meta command.
    #[inline]
    pub fn reset(&mut self) {
        if self.clock.is_some() {
            self.t = UNREAD;
        }
    }
}
