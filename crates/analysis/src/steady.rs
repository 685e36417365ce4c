//! Where a run's warm-up ends, and whether what follows it is steady, from the run's
//! per-interval series (throughput, mean latency).
//!
//! **Candidate: MSER-5.** The series is cut into batches of [`BATCH`] intervals; for
//! each candidate truncation `d` (in batches, over the first half of the series) the
//! statistic is `Σ (Zⱼ − Z̄(d))² / (k − d)²` over the batch means `Zⱼ` left after `d` —
//! the squared standard error of their mean. White's MSER rule with batches of 5 is the
//! method Hoad and Robinson's review of automated warm-up methods found robust enough to
//! run unattended. Before batching, each value is clipped to the level of the series'
//! second half ± [`CLIP`] robust standard deviations (median absolute deviation), so
//! one stalled second cannot make a batch look like a warm-up; a warm-up's values stay
//! far from the level even clipped.
//!
//! **The cut: only what differs from the window.** MSER's minimum alone is not a
//! warm-up end: over a settled series its statistic is nearly flat (about σ²/(k − d)),
//! and which of a few nearly equal values is smallest is chance — on a busy machine it
//! often lands at the end of the searched half, a cut of half the run on a series that
//! never warmed up. So MSER's minimum only fixes the *window* (the batches after it),
//! whose level (median of batch medians) and noise are then measured, and the warm-up
//! is the leading run of batches, from the first, whose median differs from that level
//! both beyond noise (two-sided, at [`CUT_ALPHA`]) and by more than [`MIN_SHIFT`] of the
//! level. Batch medians, not means, so a spike moves no batch; the leading run, so a
//! late disturbance is never a warm-up. The noise of a batch median is the larger of
//! two estimates: from the spread of the window's raw values (1.2533 σ/√5, with the
//! degrees of freedom of a median absolute deviation) and from the scatter of the
//! window's batch medians about their straight line (which sees noise correlated
//! across neighbouring seconds). A series with no warm-up therefore gets none, whatever
//! MSER's minimum. The cut is then refined to one interval: after the last value
//! beyond [`BAND`] standard deviations (and beyond [`MIN_SHIFT`]) from the window's
//! level in the last warm-up batch, and past any such values that open the first
//! window batch.
//!
//! **Not settled.** Only the first half is searched: past it, too few values are left
//! to judge. A leading run that reaches the last batch before that limit, or a cut
//! after which the series still drifts while MSER's own minimum lies in the second half
//! of the searched range (the shape of a trend, whose statistic falls all the way), is
//! not a warm-up end: the series is `unsettled`, no warm-up is stated, and the run is
//! not steady — its first half differs from what follows beyond noise, batch after
//! batch, whatever a straight line through the whole series says (a warm-up followed
//! by a fall in the second half can fit a flat line). A run is never called "still
//! warming up" from MSER's position alone: only a measured difference — leading
//! batches against the window, or a drift — makes it not steady.
//!
//! **Drift.** Over the steady window, a straight line is fitted to the (clipped) batch
//! means (least squares; batches again, because neighbouring seconds are correlated
//! and a test on raw seconds would see drifts that are not there). The window drifts
//! when the slope differs from zero (two-sided t test at [`DRIFT_ALPHA`]) *and* the
//! fitted change from its first to its last batch is more than [`DRIFT_TOLERANCE`] of
//! its mean: a long run makes tiny slopes significant, and a 1 % slope is not what "not
//! steady" warns of.
//!
//! A run is steady when both series settled within their first half and neither drifts
//! over the window after the later of their two warm-up ends. Series shorter than [`MIN_BATCHES`] batches are not judged (`None`).

use crate::describe::{mean, median};
use crate::interval::{t_quantile, t_two_sided_p};
use serde::Serialize;

