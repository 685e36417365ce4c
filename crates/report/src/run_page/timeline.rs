//! The page's one time base and what is placed on it: seconds since the test's
//! measured start, the measured intervals as drawn (rates over each interval's own
//! length, short ones left out, missing ones a break), the sampled metrics as points
//! (a long gap a break) and the moments a checkpoint was counted.

use crate::charts::{Dash, Series};
use pgsurge_store::{IntervalRecord, MetricSample};
use std::collections::{BTreeMap, BTreeSet};

/// Epoch second of the measured start: the first measured interval's start minus its
/// offset (intervals count from the measured start), else the run's start.
pub(crate) fn time_base(intervals: &[IntervalRecord], start_epoch: Option<f64>) -> f64 {
    intervals
        .iter()
        .find(|i| !i.warmup)
        .map(|i| i.ts - i.elapsed_s)
        .or(start_epoch)
        .or_else(|| intervals.first().map(|i| i.ts))
        .unwrap_or(0.0)
}

/// Intervals shorter than this share of the nominal interval are left out.
pub(super) const MIN_INTERVAL_SHARE: f64 = 0.5;

/// The measured intervals as drawn: x is the middle of the interval (seconds since the
/// measured start), None is a break (an interval missing from the store).
pub(crate) struct IntervalView<'a> {
    /// Drawn intervals and breaks.
    pub slots: Vec<Option<(f64, &'a IntervalRecord)>>,
    /// Starts of the intervals left out as too short, with their lengths.
    pub left_out: Vec<(f64, f64)>,
    /// Warm-up intervals not drawn.
    pub warmup: usize,
}

pub(crate) fn interval_view(intervals: &[IntervalRecord]) -> IntervalView<'_> {
    let measured: Vec<&IntervalRecord> = intervals
        .iter()
        .filter(|i| !i.warmup && i.duration_s > 0.0)
        .collect();
    let mut durations: Vec<f64> = measured.iter().map(|i| i.duration_s).collect();
    let nominal = if durations.is_empty() {
        1.0
    } else {
        durations.sort_by(f64::total_cmp);
        durations[durations.len() / 2]
    };
    let mut slots = Vec::new();
    let mut left_out = Vec::new();
    let mut prev_end: Option<f64> = None;
    for i in measured {
        if i.duration_s < MIN_INTERVAL_SHARE * nominal {
            left_out.push((i.elapsed_s, i.duration_s));
            prev_end = Some(i.elapsed_s + i.duration_s);
            continue;
        }
        if prev_end.is_some_and(|e| i.elapsed_s - e > 0.5 * nominal) {
            slots.push(None);
        }
        slots.push(Some((i.elapsed_s + i.duration_s / 2.0, i)));
        prev_end = Some(i.elapsed_s + i.duration_s);
    }
    IntervalView {
        slots,
        left_out,
        warmup: intervals.iter().filter(|i| i.warmup).count(),
    }
}

impl IntervalView<'_> {
    /// A series of `f` over the drawn intervals (NaN at breaks and where `f` has no value).
    pub fn series(&self, name: &str, f: impl Fn(&IntervalRecord) -> Option<f64>) -> Series {
        Series::line(
            name,
            self.slots
                .iter()
                .map(|s| match s {
                    Some((x, i)) => (*x, f(i).unwrap_or(f64::NAN)),
                    None => (f64::NAN, f64::NAN),
                })
                .collect(),
        )
    }

    /// Transactions per second of each interval over its own length.
    pub fn tps(&self) -> Series {
        self.series("tps", |i| Some(i.transactions as f64 / i.duration_s))
    }

    /// The note every per-interval chart carries.
    pub fn note(&self) -> String {
        let mut parts =
            vec!["x: middle of each interval; rates over the interval's own length".to_string()];
        for (start, len) in &self.left_out {
            parts.push(format!(
                "interval at {start:.2} s left out: {len:.3} s long, under half an interval"
            ));
        }
        if self.warmup > 0 {
            parts.push(format!("{} warm-up intervals not drawn", self.warmup));
        }
        parts.join("; ")
    }
}

/// Samples of each metric, sorted by time, on the time base `t0`; a gap longer than
/// 1.5 times the metric's usual spacing is a break (NaN).
pub(crate) fn metric_points(metrics: &[MetricSample], t0: f64) -> BTreeMap<&str, Vec<(f64, f64)>> {
    let mut by: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    for m in metrics {
        by.entry(m.metric.as_str())
            .or_default()
            .push((m.ts - t0, m.value));
    }
    for pts in by.values_mut() {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut steps: Vec<f64> = pts.windows(2).map(|w| w[1].0 - w[0].0).collect();
        if steps.len() < 2 {
            continue;
        }
        steps.sort_by(f64::total_cmp);
        let usual = steps[steps.len() / 2];
        let mut out = Vec::with_capacity(pts.len());
        for (k, p) in pts.iter().enumerate() {
            if k > 0 && p.0 - pts[k - 1].0 > 1.5 * usual {
                out.push((f64::NAN, f64::NAN));
            }
            out.push(*p);
        }
        *pts = out;
    }
    by
}

