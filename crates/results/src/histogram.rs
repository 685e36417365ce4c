//! [`LatencyHistogram`]: an HDR histogram of microsecond values with a bounded
//! relative error, sized once for 1 µs .. 1 h so that recording never allocates
//! (values beyond an hour still fit: the histogram grows, which is rare).
//!
//! Recording is on every transaction's path, so it is done here rather than by the
//! `hdrhistogram` crate: a value's bucket is found with one leading-zero count and two
//! shifts and its counter is bumped — no min/max tracking, no overflow checks, no
//! resize test. The counters use the crate's bucket layout (same significant digits,
//! lowest value 1), so [`LatencyHistogram::to_hdr`] rebuilds the exact crate histogram
//! at report time (percentiles, serialization, interval logs).

use hdrhistogram::Histogram;

/// Highest value (µs) the histogram holds without resizing: one hour.
pub const HIGHEST_TRACKABLE_US: u64 = 3_600_000_000;

/// Values above this are recorded as this (what `hdrhistogram` can still hold).
const CLAMP_US: u64 = u64::MAX / 2;

/// Significant digits for run-, script- and interval-level histograms (0.1 % error).
pub const SIGFIG_FINE: u8 = 3;
/// Significant digits for per-command histograms (1 % error, ~8× smaller).
pub const SIGFIG_COARSE: u8 = 2;

/// HDR histogram of latencies in µs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatencyHistogram {
    sigfig: u8,
    /// log2 of half the number of sub-buckets per bucket.
    half_mag: u32,
    /// 64 − log2(sub-buckets per bucket): leading zeros of the largest bucket-0 value.
    lz_base: u32,
    /// Sub-buckets per bucket − 1: values below it all land in bucket 0.
    mask: u64,
    counts: Vec<u64>,
    total: u64,
}

impl LatencyHistogram {
    /// An empty histogram with `sigfig` significant digits (2 → ≤1 % error,
    /// 3 → ≤0.1 %), pre-sized for 1 µs .. 1 h.
    pub fn new(sigfig: u8) -> Self {
        let sigfig = sigfig.clamp(1, 5);
        // Unit resolution up to 2·10^sigfig, rounded up to a power of two (as HDR does).
        let largest = 2 * 10u64.pow(u32::from(sigfig));
        let count_mag = 64 - (largest - 1).leading_zeros();
        let mut h = LatencyHistogram {
            sigfig,
            half_mag: count_mag - 1,
            lz_base: 64 - count_mag,
            mask: (1u64 << count_mag) - 1,
            counts: Vec::new(),
            total: 0,
        };
        h.counts = vec![0; h.index_of(HIGHEST_TRACKABLE_US) + 1];
        h
    }

    #[inline]
    fn index_of(&self, v: u64) -> usize {
        let bucket = self.lz_base - (v | self.mask).leading_zeros();
        let sub = (v >> bucket) as usize;
        ((bucket as usize + 1) << self.half_mag) + sub - (1usize << self.half_mag)
    }

    /// The lowest value of the counter at `index` (the inverse of `index_of`).
    fn value_of(&self, index: usize) -> u64 {
        let half = 1usize << self.half_mag;
        let bucket = (index >> self.half_mag) as u32;
        let sub = (index & (half - 1)) + half;
        if bucket == 0 {
            (sub - half) as u64
        } else {
            (sub as u64) << (bucket - 1)
        }
    }

    /// Record one value in µs (rounded to the nearest µs; negative and NaN count as 0).
    #[inline]
    pub fn record(&mut self, value_us: f64) {
        // A saturating cast: NaN and anything below 0.5 give 0, +inf gives u64::MAX.
        self.record_value((value_us + 0.5) as u64);
    }

    /// Record one value in whole µs.
    #[inline]
    pub fn record_value(&mut self, v: u64) {
        let i = self.index_of(v);
        match self.counts.get_mut(i) {
            Some(c) => *c += 1,
            None => self.record_beyond(v),
        }
        self.total += 1;
    }

    /// A value past the pre-sized range: grow (rare).
    #[cold]
    fn record_beyond(&mut self, v: u64) {
        let i = self.index_of(v.min(CLAMP_US));
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
    }