/// Intervals per batch mean (MSER-5).
pub const BATCH: usize = 5;
/// Fewest complete batches a series needs to be judged (50 one-second intervals): with
/// fewer, a batch more or less moves the cut by five seconds at a time.
pub const MIN_BATCHES: usize = 10;
/// Significance level of the drift test.
pub const DRIFT_ALPHA: f64 = 0.01;
/// Smallest fitted change across the steady window, relative to its mean, that counts
/// as a drift (0.05 = 5 %).
pub const DRIFT_TOLERANCE: f64 = 0.05;
/// Values are clipped to the level ± this many robust standard deviations before MSER
/// and the drift test.
pub const CLIP: f64 = 4.0;
/// Two-sided level at which a batch differs from the window.
pub const CUT_ALPHA: f64 = 0.01;
/// Smallest difference from the window's level, relative to it, that makes a batch
/// part of the warm-up (0.01 = 1 %).
pub const MIN_SHIFT: f64 = 0.01;
/// Robust standard deviations from the window's level beyond which a single interval
/// is still warming up (the refinement to one interval).
pub const BAND: f64 = 3.0;

/// `1 / Φ⁻¹(3/4)`: turns a median absolute deviation into a normal standard deviation.
const MAD_TO_SD: f64 = 1.482_602_218_505_602;
/// Standard error of the median of normal values relative to that of their mean
/// (√(π/2)).
const MEDIAN_SE: f64 = 1.253_314_137_315_500_3;
/// Efficiency of the median absolute deviation relative to the standard deviation for
/// normal values: its degrees of freedom are about this share of the values'.
const MAD_EFFICIENCY: f64 = 0.37;

/// Where a series' warm-up ends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Truncation {
    /// Values to drop from the start (the warm-up), in intervals; 0 when none was found
    /// or the series is `unsettled`.
    pub at: usize,
    /// MSER's minimum, in batches: the start of the window the cut was judged against.
    pub mser_batches: usize,
    /// The MSER statistic there.
    pub statistic: f64,
    /// True when the series had not settled within its first half (see the module
    /// docs): no warm-up end is stated for it.
    pub unsettled: bool,
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

/// Medians of consecutive complete batches of `batch` values.
fn batch_medians(values: &[f64], batch: usize) -> Vec<f64> {
    values.chunks_exact(batch.max(1)).map(median).collect()
}

/// A robust standard deviation of `values`: the scaled median absolute deviation, or
/// the plain one when more than half the values are equal (a MAD of 0).
fn robust_sd(values: &[f64]) -> f64 {
    let m = median(values);
    let deviations: Vec<f64> = values.iter().map(|v| (v - m).abs()).collect();
    let mad = MAD_TO_SD * median(&deviations);
    if mad > 0.0 {
        mad
    } else {
        crate::describe::stddev(values).unwrap_or(0.0)
    }
}

/// `values` clipped to the median of their second half ± [`CLIP`] robust standard
/// deviations of it (unchanged when that half does not vary).
pub fn clipped(values: &[f64]) -> Vec<f64> {
    let half = &values[values.len() / 2..];
    let (level, sd) = (median(half), robust_sd(half));
    if !(sd > 0.0 && level.is_finite()) {
        return values.to_vec();
    }
    let (lo, hi) = (level - CLIP * sd, level + CLIP * sd);
    values.iter().map(|v| v.clamp(lo, hi)).collect()
}

/// Residual standard deviation of `values` about their least-squares line (against
/// their positions); None with fewer than three.
fn residual_sd(values: &[f64]) -> Option<f64> {
    let k = values.len();
    if k < 3 {
        return None;
    }
    let x: Vec<f64> = (0..k).map(|i| i as f64).collect();
    let (mx, my) = (mean(&x), mean(values));
    let sxx: f64 = x.iter().map(|xi| (xi - mx).powi(2)).sum();
    let sxy: f64 = x
        .iter()
        .zip(values)
        .map(|(xi, y)| (xi - mx) * (y - my))
        .sum();
    let slope = sxy / sxx;
    let sse: f64 = x
        .iter()
        .zip(values)
        .map(|(xi, y)| (y - (my + slope * (xi - mx))).powi(2))
        .sum();
    Some((sse / (k - 2) as f64).sqrt())
}

