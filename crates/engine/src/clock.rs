//! The run clock: monotonic microseconds since a fixed origin, plus the shift to Unix
//! epoch time that pgbench applies to log timestamps (`epoch_shift`). Drivers read it;
//! the client state machine never does.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Monotonic µs clock shared by all threads of a run.
#[derive(Debug, Clone, Copy)]
pub struct RunClock {
    origin: Instant,
    epoch_shift_us: i64,
}

impl RunClock {
    /// A clock starting now.
    pub fn new() -> Self {
        let origin = Instant::now();
        let epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as i64)
            .unwrap_or(0);
        RunClock {
            origin,
            epoch_shift_us: epoch,
        }
    }

    /// µs since the origin.
    #[inline]
    pub fn now(&self) -> i64 {
        self.origin.elapsed().as_micros() as i64
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