/// Vertical markers: the moments a checkpoint was counted. A campaign stores the
/// checkpointer's counters (`pg.checkpointer.timed` / `.requested`, whichever view the
/// server version has) as per-second rates (`…_per_s`): a sample with a positive rate
/// marks a checkpoint; a cumulative counter marks where it increased.
pub(crate) fn checkpoint_moments(metrics: &[MetricSample], t0: f64) -> Vec<f64> {
    const COUNTERS: [&str; 2] = ["pg.checkpointer.timed", "pg.checkpointer.requested"];
    let mut out = BTreeSet::new();
    let mut cumulative: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    for m in metrics {
        let name = m.metric.as_str();
        if let Some(base) = name.strip_suffix("_per_s") {
            if COUNTERS.contains(&base) && m.value > 0.0 {
                out.insert(((m.ts - t0) * 1000.0).round() as i64);
            }
        } else if COUNTERS.contains(&name) {
            cumulative.entry(name).or_default().push((m.ts, m.value));
        }
    }
    for (_, mut series) in cumulative {
        series.sort_by(|a, b| a.0.total_cmp(&b.0));
        for w in series.windows(2) {
            if w[1].1 > w[0].1 {
                out.insert(((w[1].0 - t0) * 1000.0).round() as i64);
            }
        }
    }
    out.into_iter().map(|ms| ms as f64 / 1000.0).collect()
}

/// A sampled metric as a series named `label`, when it was sampled.
pub(super) fn metric_series(
    points: &BTreeMap<&str, Vec<(f64, f64)>>,
    name: &str,
    label: &str,
) -> Option<Series> {
    points.get(name).map(|p| Series::line(label, p.clone()))
}

/// The latency percentiles per interval that were stored (p50, p90, p99, max), one line
/// style each.
pub(super) fn latency_series(view: &IntervalView<'_>) -> Vec<Series> {
    let mut lat: Vec<Series> = ["p50", "p90", "p99", "max"]
        .into_iter()
        .enumerate()
        .map(|(k, label)| {
            let mut s = view.series(label, |i| match k {
                0 => i.latency_p50_ms,
                1 => i.latency_p90_ms,
                2 => i.latency_p99_ms,
                _ => i.latency_max_ms,
            });
            s.dash = Dash::nth(k);
            s
        })
        .collect();
    lat.retain(|s| s.is_drawn());
    lat
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::LineChart;

    fn iv(elapsed: f64, dur: f64, tx: i64, warmup: bool) -> IntervalRecord {
        IntervalRecord {
            ts: 1000.0 + elapsed,
            elapsed_s: elapsed,
            duration_s: dur,
            warmup,
            transactions: tx,
            // What the engine stores: a rate over the nominal second, wrong for a
            // partial interval; the page must not use it.
            tps: tx as f64,
            latency_p99_ms: (tx > 0).then_some(2.0),
            ..Default::default()
        }
    }

    fn same(a: &[(f64, f64)], b: &[(f64, f64)]) -> bool {
        a.len() == b.len()
            && a.iter().zip(b).all(|(p, q)| {
                (p.0.is_nan() && q.0.is_nan() || (p.0 - q.0).abs() < 1e-9)
                    && (p.1.is_nan() && q.1.is_nan() || (p.1 - q.1).abs() < 1e-9)
            })
    }

    #[test]
    fn intervals_are_scaled_to_their_length_and_short_ones_left_out() {
        let intervals = vec![
            iv(-2.0, 1.0, 50, true),
            iv(-1.0, 1.0, 60, true),
            iv(0.0, 1.0, 100, false),
            iv(1.0, 1.0, 0, false),
            iv(2.0, 1.0, 120, false),
            // 3.0..4.0 missing from the store
            iv(4.0, 1.0, 110, false),
            iv(5.0, 0.6, 66, false),
            iv(5.6, 0.041, 4, false),
        ];
        assert_eq!(time_base(&intervals, Some(990.0)), 1000.0);
        let view = interval_view(&intervals);
        let tps = view.tps();
        let nan = f64::NAN;
        let expected = [
            (0.5, 100.0),
            (1.5, 0.0),
            (2.5, 120.0),
            (nan, nan),
            (4.5, 110.0),
            (5.3, 110.0),
        ];
        assert!(same(&tps.points, &expected), "{:?}", tps.points);
        assert_eq!(view.left_out, [(5.6, 0.041)]);
        assert_eq!(view.warmup, 2);
        let note = view.note();
        assert!(
            note.contains("5.60 s left out") && note.contains("2 warm-up"),
            "{note}"
        );
        // A zero-transaction interval has no latency: missing, not zero.
        let p99 = view.series("p99", |i| i.latency_p99_ms);
        assert!(p99.points[1].1.is_nan() && p99.points[0].1 == 2.0);
        // What is drawn equals what is stored: the chart's polylines hold exactly the
        // finite points, split at the gaps.
        let chart = LineChart {
            title: "t".into(),
            y_label: "tps".into(),
            series: vec![tps],
            ..Default::default()
        };
        assert_eq!(crate::charts::tests::polylines(&chart.to_svg()), [3, 2]);
    }

    #[test]
    fn metrics_share_the_time_base_and_gaps_break_lines() {
        let m = |ts: f64, metric: &str, value: f64| MetricSample {
            ts,
            metric: metric.into(),
            value,
        };
        let metrics = vec![
            m(1000.5, "os.cpu.user_pct", 0.0),
            m(1001.0, "os.cpu.user_pct", 50.0),
            m(1001.5, "os.cpu.user_pct", 0.0),
            m(1002.5, "os.cpu.user_pct", 40.0),
            m(1003.0, "os.cpu.user_pct", 45.0),
            m(1002.0, "pg.checkpointer.requested_per_s", 0.0),
            m(1003.0, "pg.checkpointer.requested_per_s", 1.0),
        ];
        let pts = metric_points(&metrics, 1000.0);
        let nan = f64::NAN;
        assert!(same(
            &pts["os.cpu.user_pct"],
            &[
                (0.5, 0.0),
                (1.0, 50.0),
                (1.5, 0.0),
                (nan, nan),
                (2.5, 40.0),
                (3.0, 45.0)
            ]
        ));
        assert_eq!(checkpoint_moments(&metrics, 1000.0), [3.0]);
    }
}
