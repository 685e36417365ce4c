//! `-P` progress lines (stderr), formatted exactly as pgbench 18 prints them
//! (spec §7.3), from an [`IntervalSample`]; optional pgsurge percentiles are
//! appended only when asked for.

use std::io::{self, Write};

use crate::pgfmt::{f1, f3, PercentileLabel};
use crate::progress_counters::IntervalSample;

/// What a progress line shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProgressOptions {
    /// `--progress-timestamp`: Unix time with ms instead of elapsed seconds.
    pub timestamp: bool,
    /// `-R` given: `, lag … ms`.
    pub throttled: bool,
    /// `-L` given (with `-R`): `, … skipped`.
    pub latency_limit: bool,
    /// `--max-tries` value: when not 1, `, … retried, … retries`.
    pub max_tries: u32,
    /// Append the interval's percentiles (`--percentiles`).
    pub percentiles: bool,
}

impl ProgressOptions {
    /// The progress-line flags of a run with `options`.
    pub fn for_run(options: &crate::result::RunOptions) -> Self {
        ProgressOptions {
            timestamp: options.progress_timestamp,
            throttled: options.rate_tps.is_some(),
            latency_limit: options.latency_limit_us.is_some(),
            max_tries: options.max_tries,
            percentiles: !options.percentiles.is_empty(),
        }
    }
}

/// Write one progress line, newline included.
pub fn format_progress_line(
    s: &IntervalSample,
    opts: &ProgressOptions,
    out: &mut dyn Write,
) -> io::Result<()> {
    if opts.timestamp {
        write!(out, "progress: {} s", f3(s.epoch_s))?;
    } else {
        write!(out, "progress: {} s", f1(s.elapsed_s))?;
    }
    write!(
        out,
        ", {} tps, lat {} ms stddev {}, {} failed",
        f1(s.tps),
        f3(s.latency_ms),
        f3(s.stddev_ms),
        s.failures
    )?;
    if opts.throttled {
        write!(out, ", lag {} ms", f3(s.lag_ms))?;
        if opts.latency_limit {
            write!(out, ", {} skipped", s.skipped)?;
        }
    }
    if opts.max_tries != 1 {
        write!(out, ", {} retried, {} retries", s.retried, s.retries)?;
    }
    if opts.percentiles {
        for p in &s.percentiles {
            write!(
                out,
                ", {} {} ms",
                PercentileLabel(p.percentile),
                f3(p.latency_ms)
            )?;
        }
    }
    writeln!(out)
}
