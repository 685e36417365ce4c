//! A replay's report as a stored run: its result columns, the merged latency histogram,
//! the whole report and the log's digest as facts. A campaign's test of a replay and
//! `pgsurge replay --store` both store a replay this way.

use pgsurge_replay::report::ReplayReport;
use pgsurge_results::histogram::SIGFIG_COARSE;
use pgsurge_store::{
    epoch_to_rfc3339, facts, run_status, FactRecord, HistogramRecord, RunRecord, RunWrite,
};

/// The stored fact that holds a replay's whole report (JSON).
pub const REPLAY_REPORT_FACT: &str = facts::REPLAY_REPORT;

/// The stored run of a replay: result columns (statements as transactions, their rate,
/// the replayed latency over every fingerprint, the lag), the merged latency histogram,
/// and the whole report as a fact. `run` holds the identity (set, target, key…).
pub fn record(report: &ReplayReport, mut run: RunRecord) -> RunWrite {
    let r = &report.replay;
    let start = r.start_time_unix_us as f64 / 1e6;
    if start > 0.0 {
        run.start_epoch = Some(start);
        run.started_at = Some(epoch_to_rfc3339(start));
        run.end_epoch = Some(start + r.elapsed_s);
        run.finished_at = Some(epoch_to_rfc3339(start + r.elapsed_s));
    }
    if let Some(why) = &report.ended_early {
        run.status = run_status::FAILED.into();
        run.error = Some(why.clone());
    }
    run.clients = Some(r.sessions as i64);
    run.threads = Some(report.settings.threads as i64);
    run.measured_s = Some(r.elapsed_s);
    run.transactions = Some(r.statements as i64);
    run.failures = Some(r.unexpected_errors as i64);
    run.tps = (r.elapsed_s > 0.0).then(|| r.statements as f64 / r.elapsed_s);
    if report.lag.scheduled {
        run.lag_mean_ms = Some(report.lag.mean_ms);
        run.lag_max_ms = Some(report.lag.max_ms);
    }
    // On the bounds of every stored run's histogram (1 µs .. 1 h, growing beyond), so
    // that runs' histograms merge: the replay's own start small and grow.
    let mut merged = pgsurge_results::LatencyHistogram::new(SIGFIG_COARSE).to_hdr();
    for h in report
        .fingerprints
        .iter()
        .filter_map(|f| f.replayed.latency.as_ref()?.histogram())
    {
        // Infallible: `merged` grows to any value.
        let _ = merged.add(&h);
    }
    let mut histograms = Vec::new();
    if let Some(h) = Some(merged).filter(|h| !h.is_empty()) {
        let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        run.latency_mean_ms = Some(h.mean() / 1000.0);
        run.latency_stddev_ms = Some(h.stdev() / 1000.0);
        run.latency_min_ms = Some(h.min() as f64 / 1000.0);
        run.latency_p50_ms = Some(ms(0.5));
        run.latency_p90_ms = Some(ms(0.9));
        run.latency_p95_ms = Some(ms(0.95));
        run.latency_p99_ms = Some(ms(0.99));
        run.latency_p999_ms = Some(ms(0.999));
        run.latency_max_ms = Some(h.max() as f64 / 1000.0);
        histograms.extend(HistogramRecord::from_histogram("latency", -1, None, &h).ok());
    }
    let digest = log_digest(report);
    let mut facts = vec![FactRecord::new(REPLAY_REPORT_FACT, report.to_json())];
    if let Some(d) = digest {
        facts.push(FactRecord::new(facts::REPLAY_LOG_SHA256, d));
    }
    RunWrite {
        run,
        histograms,
        facts,
        ..Default::default()
    }
}

/// One digest for the log files of a replay (their SHA-256s, in order), when every
/// file was read to its end.
pub fn log_digest(report: &ReplayReport) -> Option<String> {
    let parts: Option<Vec<&str>> = report.logs.iter().map(|l| l.sha256.as_deref()).collect();
    parts.map(|p| p.join(","))
}

/// The `scripts` column of a replay run: the log files with their identity.
pub fn scripts_json(report: &ReplayReport) -> serde_json::Value {
    serde_json::Value::Array(
        report
            .logs
            .iter()
            .map(|l| serde_json::json!({"name": l.path, "format": l.format, "bytes": l.bytes, "sha256": l.sha256}))
            .collect(),
    )
}
