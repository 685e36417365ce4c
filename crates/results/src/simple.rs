//! [`SimpleStats`]: pgbench's exact running sums (count, min, max, sum, sum of
//! squares) of doubles in microseconds, from which its mean and stddev lines are
//! printed. Kept next to the HDR histograms so the pgbench-compatible numbers are
//! bit-for-bit what pgbench would compute from the same samples.

use serde::{Deserialize, Serialize};

/// Running statistics of one measured quantity (µs), as pgbench keeps them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct SimpleStats {
    /// Number of values added.
    pub count: u64,
    /// Smallest value (0 when empty).
    pub min: f64,
    /// Largest value (0 when empty).
    pub max: f64,
    /// Sum of the values.
    pub sum: f64,
    /// Sum of the squares of the values.
    pub sum2: f64,
}

impl SimpleStats {
    /// Add one value (pgbench's `addToSimpleStats`).
    #[inline]
    pub fn add(&mut self, val: f64) {
        if self.count == 0 || val < self.min {
            self.min = val;
        }
        if self.count == 0 || val > self.max {
            self.max = val;
        }
        self.count += 1;
        self.sum += val;
        self.sum2 += val * val;
    }

    /// Merge another set of values into this one (pgbench's `mergeSimpleStats`).
    pub fn merge(&mut self, other: &SimpleStats) {
        if self.count == 0 || other.min < self.min {
            self.min = other.min;
        }
        if self.count == 0 || other.max > self.max {
            self.max = other.max;
        }
        self.count += other.count;
        self.sum += other.sum;
        self.sum2 += other.sum2;
    }

    /// The union of this set of values and `other`, or `None` when the counts together
    /// do not fit in a `u64` (documents read from outside can carry any count; a sum
    /// must not wrap). Unlike [`SimpleStats::merge`] (pgbench's, whose empty thread
    /// would lower the minimum to 0), an empty side leaves the other unchanged.
    pub fn checked_merge(&self, other: &SimpleStats) -> Option<SimpleStats> {
        let count = self.count.checked_add(other.count)?;
        if other.count == 0 {
            return Some(*self);
        }
        if self.count == 0 {
            return Some(*other);
        }
        Some(SimpleStats {
            count,
            min: self.min.min(other.min),
            max: self.max.max(other.max),
            sum: self.sum + other.sum,
            sum2: self.sum2 + other.sum2,
        })
    }

    /// Mean in µs, `None` when empty.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64)
    }

    /// Population standard deviation in µs exactly as pgbench computes it
    /// (`sqrt(sum2/n - mean²)`, which may be NaN for rounding reasons), `None`
    /// when empty.
    pub fn stddev(&self) -> Option<f64> {
        let mean = self.mean()?;
        Some((self.sum2 / self.count as f64 - mean * mean).sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_merge_refuses_counts_that_wrap_and_keeps_an_empty_side_out() {
        let mut a = SimpleStats::default();
        a.add(5.0);
        a.add(7.0);
        let empty = SimpleStats::default();
        assert_eq!(a.checked_merge(&empty), Some(a));
        assert_eq!(empty.checked_merge(&a), Some(a));
        let mut b = SimpleStats::default();
        b.add(1.0);
        let both = a.checked_merge(&b).expect("fits");
        assert_eq!(
            (both.count, both.min, both.max, both.sum),
            (3, 1.0, 7.0, 13.0)
        );
        let huge = SimpleStats {
            count: u64::MAX,
            ..a
        };
        assert_eq!(huge.checked_merge(&b), None);
    }

    #[test]
    fn add_and_merge_agree() {
        let values = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0];
        let mut all = SimpleStats::default();
        let (mut a, mut b) = (SimpleStats::default(), SimpleStats::default());
        for (i, v) in values.iter().enumerate() {
            all.add(*v);
            if i % 3 == 0 {
                a.add(*v)
            } else {
                b.add(*v)
            }
        }
        let mut merged = SimpleStats::default();
        merged.merge(&a);
        merged.merge(&b);
        assert_eq!(merged.count, all.count);
        assert_eq!(merged.min, 1.0);
        assert_eq!(merged.max, 9.0);
        assert_eq!(merged.sum, all.sum);
        assert_eq!(merged.sum2, all.sum2);
        let mean = 31.0 / 8.0;
        assert_eq!(all.mean(), Some(mean));
        let var = values.iter().map(|v| v * v).sum::<f64>() / 8.0 - mean * mean;
        assert_eq!(all.stddev(), Some(var.sqrt()));
    }

    #[test]
    fn empty_has_zero_min_max_and_no_mean() {
        let mut s = SimpleStats::default();
        assert_eq!((s.min, s.max, s.mean(), s.stddev()), (0.0, 0.0, None, None));
        s.merge(&SimpleStats::default());
        assert_eq!(s.count, 0);
    }
}
