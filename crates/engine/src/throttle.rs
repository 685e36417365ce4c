//! The `-R` schedule (pgbench §3.4): one Poisson process per thread, advanced from the
//! thread's benchmark start with the thread's `throttle` random stream, and the `-L`
//! rule that skips slots which are already too late. Pure arithmetic over µs timestamps.

/// A source of uniform doubles in `[0, 1)` (the thread's throttle PRNG).
pub trait UniformSource {
    /// The next uniform double in `[0, 1)`.
    fn next_double(&mut self) -> f64;
}

/// pgbench's `getPoissonRand`: `(int64)(-ln(1 - u) * center + 0.5)` µs.
pub fn poisson_delay(u: f64, center: f64) -> i64 {
    (-(1.0 - u).ln() * center + 0.5) as i64
}

/// Per-thread Poisson schedule of transaction start times.
#[derive(Debug, Clone)]
pub struct ThrottleSchedule {
    /// Mean delay between two scheduled starts of this thread, µs
    /// (`1e6 / rate * nthreads`).
    pub delay_us: f64,
    /// The last scheduled start (µs on the run clock); starts at the thread's bench start.
    pub trigger: i64,
}

/// What `next_slot` decided for a client asking for its next transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// Start a transaction scheduled at this time (it may be in the past: that is lag).
    Run(i64),
    /// This slot (scheduled at the given time) is already later than the latency limit:
    /// count it as skipped and ask again.
    Skip(i64),
    /// The schedule passed the end of a `-T` run: the client is finished.
    PastEnd,
}

impl ThrottleSchedule {
    /// A schedule for a thread running `nthreads` threads at `rate` tps in total,
    /// starting at `start_us`.
    pub fn new(rate: f64, nthreads: usize, start_us: i64) -> Self {
        ThrottleSchedule {
            delay_us: 1e6 / rate * nthreads as f64,
            trigger: start_us,
        }
    }

    /// Draws the next slot from the uniform draw `u` (one per slot, from the thread's
    /// throttle stream). `latency_limit_us` is `-L` (0 = none); `end_us` the `-T` end
    /// (0 = none). Mirrors CSTATE_PREPARE_THROTTLE: the trigger always advances, a skipped
    /// slot is reported so the caller counts it (and checks `-t`/timer) before asking again.
    pub fn next_slot(&mut self, u: f64, now: i64, latency_limit_us: i64, end_us: i64) -> Slot {
        self.trigger += poisson_delay(u, self.delay_us);
        let scheduled = self.trigger;
        if latency_limit_us > 0 && scheduled < now - latency_limit_us {
            return Slot::Skip(scheduled);
        }
        if end_us > 0 && scheduled > end_us {
            return Slot::PastEnd;
        }
        Slot::Run(scheduled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(Vec<f64>, usize);
    impl UniformSource for Fixed {
        fn next_double(&mut self) -> f64 {
            let v = self.0[self.1 % self.0.len()];
            self.1 += 1;
            v
        }
    }

    #[test]
    fn poisson_rounds_like_pgbench() {
        assert_eq!(poisson_delay(0.0, 1000.0), 0);
        // -ln(0.5) * 1000 = 693.147 -> 693
        assert_eq!(poisson_delay(0.5, 1000.0), 693);
        // -ln(1-0.9) * 200 = 460.517 -> 461
        assert_eq!(poisson_delay(0.9, 200.0), 461);
    }

    #[test]
    fn delay_scales_with_threads() {
        let s = ThrottleSchedule::new(5000.0, 2, 0);
        assert_eq!(s.delay_us, 400.0);
    }

    #[test]
    fn slots_accumulate_from_start() {
        let mut s = ThrottleSchedule::new(1000.0, 1, 10_000);
        let mut r = Fixed(vec![0.5], 0);
        assert_eq!(
            s.next_slot(r.next_double(), 10_000, 0, 0),
            Slot::Run(10_693)
        );
        assert_eq!(
            s.next_slot(r.next_double(), 10_000, 0, 0),
            Slot::Run(11_386)
        );
    }

    #[test]
    fn late_slots_skipped_under_latency_limit() {
        let mut s = ThrottleSchedule::new(1000.0, 1, 0);
        let mut r = Fixed(vec![0.5], 0);
        // now = 5 ms, limit 1 ms: slots before 4 ms are skipped.
        let mut skipped = 0;
        loop {
            match s.next_slot(r.next_double(), 5_000, 1_000, 0) {
                Slot::Skip(_) => skipped += 1,
                Slot::Run(t) => {
                    assert!(t >= 4_000);
                    break;
                }
                Slot::PastEnd => unreachable!(),
            }
        }
        // 693, 1386, 2079, 2772, 3465 are < 4000
        assert_eq!(skipped, 5);
    }

    #[test]
    fn schedule_past_end_finishes() {
        let mut s = ThrottleSchedule::new(1000.0, 1, 0);
        let mut r = Fixed(vec![0.5], 0);
        assert_eq!(s.next_slot(r.next_double(), 0, 0, 1_000), Slot::Run(693));
        assert_eq!(s.next_slot(r.next_double(), 0, 0, 1_000), Slot::PastEnd);
    }
}