/// The number of leading batches of `values` that differ from the window starting at
/// batch `window` (see the module docs), at most `limit + 1`.
fn leading_warm_batches(values: &[f64], batch: usize, window: usize, limit: usize) -> usize {
    let medians = batch_medians(values, batch);
    let w = &medians[window..];
    let raw = &values[window * batch..];
    let level = median(w);
    let from_values = MEDIAN_SE * robust_sd(raw) / (batch as f64).sqrt();
    let noise = residual_sd(w).map_or(from_values, |r| r.max(from_values));
    let df = (MAD_EFFICIENCY * (raw.len() as f64 - 1.0)).max(1.0);
    let Some(q) = t_quantile(df, 1.0 - CUT_ALPHA / 2.0) else {
        return 0;
    };
    let threshold = (q * noise).max(MIN_SHIFT * level.abs());
    medians
        .iter()
        .take(limit + 1)
        .take_while(|m| (*m - level).abs() > threshold)
        .count()
}

/// The first interval of the window after `warm` leading warm batches: after the last
/// interval of the last warm batch that lies beyond [`BAND`] standard deviations (and
/// beyond [`MIN_SHIFT`]) from the window's level, and past such intervals that open the
/// next batch.
fn refine(values: &[f64], batch: usize, warm: usize) -> usize {
    let window = &values[(warm * batch).min(values.len())..];
    let (level, sd) = (median(window), robust_sd(window));
    // A window far quieter than MIN_SHIFT would otherwise make a value a few tenths of
    // a per cent off its level "still warming up", though no batch that close is.
    let band = (BAND * sd).max(MIN_SHIFT * level.abs());
    let outside = |v: f64| (v - level).abs() > band;
    let last_warm = (warm - 1) * batch..warm * batch;
    let mut at = last_warm
        .clone()
        .filter(|&i| outside(values[i]))
        .map(|i| i + 1)
        .max()
        .unwrap_or(last_warm.start);
    if at == last_warm.end {
        while at < ((warm + 1) * batch).min(values.len()) && outside(values[at]) {
            at += 1;
        }
    }
    at
}

