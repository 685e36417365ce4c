//! A run's steady state, put into its result: the per-interval series handed to
//! `pgsurge_analysis::steady` (which judges where the warm-up ends and whether the rest
//! drifts), and the run's figures over the steady window summed from the intervals
//! after it — transactions over their seconds, latency percentiles from their merged
//! histograms. Nothing is estimated here: the window's figures are exact sums.
//! A [`Watch`] follows a run live and stops it once its steady window lasted long enough
//! (`warmup = "auto"`).

use pgsurge_analysis::steady::{detect, window_reached, Steady};
use pgsurge_results::result::{percentiles_of_encoded, SteadyState, DEFAULT_PERCENTILES};
use pgsurge_results::{IntervalSample, RunResult};

use crate::StopFlag;

/// The name of the method, as stated in outputs.
pub const METHOD: &str = "mser-5";

/// The intervals a steady state is judged on: all but a last one shorter than half
/// of the first (the remainder a run ends with, whose rate is noisier).
pub fn judged_intervals(intervals: &[IntervalSample]) -> &[IntervalSample] {
    match (intervals.first(), intervals.last()) {
        (Some(first), Some(last))
            if intervals.len() > 1 && last.duration_s < first.duration_s / 2.0 =>
        {
            &intervals[..intervals.len() - 1]
        }
        _ => intervals,
    }
}

/// Per-interval throughput and mean latency (None when an interval completed no
/// transaction: its latency is not a value).
pub fn series(intervals: &[IntervalSample]) -> (Vec<f64>, Option<Vec<f64>>) {
    let tps = intervals.iter().map(|i| i.tps).collect();
    let latency = intervals
        .iter()
        .map(|i| (i.transactions > 0).then_some(i.latency_ms))
        .collect();
    (tps, latency)
}

/// The steady state of `result` from its intervals; None when they are too few to
/// judge (fewer than 50).
pub fn judge(result: &RunResult) -> Option<SteadyState> {
    let (tps, latency) = series(judged_intervals(&result.intervals));
    let steady = detect(&tps, latency.as_deref())?;
    Some(window_figures(
        &result.intervals,
        &steady,
        &result.options.percentiles,
    ))
}

/// The figures of the intervals after the warm-up of `steady` (a last short interval,
/// left out of the judgement, is counted: it holds transactions of the window).
fn window_figures(intervals: &[IntervalSample], steady: &Steady, asked: &[f64]) -> SteadyState {
    let (warm, window) = intervals.split_at(steady.warmup_intervals.min(intervals.len()));
    let seconds = |v: &[IntervalSample]| v.iter().map(|i| i.duration_s).sum::<f64>();
    let window_s = seconds(window);
    let transactions: u64 = window.iter().map(|i| i.transactions).sum();
    // Σ latency = Σ per-interval mean × its transactions: the window's exact mean.
    let latency_sum: f64 = window
        .iter()
        .map(|i| i.latency_ms * i.transactions as f64)
        .sum();
    let mut ranks: Vec<f64> = DEFAULT_PERCENTILES.to_vec();
    ranks.extend(asked.iter().filter(|p| !DEFAULT_PERCENTILES.contains(p)));
    ranks.sort_by(f64::total_cmp);
    let percentiles = percentiles_of_encoded(
        window
            .iter()
            .filter(|i| i.transactions > 0)
            .map(|i| i.histogram.as_deref()),
        &ranks,
    );
    SteadyState {
        method: METHOD.to_string(),
        warmup_s: seconds(warm),
        window_s,
        intervals: steady.intervals,
        warmup_intervals: steady.warmup_intervals,
        steady: steady.steady,
        reasons: steady.reasons(),
        tps: if window_s > 0.0 {
            transactions as f64 / window_s
        } else {
            f64::NAN
        },
        transactions,
        latency_mean_ms: (transactions > 0).then(|| latency_sum / transactions as f64),
        percentiles,
        throughput_drift: steady.throughput_drift.map(|d| d.change),
        throughput_drift_p: steady.throughput_drift.map(|d| d.p_value),
    }
}

