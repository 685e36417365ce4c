//! Result documents for the merge tests: generators of one run whose latencies are
//! deterministic pseudo-random values, with their totals, one script and per-second
//! samples, each carrying exact sums and HDR histograms.
#![allow(dead_code)]

use pgsurge_results::progress_counters::IntervalSample;
use pgsurge_results::result::encode_histogram;
use pgsurge_results::{
    GeneratorInfo, LatencyHistogram, LatencySummary, RunOptions, RunResult, ScriptResult,
    SimpleStats, TxnSummary, SCHEMA_VERSION,
};

pub const T0: i64 = 1_795_473_000_000_000;

/// Deterministic pseudo-random latencies (µs), different per generator.
pub fn latencies(gen: u64, n: usize) -> Vec<f64> {
    let mut x = 0x2545_F491_4F6C_DD1D ^ (gen + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // 200 µs .. ~200 ms, skewed like real latencies.
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            200.0 * (1000.0f64).powf(u * u)
        })
        .collect()
}

pub fn summary(values: &[f64]) -> LatencySummary {
    let mut s = SimpleStats::default();
    let mut h = LatencyHistogram::default();
    for &v in values {
        s.add(v);
        h.record(v);
    }
    LatencySummary {
        sums_us: s,
        histogram: encode_histogram(&h),
        ..Default::default()
    }
}

/// One generator's result (generator `gen` of 4): `secs` seconds of `per_sec`
/// transactions each, its clients starting `skew_us` after [`T0`].
pub fn generator(
    gen: u32,
    clients: u32,
    secs: usize,
    per_sec: usize,
    skew_us: i64,
) -> (RunResult, Vec<f64>) {
    generator_of(gen, 4, clients, secs, per_sec, skew_us)
}

/// Generator `gen` of `count`, as [`generator`].
pub fn generator_of(
    gen: u32,
    count: u32,
    clients: u32,
    secs: usize,
    per_sec: usize,
    skew_us: i64,
) -> (RunResult, Vec<f64>) {
    let all = latencies(u64::from(gen), secs * per_sec);
    let start = T0 + skew_us;
    let intervals = all
        .chunks(per_sec)
        .enumerate()
        .map(|(k, c)| {
            let s = summary(c);
            IntervalSample {
                elapsed_s: k as f64 + 1.0,
                epoch_s: (start as f64 / 1e6) + k as f64 + 1.0,
                duration_s: 1.0,
                transactions: c.len() as u64,
                failures: 0,
                skipped: 0,
                retried: 0,
                retries: 0,
                tps: c.len() as f64,
                latency_ms: s.sums_us.mean().unwrap_or(0.0) / 1000.0,
                stddev_ms: s.sums_us.stddev().unwrap_or(0.0) / 1000.0,
                lag_ms: 0.0,
                percentiles: Vec::new(),
                histogram: s.histogram.clone(),
            }
        })
        .collect();
    let totals = TxnSummary {
        transactions: all.len() as u64,
        failures: u64::from(gen),
        serialization_failures: u64::from(gen),
        latency: summary(&all),
        ..Default::default()
    };
    let r = RunResult {
        schema_version: SCHEMA_VERSION,
        transaction_type: "<builtin: TPC-B (sort of)>".into(),
        scale: 10,
        start_time_unix_us: start - 500_000,
        end_time_unix_us: start + secs as i64 * 1_000_000,
        bench_duration_us: secs as i64 * 1_000_000,
        initial_connection_us: 500_000,
        options: RunOptions {
            clients,
            threads: 1,
            max_tries: 1,
            duration_s: Some(secs as u32),
            ..Default::default()
        },
        tps: all.len() as f64 / secs as f64,
        scripts: vec![ScriptResult {
            name: "<builtin: TPC-B (sort of)>".into(),
            weight: 1,
            stats: totals.clone(),
            ..Default::default()
        }],
        totals,
        intervals,
        generator: Some(GeneratorInfo {
            name: format!("gen-{gen}"),
            host: format!("host-{gen}"),
            index: Some(gen),
            count: Some(count),
            intended_start_unix_us: Some(T0),
            actual_start_unix_us: start,
            end_unix_us: start + secs as i64 * 1_000_000,
            clock_origin_unix_us: start - 600_000,
        }),
        ..Default::default()
    };
    (r, all)
}

pub fn four() -> (Vec<RunResult>, Vec<String>, Vec<Vec<f64>>) {
    let mut rs = Vec::new();
    let mut vals = Vec::new();
    for g in 0..4u32 {
        let (r, v) = generator(g, 8, 5, 300 + 50 * g as usize, i64::from(g) * 700);
        rs.push(r);
        vals.push(v);
    }
    let labels = (0..4).map(|g| format!("gen-{g}.json")).collect();
    (rs, labels, vals)
}
