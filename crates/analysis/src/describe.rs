//! Plain statistics of one sample: mean, median, variance, standard deviation,
//! geometric mean, and the five-number summary a table of repeats prints.
//!
//! Every function takes the values as given and never drops any: outliers are flagged
//! by [`crate::outliers`], not removed here. An empty sample gives NaN (or `None`), never
//! a panic.

use serde::Serialize;

/// Arithmetic mean; NaN when empty.
pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Median (the mean of the two middle values for an even count); NaN when empty.
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

/// Sample variance (divisor n − 1); None with fewer than two values.
pub fn variance(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let m = mean(values);
    Some(values.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (values.len() as f64 - 1.0))
}

/// Sample standard deviation (divisor n − 1); None with fewer than two values.
pub fn stddev(values: &[f64]) -> Option<f64> {
    variance(values).map(f64::sqrt)
}

/// Geometric mean; NaN when empty or when a value is not positive and finite (a
/// geometric mean of a zero or negative rate does not exist).
pub fn geometric_mean(values: &[f64]) -> f64 {
    if values.is_empty() || values.iter().any(|v| *v <= 0.0 || !v.is_finite()) {
        return f64::NAN;
    }
    (values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp()
}

/// Smallest value; NaN when empty.
pub fn min(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::NAN, f64::min)
}

/// Largest value; NaN when empty.
pub fn max(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::NAN, f64::max)
}

/// The natural logarithms of positive values; None when one is not positive and finite.
pub fn logs(values: &[f64]) -> Option<Vec<f64>> {
    values
        .iter()
        .map(|v| (*v > 0.0 && v.is_finite()).then(|| v.ln()))
        .collect()
}

/// The plain statistics of a sample (one side's repeats of a cell).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    /// Values.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median.
    pub median: f64,
    /// Lowest.
    pub min: f64,
    /// Highest.
    pub max: f64,
    /// Sample standard deviation (n − 1); None with fewer than 2 values.
    pub stddev: Option<f64>,
}

impl Summary {
    /// The statistics of `values` (NaN where there is nothing to summarize).
    pub fn of(values: &[f64]) -> Summary {
        Summary {
            n: values.len(),
            mean: mean(values),
            median: median(values),
            min: min(values),
            max: max(values),
            stddev: stddev(values),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_a_small_sample() {
        let s = Summary::of(&[100.0, 120.0, 110.0]);
        assert_eq!(
            (s.n, s.mean, s.median, s.min, s.max),
            (3, 110.0, 110.0, 100.0, 120.0)
        );
        assert!((s.stddev.unwrap() - 10.0).abs() < 1e-12);
        assert_eq!(Summary::of(&[5.0]).stddev, None);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn empty_and_non_positive_samples_give_nan_not_a_panic() {
        assert!(median(&[]).is_nan());
        assert!(mean(&[]).is_nan());
        assert!(min(&[]).is_nan() && max(&[]).is_nan());
        assert!(geometric_mean(&[]).is_nan());
        assert!(geometric_mean(&[1.0, 0.0]).is_nan());
        assert!(logs(&[1.0, -1.0]).is_none());
        assert_eq!(variance(&[1.0]), None);
    }

    #[test]
    fn geometric_mean_of_ratios() {
        assert!((geometric_mean(&[2.0, 0.5]) - 1.0).abs() < 1e-12);
        assert!((geometric_mean(&[1.1, 1.1, 1.1]) - 1.1).abs() < 1e-12);
    }
}
