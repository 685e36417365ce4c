//! Confidence intervals: of a mean (Student's t), and of the relative change between
//! two samples, either independent (Welch's t on the logarithms) or paired by round
//! (Student's t on the logarithms of the per-round ratios).
//!
//! A change is a ratio ("B is 9.9 % faster"), so it is computed on logarithms: the
//! interval of `mean(ln b) − mean(ln a)` is turned back into `exp(·) − 1`, and its
//! centre is the ratio of the geometric means. Welch's interval is usable from 2
//! repeats per side, where rank methods cannot reach 95 % at all (with 3 + 3 repeats
//! the smallest two-sided Mann–Whitney p-value is 0.1).

use crate::describe::{logs, mean, variance};
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// The `p` quantile of Student's t with `df` degrees of freedom (the normal's when `df`
/// is infinite); None when `df` is not positive.
pub fn t_quantile(df: f64, p: f64) -> Option<f64> {
    if df.is_infinite() {
        return Some(normal_quantile(p));
    }
    if df.is_nan() || df <= 0.0 {
        return None;
    }
    Some(StudentsT::new(0.0, 1.0, df).ok()?.inverse_cdf(p))
}

/// The `p` quantile of the standard normal distribution.
pub fn normal_quantile(p: f64) -> f64 {
    Normal::new(0.0, 1.0)
        .expect("the standard normal distribution is valid")
        .inverse_cdf(p)
}

/// Upper tail probability of the standard normal distribution at `z`.
pub fn normal_sf(z: f64) -> f64 {
    Normal::new(0.0, 1.0)
        .expect("the standard normal distribution is valid")
        .sf(z)
}

/// Two-sided p-value of Student's t statistic `t` with `df` degrees of freedom.
pub fn t_two_sided_p(t: f64, df: f64) -> Option<f64> {
    if df.is_nan() || df <= 0.0 || t.is_nan() {
        return None;
    }
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    Some((2.0 * dist.sf(t.abs())).min(1.0))
}

/// A confidence interval of a mean.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MeanInterval {
    /// The sample mean.
    pub mean: f64,
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
}

/// Student's t interval of the mean of `values` at `confidence` (0.95); None with fewer
/// than two values.
pub fn mean_interval(values: &[f64], confidence: f64) -> Option<MeanInterval> {
    let var = variance(values)?;
    let n = values.len() as f64;
    let q = t_quantile(n - 1.0, 0.5 + confidence / 2.0)?;
    let m = mean(values);
    let half = q * (var / n).sqrt();
    Some(MeanInterval {
        mean: m,
        low: m - half,
        high: m + half,
    })
}

/// Relative change of B against A, with a confidence interval, and what it was made of.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RelativeChange {
    /// Point estimate (0.05 = B is 5 % higher): the ratio of the geometric means − 1.
    pub estimate: f64,
    /// Lower bound of the interval, same unit.
    pub low: f64,
    /// Upper bound, same unit.
    pub high: f64,
    /// Degrees of freedom of the t distribution used (infinite when the spread is 0).
    pub df: f64,
    /// Standard error of the difference of the logarithms.
    pub se_log: f64,
}

impl RelativeChange {
    /// Half the interval's width on the log scale, as a relative change: the interval is
    /// `estimate` ×/÷ (1 + this).
    pub fn half_width(&self) -> f64 {
        (((1.0 + self.high).ln() - (1.0 + self.low).ln()) / 2.0).exp() - 1.0
    }

    fn from_log(d: f64, se: f64, df: f64, confidence: f64) -> Option<RelativeChange> {
        if se == 0.0 {
            let e = d.exp() - 1.0;
            return Some(RelativeChange {
                estimate: e,
                low: e,
                high: e,
                df: f64::INFINITY,
                se_log: 0.0,
            });
        }
        let half = t_quantile(df, 0.5 + confidence / 2.0)? * se;
        Some(RelativeChange {
            estimate: d.exp() - 1.0,
            low: (d - half).exp() - 1.0,
            high: (d + half).exp() - 1.0,
            df,
            se_log: se,
        })
    }
}

/// Welch's t confidence interval (at `confidence`, e.g. 0.95) of the ratio of the
/// geometric means of `b` and `a`, as a relative change. Needs at least two positive
/// finite values per side; None otherwise.
pub fn welch_change(a: &[f64], b: &[f64], confidence: f64) -> Option<RelativeChange> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (la, lb) = (logs(a)?, logs(b)?);
    let d = mean(&lb) - mean(&la);
    let va = variance(&la)? / la.len() as f64;
    let vb = variance(&lb)? / lb.len() as f64;
    let se2 = va + vb;
    let df = se2 * se2 / (va * va / (la.len() as f64 - 1.0) + vb * vb / (lb.len() as f64 - 1.0));
    RelativeChange::from_log(d, se2.sqrt(), df, confidence)
}

