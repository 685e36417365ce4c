//! Progress counters read by one thread while four others record: every
//! transaction shows up in exactly one interval, and the merged statistics
//! agree with the sum of the intervals.

use std::sync::Arc;
use std::thread;

use pgsurge_results::{
    ProgressAggregator, SharedCounters, StatsConfig, ThreadStats, TxnOutcome, TxnSample,
};

#[test]
fn intervals_account_for_every_transaction() {
    let cfg = StatsConfig {
        detailed: true,
        histograms: true,
        script_commands: vec![1],
        ..Default::default()
    };
    let shared: Vec<_> = (0..4)
        .map(|_| Arc::new(SharedCounters::new(true, 1)))
        .collect();
    let mut agg = ProgressAggregator::new(shared.clone(), 0, 0, vec![50.0, 99.0]);
    let workers: Vec<_> = shared
        .iter()
        .map(|sh| {
            let mut t = ThreadStats::with_shared(&cfg, Arc::clone(sh));
            thread::spawn(move || {
                for i in 0..50_000u32 {
                    t.record_txn(&TxnSample {
                        script: 0,
                        outcome: TxnOutcome::Success,
                        tries: 1,
                        latency_us: f64::from(100 + i % 900),
                        lag_us: 0.0,
                    });
                }
                t
            })
        })
        .collect();
    let mut seen = 0;
    let mut hist_total = 0;
    let mut now = 0;
    while !workers.iter().all(|w| w.is_finished()) {
        now += 1000;
        let s = agg.tick(now);
        seen += s.transactions;
        hist_total += agg.interval_histogram().len();
        thread::yield_now();
    }
    let mut merged: Option<ThreadStats> = None;
    for w in workers {
        let t = w.join().expect("worker");
        match &mut merged {
            None => merged = Some(t),
            Some(m) => m.merge(&t).expect("same shape"),
        }
    }
    let last = agg.tick(now + 1000);
    seen += last.transactions;
    hist_total += agg.interval_histogram().len();
    let merged = merged.expect("four threads");
    assert_eq!(merged.total.cnt, 200_000);
    assert_eq!(seen, 200_000);
    assert_eq!(hist_total, 200_000);
    assert_eq!(
        merged.overall().latency_hist.as_ref().map(|h| h.len()),
        Some(200_000)
    );
}
