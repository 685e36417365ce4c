//! The measured window of a run about to be stored. With `warmup = "auto"` a run's
//! stored figures are its steady window's, as a fixed warm-up's run is discarded: the
//! warm-up's intervals are kept, marked as warm-up and ending at elapsed 0 where the
//! window begins; the raw figures of the whole run stay in the result document. A
//! checkpoint that ran inside a window shorter than one checkpoint cycle is named by a
//! fact and a warning; so are an autovacuum during the test and a `-R` schedule lag
//! that grew over it ([`window_facts`]).

use pgsurge_results::RunResult;

use crate::{facts, now_rfc3339, FactRecord, HistogramRecord, RunWrite, WarningRecord};

fn warning(code: &str, message: String) -> WarningRecord {
    WarningRecord {
        set_id: None,
        run_id: None,
        code: code.into(),
        message,
        created_at: now_rfc3339(),
    }
}

/// Makes the stored figures of test `key` those of its steady window (see the module
/// doc); a warning when the run had too few intervals to find one, or never became
/// steady.
pub fn keep_steady_window(result: &RunResult, w: &mut RunWrite, key: &str) {
    let Some(st) = &result.steady_state else {
        w.warnings.push(warning(
            "warmup_auto",
            format!(
                "test {key}: too few intervals to find where the warm-up ended; the whole run is measured"
            ),
        ));
        return;
    };
    if !st.steady {
        w.warnings.push(warning(
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
    let merged = w
        .interval_histograms
        .iter()
        .filter(|h| h.elapsed_s >= -1e-9)
        .filter_map(|h| h.decode().ok())
        .reduce(|mut a, b| {
            let _ = a.add(&b);
            a
        });
    if let Some(h) = merged {
        if let Ok(record) = HistogramRecord::from_histogram("latency", -1, None, &h) {
            w.histograms
                .retain(|x| !(x.kind == "latency" && x.script_index == -1));
            w.histograms.push(record);
        }
    }
}

/// The length of one checkpoint cycle in seconds, from the run's stored settings:
/// `checkpoint_timeout`, or less when the test's WAL rate fills `max_wal_size` sooner.
fn checkpoint_cycle_s(w: &RunWrite) -> Option<f64> {
    let setting = |name: &str| {
        w.settings
            .iter()
            .find(|s| s.name == name)
            .and_then(|s| Some((s.setting.as_deref()?.parse::<f64>().ok()?, s.unit.clone())))
    };
    let (timeout, unit) = setting("checkpoint_timeout")?;
    let timeout_s = match unit.as_deref() {
        Some("min") => timeout * 60.0,
        Some("ms") => timeout / 1000.0,
        _ => timeout,
    };
    let by_wal = setting("max_wal_size").and_then(|(size, unit)| {
        let bytes = size
            * match unit.as_deref() {
                Some("MB") => 1024.0 * 1024.0,
                Some("kB") => 1024.0,
                Some("GB") => 1024.0 * 1024.0 * 1024.0,
                _ => return None,
            };
        let rate = w.run.wal_bytes? as f64 / w.run.measured_s.filter(|m| *m > 0.0)?;
        (rate > 0.0).then(|| bytes / rate)
    });
    Some(by_wal.map_or(timeout_s, |b| b.min(timeout_s)))
}

/// A checkpoint that ran inside test `key`'s measured window while the window is
/// shorter than one checkpoint cycle: the test saw part of the cycle (the expensive
/// part), not its average, as pgbench's documentation warns. Named by a warning and the
/// fact the verdicts' validity reads. Reads the run's stored counters and settings.
pub fn checkpoint_in_short_window(w: &mut RunWrite, key: &str) {
    let moved = |name: &str| w.counters.iter().find(|c| c.name == name)?.delta;
    // PostgreSQL 18 counts skipped checkpoints in timed/requested; `done` are those run.
    let checkpoints = moved("pg.checkpointer.done").unwrap_or_else(|| {
        moved("pg.checkpointer.timed").unwrap_or(0.0)
            + moved("pg.checkpointer.requested").unwrap_or(0.0)
    });
    let (Some(cycle), Some(window)) = (checkpoint_cycle_s(w), w.run.measured_s) else {
        return;
    };
    if checkpoints < 1.0 || window >= cycle {
        return;
    }
    w.facts
        .push(FactRecord::new(facts::CHECKPOINT_IN_SHORT_WINDOW, "true"));
    w.warnings.push(warning(
        "checkpoint_in_window",
        format!(
            "test {key}: {checkpoints:.0} checkpoint(s) ran inside its {window:.0} s window, \
             shorter than one checkpoint cycle ({cycle:.0} s): the test saw part of the cycle, \
             not its average; run at least one cycle (pgbench's documentation advises it)"
        ),
    ));
}

/// The facts of test `key`'s window that bear on its validity, from its stored
/// counters, settings and intervals: a checkpoint inside a short window
/// ([`checkpoint_in_short_window`]), an autovacuum during the test, a growing `-R`
/// schedule lag.
pub fn window_facts(w: &mut RunWrite, key: &str) {
    checkpoint_in_short_window(w, key);
    if autovacuum_in_window(w) {
        w.facts
            .push(FactRecord::new(facts::AUTOVACUUM_IN_WINDOW, "true"));
    }
    if let Some((first, last)) = lag_growing(w) {
        w.facts.push(FactRecord::new(facts::LAG_GROWING, "true"));
        w.warnings.push(warning(
            "lag_growing",
            format!(
                "test {key}: the -R schedule lag grew from {first:.1} ms (mean of the window's \
                 first quarter) to {last:.1} ms (its last): the server fell behind the rate"
            ),
        ));
    }
}

/// Counter: autovacuum and autoanalyze runs completed on the benchmark database's
/// tables (`pg_stat_all_tables`).
pub const AUTOVACUUM_RUNS_COUNTER: &str = "pg.autovacuum.runs";
/// Counter (a gauge): autovacuum workers active when the snapshot was taken.
pub const AUTOVACUUM_WORKERS_COUNTER: &str = "pg.autovacuum.workers";

/// Whether an autovacuum ran during the test: a run completed between the snapshots
/// before and after it, or a worker was active at either.
fn autovacuum_in_window(w: &RunWrite) -> bool {
    let counter = |name: &str| w.counters.iter().find(|c| c.name == name);
    let completed = counter(AUTOVACUUM_RUNS_COUNTER)
        .and_then(|c| c.delta)
        .is_some_and(|d| d > 0.0);
    let active = counter(AUTOVACUUM_WORKERS_COUNTER)
        .is_some_and(|c| c.before_value.unwrap_or(0.0) > 0.0 || c.after_value.unwrap_or(0.0) > 0.0);
    completed || active
}

/// The fewest measured intervals with a lag for [`lag_growing`] to judge.
const LAG_MIN_INTERVALS: usize = 8;

/// The mean `-R` schedule lag of the measured window's first and last quarters when
/// it grew: every second of the last quarter lagged more than every second of the
/// first, by more than 10 ms. A server that keeps up with the rate holds its lag level
/// (a burst of arrivals lifts some seconds, never all of a quarter); one that falls
/// behind lets it grow without bound. None without a rate or with too few intervals.
fn lag_growing(w: &RunWrite) -> Option<(f64, f64)> {
    let lags: Vec<f64> = w
        .intervals
        .iter()
        .filter(|i| !i.warmup)
        .filter_map(|i| i.lag_mean_ms)
        .filter(|l| l.is_finite())
        .collect();
    if lags.len() < LAG_MIN_INTERVALS {
        return None;
    }
    let quarter = lags.len() / 4;
    let (head, tail) = (&lags[..quarter], &lags[lags.len() - quarter..]);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let highest_first = head.iter().copied().fold(f64::MIN, f64::max);
    let lowest_last = tail.iter().copied().fold(f64::MAX, f64::min);
    (lowest_last - highest_first > 10.0).then(|| (mean(head), mean(tail)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CounterRecord, IntervalRecord};

    fn with_lags(lags: &[f64]) -> RunWrite {
        RunWrite {
            intervals: lags
                .iter()
                .map(|l| IntervalRecord {
                    lag_mean_ms: Some(*l),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    fn fact(w: &RunWrite, name: &str) -> bool {
        w.facts.iter().any(|f| f.name == name)
    }

    #[test]
    fn a_lag_that_grows_over_the_window_is_a_fact_and_a_level_one_is_not() {
        let growing: Vec<f64> = (0..20).map(|s| 1.0 + 5.0 * s as f64).collect();
        let mut w = with_lags(&growing);
        window_facts(&mut w, "k");
        assert!(fact(&w, facts::LAG_GROWING), "{:?}", w.facts);
        assert!(
            w.warnings[0].message.contains("grew from 11.0 ms"),
            "{:?}",
            w.warnings
        );
        let level: Vec<f64> = (0..20).map(|s| 2.0 + (s % 3) as f64).collect();
        let mut w = with_lags(&level);
        window_facts(&mut w, "k");
        assert!(!fact(&w, facts::LAG_GROWING));
        // Doubling from 1 ms to 3 ms is no server falling behind.
        let small: Vec<f64> = (0..20).map(|s| 1.0 + s as f64 / 10.0).collect();
        let mut w = with_lags(&small);
        window_facts(&mut w, "k");
        assert!(!fact(&w, facts::LAG_GROWING));
        let mut w = with_lags(&growing[..7]);
        window_facts(&mut w, "k");
        assert!(!fact(&w, facts::LAG_GROWING));
    }

    #[test]
    fn an_autovacuum_completed_or_active_during_the_test_is_a_fact() {
        let counter = |name: &str, before: f64, after: f64| CounterRecord {
            name: name.into(),
            before_value: Some(before),
            after_value: Some(after),
            delta: Some(after - before),
        };
        for (runs, workers, expected) in [
            ((3.0, 4.0), (0.0, 0.0), true),
            ((3.0, 3.0), (0.0, 1.0), true),
            ((3.0, 3.0), (1.0, 0.0), true),
            ((3.0, 3.0), (0.0, 0.0), false),
        ] {
            let mut w = RunWrite {
                counters: vec![
                    counter(AUTOVACUUM_RUNS_COUNTER, runs.0, runs.1),
                    counter(AUTOVACUUM_WORKERS_COUNTER, workers.0, workers.1),
                ],
                ..Default::default()
            };
            window_facts(&mut w, "k");
            assert_eq!(
                fact(&w, facts::AUTOVACUUM_IN_WINDOW),
                expected,
                "{runs:?} {workers:?}"
            );
        }
        let mut w = RunWrite::default();
        window_facts(&mut w, "k");
        assert!(w.facts.is_empty());
    }
}