    /// Add every value of `other` into this histogram.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        if other.sigfig == self.sigfig {
            if other.counts.len() > self.counts.len() {
                self.counts.resize(other.counts.len(), 0);
            }
            for (d, s) in self.counts.iter_mut().zip(&other.counts) {
                *d += *s;
            }
        } else {
            for (i, &c) in other.counts.iter().enumerate().filter(|(_, c)| **c > 0) {
                let j = self.index_of(other.value_of(i));
                if j >= self.counts.len() {
                    self.counts.resize(j + 1, 0);
                }
                self.counts[j] += c;
            }
        }
        self.total += other.total;
    }

    /// Remove all values, keeping the allocation.
    pub fn reset(&mut self) {
        self.counts.fill(0);
        self.total = 0;
    }

    /// Number of values recorded.
    pub fn len(&self) -> u64 {
        self.total
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Significant digits.
    pub fn sigfig(&self) -> u8 {
        self.sigfig
    }

    /// Value (µs) at `percentile` (0..=100), `None` when empty. Builds the crate
    /// histogram: for several ranks, call [`to_hdr`](Self::to_hdr) once instead.
    pub fn value_at_percentile(&self, percentile: f64) -> Option<u64> {
        if self.is_empty() {
            return None;
        }
        Some(crate::percentile::value_at_rank(&self.to_hdr(), percentile))
    }

    /// The same values as an `hdrhistogram` histogram (1 µs .. 1 h, growing as
    /// needed): identical counts bucket by bucket, for percentiles, serialization
    /// and interval logs.
    pub fn to_hdr(&self) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, HIGHEST_TRACKABLE_US, self.sigfig)
            .expect("1..1h with 1..=5 significant digits is a valid HDR configuration");
        h.auto(true);
        for (i, &c) in self.counts.iter().enumerate() {
            if c > 0 {
                // Auto-resize makes this infallible for values up to CLAMP_US.
                let _ = h.record_n(self.value_of(i), c);
            }
        }
        h
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

    /// Every value lands in the bucket the `hdrhistogram` crate would use, and the
    /// rebuilt histogram equals one recorded by the crate itself.
    #[test]
    fn same_buckets_as_the_hdrhistogram_crate() {
        for sigfig in [SIGFIG_COARSE, SIGFIG_FINE] {
            let mut ours = LatencyHistogram::new(sigfig);
            let mut theirs =
                Histogram::<u64>::new_with_bounds(1, HIGHEST_TRACKABLE_US, sigfig).expect("valid");
            theirs.auto(true);
            let mut v = 0u64;
            while v < 20 * HIGHEST_TRACKABLE_US {
                ours.record_value(v);
                theirs.record(v).expect("auto-resize");
                v = v * 17 / 16 + 1;
            }
            for extra in [0, 1, 2047, 2048, 2049, 4095, 4096, 123_456_789] {
                ours.record_value(extra);
                theirs.record(extra).expect("in range");
            }
            let rebuilt = ours.to_hdr();
            assert_eq!(rebuilt.len(), theirs.len());
            assert_eq!(rebuilt.max(), theirs.max());
            assert_eq!(rebuilt.min(), theirs.min());
            let a: Vec<_> = rebuilt
                .iter_recorded()
                .map(|x| (x.value_iterated_to(), x.count_at_value()))
                .collect();
            let b: Vec<_> = theirs
                .iter_recorded()
                .map(|x| (x.value_iterated_to(), x.count_at_value()))
                .collect();
            assert_eq!(a, b, "sigfig {sigfig}");
            for p in [0.0, 50.0, 90.0, 99.0, 99.9, 100.0] {
                assert_eq!(
                    ours.value_at_percentile(p),
                    Some(theirs.value_at_percentile(p))
                );
            }
        }
    }

    #[test]
    fn merge_across_precisions_and_reset() {
        let mut fine = LatencyHistogram::new(SIGFIG_FINE);
        let mut coarse = LatencyHistogram::new(SIGFIG_COARSE);
        for v in [10.0, 1000.0, 123_456.0] {
            coarse.record(v);
        }
        fine.record(5.0);
        fine.merge(&coarse);
        assert_eq!(fine.len(), 4);
        let p100 = fine.value_at_percentile(100.0).expect("not empty") as f64;
        assert!((p100 - 123_456.0).abs() / 123_456.0 < 0.01, "{p100}");
        fine.reset();
        assert!(fine.is_empty());
        assert_eq!(fine.value_at_percentile(50.0), None);
        assert_eq!(fine.to_hdr().len(), 0);
    }
}
