//! Where a run's warm-up ends, and whether what follows it is steady, from the run's
//! per-interval series (throughput, mean latency).
//!
//! **Warm-up end: MSER-5, refined to one interval.** The series is cut into batches of
//! [`BATCH`] intervals; for each candidate truncation `d` (in batches, over the first
//! half of the series) the statistic is `Σ (Zⱼ − Z̄(d))² / (k − d)²` over the batch
//! means `Zⱼ` left after `d` — the squared standard error of their mean. The warm-up
//! ends where it is smallest: cutting more would leave fewer values, cutting less would
//! leave the warm-up's values far from the rest. White's MSER rule with batches of 5 is
//! the method Hoad and Robinson's review of automated warm-up methods found robust
//! enough to run unattended; batching damps the second-to-second noise that makes the
//! plain rule cut at a single spike. Its price is a resolution of five intervals, so the
//! batch answer is refined by the same rule on the raw values within one batch either
//! side of it.
//!
//! Only the first half is searched: past it, the few values left make the statistic
//! small by chance. A minimum *at* that limit means the series was still moving when
//! half of it was over: the run never settled (`settled` false), and the warm-up it
//! states is a lower bound. So a detected warm-up can be at most as long as the steady
//! window after it.
//!
//! **Drift.** Over the steady window, a straight line is fitted to the batch means
//! (least squares; batches again, because neighbouring seconds are correlated and a
//! test on raw seconds would see drifts that are not there). The window drifts when the
//! slope differs from zero (two-sided t test at [`DRIFT_ALPHA`]) *and* the fitted change
//! from its first to its last batch is more than [`DRIFT_TOLERANCE`] of its mean: a long
//! run makes tiny slopes significant, and a 1 % slope is not what "not steady" warns of.
//!
//! A run is steady when both series settled in their first half and neither drifts
//! over the window after the later of their two warm-up ends. Series shorter than
//! [`MIN_BATCHES`] batches are not judged (`None`).

use crate::describe::mean;
use crate::interval::t_two_sided_p;
use serde::Serialize;

/// Intervals per batch mean (MSER-5).
pub const BATCH: usize = 5;
/// Fewest complete batches a series needs to be judged (50 one-second intervals): with
/// fewer, a batch more or less moves the cut by five seconds at a time.
pub const MIN_BATCHES: usize = 10;
/// Significance level of the drift test.
pub const DRIFT_ALPHA: f64 = 0.05;
/// Smallest fitted change across the steady window, relative to its mean, that counts
/// as a drift (0.05 = 5 %).
pub const DRIFT_TOLERANCE: f64 = 0.05;

/// Where MSER truncates a series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Truncation {
    /// Values to drop from the start (the warm-up), in intervals.
    pub at: usize,
    /// The MSER statistic there.
    pub statistic: f64,
    /// True when the minimum lies at the end of the searched half: the series had not
    /// settled by then, and `at` is a lower bound of its warm-up.
    pub at_limit: bool,
}

/// `Σ (x − x̄)² / len²` of each suffix `values[d..]` for `d` in `0..=last`, from suffix
/// sums (one pass).
fn suffix_mser(values: &[f64], last: usize) -> Vec<f64> {
    let n = values.len();
    let (mut s, mut q) = (0.0, 0.0);
    let mut out = vec![f64::NAN; last + 1];
    for d in (0..n).rev() {
        s += values[d];
        q += values[d] * values[d];
        if d <= last {
            let m = (n - d) as f64;
            // Centred sum of squares; clamped at 0 against rounding.
            let ss = (q - s * s / m).max(0.0);
            out[d] = ss / (m * m);
        }
    }
    out
}

/// The first position of the smallest finite value of `stats[range]`.
fn argmin(stats: &[f64], range: std::ops::RangeInclusive<usize>) -> Option<usize> {
    let mut best: Option<usize> = None;
    for d in range {
        let v = stats[d];
        if v.is_finite() && best.is_none_or(|b| v < stats[b]) {
            best = Some(d);
        }
    }
    best
}