/// The paired interval: Student's t interval of the mean of `ln(b / a)` over rounds in
/// which both sides were measured (`pairs` = (a, b) per round), as a relative change.
/// A drift the rounds share (a machine that slows down over the campaign) cancels in
/// each ratio. Needs at least two pairs of positive values; None otherwise.
pub fn paired_change(pairs: &[(f64, f64)], confidence: f64) -> Option<RelativeChange> {
    if pairs.len() < 2 {
        return None;
    }
    let ratios: Option<Vec<f64>> = pairs
        .iter()
        .map(|(a, b)| {
            (*a > 0.0 && *b > 0.0 && a.is_finite() && b.is_finite()).then(|| (b / a).ln())
        })
        .collect();
    let ratios = ratios?;
    let n = ratios.len() as f64;
    let se = (variance(&ratios)? / n).sqrt();
    RelativeChange::from_log(mean(&ratios), se, n - 1.0, confidence)
}

#[cfg(test)]
mod tests {
    //! Reference values: `tests/data/reference.py` (SciPy), section `intervals`.
    use super::*;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol, "{a} != {b} (tol {tol})");
    }

    const FASTER: ([f64; 4], [f64; 4]) = (
        [1000.0, 1010.0, 995.0, 1003.0],
        [1100.0, 1090.0, 1112.0, 1105.0],
    );

    #[test]
    fn welch_interval_on_logs_matches_scipy() {
        let rc = welch_change(&FASTER.0, &FASTER.1, 0.95).unwrap();
        close(rc.estimate, 0.0995379292215, 1e-10);
        close(rc.low, 0.0852512590622, 1e-9);
        close(rc.high, 0.11401267467, 1e-9);
        close(rc.df, 5.54305281776, 1e-8);
        let rc = welch_change(&[500.0, 510.0, 490.0], &[505.0, 495.0, 500.0], 0.95).unwrap();
        close(rc.low, -0.0406130590336, 1e-9);
        close(rc.high, 0.0425408428198, 1e-9);
        let rc = welch_change(&[2000.0, 2010.0, 1990.0], &[1800.0, 1810.0, 1795.0], 0.95).unwrap();
        close(rc.estimate, -0.0991645511582, 1e-10);
        close(rc.low, -0.108678800752, 1e-9);
        close(rc.high, -0.0895487433996, 1e-9);
    }

    #[test]
    fn paired_interval_matches_scipy_ttest_1samp_of_log_ratios() {
        // Both sides drift together over the rounds; B is ~5 % lower in each round.
        let pairs = [
            (1487.0, 1410.0),
            (782.0, 745.0),
            (575.0, 548.0),
            (1200.0, 1139.0),
        ];
        let rc = paired_change(&pairs, 0.95).unwrap();
        close(rc.estimate, -0.0492239925286, 1e-10);
        close(rc.low, -0.0531054670595, 1e-9);
        close(rc.high, -0.0453266072029, 1e-9);
        close(rc.df, 3.0, 0.0);
        // Treated as independent samples, the shared drift swamps the change.
        let (a, b): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
        let w = welch_change(&a, &b, 0.95).unwrap();
        assert!(w.low < -0.5 && w.high > 0.5, "{w:?}");
    }

    #[test]
    fn mean_interval_matches_scipy() {
        let i = mean_interval(&[10.0, 12.0, 11.0, 13.0], 0.95).unwrap();
        close(i.mean, 11.5, 1e-12);
        close(i.low, 9.4457397432, 1e-9);
        close(i.high, 13.5542602568, 1e-9);
        assert!(mean_interval(&[1.0], 0.95).is_none());
    }

    #[test]
    fn degenerate_inputs_are_rejected_not_panicking() {
        assert!(welch_change(&[1.0], &[2.0, 3.0], 0.95).is_none());
        assert!(welch_change(&[0.0, 1.0], &[2.0, 3.0], 0.95).is_none());
        assert!(paired_change(&[(1.0, 2.0)], 0.95).is_none());
        assert!(paired_change(&[(1.0, 2.0), (0.0, 1.0)], 0.95).is_none());
        let rc = welch_change(&[5.0, 5.0], &[10.0, 10.0], 0.95).unwrap();
        close(rc.estimate, 1.0, 1e-12);
        close(rc.low, 1.0, 1e-12);
        assert!(t_quantile(0.0, 0.975).is_none());
    }

    #[test]
    fn half_width_is_symmetric_on_the_log_scale() {
        let rc = welch_change(&FASTER.0, &FASTER.1, 0.95).unwrap();
        let h = rc.half_width();
        close((1.0 + rc.estimate) * (1.0 + h), 1.0 + rc.high, 1e-12);
        close((1.0 + rc.estimate) / (1.0 + h), 1.0 + rc.low, 1e-12);
    }
}
