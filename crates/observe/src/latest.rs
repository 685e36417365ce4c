//! The newest waits and host figures of a running test, for a live view: the samplers'
//! threads put each second's values as it is sampled, and whoever shows them takes
//! them once per second.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use pgsurge_store::MetricSample;

/// The newest value of each metric a live view shows (the server's waits, `pg.wait.*`,
/// and its host's, `os.*`), put by the samplers' threads as each second is sampled and
/// taken once per second by whoever shows them. Beside the samples kept for the store,
/// never instead of them.
#[derive(Debug, Clone, Default)]
pub struct Latest(Arc<Mutex<BTreeMap<String, f64>>>);

impl Latest {
    /// Keeps the newest value of each shown metric of `samples`.
    pub fn put(&self, samples: &[MetricSample]) {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        for s in samples.iter().filter(|s| Self::shown(&s.metric)) {
            kept.insert(s.metric.clone(), s.value);
        }
    }

    /// What was sampled since the last take, by metric name; empty when nothing was.
    pub fn take(&self) -> Vec<(String, f64)> {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut *kept).into_iter().collect()
    }

    /// Whether a live view shows `metric`: the server's waits and its host's figures.
    fn shown(metric: &str) -> bool {
        metric.starts_with("pg.wait.") || metric.starts_with("os.")
    }
}