/// A run watched interval by interval: its own stop is raised once the run has
/// settled, does not drift, and its steady window has lasted the duration, or when
/// the caller's stop is raised (at the next interval). The caller's stop is never
/// raised by the watch.
pub struct Watch {
    duration_s: f64,
    tps: Vec<f64>,
    latency: Vec<f64>,
    /// False once an interval completed no transaction (its latency is no value).
    latency_usable: bool,
    outer: StopFlag,
    stop: StopFlag,
    reached: bool,
}

impl Watch {
    /// A watch for a run whose steady window must last `duration_s` seconds, ended
    /// early by `outer`.
    pub fn new(duration_s: f64, outer: &StopFlag) -> Watch {
        Watch {
            duration_s,
            tps: Vec::new(),
            latency: Vec::new(),
            latency_usable: true,
            outer: outer.clone(),
            stop: StopFlag::new(),
            reached: false,
        }
    }

    /// The stop flag to run with.
    pub fn stop(&self) -> &StopFlag {
        &self.stop
    }

    /// Adds an interval; raises the run's stop when the window is reached.
    pub fn push(&mut self, iv: &IntervalSample) {
        self.tps.push(iv.tps);
        self.latency.push(iv.latency_ms);
        self.latency_usable &= iv.transactions > 0;
        let window = (self.duration_s / iv.duration_s.max(1e-3)).ceil() as usize;
        let latency = self.latency_usable.then_some(self.latency.as_slice());
        if !self.reached && window_reached(&self.tps, latency, window) {
            self.reached = true;
            self.stop.raise();
        }
        if self.outer.is_raised() {
            self.stop.raise();
        }
    }

    /// A run stopped by its watch is complete, not interrupted (unless the caller's
    /// stop was raised too).
    pub fn finish(&self, result: &mut RunResult) {
        if self.reached && !self.outer.is_raised() {
            result.interrupted = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(i: usize, tps: u64, latency_ms: f64) -> IntervalSample {
        IntervalSample {
            elapsed_s: i as f64 + 1.0,
            epoch_s: 1e9 + i as f64 + 1.0,
            duration_s: 1.0,
            transactions: tps,
            failures: 0,
            skipped: 0,
            retried: 0,
            retries: 0,
            tps: tps as f64,
            latency_ms,
            stddev_ms: 0.0,
            lag_ms: 0.0,
            percentiles: Vec::new(),
            histogram: None,
        }
    }

    #[test]
    fn the_window_is_summed_from_the_intervals_after_the_warm_up() {
        // 10 s at 100 tps, 60 s at 500 (alternating 490/510), then a short 0.2 s.
        let mut intervals: Vec<IntervalSample> = (0..70)
            .map(|i| match i {
                i if i < 10 => second(i, 100, 20.0),
                _ if i % 2 == 0 => second(i, 490, 4.1),
                _ => second(i, 510, 3.9),
            })
            .collect();
        let mut last = second(70, 100, 4.0);
        last.duration_s = 0.2;
        intervals.push(last);
        let result = RunResult {
            intervals,
            ..Default::default()
        };
        let st = judge(&result).unwrap();
        assert_eq!(st.method, "mser-5");
        assert_eq!((st.intervals, st.warmup_intervals), (70, 10), "{st:?}");
        assert!(st.steady, "{st:?}");
        assert_eq!(st.warmup_s, 10.0);
        assert!((st.window_s - 60.2).abs() < 1e-9, "{st:?}");
        assert_eq!(st.transactions, 30 * 490 + 30 * 510 + 100);
        assert!((st.tps - 30_100.0 / 60.2).abs() < 1e-9, "{st:?}");
        let mean = (30.0 * 490.0 * 4.1 + 30.0 * 510.0 * 3.9 + 400.0) / 30_100.0;
        assert!((st.latency_mean_ms.unwrap() - mean).abs() < 1e-9, "{st:?}");
        // No interval carries a histogram: no percentiles, rather than wrong ones.
        assert!(st.percentiles.is_empty());
    }

    #[test]
    fn too_few_intervals_are_not_judged() {
        let result = RunResult {
            intervals: (0..49).map(|i| second(i, 100, 1.0)).collect(),
            ..Default::default()
        };
        assert!(judge(&result).is_none());
    }
}
