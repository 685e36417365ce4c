//! One second (one sampling interval) of a running test: its rate, and its latency
//! percentiles read from the histogram of that second alone — exact to the
//! histogram's precision, never a percentile of percentiles.

use pgsurge_results::percentile::latency_percentiles;
use pgsurge_results::{IntervalSample, LatencyHistogram};

/// The ranks a second's latency is given at.
pub const RANKS: [f64; 4] = [50.0, 90.0, 95.0, 99.0];

/// One second of a test.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Second {
    /// End of the second, seconds since the run began (the warm-up's are its own run's).
    pub elapsed_s: f64,
    /// End of the second, seconds since the Unix epoch.
    pub epoch_s: f64,
    /// Length of the interval, in seconds.
    pub duration_s: f64,
    /// True for a second of the warm-up (not measured).
    pub warmup: bool,
    /// Transactions per second.
    pub tps: f64,
    /// Transactions completed.
    pub transactions: u64,
    /// Transactions failed.
    pub failures: u64,
    /// Mean latency, ms.
    pub latency_mean_ms: f64,
    /// `(rank, ms)` at [`RANKS`], from the second's histogram; empty when the run kept
    /// none or nothing completed.
    pub percentiles: Vec<(f64, f64)>,
    /// The slowest transaction of the second, ms (from its histogram).
    pub latency_max_ms: Option<f64>,
    /// The server's waits (`pg.wait.*`, sessions) and its host's figures (`os.*`)
    /// sampled during the second, by name, when the runner samples them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<(String, f64)>,
}

impl Second {
    /// The second `iv`, its percentiles from `histogram` (the second's own), or those
    /// the sample carries when there is none (a distributed run's merged seconds).
    pub fn of(iv: &IntervalSample, histogram: Option<&LatencyHistogram>, warmup: bool) -> Self {
        let (percentiles, latency_max_ms) = match histogram.filter(|h| !h.is_empty()) {
            Some(h) => {
                let hdr = h.to_hdr();
                let p = latency_percentiles(&hdr, &RANKS)
                    .into_iter()
                    .map(|p| (p.percentile, p.latency_ms))
                    .collect();
                (p, Some(hdr.max() as f64 / 1000.0))
            }
            None => (
                iv.percentiles
                    .iter()
                    .map(|p| (p.percentile, p.latency_ms))
                    .collect(),
                None,
            ),
        };
        Second {
            elapsed_s: iv.elapsed_s,
            epoch_s: iv.epoch_s,
            duration_s: iv.duration_s,
            warmup,
            tps: iv.tps,
            transactions: iv.transactions,
            failures: iv.failures,
            latency_mean_ms: iv.latency_ms,
            percentiles,
            latency_max_ms,
            metrics: Vec::new(),
        }
    }

    /// The second with the waits and host figures sampled beside it (none: as it is).
    pub fn with_metrics(&self, metrics: Vec<(String, f64)>) -> Second {
        Second {
            metrics,
            ..self.clone()
        }
    }

    /// The latency at `rank`, when the second has it.
    pub fn at(&self, rank: f64) -> Option<f64> {
        self.percentiles
            .iter()
            .find(|(r, _)| (*r - rank).abs() < 1e-9)
            .map(|(_, ms)| *ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The percentiles are the second's own histogram's: 100 transactions of 1..=100 ms
    /// give 50 ms at p50 and 99 ms at p99 (within the histogram's 0.1 %).
    #[test]
    fn a_seconds_percentiles_come_from_its_histogram() {
        let mut h = LatencyHistogram::new(pgsurge_results::histogram::SIGFIG_FINE);
        for ms in 1..=100u64 {
            h.record_value(ms * 1000);
        }
        let iv = IntervalSample {
            elapsed_s: 1.0,
            epoch_s: 0.0,
            duration_s: 1.0,
            transactions: 100,
            failures: 0,
            skipped: 0,
            retried: 0,
            retries: 0,
            tps: 100.0,
            latency_ms: 50.5,
            stddev_ms: 0.0,
            lag_ms: 0.0,
            percentiles: Vec::new(),
            histogram: None,
        };
        let s = Second::of(&iv, Some(&h), false);
        let near = |a: f64, b: f64| (a - b).abs() <= b * 0.001 + 1e-9;
        assert!(near(s.at(50.0).unwrap(), 50.0), "{s:?}");
        assert!(near(s.at(99.0).unwrap(), 99.0), "{s:?}");
        assert!(near(s.latency_max_ms.unwrap(), 100.0), "{s:?}");
        // Without a histogram, the sample's own percentiles (none here).
        assert!(Second::of(&iv, None, true).percentiles.is_empty());
    }
}
