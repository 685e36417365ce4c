//! Recording never allocates in steady state: a counting global allocator
//! watches `record_*`, the shared progress counters and the `-l` writers.
//!
//! A test binary of its own: the global allocator is process-wide.

use std::sync::Arc;

use pgsurge_testkit::{allocations_during, CountingAllocator};

use pgsurge_results::{
    AggregateLogWriter, FailureKind, LogOptions, SharedCounters, StatsConfig, ThreadStats,
    TxnLogEntry, TxnLogWriter, TxnOutcome, TxnSample,
};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

fn sample(i: u32) -> TxnSample {
    TxnSample {
        script: (i % 2) as usize,
        outcome: match i % 17 {
            3 => TxnOutcome::Skipped,
            5 => TxnOutcome::Failed(FailureKind::Serialization),
            _ => TxnOutcome::Success,
        },
        tries: 1 + i % 3,
        // Up to ~10 minutes: the whole pre-sized histogram range is exercised.
        latency_us: f64::from(i.wrapping_mul(2_654_435_761) % 600_000_000),
        lag_us: f64::from(i % 1000),
    }
}

#[test]
fn recording_does_not_allocate() {
    let cfg = StatsConfig {
        detailed: true,
        throttled: true,
        latency_limit_us: Some(1000.0),
        histograms: true,
        per_command: true,
        script_commands: vec![5, 3],
    };
    let shared = Arc::new(SharedCounters::new(true, 2));
    let mut t = ThreadStats::with_shared(&cfg, shared.clone());
    // Sanity check of the counter itself.
    assert!(allocations_during(|| drop(std::hint::black_box(vec![1u8; 10]))) >= 1);
    let n = allocations_during(|| {
        for i in 0..200_000u32 {
            let s = sample(i);
            t.record_txn(&s);
            t.record_command(s.script, (i % 3) as usize, s.latency_us / 3.0);
            if i % 7 == 0 {
                t.record_command_retry(s.script, 1);
                t.record_command_failure(s.script, 2);
            }
            t.record_connection(12);
        }
        std::hint::black_box(shared.snapshot());
    });
    assert_eq!(n, 0, "record_* allocated {n} times");
    assert_eq!(t.total.total_cnt(), 200_000);
}

#[test]
fn log_writers_do_not_allocate_per_line() {
    let opts = LogOptions {
        throttled: true,
        latency_limit: true,
        max_tries: 3,
        failures_detailed: true,
    };
    let mut per_txn = TxnLogWriter::new(std::io::sink(), opts);
    let start = 1_795_305_697_000_000i64;
    let mut agg = AggregateLogWriter::new(std::io::sink(), opts, 1, start);
    let n = allocations_during(|| {
        for i in 0..100_000u32 {
            let s = sample(i);
            let e = TxnLogEntry {
                client_id: i % 8,
                txn_no: u64::from(i),
                script: s.script,
                outcome: s.outcome,
                latency_us: s.latency_us,
                lag_us: s.lag_us,
                tries: s.tries,
                now_epoch_us: start + i64::from(i) * 100,
            };
            per_txn.log(&e).expect("log");
            agg.log(&e).expect("agg");
        }
    });
    assert_eq!(n, 0, "log writers allocated {n} times");
}