/// Means of consecutive complete batches of `batch` values (a partial last batch is
/// left out).
pub fn batch_means(values: &[f64], batch: usize) -> Vec<f64> {
    values.chunks_exact(batch.max(1)).map(mean).collect()
}

/// MSER-`batch` truncation of `values`, refined to one value; None with fewer than
/// [`MIN_BATCHES`] complete batches or a value that is not finite.
pub fn mser(values: &[f64], batch: usize) -> Option<Truncation> {
    let batch = batch.max(1);
    if values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let z = batch_means(values, batch);
    let k = z.len();
    if k < MIN_BATCHES {
        return None;
    }
    let limit = k / 2;
    let stats = suffix_mser(&z, limit);
    let d = argmin(&stats, 0..=limit)?;
    let at_limit = d == limit;
    // Refinement: the plain rule on the raw values, one batch either side.
    let n = values.len();
    let raw_limit = n / 2;
    let lo = (d.saturating_sub(1) * batch).min(raw_limit);
    let hi = ((d + 1) * batch).min(raw_limit);
    let raw = suffix_mser(values, hi);
    let at = argmin(&raw, lo..=hi).unwrap_or(d * batch);
    Some(Truncation {
        at,
        statistic: stats[d],
        at_limit,
    })
}

/// The straight line fitted to a window's batch means.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Drift {
    /// Fitted change from the first batch to the last, relative to the window's mean
    /// (−0.12 = falling by 12 % across the window).
    pub change: f64,
    /// Slope per interval, in the series' unit.
    pub slope: f64,
    /// Two-sided p-value of the slope (t test, batches − 2 degrees of freedom).
    pub p_value: f64,
    /// True when the slope is significant at [`DRIFT_ALPHA`] and `|change|` exceeds
    /// [`DRIFT_TOLERANCE`].
    pub drifting: bool,
}

/// The drift of `values` (the steady window) over batches of `batch`; None with fewer
/// than three complete batches, a mean of zero, or a value that is not finite.
pub fn drift(values: &[f64], batch: usize) -> Option<Drift> {
    let batch = batch.max(1);
    if values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let z = batch_means(values, batch);
    let k = z.len();
    if k < 3 {
        return None;
    }
    // Batch centres, in intervals from the window's start.
    let x: Vec<f64> = (0..k)
        .map(|j| (j * batch) as f64 + (batch as f64 - 1.0) / 2.0)
        .collect();
    let (mx, mz) = (mean(&x), mean(&z));
    let sxx: f64 = x.iter().map(|xi| (xi - mx).powi(2)).sum();
    let sxz: f64 = x.iter().zip(&z).map(|(xi, zi)| (xi - mx) * (zi - mz)).sum();
    let slope = sxz / sxx;
    let sse: f64 = x
        .iter()
        .zip(&z)
        .map(|(xi, zi)| (zi - (mz + slope * (xi - mx))).powi(2))
        .sum();
    let df = (k - 2) as f64;
    let se = (sse / df / sxx).sqrt();
    let p_value = if se > 0.0 {
        t_two_sided_p(slope / se, df)?
    } else if slope == 0.0 {
        1.0
    } else {
        0.0
    };
    let window_mean = mean(values);
    if window_mean == 0.0 {
        return None;
    }
    let change = slope * (x[k - 1] - x[0]) / window_mean;
    Some(Drift {
        change,
        slope,
        p_value,
        drifting: p_value < DRIFT_ALPHA && change.abs() > DRIFT_TOLERANCE,
    })
}

/// A run's steady state, judged from its per-interval series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Steady {
    /// Intervals judged.
    pub intervals: usize,
    /// Intervals of warm-up: the later of the throughput's and the latency's truncation.
    pub warmup_intervals: usize,
    /// Throughput's truncation.
    pub throughput: Truncation,
    /// Mean latency's truncation, when the series has a positive latency in every
    /// interval.
    pub latency: Option<Truncation>,
    /// Throughput's drift over the steady window.
    pub throughput_drift: Option<Drift>,
    /// Mean latency's drift over the steady window.
    pub latency_drift: Option<Drift>,
    /// True when both series settled within their first half and neither drifts.
    pub steady: bool,
}

