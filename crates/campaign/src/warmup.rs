//! `[run] warmup = "auto"`: a test's own run is watched interval by interval and
//! stopped once its steady window (after the warm-up `pgsurge_analysis::steady`
//! detects) has lasted the test's `duration`, or at `warmup_max` beyond it. The stored
//! figures are then the steady window's, as a fixed warm-up's run is discarded: the
//! warm-up's intervals are kept, marked as warm-up and ending at elapsed 0 where the
//! window begins; the raw figures of the whole run stay in the result document.

use pgsurge_analysis::steady::window_reached;
use pgsurge_results::{IntervalSample, RunResult};
use pgsurge_store::{HistogramRecord, RunWrite, WarningRecord};

/// The series of a run so far, and the window it must reach.
pub struct Watch {
    duration_s: f64,
    tps: Vec<f64>,
    latency: Vec<f64>,
    /// False once an interval completed no transaction (its latency is no value).
    latency_usable: bool,
}

impl Watch {
    /// A watch for a test of `duration_s` seconds.
    pub fn new(duration_s: f64) -> Watch {
        Watch {
            duration_s,
            tps: Vec::new(),
            latency: Vec::new(),
            latency_usable: true,
        }
    }

    /// Adds an interval; true once the run has settled, does not drift, and its
    /// steady window has lasted the duration.
    pub fn push(&mut self, iv: &IntervalSample) -> bool {
        self.tps.push(iv.tps);
        self.latency.push(iv.latency_ms);
        self.latency_usable &= iv.transactions > 0;
        let window = (self.duration_s / iv.duration_s.max(1e-3)).ceil() as usize;
        let latency = self.latency_usable.then_some(self.latency.as_slice());
        window_reached(&self.tps, latency, window)
    }
}

/// Makes the stored figures of an automatic warm-up's run those of its steady window
/// (see the module doc); a warning when the run had too few intervals to find one, or
/// never became steady.
pub fn keep_steady_window(result: &RunResult, w: &mut RunWrite, key: &str) {
    let warn = |code: &str, message: String| WarningRecord {
        set_id: None,
        run_id: None,
        code: code.into(),
        message,
        created_at: pgsurge_store::now_rfc3339(),
    };
    let Some(st) = &result.steady_state else {
        w.warnings.push(warn(
            "warmup_auto",
            format!(
                "test {key}: too few intervals to find where the warm-up ended; the whole run is measured"
            ),
        ));
        return;
    };
    if !st.steady {
        w.warnings.push(warn(
            "not_steady",
            format!(
                "test {key}: not steady after {:.0} s: {}",
                result.bench_duration_us as f64 / 1e6,
                st.reasons.join("; ")
            ),
        ));
    }
    let r = &mut w.run;
    r.warmup_s = Some(st.warmup_s);
    r.measured_s = Some(st.window_s);
    r.tps = Some(st.tps);
    r.transactions = i64::try_from(st.transactions).ok();
    r.latency_mean_ms = st.latency_mean_ms;
    // Over the window only what the intervals hold is known.
    r.latency_stddev_ms = None;
    r.latency_min_ms = None;
    r.latency_max_ms = None;
    if !st.percentiles.is_empty() {
        r.set_latency_percentiles(|rank| {
            st.percentiles
                .iter()
                .find(|p| (p.percentile - rank).abs() < 1e-9)
                .map(|p| p.latency_ms)
        });
    }
    // The window begins where its first interval does.
    let shift = w
        .intervals
        .get(st.warmup_intervals)
        .map_or(st.warmup_s, |i| i.elapsed_s);
    for (i, iv) in w.intervals.iter_mut().enumerate() {
        iv.warmup = i < st.warmup_intervals;
        iv.elapsed_s -= shift;
    }
    for h in &mut w.interval_histograms {
        h.elapsed_s -= shift;
    }
    // The run's latency histogram (all scripts) becomes the window's.
    let window: Vec<_> = w
        .interval_histograms
        .iter()
        .filter(|h| h.elapsed_s >= -1e-9)
        .filter_map(|h| h.decode().ok())
        .collect();
    let mut merged = window.into_iter().reduce(|mut a, b| {
        let _ = a.add(&b);
        a
    });
    if let Some(h) = merged.take() {
        if let Ok(record) = HistogramRecord::from_histogram("latency", -1, None, &h) {
            w.histograms
                .retain(|x| !(x.kind == "latency" && x.script_index == -1));
            w.histograms.push(record);
        }
    }
}
