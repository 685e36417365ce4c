//! What a latency percentile is, for every place that reports one: the value at
//! a rank (0..=100) of an HDR histogram of microsecond latencies.
//!
//! The rank is a percentile, not a quantile: `99.9` is passed as is and divided
//! by 100 inside `hdrhistogram`, so the run's JSON, the `--percentiles` lines,
//! the progress lines, a merged distributed run and the store's columns all give
//! the same number for the same histogram and rank.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// A latency percentile.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct Percentile {
    /// Rank, 0..=100 (e.g. 99.9).
    pub percentile: f64,
    /// Latency at that rank, in ms (µs resolution, HDR relative error ≤ 0.1 %).
    pub latency_ms: f64,
}

/// Value (µs) at percentile `rank`: the highest value equivalent to the smallest
/// recorded value that at least `rank` % of the entries are at most (the lowest
/// recorded value's lowest equivalent at rank 0). Ranks outside 0..=100 are
/// clamped. 0 for an empty histogram.
pub fn value_at_rank(h: &Histogram<u64>, rank: f64) -> u64 {
    h.value_at_percentile(rank.clamp(0.0, 100.0))
}

/// Latency in ms at percentile `rank` of a histogram of µs values (see
/// [`value_at_rank`]).
pub fn latency_ms_at(h: &Histogram<u64>, rank: f64) -> f64 {
    value_at_rank(h, rank) as f64 / 1000.0
}

/// The latency percentiles at `ranks`, in the order given.
pub fn latency_percentiles(h: &Histogram<u64>, ranks: &[f64]) -> Vec<Percentile> {
    ranks
        .iter()
        .map(|&p| Percentile {
            percentile: p,
            latency_ms: latency_ms_at(h, p),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_map_to_the_same_values_as_percentiles_and_are_clamped() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap();
        }
        assert_eq!(latency_ms_at(&h, 50.0), 500.223);
        assert_eq!(value_at_rank(&h, 50.0), h.value_at_quantile(0.5));
        assert_eq!(value_at_rank(&h, 99.0), h.value_at_quantile(0.99));
        assert_eq!(value_at_rank(&h, 99.9), h.value_at_percentile(99.9));
        assert_eq!(value_at_rank(&h, 250.0), h.value_at_percentile(100.0));
        assert_eq!(value_at_rank(&h, -1.0), h.value_at_percentile(0.0));
        assert_eq!(value_at_rank(&h, -1.0), 1000);
        let got = latency_percentiles(&h, &[99.0, 50.0]);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].percentile, 99.0);
        assert_eq!(got[0].latency_ms, latency_ms_at(&h, 99.0));
        assert_eq!(got[1].latency_ms, latency_ms_at(&h, 50.0));
        let empty = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        assert_eq!(value_at_rank(&empty, 99.0), 0);
    }
}