impl Steady {
    /// Why the run is not steady, in words (empty when it is).
    pub fn reasons(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.throughput.at_limit || self.latency.is_some_and(|l| l.at_limit) {
            out.push("still warming up when half of the run was over".to_string());
        }
        let mut drifting = |what: &str, d: Option<Drift>| {
            if let Some(d) = d.filter(|d| d.drifting) {
                let p = if d.p_value < 0.001 {
                    "p < 0.001".to_string()
                } else {
                    format!("p = {:.3}", d.p_value)
                };
                out.push(format!(
                    "{what} {} {:.1} % across the steady window ({p})",
                    if d.change < 0.0 { "falling" } else { "rising" },
                    d.change.abs() * 100.0,
                ));
            }
        };
        drifting("throughput", self.throughput_drift);
        drifting("latency", self.latency_drift);
        out
    }
}

/// Judges a run's steady state from its per-interval throughput and, when every
/// interval has one, mean latency (same length); None when the series is shorter than
/// [`MIN_BATCHES`] batches.
pub fn detect(throughput: &[f64], latency: Option<&[f64]>) -> Option<Steady> {
    let tps = mser(throughput, BATCH)?;
    let latency = latency
        .filter(|l| l.len() == throughput.len() && l.iter().all(|v| *v > 0.0 && v.is_finite()));
    let lat = latency.and_then(|l| mser(l, BATCH));
    let warmup = tps.at.max(lat.map_or(0, |l| l.at));
    let throughput_drift = drift(&throughput[warmup..], BATCH);
    let latency_drift = latency.and_then(|l| drift(&l[warmup..], BATCH));
    let steady = !tps.at_limit
        && !lat.is_some_and(|l| l.at_limit)
        && !throughput_drift.is_some_and(|d| d.drifting)
        && !latency_drift.is_some_and(|d| d.drifting);
    Some(Steady {
        intervals: throughput.len(),
        warmup_intervals: warmup,
        throughput: tps,
        latency: lat,
        throughput_drift,
        latency_drift,
        steady,
    })
}

/// For a run stopped once its steady window is long enough (`warmup = "auto"`): true
/// when the series so far has settled, does not drift, and its steady window has
/// lasted at least `window` intervals.
pub fn window_reached(throughput: &[f64], latency: Option<&[f64]>, window: usize) -> bool {
    detect(throughput, latency)
        .is_some_and(|s| s.steady && s.intervals - s.warmup_intervals >= window.max(1))
}

#[cfg(test)]
mod tests {
    //! Reference values: `tests/data/reference.py`, section `steady` (MSER written
    //! from its definition with NumPy; the drift's slope test is SciPy's `linregress`).
    use super::*;

    /// Deterministic noise of amplitude about `amp` (the reference script makes the
    /// same values).
    fn noise(i: usize, amp: f64) -> f64 {
        let x = i as f64;
        amp * ((1.7 * x).sin() * 0.6 + (0.37 * x + 1.0).cos() * 0.4)
    }

    /// 20 intervals rising from 200 to 960 tps, then 100 around 1000.
    fn warm_then_flat() -> Vec<f64> {
        (0..120)
            .map(|i| {
                if i < 20 {
                    200.0 + 40.0 * i as f64 + noise(i, 20.0)
                } else {
                    1000.0 + noise(i, 20.0)
                }
            })
            .collect()
    }

    #[test]
    fn a_known_warm_up_is_found_to_the_interval() {
        let s = warm_then_flat();
        let t = mser(&s, BATCH).unwrap();
        assert_eq!((t.at, t.at_limit), (20, false), "{t:?}");
        assert!((t.statistic - 1.50196349).abs() < 1e-7, "{t:?}");
        let st = detect(&s, None).unwrap();
        assert_eq!(st.warmup_intervals, 20);
        assert!(st.steady, "{st:?}");
        assert!(st.reasons().is_empty());
    }

