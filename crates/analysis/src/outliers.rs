//! Outliers among the repeats of a cell, by the median absolute deviation (MAD).
//!
//! A repeat is an outlier when its modified z-score `0.6745 · (x − median) / MAD` is
//! beyond ±[`THRESHOLD`] (Iglewicz & Hoaglin's rule; 0.6745, the normal distribution's
//! upper quartile, makes the MAD estimate the standard deviation of normally
//! distributed values). Median and MAD are themselves
//! barely moved by the outliers, unlike a mean and a standard deviation, which one far
//! repeat inflates enough to hide itself. Outliers are flagged, never dropped: every
//! figure keeps them, and the verdict says when it used a rank-based estimate because
//! of them.

use crate::describe::median;

/// The standard normal distribution's 75th percentile.
const NORMAL_Q3: f64 = 0.674_489_750_196_081_7;

/// |modified z-score| above which a repeat is flagged.
pub const THRESHOLD: f64 = 3.5;

/// Fewest repeats for the rule to say anything: with fewer, the median absolute
/// deviation is made of one or two distances, and ordinary spread (three repeats at
/// 880, 881 and 885) would be flagged.
pub const MIN_REPEATS: usize = 5;

/// `0.6745 · (x − median) / MAD` per value; None with fewer than [`MIN_REPEATS`]
/// values or when the MAD is 0 (more than half the values equal: nothing to scale by).
pub fn modified_z_scores(values: &[f64]) -> Option<Vec<f64>> {
    if values.len() < MIN_REPEATS || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let m = median(values);
    let deviations: Vec<f64> = values.iter().map(|v| (v - m).abs()).collect();
    let mad = median(&deviations);
    if mad <= 0.0 {
        return None;
    }
    Some(values.iter().map(|v| NORMAL_Q3 * (v - m) / mad).collect())
}

/// Indices of the outliers of `values` (empty when there are none or the rule cannot
/// apply).
pub fn outliers(values: &[f64]) -> Vec<usize> {
    modified_z_scores(values)
        .map(|z| {
            z.iter()
                .enumerate()
                .filter(|(_, z)| z.abs() > THRESHOLD)
                .map(|(i, _)| i)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    //! Reference values: `tests/data/reference.py`, section `outliers`
    //! (`scipy.stats.median_abs_deviation(x, scale='normal')`).
    use super::*;

    #[test]
    fn a_far_repeat_is_flagged_and_its_score_matches_scipy() {
        let tps = [1012.0, 998.0, 1005.0, 640.0, 1001.0, 1009.0, 995.0];
        let z = modified_z_scores(&tps).unwrap();
        assert!((z[3] - -40.58179997).abs() < 1e-7, "{z:?}");
        assert!((z[0] - 1.23656454).abs() < 1e-7, "{z:?}");
        assert_eq!(outliers(&tps), vec![3]);
    }

    #[test]
    fn an_ordinary_spread_has_none() {
        assert!(outliers(&[1000.0, 1010.0, 995.0, 1003.0, 990.0]).is_empty());
        assert!(outliers(&[1.0, 100.0]).is_empty());
        assert!(outliers(&[880.0, 881.0, 885.0]).is_empty());
        // More than half equal: the MAD is 0 and the rule does not apply.
        assert!(modified_z_scores(&[5.0, 5.0, 5.0, 9.0]).is_none());
    }
}
