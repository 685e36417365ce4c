//! How precisely a cell's repeats pin its figure down, and how many repeats a precision
//! asks for: the rule behind `[run] precision` (a cell repeats until it is precise
//! enough, or reaches `max_repeats`).
//!
//! The precision of a cell is the half-width of the 95 % Student's t interval of the
//! mean of its repeats, relative to their median: `±2 %` means the interval reaches
//! 2 % of the cell's typical value either side. With one repeat there is no interval
//! (the precision is unknown, never "reached"). The number of repeats a spread needs is
//! the smallest `n` at which `t₀.₉₇₅(n − 1) · s / √n` is within the precision, `s` the
//! standard deviation measured — an estimate, since `s` is itself uncertain with few
//! repeats.

use crate::describe::{median, stddev};
use crate::interval::t_quantile;
use serde::Serialize;

/// Confidence of the interval a precision is stated at.
pub const CONFIDENCE: f64 = 0.95;

/// The most repeats [`repeats_for`] looks for.
pub const MAX_REPEATS: usize = 10_000;

/// A cell's precision.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Precision {
    /// Half-width of the interval of the mean, relative to the median (0.02 = ±2 %).
    pub half_width: f64,
    /// Repeats it was computed from.
    pub repeats: usize,
}

impl Precision {
    /// True when the half-width is within `target` (0.02 = 2 %).
    pub fn reached(&self, target: f64) -> bool {
        self.half_width <= target
    }
}

/// The precision of `values` (a cell's repeats); None with fewer than two, a value that
/// is not finite, or a median of 0.
pub fn precision(values: &[f64]) -> Option<Precision> {
    if values.len() < 2 || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let m = median(values);
    if m == 0.0 {
        return None;
    }
    let n = values.len() as f64;
    let q = t_quantile(n - 1.0, 0.5 + CONFIDENCE / 2.0)?;
    let half = q * stddev(values)? / n.sqrt();
    Some(Precision {
        half_width: half / m.abs(),
        repeats: values.len(),
    })
}

/// How many repeats the spread of `values` needs for a half-width within `target`
/// (0.02 = 2 %): at least 2; None with fewer than two values, a target that is not
/// positive, or when even [`MAX_REPEATS`] would not do.
pub fn repeats_for(values: &[f64], target: f64) -> Option<usize> {
    if values.len() < 2 || target.is_nan() || target <= 0.0 || values.iter().any(|v| !v.is_finite())
    {
        return None;
    }
    let m = median(values).abs();
    if m == 0.0 {
        return None;
    }
    let relative_sd = stddev(values)? / m;
    (2..=MAX_REPEATS).find(|&n| {
        let n = n as f64;
        t_quantile(n - 1.0, 0.5 + CONFIDENCE / 2.0)
            .is_some_and(|q| q * relative_sd / n.sqrt() <= target)
    })
}

#[cfg(test)]
mod tests {
    //! Reference values: `tests/data/reference.py`, section `precision`
    //! (`scipy.stats.ttest_1samp(...).confidence_interval`).
    use super::*;

    #[test]
    fn the_half_width_is_the_t_interval_relative_to_the_median() {
        let p = precision(&[1000.0, 1010.0, 990.0, 1004.0]).unwrap();
        assert_eq!(p.repeats, 4);
        assert!((p.half_width - 0.013349674).abs() < 1e-8, "{p:?}");
        assert!(p.reached(0.02) && !p.reached(0.01));
    }

    #[test]
    fn one_repeat_or_broken_values_have_no_precision() {
        assert!(precision(&[1000.0]).is_none());
        assert!(precision(&[1000.0, f64::NAN]).is_none());
        assert!(precision(&[0.0, 0.0]).is_none());
        let same = precision(&[5.0, 5.0, 5.0]).unwrap();
        assert_eq!(same.half_width, 0.0);
    }

    #[test]
    fn the_repeats_a_spread_needs() {
        // 1.41 % relative standard deviation: t(3) · s / √4 = 2.25 % is not within
        // ±2 %, t(4) · s / √5 = 1.76 % is.
        let values = [990.0, 1010.0];
        let sd = stddev(&values).unwrap() / 1000.0;
        assert!((sd - 0.014142135).abs() < 1e-8);
        assert_eq!(repeats_for(&values, 0.02), Some(5));
        assert_eq!(repeats_for(&values, 0.5), Some(2));
        assert_eq!(repeats_for(&values, 0.0), None);
        assert_eq!(repeats_for(&[1.0, 1.0], 0.01), Some(2));
    }
}
