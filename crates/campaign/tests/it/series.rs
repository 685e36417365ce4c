//! What the tests read from a stored test's per-second series.

use pgsurge_store::MetricSample;

/// What a per-second series adds up to over the run: each sample's rate times the
/// time since the sampler's tick before. The ticks are those of a gauge, sampled at
/// every tick from the first (which only reads the counters that rates are taken from).
pub fn total(samples: &[MetricSample], metric: &str) -> f64 {
    let mut ticks: Vec<f64> = samples
        .iter()
        .filter(|m| m.metric == "pg.db.size_bytes")
        .map(|m| m.ts)
        .collect();
    ticks.sort_by(f64::total_cmp);
    samples
        .iter()
        .filter(|m| m.metric == metric)
        .map(|m| {
            let i = ticks.partition_point(|t| *t < m.ts);
            assert!(i > 0, "{metric}: a rate at the sampler's first tick");
            m.value * (m.ts - ticks[i - 1])
        })
        .sum()
}

/// Checks that `metric` (a per-second series) carries what `moved` (its counter's
/// change between the snapshots before and after the test) says: what the series adds
/// up to happened while the sampler ran, inside the snapshots, so it is at most
/// `moved`. Backends publish their statistics in batches, at most about once a second
/// and when they exit, so a single second holds no fixed share of a run; but the
/// run's first second and more are published before it ends, so the series holds a
/// good part of `moved`.
pub fn assert_carries(samples: &[MetricSample], metric: &str, moved: f64, what: &str) {
    let total = total(samples, metric);
    assert!(
        total <= moved * (1.0 + 1e-9) + 1e-6 && total >= moved * 0.1,
        "{what}: {metric} adds up to {total}, its counter moved by {moved}"
    );
}
