//! Progress lines of client-side generation and the clock they are timed with.
//!
//! pgbench prints, per table, `J of TOTAL tuples (P%) of TABLE done (elapsed
//! E s, remaining R s)`: every 100000 rows normally; with `-q` it looks at the
//! clock every 100 rows and prints at the end or once 5 s more have passed. On
//! a terminal the line ends in `\r` and is overwritten (padded to the previous
//! length, blanked at the end); otherwise in `\n`. Time comes from a [`Clock`]
//! so the logic is testable without waiting.

use std::io::Write;
use std::time::Instant;

/// A monotonic microsecond clock.
pub trait Clock {
    /// Microseconds since an arbitrary fixed origin.
    fn now_micros(&self) -> i64;
}

/// The real monotonic clock.
#[derive(Debug, Clone, Copy)]
pub struct MonotonicClock {
    origin: Instant,
}

impl MonotonicClock {
    /// A clock whose origin is now.
    pub fn new() -> Self {
        MonotonicClock {
            origin: Instant::now(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    fn now_micros(&self) -> i64 {
        i64::try_from(self.origin.elapsed().as_micros()).unwrap_or(i64::MAX)
    }
}

/// pgbench's `PG_TIME_GET_DOUBLE`: microseconds to seconds, computed the same
/// way so `%.2f` rounds identically.
pub fn micros_to_secs(us: i64) -> f64 {
    0.000001 * us as f64
}

/// pgbench's `LOG_STEP_SECONDS` for `-q`.
const LOG_STEP_SECONDS: f64 = 5.0;

/// Progress state for one table's COPY.
#[derive(Debug)]
pub struct TableProgress {
    table: &'static str,
    total: i64,
    quiet: bool,
    eol: u8,
    start_us: i64,
    chars: usize,
    prev_chars: usize,
    log_interval: i32,
}

impl TableProgress {
    /// Starts timing `total` rows of `table` at `start_us`.
    pub fn new(table: &'static str, total: i64, quiet: bool, tty: bool, start_us: i64) -> Self {
        TableProgress {
            table,
            total,
            quiet,
            eol: if tty { b'\r' } else { b'\n' },
            start_us,
            chars: 0,
            prev_chars: 0,
            log_interval: 1,
        }
    }

    /// Rows between two looks at the clock: progress can only change at
    /// multiples of this.
    pub fn check_every(&self) -> i64 {
        if self.quiet {
            100
        } else {
            100_000
        }
    }

    /// Called after row `j` (1-based) when `j` is a multiple of
    /// [`TableProgress::check_every`]; prints a line if pgbench would.
    pub fn rows_done(&mut self, j: i64, now_us: i64, out: &mut dyn Write) {
        let elapsed = micros_to_secs(now_us - self.start_us);
        let due = if self.quiet {
            j % 100 == 0
                && (j == self.total || elapsed >= f64::from(self.log_interval) * LOG_STEP_SECONDS)
        } else {
            j % 100_000 == 0
        };
        if !due {
            return;
        }
        let remaining = (self.total as f64 - j as f64) * elapsed / j as f64;
        let line = format!(
            "{j} of {} tuples ({}%) of {} done (elapsed {elapsed:.2} s, remaining {remaining:.2} s)",
            self.total,
            j * 100 / self.total,
            self.table
        );
        self.chars = line.len();
        let mut bytes = line.into_bytes();
        // A shorter line must fully cover the previous one on a terminal.
        if self.prev_chars > self.chars {
            bytes.resize(self.prev_chars, b' ');
        }
        bytes.push(self.eol);
        let _ = out.write_all(&bytes);
        self.prev_chars = self.chars;
        if self.quiet {
            self.log_interval = (elapsed / LOG_STEP_SECONDS).ceil() as i32;
        }
    }

    /// Called once the table is done: on a terminal, blanks the last line.
    pub fn finish(&mut self, out: &mut dyn Write) {
        if self.chars != 0 && self.eol != b'\n' {
            let mut bytes = vec![b' '; self.chars];
            bytes.push(b'\r');
            let _ = out.write_all(&bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(buf: &[u8]) -> &str {
        std::str::from_utf8(buf).expect("ascii")
    }

    #[test]
    fn normal_mode_prints_every_100000_rows() {
        let mut out = Vec::new();
        let mut p = TableProgress::new("pgbench_accounts", 200_000, false, false, 1_000);
        assert_eq!(p.check_every(), 100_000);
        p.rows_done(100_000, 101_000, &mut out);
        p.rows_done(200_000, 181_000, &mut out);
        p.finish(&mut out);
        assert_eq!(
            text(&out),
            "100000 of 200000 tuples (50%) of pgbench_accounts done (elapsed 0.10 s, remaining 0.10 s)\n\
             200000 of 200000 tuples (100%) of pgbench_accounts done (elapsed 0.18 s, remaining 0.00 s)\n"
        );
    }

    #[test]
    fn normal_mode_ignores_other_rows() {
        let mut out = Vec::new();
        let mut p = TableProgress::new("pgbench_tellers", 20, false, false, 0);
        p.rows_done(20, 5, &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn quiet_mode_prints_every_5_seconds_and_at_the_end() {
        let mut out = Vec::new();
        let total = 1_000_000;
        let mut p = TableProgress::new("pgbench_accounts", total, true, false, 0);
        assert_eq!(p.check_every(), 100);
        // 1 s per 100000 rows (plus 1 µs): a line once 5 s have passed, then at the end.
        let mut j = 100;
        while j <= total {
            p.rows_done(j, j * 10 + 1, &mut out);
            j += 100;
        }
        let lines: Vec<&str> = text(&out).lines().collect();
        assert_eq!(
            lines,
            vec![
                "500000 of 1000000 tuples (50%) of pgbench_accounts done (elapsed 5.00 s, remaining 5.00 s)",
                "1000000 of 1000000 tuples (100%) of pgbench_accounts done (elapsed 10.00 s, remaining 0.00 s)",
            ]
        );
    }

    #[test]
    fn quiet_mode_repeats_a_line_landing_exactly_on_an_interval() {
        // pgbench's quirk: at exactly 5.00 s the next interval is ceil(5/5) = 1
        // again, so the following check prints too.
        let mut out = Vec::new();
        let mut p = TableProgress::new("t", 10_000, true, false, 0);
        p.rows_done(100, 5_000_000, &mut out);
        p.rows_done(200, 5_000_100, &mut out);
        p.rows_done(300, 5_000_200, &mut out);
        assert_eq!(text(&out).lines().count(), 2, "{}", text(&out));
    }

    #[test]
    fn quiet_mode_skips_to_the_next_interval_after_a_stall() {
        let mut out = Vec::new();
        let mut p = TableProgress::new("pgbench_accounts", 10_000, true, false, 0);
        p.rows_done(100, 12_300_000, &mut out); // 12.3 s: printed, next due at 15 s
        p.rows_done(200, 14_900_000, &mut out); // not yet
        p.rows_done(300, 15_000_000, &mut out); // due
        assert_eq!(text(&out).lines().count(), 2, "{}", text(&out));
    }

    #[test]
    fn terminal_lines_are_overwritten_padded_and_blanked() {
        let mut out = Vec::new();
        let mut p = TableProgress::new("pgbench_accounts", 1_000_000, false, true, 0);
        p.rows_done(100_000, 12_340_000, &mut out);
        let first_len = out.len() - 1;
        out.clear();
        p.rows_done(200_000, 12_350_000, &mut out);
        // "remaining 111.06 s" became "remaining 49.40 s": padded to the first length.
        assert_eq!(out.len() - 1, first_len);
        assert_eq!(out.last(), Some(&b'\r'));
        out.clear();
        p.finish(&mut out);
        assert!(out[..out.len() - 1].iter().all(|&b| b == b' '));
        assert_eq!(out.last(), Some(&b'\r'));
    }

    #[test]
    fn shorter_line_is_padded_to_previous_length() {
        let mut out = Vec::new();
        let mut p = TableProgress::new("t", 300_000, false, true, 0);
        p.rows_done(100_000, 100_000_000, &mut out); // elapsed 100.00, remaining 200.00
        let first = out.len();
        out.clear();
        p.rows_done(200_000, 100_000_001, &mut out); // remaining 50.00: one char shorter
        assert_eq!(out.len(), first);
        assert_eq!(&out[out.len() - 2..], b" \r");
    }

    #[test]
    fn micros_convert_like_pgbench() {
        assert_eq!(format!("{:.2}", micros_to_secs(125_000)), "0.12");
        assert_eq!(format!("{:.2}", micros_to_secs(1_005_000)), "1.00");
    }
}
