//! `--start-at`: one wall-clock instant at which every client of every generator of
//! a distributed run starts, and the [`GeneratorInfo`] the result
//! records. Owns the wait only; connecting happens before it and the client loop
//! after it, both elsewhere. Without `--start-at` the gate is open and the run is
//! pgbench's.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::spec::GeneratorOptions;
use pgsurge_results::generator::{host_name, GeneratorInfo};

use crate::clock::RunClock;
use crate::stop::StopFlag;

/// Holds driver threads (after they connected) and the progress sampler until the
/// start instant.
#[derive(Debug)]
pub struct StartGate {
    /// The start instant on the run clock (µs since its origin); `None`: open.
    at: Option<i64>,
    missed_reported: AtomicBool,
}

impl StartGate {
    /// A gate for `--start-at` (epoch µs) read against `clock`.
    pub fn new(opts: &GeneratorOptions, clock: &RunClock) -> Self {
        StartGate {
            at: opts.start_at_unix_us.map(|t| t - clock.to_epoch_us(0)),
            missed_reported: AtomicBool::new(false),
        }
    }

    /// The start instant on the run clock, if any.
    pub fn at(&self) -> Option<i64> {
        self.at
    }

    /// True once the start instant has come (always, without `--start-at`).
    pub fn is_open(&self, now: i64) -> bool {
        self.at.is_none_or(|at| now >= at)
    }

    /// Blocks until the start instant: sleeps to ~2 ms before it, then yields, so
    /// all threads leave within scheduler jitter of each other. When connecting took
    /// past the instant, says so once on stderr and returns at once (the result
    /// records the actual start; `pgsurge merge` reports the skew). Returns at once,
    /// too, when `stop` is raised.
    pub fn wait(&self, clock: &RunClock, stop: &StopFlag) {
        let Some(at) = self.at else { return };
        let now = clock.now();
        if now > at + 1_000 {
            if !self.missed_reported.swap(true, Ordering::SeqCst) {
                eprintln!(
                    "pgbench: warning: connecting ended {:.3} s after --start-at; starting now",
                    (now - at) as f64 / 1e6
                );
            }
            return;
        }
        loop {
            let left = at - clock.now();
            if left <= 0 || stop.is_raised() {
                return;
            }
            if left > 2_000 {
                stop.wait(Duration::from_micros((left - 2_000) as u64));
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// The end of a `-T` run on the run clock: `T` after the start instant, or after
    /// `fallback` (pgbench's start) without one.
    pub fn end_of_duration(&self, fallback: i64, duration_s: u32) -> i64 {
        self.at.unwrap_or(fallback) + i64::from(duration_s) * 1_000_000
    }
}

/// The `generator` section of a result, when any generator option was given.
/// `first_start` and `end` are run-clock µs.
pub fn generator_info(
    opts: &GeneratorOptions,
    clock: &RunClock,
    first_start: i64,
    end: i64,
) -> Option<GeneratorInfo> {
    if !opts.is_set() {
        return None;
    }
    let host = host_name();
    Some(GeneratorInfo {
        name: opts.name.clone().unwrap_or_else(|| host.clone()),
        host,
        index: opts.index,
        count: opts.count,
        intended_start_unix_us: opts.start_at_unix_us,
        actual_start_unix_us: clock.to_epoch_us(first_start),
        end_unix_us: clock.to_epoch_us(end),
        clock_origin_unix_us: clock.to_epoch_us(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gate_waits_for_the_instant_and_sets_the_end() {
        let clock = RunClock::new();
        let opts = GeneratorOptions {
            start_at_unix_us: Some(clock.to_epoch_us(clock.now()) + 150_000),
            ..Default::default()
        };
        let gate = StartGate::new(&opts, &clock);
        let at = gate.at().expect("set");
        assert!(!gate.is_open(clock.now()));
        gate.wait(&clock, &StopFlag::new());
        let left = clock.now();
        // At the instant, not before; a thread of a busy machine may wait for a core a
        // while after it, but not a second (a unit or an instant read wrongly).
        assert!(left >= at && left < at + 1_000_000, "left {left}, at {at}");
        assert!(gate.is_open(clock.now()));
        assert_eq!(gate.end_of_duration(0, 5), at + 5_000_000);

        let open = StartGate::new(&GeneratorOptions::default(), &clock);
        assert!(open.is_open(0));
        assert_eq!(open.end_of_duration(7, 1), 1_000_007);
        assert!(generator_info(&GeneratorOptions::default(), &clock, 0, 1).is_none());
        let g = generator_info(&opts, &clock, at, at + 10).expect("set");
        assert_eq!(g.actual_start_unix_us, opts.start_at_unix_us.unwrap());
        assert_eq!(g.name, g.host);
    }

    /// A stop raised while the gate waits ends the wait at once.
    #[test]
    fn a_stop_ends_the_wait_for_the_instant() {
        let clock = RunClock::new();
        let opts = GeneratorOptions {
            start_at_unix_us: Some(clock.to_epoch_us(clock.now()) + 600_000_000),
            ..Default::default()
        };
        let gate = StartGate::new(&opts, &clock);
        let stop = StopFlag::new();
        let raiser = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                stop.raise();
            })
        };
        let start = std::time::Instant::now();
        gate.wait(&clock, &stop);
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{:?}",
            start.elapsed()
        );
        assert!(!gate.is_open(clock.now()));
        raiser.join().expect("raiser");
    }
}
