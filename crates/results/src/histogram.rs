//! [`LatencyHistogram`]: an HDR histogram of microsecond values with a bounded
//! relative error, sized once for 1 µs .. 1 h so that recording never allocates
//! (values beyond an hour still fit: the histogram grows, which is rare).

use hdrhistogram::Histogram;

/// Highest value (µs) the histogram holds without resizing: one hour.
pub const HIGHEST_TRACKABLE_US: u64 = 3_600_000_000;

/// Significant digits for run-, script- and interval-level histograms (0.1 % error).
pub const SIGFIG_FINE: u8 = 3;
/// Significant digits for per-command histograms (1 % error, ~8× smaller).
pub const SIGFIG_COARSE: u8 = 2;

/// HDR histogram of latencies in µs.
#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    hist: Histogram<u64>,
}

impl LatencyHistogram {
    /// An empty histogram with `sigfig` significant digits (2 → ≤1 % error,
    /// 3 → ≤0.1 %), pre-sized for 1 µs .. 1 h.
    pub fn new(sigfig: u8) -> Self {
        let sigfig = sigfig.clamp(1, 5);
        let mut hist = Histogram::new_with_bounds(1, HIGHEST_TRACKABLE_US, sigfig)
            .expect("1..1h with 1..=5 significant digits is a valid HDR configuration");
        hist.auto(true);
        LatencyHistogram { hist }
    }

    /// Record one value in µs (rounded to the nearest µs; negative and NaN count as 0).
    #[inline]
    pub fn record(&mut self, value_us: f64) {
        let v = if value_us.is_nan() || value_us <= 0.0 {
            0
        } else if value_us >= u64::MAX as f64 {
            u64::MAX / 2
        } else {
            value_us.round() as u64
        };
        // With auto-resize on, recording only fails past u64 ranges we clamp away.
        let _ = self.hist.record(v);
    }

    /// Add every value of `other` into this histogram.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        // Auto-resize makes add infallible for histograms built by `new`.
        let _ = self.hist.add(&other.hist);
    }

    /// Remove all values, keeping the allocation.
    pub fn reset(&mut self) {
        self.hist.reset();
    }

    /// Number of values recorded.
    pub fn len(&self) -> u64 {
        self.hist.len()
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }

    /// Value (µs) at `percentile` (0..=100), `None` when empty.
    pub fn value_at_percentile(&self, percentile: f64) -> Option<u64> {
        if self.hist.is_empty() {
            return None;
        }
        Some(self.hist.value_at_percentile(percentile.clamp(0.0, 100.0)))
    }

    /// The underlying `hdrhistogram` histogram (for serialization and logs).
    pub fn inner(&self) -> &Histogram<u64> {
        &self.hist
    }

    /// Mutable access to the underlying histogram.
    pub fn inner_mut(&mut self) -> &mut Histogram<u64> {
        &mut self.hist
    }
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram::new(SIGFIG_FINE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Percentiles of a known distribution stay within the advertised error.
    fn check_error(sigfig: u8, bound: f64) {
        let mut h = LatencyHistogram::new(sigfig);
        // 1 µs .. ~3.6 s, geometric steps: exact quantiles are known.
        let mut values = Vec::new();
        let mut v = 1.0f64;
        while v < 3.6e6 {
            values.push(v.round());
            v *= 1.013;
        }
        for x in &values {
            h.record(*x);
        }
        values.sort_by(f64::total_cmp);
        for p in [1.0, 10.0, 50.0, 90.0, 99.0, 99.9, 100.0] {
            let rank = ((p / 100.0) * values.len() as f64).ceil().max(1.0) as usize;
            let exact = values[rank - 1];
            let got = h.value_at_percentile(p).expect("not empty") as f64;
            let err = (got - exact).abs() / exact;
            assert!(
                err <= bound,
                "sigfig {sigfig} p{p}: exact {exact} got {got} err {err}"
            );
        }
    }

    #[test]
    fn hdr_error_is_at_most_one_percent() {
        check_error(SIGFIG_COARSE, 0.01);
        check_error(SIGFIG_FINE, 0.001);
    }

    #[test]
    fn merge_equals_recording_everything() {
        let mut a = LatencyHistogram::new(3);
        let mut b = LatencyHistogram::new(3);
        let mut all = LatencyHistogram::new(3);
        for i in 0..10_000u32 {
            let v = f64::from(i * 37 % 5000 + 1);
            all.record(v);
            if i % 2 == 0 {
                a.record(v)
            } else {
                b.record(v)
            }
        }
        a.merge(&b);
        assert_eq!(a.len(), all.len());
        for p in [50.0, 90.0, 99.0, 99.99] {
            assert_eq!(a.value_at_percentile(p), all.value_at_percentile(p));
        }
    }

    #[test]
    fn huge_and_odd_values_do_not_panic() {
        let mut h = LatencyHistogram::new(2);
        h.record(f64::NAN);
        h.record(-5.0);
        h.record(1e13); // ~116 days: beyond the pre-sized range, auto-resize
        h.record(f64::INFINITY);
        assert_eq!(h.len(), 4);
        assert!(h.value_at_percentile(100.0).expect("not empty") > HIGHEST_TRACKABLE_US);
    }
}