    #[test]
    fn a_flat_series_has_no_warm_up_to_speak_of() {
        let s: Vec<f64> = (0..60).map(|i| 500.0 + noise(i, 10.0)).collect();
        let st = detect(&s, None).unwrap();
        assert!(st.warmup_intervals <= 5, "{st:?}");
        assert!(st.steady, "{st:?}");
        let d = st.throughput_drift.unwrap();
        assert!(!d.drifting && d.change.abs() < 0.01, "{d:?}");
    }

    #[test]
    fn a_falling_window_is_a_drift_with_the_reference_slope_test() {
        // No warm-up; throughput falls from 1000 to 800 over 100 intervals.
        let s: Vec<f64> = (0..100)
            .map(|i| 1000.0 - 2.0 * i as f64 + noise(i, 15.0))
            .collect();
        let d = drift(&s, BATCH).unwrap();
        assert!((d.slope - -1.997134882).abs() < 1e-8, "{d:?}");
        assert!(d.p_value < 1e-10, "{d:?}");
        assert!((d.change - -0.2106011171).abs() < 1e-9, "{d:?}");
        assert!(d.drifting);
        let st = detect(&s, None).unwrap();
        assert!(!st.steady, "{st:?}");
        assert!(
            st.reasons()
                .iter()
                .any(|r| r.starts_with("throughput falling")),
            "{:?}",
            st.reasons()
        );
    }

    #[test]
    fn a_small_significant_slope_is_not_a_drift() {
        // 1000 → 990 over 100 intervals: significant, but a 1 % change.
        let s: Vec<f64> = (0..100)
            .map(|i| 1000.0 - 0.1 * i as f64 + noise(i, 1.0))
            .collect();
        let d = drift(&s, BATCH).unwrap();
        assert!(d.p_value < DRIFT_ALPHA && !d.drifting, "{d:?}");
    }

    #[test]
    fn a_series_that_never_settles_is_flagged_at_the_limit() {
        // Decays all run long: the minimum is at the half limit.
        let s: Vec<f64> = (0..80)
            .map(|i| 300.0 + 700.0 * (-(i as f64) / 60.0).exp() + noise(i, 2.0))
            .collect();
        let st = detect(&s, None).unwrap();
        assert!(st.throughput.at_limit, "{st:?}");
        assert!(!st.steady);
        assert!(st.reasons()[0].starts_with("still warming up"));
    }

    #[test]
    fn latency_settling_later_moves_the_warm_up_end() {
        // Rate-limited: throughput flat, latency falls for 30 intervals.
        let tps: Vec<f64> = (0..100).map(|i| 200.0 + noise(i, 1.0)).collect();
        let lat: Vec<f64> = (0..100)
            .map(|i| {
                let base = if i < 30 { 20.0 - 0.5 * i as f64 } else { 5.0 };
                base + noise(i + 7, 0.2)
            })
            .collect();
        let st = detect(&tps, Some(&lat)).unwrap();
        let l = st.latency.unwrap();
        assert!((28..=31).contains(&l.at), "{st:?}");
        assert_eq!(st.warmup_intervals, l.at.max(st.throughput.at));
        // A latency series with an empty interval is not used.
        let mut gap = lat.clone();
        gap[50] = 0.0;
        assert!(detect(&tps, Some(&gap)).unwrap().latency.is_none());
    }

    #[test]
    fn short_or_broken_series_are_not_judged() {
        assert!(detect(&[1.0; 49], None).is_none());
        assert!(detect(&[1.0; 50], None).is_some());
        let mut s = vec![1.0; 40];
        s[3] = f64::NAN;
        assert!(detect(&s, None).is_none());
        assert!(drift(&[1.0; 14], BATCH).is_none());
    }

    #[test]
    fn the_window_is_reached_only_after_the_warm_up_and_the_duration() {
        let s = warm_then_flat();
        // 20 intervals of warm-up: a 40-interval window needs at least 60.
        assert!(!window_reached(&s[..55], None, 40));
        assert!(window_reached(&s[..60], None, 40));
        assert!(!window_reached(&s[..60], None, 50));
    }
}