/// Where the warm-up of `values` ends (see the module docs); None with fewer than
/// [`MIN_BATCHES`] complete batches or a value that is not finite.
pub fn mser(values: &[f64], batch: usize) -> Option<Truncation> {
    let batch = batch.max(1);
    if values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let clipped = clipped(values);
    let z = batch_means(&clipped, batch);
    let k = z.len();
    if k < MIN_BATCHES {
        return None;
    }
    let limit = k / 2;
    let stats = suffix_mser(&z, limit);
    let d = argmin(&stats, 0..=limit)?;
    let warm = leading_warm_batches(values, batch, d, limit);
    let unsettled = warm > 0 && warm + 1 >= limit;
    let at = if warm == 0 || unsettled {
        0
    } else {
        refine(values, batch, warm)
    };
    Some(Truncation {
        at,
        mser_batches: d,
        statistic: stats[d],
        unsettled,
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
    /// Intervals of warm-up: the later of the throughput's and the latency's cut.
    pub warmup_intervals: usize,
    /// Throughput's warm-up end.
    pub throughput: Truncation,
    /// Mean latency's warm-up end, when the series has a positive latency in every
    /// interval.
    pub latency: Option<Truncation>,
    /// Throughput's drift over the steady window.
    pub throughput_drift: Option<Drift>,
    /// Mean latency's drift over the steady window.
    pub latency_drift: Option<Drift>,
    /// True when both series settled within their first half and neither drifts over
    /// the window after the warm-up.
    pub steady: bool,
}

impl Steady {
    /// Why the run is not steady, in words (empty when it is).
    pub fn reasons(&self) -> Vec<String> {
        let mut out = Vec::new();
        let whole = self.warmup_intervals == 0;
        let mut drifting = |what: &str, d: Option<Drift>, unsettled: bool| {
            if unsettled && !d.is_some_and(|d| d.drifting) {
                out.push(format!(
                    "{what} not settled within the first half of the run: \
                     its first half differs from its level after"
                ));
            }
            if let Some(d) = d.filter(|d| d.drifting) {
                let p = if d.p_value < 0.001 {
                    "p < 0.001".to_string()
                } else {
                    format!("p = {:.3}", d.p_value)
                };
                let across = if whole {
                    "the run"
                } else {
                    "the steady window"
                };
                let settled = if unsettled {
                    "; not settled within the first half of the run"
                } else {
                    ""
                };
                out.push(format!(
                    "{what} {} {:.1} % across {across} ({p}){settled}",
                    if d.change < 0.0 { "falling" } else { "rising" },
                    d.change.abs() * 100.0,
                ));
            }
        };
        drifting(
            "throughput",
            self.throughput_drift,
            self.throughput.unsettled,
        );
        drifting(
            "latency",
            self.latency_drift,
            self.latency.is_some_and(|l| l.unsettled),
        );
        out
    }
}

/// The warm-up end of one series, with the trend rule of the module docs: a cut after
/// which the series still drifts, while MSER's minimum lies in the second half of the
/// searched range, is no warm-up end.
fn series_cut(values: &[f64], clipped: &[f64]) -> Option<Truncation> {
    let mut t = mser(values, BATCH)?;
    let limit = values.len() / BATCH / 2;
    if t.at > 0
        && 2 * t.mser_batches >= limit
        && drift(&clipped[t.at..], BATCH).is_some_and(|d| d.drifting)
    {
        t.at = 0;
        t.unsettled = true;
    }
    Some(t)
}

/// Judges a run's steady state from its per-interval throughput and, when every
/// interval has one, mean latency (same length); None when the series is shorter than
/// [`MIN_BATCHES`] batches.
pub fn detect(throughput: &[f64], latency: Option<&[f64]>) -> Option<Steady> {
    let tps_clipped = clipped(throughput);
    let tps = series_cut(throughput, &tps_clipped)?;
    let latency = latency
        .filter(|l| l.len() == throughput.len() && l.iter().all(|v| *v > 0.0 && v.is_finite()));
    let lat_clipped = latency.map(clipped);
    let lat = latency
        .zip(lat_clipped.as_deref())
        .and_then(|(l, c)| series_cut(l, c));
    let warmup = tps.at.max(lat.map_or(0, |l| l.at));
    let throughput_drift = drift(&tps_clipped[warmup..], BATCH);
    let latency_drift = lat_clipped
        .as_deref()
        .and_then(|l| drift(&l[warmup..], BATCH));
    let settled = !tps.unsettled && !lat.is_some_and(|l| l.unsettled);
    let steady = settled
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
    //! Reference values: `tests/data/reference.py`, section `steady` (the rule written
    //! from its documented definition with NumPy; medians of absolute deviations,
    //! Student's t and the drift's slope test are SciPy's).
    use super::*;

    /// Deterministic noise of amplitude about `amp` (the reference script makes the
    /// same values).
    fn noise(i: usize, amp: f64) -> f64 {
        let x = i as f64;
        amp * ((1.7 * x).sin() * 0.6 + (0.37 * x + 1.0).cos() * 0.4)
    }

    fn series(n: usize, f: impl Fn(usize) -> f64) -> Vec<f64> {
        (0..n).map(f).collect()
    }

    /// 20 intervals rising from 200 to 960 tps, then 100 around 1000.
    fn warm_then_flat() -> Vec<f64> {
        series(120, |i| {
            if i < 20 {
                200.0 + 40.0 * i as f64 + noise(i, 20.0)
            } else {
                1000.0 + noise(i, 20.0)
            }
        })
    }

    #[test]
    fn a_known_warm_up_is_found_to_the_interval() {
        let s = warm_then_flat();
        let t = mser(&s, BATCH).unwrap();
        // Interval 19 (960 tps) is within three standard deviations of the level.
        assert_eq!((t.at, t.mser_batches, t.unsettled), (19, 4, false), "{t:?}");
        assert!((t.statistic - 1.50196349).abs() < 1e-7, "{t:?}");
        let st = detect(&s, None).unwrap();
        assert_eq!(st.warmup_intervals, 19);
        assert!(st.steady, "{st:?}");
        assert!(st.reasons().is_empty());
        let d = st.throughput_drift.unwrap();
        assert!((d.change - 0.003514295091).abs() < 1e-9, "{d:?}");
    }

    #[test]
    fn a_flat_series_has_no_warm_up() {
        let s = series(60, |i| 500.0 + noise(i, 10.0));
        let st = detect(&s, None).unwrap();
        assert_eq!(st.warmup_intervals, 0, "{st:?}");
        assert!(st.steady && !st.throughput.unsettled, "{st:?}");
        let d = st.throughput_drift.unwrap();
        assert!(
            !d.drifting && (d.change - -0.001452758357).abs() < 1e-9,
            "{d:?}"
        );
    }

    #[test]
    fn rare_spikes_are_no_warm_up_even_where_mser_puts_its_minimum_at_the_limit() {
        let mut s = series(120, |i| 1000.0 + noise(i, 15.0));
        for at in [7, 23, 41, 77, 103] {
            s[at] = 450.0;
        }
        let t = mser(&s, BATCH).unwrap();
        // MSER's own minimum lies at the end of the searched half (batch 12 of 24)...
        assert_eq!(t.mser_batches, 10, "{t:?}");
        assert!((t.statistic - 0.9644635359).abs() < 1e-7, "{t:?}");
        // ...yet no batch differs from the window: no warm-up, steady.
        assert_eq!((t.at, t.unsettled), (0, false), "{t:?}");
        let st = detect(&s, None).unwrap();
        assert!(st.steady && st.warmup_intervals == 0, "{st:?}");
    }

    #[test]
    fn an_exponential_warm_up_ends_where_it_is_within_the_noise() {
        // 200 → 1000 tps with a time constant of 3 intervals: 800·e^(−11/3) ≈ 20 tps
        // below the level at interval 11, the noise's size.
        let s = series(120, |i| {
            1000.0 - 800.0 * (-(i as f64) / 3.0).exp() + noise(i, 15.0)
        });
        let t = mser(&s, BATCH).unwrap();
        assert_eq!((t.at, t.mser_batches), (11, 3), "{t:?}");
        assert!((t.statistic - 0.7811372137).abs() < 1e-7, "{t:?}");
        assert!(detect(&s, None).unwrap().steady);
    }

    #[test]
    fn a_linear_drift_is_not_steady_and_states_no_warm_up() {
        // No warm-up; throughput falls from 1000 to 800 over 100 intervals.
        let s = series(100, |i| 1000.0 - 2.0 * i as f64 + noise(i, 15.0));
        let d = drift(&s, BATCH).unwrap();
        assert!((d.slope - -1.997134882).abs() < 1e-8, "{d:?}");
        assert!(d.p_value < 1e-10, "{d:?}");
        assert!((d.change - -0.2106011171).abs() < 1e-9, "{d:?}");
        assert!(d.drifting);
        // The leading batches differ from a window that lies further down the line,
        // and MSER's minimum is at the limit: a trend's cut, not a warm-up end.
        let t = mser(&s, BATCH).unwrap();
        assert_eq!((t.at, t.mser_batches), (35, 10), "{t:?}");
        let st = detect(&s, None).unwrap();
        assert_eq!(st.warmup_intervals, 0, "{st:?}");
        assert!(st.throughput.unsettled && !st.steady, "{st:?}");
        let d = st.throughput_drift.unwrap();
        assert!((d.change - -0.2106011171).abs() < 1e-9, "{d:?}");
        assert_eq!(
            st.reasons(),
            vec!["throughput falling 21.1 % across the run (p < 0.001); \
                  not settled within the first half of the run"
                .to_string()]
        );
    }

    #[test]
    fn a_step_in_the_first_half_is_a_warm_up_and_one_in_the_second_a_drift() {
        let early = series(120, |i| {
            (if i < 30 { 1200.0 } else { 1000.0 }) + noise(i, 15.0)
        });
        let st = detect(&early, None).unwrap();
        assert_eq!(st.warmup_intervals, 30, "{st:?}");
        assert!(st.steady, "{st:?}");
        let late = series(120, |i| {
            (if i < 80 { 1000.0 } else { 800.0 }) + noise(i, 15.0)
        });
        let st = detect(&late, None).unwrap();
        assert_eq!(st.warmup_intervals, 0, "{st:?}");
        assert!(!st.steady, "{st:?}");
        let d = st.throughput_drift.unwrap();
        assert!((d.change - -0.1049831069).abs() < 1e-9, "{d:?}");
        assert!(st.reasons()[0].starts_with("throughput falling 10.5 % across the run"));
    }

    #[test]
    fn a_warm_up_then_a_fall_in_the_second_half_is_not_steady() {
        // 8 intervals rising to 1000 tps, level until interval 30, then 800 to the end:
        // the first half differs from the window MSER picks (the fall) batch after
        // batch, while a straight line through the whole series barely slopes.
        let s = series(60, |i| {
            let level = if i < 8 {
                150.0 + 100.0 * i as f64
            } else if i < 30 {
                1000.0
            } else {
                800.0
            };
            level + noise(i, 10.0)
        });
        let st = detect(&s, None).unwrap();
        assert!(st.throughput.unsettled, "{st:?}");
        assert!(!st.throughput_drift.unwrap().drifting, "{st:?}");
        assert!(!st.steady, "{st:?}");
        assert_eq!(
            st.reasons(),
            vec!["throughput not settled within the first half of the run: \
                  its first half differs from its level after"
                .to_string()]
        );
        assert!(!window_reached(&s, None, 10));
    }

    #[test]
    fn a_series_that_never_settles_is_not_steady() {
        // Decays all run long: the leading batches differ up to the limit.
        let s = series(80, |i| {
            300.0 + 700.0 * (-(i as f64) / 60.0).exp() + noise(i, 2.0)
        });
        let st = detect(&s, None).unwrap();
        assert!(st.throughput.unsettled, "{st:?}");
        assert_eq!(st.warmup_intervals, 0);
        assert!(!st.steady);
        let d = st.throughput_drift.unwrap();
        assert!((d.change - -0.559880193).abs() < 1e-8, "{d:?}");
    }

    #[test]
    fn a_small_significant_slope_is_not_a_drift() {
        // 1000 → 990 over 100 intervals: significant, but a 1 % change.
        let s = series(100, |i| 1000.0 - 0.1 * i as f64 + noise(i, 1.0));
        let d = drift(&s, BATCH).unwrap();
        assert!(d.p_value < DRIFT_ALPHA && !d.drifting, "{d:?}");
    }

    #[test]
    fn latency_settling_later_moves_the_warm_up_end() {
        // Rate-limited: throughput flat, latency falls for 30 intervals.
        let tps = series(100, |i| 200.0 + noise(i, 1.0));
        let lat = series(100, |i| {
            let base = if i < 30 { 20.0 - 0.5 * i as f64 } else { 5.0 };
            base + noise(i + 7, 0.2)
        });
        let st = detect(&tps, Some(&lat)).unwrap();
        let l = st.latency.unwrap();
        assert!((26..=31).contains(&l.at), "{st:?}");
        assert_eq!(st.throughput.at, 0, "{st:?}");
        assert_eq!(st.warmup_intervals, l.at);
        // A latency series with an empty interval is not used.
        let mut gap = lat.clone();
        gap[50] = 0.0;
        assert!(detect(&tps, Some(&gap)).unwrap().latency.is_none());
    }

    #[test]
    fn a_sharp_warm_up_end_stays_put_when_the_window_is_far_quieter_than_one_per_cent() {
        // A run whose server-side sleep falls to nothing at interval 8: whole-number
        // throughputs, and a latency whose window varies by hundredths of a millisecond
        // while its first seconds after the warm-up sit a few tenths of a per cent
        // higher. Neither is warming up any more: a value within MIN_SHIFT of the
        // window's level never extends the cut.
        let head_tps = [20.0, 24.0, 24.0, 32.0, 40.0, 52.0, 72.0, 124.0];
        let head_lat = [192.9, 170.2, 148.4, 126.7, 103.2, 79.7, 56.0, 32.5];
        let tps: Vec<f64> = (0..60)
            .map(|i| match head_tps.get(i) {
                Some(v) => *v,
                None => [192.0, 190.0, 192.0, 188.0, 192.0][i % 5],
            })
            .collect();
        let lat: Vec<f64> = (0..60)
            .map(|i| match head_lat.get(i) {
                Some(v) => *v,
                None if i < 13 => 21.06 - 0.01 * (i - 8) as f64,
                None => 20.96 + noise(i, 0.02),
            })
            .collect();
        let st = detect(&tps, Some(&lat)).unwrap();
        assert_eq!(st.throughput.at, 8, "{st:?}");
        assert_eq!(st.latency.unwrap().at, 8, "{st:?}");
        assert_eq!(st.warmup_intervals, 8, "{st:?}");
        assert!(st.steady, "{st:?}");
    }

    #[test]
    fn short_or_broken_series_are_not_judged() {
        assert!(detect(&[1.0; 49], None).is_none());
        let constant = detect(&[1.0; 50], None).unwrap();
        assert!(constant.steady && constant.warmup_intervals == 0);
        let mut s = vec![1.0; 60];
        s[3] = f64::NAN;
        assert!(detect(&s, None).is_none());
        assert!(drift(&[1.0; 14], BATCH).is_none());
    }

    #[test]
    fn the_window_is_reached_only_after_the_warm_up_and_the_duration() {
        let s = warm_then_flat();
        // 19 intervals of warm-up: a 40-interval window needs at least 59.
        assert!(!window_reached(&s[..55], None, 40));
        assert!(window_reached(&s[..60], None, 40));
        assert!(!window_reached(&s[..60], None, 50));
    }

    /// Normal deviates from a fixed seed (xorshift64* and Box–Muller): many series, the
    /// same every run.
    struct Normal(u64);

    impl Normal {
        fn uniform(&mut self) -> f64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            ((self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
        fn next(&mut self) -> f64 {
            let (u, v) = (self.uniform(), self.uniform());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        }
    }

    /// A busy machine's second: 4 % noise, and 3 % of the seconds stalled to 30–70 %.
    fn busy(rng: &mut Normal, level: f64) -> f64 {
        let v = level * (1.0 + 0.04 * rng.next());
        if rng.uniform() < 0.03 {
            v * (0.3 + 0.4 * rng.uniform())
        } else {
            v
        }
    }

    #[test]
    fn on_many_noisy_flat_series_the_warm_up_is_zero_and_the_run_steady() {
        let mut rng = Normal(0x5eed_0001);
        let mut wrong = Vec::new();
        for run in 0..300 {
            let n = [50, 60, 90, 120, 300][run % 5];
            let tps: Vec<f64> = (0..n).map(|_| busy(&mut rng, 1000.0)).collect();
            let lat: Vec<f64> = tps.iter().map(|t| 4000.0 / t).collect();
            let st = detect(&tps, Some(&lat)).unwrap();
            if st.warmup_intervals > BATCH || !st.steady {
                wrong.push((run, st.warmup_intervals, st.reasons()));
            }
        }
        // A 1 % test on a batch and a 1 % drift test per series: a few of 300 at most.
        assert!(wrong.len() <= 3, "{wrong:?}");
    }

    #[test]
    fn on_many_noisy_series_a_known_warm_up_is_found_within_two_intervals() {
        // The real-run test's shape: latency falling from 50 to 5 ms over 8 intervals,
        // throughput its inverse, on a busy machine.
        let mut rng = Normal(0x5eed_0002);
        let mut wrong = Vec::new();
        for run in 0..300 {
            let n = [50, 60, 90, 120, 300][run % 5];
            let level = |i: usize| {
                let t = i as f64 + 0.5;
                5.0 + 45.0 * (1.0 - t / 8.0).max(0.0)
            };
            let tps: Vec<f64> = (0..n).map(|i| busy(&mut rng, 4000.0 / level(i))).collect();
            let lat: Vec<f64> = (0..n)
                .map(|i| level(i) * (1.0 + 0.04 * rng.next()))
                .collect();
            let st = detect(&tps, Some(&lat)).unwrap();
            if !(6..=10).contains(&st.warmup_intervals) || !st.steady {
                wrong.push((run, st.warmup_intervals, st.reasons()));
            }
        }
        assert!(wrong.len() <= 3, "{wrong:?}");
    }
}
