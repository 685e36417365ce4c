//! The measured window of a run about to be stored. With `warmup = "auto"` a run's
//! stored figures are its steady window's, as a fixed warm-up's run is discarded: the
//! warm-up's intervals are kept, marked as warm-up and ending at elapsed 0 where the
//! window begins; the raw figures of the whole run stay in the result document. A
//! checkpoint that ran inside a window shorter than one checkpoint cycle is named by a
//! fact and a warning.

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
