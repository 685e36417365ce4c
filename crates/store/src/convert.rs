//! Turns a [`RunResult`] and its interval samples into store records (the columns of
//! a run, its histograms, its per-second intervals), for every writer: a campaign's
//! tests, `bench --store`, distributed runs.

use std::collections::BTreeMap;

use crate::{
    histogram_encoding, CounterRecord, HistogramRecord, IntervalHistogramRecord, IntervalRecord,
    ProfileRecord, RunRecord, RunWrite,
};
use base64::Engine as _;
use pgsurge_results::percentile::latency_ms_at;
use pgsurge_results::{IntervalSample, LatencyHistogram, LatencySummary, RunResult};

/// Fills the result columns of `run` from `r`.
pub fn fill_run(run: &mut RunRecord, r: &RunResult) {
    let t = &r.totals;
    run.measured_s = Some(r.bench_duration_us as f64 / 1e6);
    run.tps = Some(r.tps);
    run.transactions = i64::try_from(t.transactions).ok();
    run.failures = i64::try_from(t.failures).ok();
    run.serialization_failures = i64::try_from(t.serialization_failures).ok();
    run.deadlock_failures = i64::try_from(t.deadlock_failures).ok();
    run.retried = i64::try_from(t.retried).ok();
    run.retries = i64::try_from(t.retries).ok();
    run.skipped = i64::try_from(t.skipped).ok();
    run.late = i64::try_from(t.late).ok();
    let l = &t.latency;
    run.latency_mean_ms = l.mean_ms;
    run.latency_stddev_ms = l.stddev_ms;
    run.latency_min_ms = l.min_ms;
    run.latency_max_ms = l.max_ms;
    let h = decode_summary(l).and_then(|b| crate::histogram::decode(&b).ok());
    let h = h.filter(|h| !h.is_empty());
    // Without a histogram: the percentiles the run computed, where it computed the rank.
    run.set_latency_percentiles(|rank| match &h {
        Some(h) => Some(latency_ms_at(h, rank)),
        None => l.percentile(rank),
    });
    if r.options.rate_tps.is_some() {
        run.lag_mean_ms = t.lag.mean_ms;
        run.lag_max_ms = t.lag.max_ms;
    }
    run.result_json = serde_json::to_value(r).ok();
}

fn decode_summary(l: &LatencySummary) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(l.histogram.as_deref()?)
        .ok()
}

fn record(
    kind: &str,
    index: i64,
    name: Option<String>,
    l: &LatencySummary,
) -> Option<HistogramRecord> {
    let data = decode_summary(l)?;
    Some(HistogramRecord {
        kind: kind.into(),
        script_index: index,
        script_name: name,
        unit: "us".into(),
        encoding: histogram_encoding::HDR_V2_DEFLATE.into(),
        count: i64::try_from(l.sums_us.count).unwrap_or(i64::MAX),
        data,
    })
}

/// The counter holding the server's start time (epoch seconds), from which the
/// [`crate::facts::SERVER_START`] fact is made.
pub const SERVER_START_COUNTER: &str = "pg.server.start_epoch";

/// The server's counters before and after a test: every counter with its change, the
/// run's server-side columns (commits, rollbacks, WAL, database size), and the server
/// start it ran in when the server did not restart during it.
pub fn counters(w: &mut RunWrite, before: &BTreeMap<String, f64>, after: &BTreeMap<String, f64>) {
    for (name, b) in before {
        let a = after.get(name).copied();
        w.counters.push(CounterRecord {
            name: name.clone(),
            before_value: Some(*b),
            after_value: a,
            delta: a.map(|a| a - b),
        });
    }
    let delta = |k: &str| Some(after.get(k)? - before.get(k)?);
    w.run.server_commits = delta("pg.db.xact_commit").map(|d| d as i64);
    w.run.server_rollbacks = delta("pg.db.xact_rollback").map(|d| d as i64);
    w.run.wal_bytes = delta("pg.wal.lsn_bytes").map(|d| d as i64);
    w.run.db_size_start = before.get("pg.db.size_bytes").map(|v| *v as i64);
    w.run.db_size_end = after.get("pg.db.size_bytes").map(|v| *v as i64);
    if let (Some(b), Some(a)) = (
        before.get(SERVER_START_COUNTER),
        after.get(SERVER_START_COUNTER),
    ) {
        if a == b {
            w.facts.push(crate::FactRecord::new(
                crate::facts::SERVER_START,
                format!("{b:.6}"),
            ));
        }
    }
}

/// Whole-run histograms: latency and lag, all scripts together and per script.
pub fn histograms(r: &RunResult) -> Vec<HistogramRecord> {
    let mut out = Vec::new();
    out.extend(record("latency", -1, None, &r.totals.latency));
    if r.options.rate_tps.is_some() {
        out.extend(record("lag", -1, None, &r.totals.lag));
    }
    if r.scripts.len() > 1 {
        for (i, s) in r.scripts.iter().enumerate() {
            out.extend(record(
                "latency",
                i as i64,
                Some(s.name.clone()),
                &s.stats.latency,
            ));
        }
    }
    out
}

/// The run's profiles (`bench --profile`, a campaign's `[profile]`), encoded for
/// `run_profiles`.
pub fn profiles(r: &RunResult) -> Vec<ProfileRecord> {
    r.profiles.iter().map(crate::profile::encode).collect()
}

/// The latency histogram of a stored interval (None when it recorded nothing).
pub fn interval_histogram(
    interval: &IntervalRecord,
    h: &LatencyHistogram,
) -> Option<IntervalHistogramRecord> {
    IntervalHistogramRecord::from_histogram(
        "latency",
        interval.ts,
        interval.elapsed_s,
        interval.duration_s,
        &h.to_hdr(),
    )
    .ok()
    .flatten()
}

/// One interval sample as a stored interval. The engine's sample is stamped with the
/// interval's end; the store keeps its start.
pub fn interval(s: &IntervalSample, warmup: bool, elapsed_offset: f64) -> IntervalRecord {
    let pct = |p: f64| {
        s.percentiles
            .iter()
            .find(|x| (x.percentile - p).abs() < 1e-9)
            .map(|x| x.latency_ms)
    };
    let some = |v: f64| (s.transactions > 0 && v.is_finite()).then_some(v);
    IntervalRecord {
        ts: s.epoch_s - s.duration_s,
        elapsed_s: s.elapsed_s - s.duration_s + elapsed_offset,
        duration_s: s.duration_s,
        warmup,
        transactions: i64::try_from(s.transactions).unwrap_or(i64::MAX),
        tps: s.tps,
        failures: i64::try_from(s.failures).ok(),
        retried: i64::try_from(s.retried).ok(),
        skipped: i64::try_from(s.skipped).ok(),
        latency_mean_ms: some(s.latency_ms),
        latency_min_ms: None,
        latency_max_ms: None,
        latency_p50_ms: pct(50.0),
        latency_p90_ms: pct(90.0),
        latency_p99_ms: pct(99.0),
        lag_mean_ms: some(s.lag_ms),
        lag_max_ms: None,
        histogram: None,
    }
}
