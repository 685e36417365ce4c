//! Fixed, deterministic statistics shared by the format tests.

#![allow(dead_code)]

use pgsurge_results::{
    FailureKind, IntervalSample, Percentile, QueryMode, RunInfo, RunOptions, RunResult, ScriptInfo,
    StatsConfig, ThreadStats, TxnOutcome, TxnSample,
};

/// Two scripts: a 3-command "update" (weight 2) and a 2-command "select" (weight 1).
pub fn scripts() -> Vec<ScriptInfo> {
    vec![
        ScriptInfo {
            name: "<builtin: simple update>".into(),
            weight: 2,
            text: "\\set aid random(1, 100000 * :scale)\nBEGIN;\nEND;\n".into(),
            commands: vec![
                "\\set aid random(1, 100000 * :scale)".into(),
                "BEGIN;".into(),
                "END;".into(),
            ],
        },
        ScriptInfo {
            name: "select.sql".into(),
            weight: 1,
            text: "\\set aid random(1, 10)\nSELECT :aid;\n".into(),
            commands: vec!["\\set aid random(1, 10)".into(), "SELECT :aid;".into()],
        },
    ]
}

pub fn options() -> RunOptions {
    RunOptions {
        query_mode: QueryMode::Prepared,
        clients: 4,
        threads: 2,
        max_tries: 3,
        transactions_per_client: Some(100),
        rate_tps: Some(500.0),
        latency_limit_us: Some(5000),
        failures_detailed: true,
        report_per_command: true,
        percentiles: vec![50.0, 99.0],
        random_seed: Some(42),
        ..Default::default()
    }
}

pub fn config(scripts: &[ScriptInfo], per_command: bool) -> StatsConfig {
    StatsConfig {
        detailed: true,
        throttled: true,
        latency_limit_us: Some(5000.0),
        histograms: true,
        per_command,
        script_commands: scripts.iter().map(|s| s.commands.len()).collect(),
    }
}

/// Deterministic transactions spread over two threads, merged.
pub fn merged_stats(scripts: &[ScriptInfo]) -> ThreadStats {
    let cfg = config(scripts, true);
    let mut threads = [ThreadStats::new(&cfg), ThreadStats::new(&cfg)];
    for i in 0..400u32 {
        let script = if i % 3 == 2 { 1 } else { 0 };
        let outcome = match i % 50 {
            7 => TxnOutcome::Skipped,
            13 => TxnOutcome::Failed(FailureKind::Serialization),
            29 => TxnOutcome::Failed(FailureKind::Deadlock),
            _ => TxnOutcome::Success,
        };
        let latency = 500.0 + f64::from((i * 7919) % 6000);
        let t = &mut threads[(i % 2) as usize];
        t.record_txn(&TxnSample {
            script,
            outcome,
            tries: 1 + (i % 11 == 0) as u32 + (i % 33 == 0) as u32,
            latency_us: if outcome == TxnOutcome::Success {
                latency
            } else {
                0.0
            },
            lag_us: if outcome == TxnOutcome::Success {
                f64::from(i % 97)
            } else {
                0.0
            },
        });
        for c in 0..scripts[script].commands.len() {
            t.record_command(script, c, latency / (c as f64 + 2.0));
        }
        if i % 11 == 0 {
            t.record_command_retry(script, scripts[script].commands.len() - 1);
        }
        if let TxnOutcome::Failed(_) = outcome {
            t.record_command_failure(script, scripts[script].commands.len() - 1);
        }
    }
    let [mut a, b] = threads;
    a.merge(&b).expect("same shape");
    a
}

pub fn intervals() -> Vec<IntervalSample> {
    (1..=2u32)
        .map(|k| IntervalSample {
            elapsed_s: f64::from(k),
            epoch_s: 1_795_305_676.654 + f64::from(k),
            duration_s: 1.0,
            transactions: 190 + u64::from(k),
            failures: 4,
            skipped: 2,
            retried: 18,
            retries: 20,
            tps: 190.0 + f64::from(k),
            latency_ms: 3.5,
            stddev_ms: 1.75,
            lag_ms: 0.048,
            percentiles: vec![Percentile {
                percentile: 99.0,
                latency_ms: 6.4,
            }],
            histogram: None,
        })
        .collect()
}

pub fn info(scripts: Vec<ScriptInfo>, options: RunOptions) -> RunInfo {
    RunInfo {
        options,
        scripts,
        scale: 10,
        partition_method: None,
        partitions: 0,
        pgsurge_version: "0.1.0".into(),
        server_version: Some("18.6".into()),
        start_time_unix_us: 1_795_305_675_000_000,
        end_time_unix_us: 1_795_305_677_100_000,
        bench_duration_us: 2_012_345,
        initial_connection_us: 16_341,
        interrupted: false,
        aborted: false,
    }
}

pub fn result() -> RunResult {
    let scripts = scripts();
    let stats = merged_stats(&scripts);
    RunResult::build(info(scripts, options()), &stats, intervals())
}
