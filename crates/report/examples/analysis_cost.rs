//! What the analysis costs the report of a grown store: writes a SQLite store of
//! about RUNS runs through the store's API (sets of two targets × four client counts
//! × three repeats, each run with 60 one-second intervals), times `pgsurge report` of
//! it (in process, `write_report`), and times the analysis alone as the report does
//! it — every set's comparison of its second target against its first (verdicts,
//! paired rounds, outliers, robust shifts, power, validity) and every cell's change
//! points over the sets — and prints the report's time with the analysis against
//! without it.
//!
//! `cargo run --release -p pgsurge-report --example analysis_cost [RUNS]` (default
//! 2000); `bench/analysis-cost.sh` runs it.

use std::collections::BTreeMap;
use std::time::Instant;

use pgsurge_analysis::change_points::change_points;
use pgsurge_report::cells::build_cells;
use pgsurge_report::compare::{compare, Along};
use pgsurge_report::{write_report, ReportRequest};
use pgsurge_store::{
    IntervalRecord, RunFilter, RunRecord, RunWrite, SetRecord, Store, TargetRecord,
};

/// A fixed wobble of ±1 %, so every run of the bench writes the same store.
const WOBBLE: [f64; 11] = [0.4, -0.7, 0.9, -0.2, 0.6, -1.0, 0.1, 0.8, -0.5, 0.3, -0.8];
const CLIENTS: [i64; 4] = [1, 4, 16, 64];
const REPEATS: i64 = 3;

fn run(set_id: i64, target_id: i64, target: &str, clients: i64, repeat: i64, tps: f64) -> RunWrite {
    let start = 1_790_000_000.0 + (set_id * 10_000 + clients * 10 + repeat) as f64 * 70.0;
    RunWrite {
        run: RunRecord {
            set_id,
            target_id: Some(target_id),
            test_key: format!("{target}/s1/select-only/c{clients}/r-/{repeat}"),
            repeat_no: repeat,
            status: "ok".into(),
            start_epoch: Some(start),
            script: Some("select-only".into()),
            scale: Some(1),
            clients: Some(clients),
            threads: Some(1),
            duration_s: Some(60.0),
            query_mode: Some("simple".into()),
            tps: Some(tps),
            transactions: Some((tps * 60.0) as i64),
            failures: Some(0),
            latency_mean_ms: Some(1000.0 * clients as f64 / tps),
            latency_p99_ms: Some(3000.0 * clients as f64 / tps),
            ..Default::default()
        },
        intervals: (0..60)
            .map(|s| {
                let t = tps * (1.0 + WOBBLE[s % WOBBLE.len()] / 100.0);
                IntervalRecord {
                    ts: start + s as f64,
                    elapsed_s: s as f64,
                    duration_s: 1.0,
                    transactions: t as i64,
                    tps: t,
                    latency_mean_ms: Some(1000.0 * clients as f64 / t),
                    ..Default::default()
                }
            })
            .collect(),
        ..Default::default()
    }
}

fn build(path: &str, runs: usize) -> usize {
    let mut store = Store::open(path).expect("store opens");
    let per_set = 2 * CLIENTS.len() * REPEATS as usize;
    let sets = runs.div_ceil(per_set);
    for night in 0..sets as i64 {
        let set_id = store
            .create_set(&SetRecord {
                name: "nightly".into(),
                kind: "campaign".into(),
                status: "complete".into(),
                created_at: format!("night {night}"),
                ..Default::default()
            })
            .expect("set");
        for target in ["a", "b"] {
            let target_id = store
                .upsert_target(&TargetRecord {
                    set_id,
                    name: target.into(),
                    kind: "throwaway".into(),
                    ..Default::default()
                })
                .expect("target");
            for clients in CLIENTS {
                for repeat in 1..=REPEATS {
                    let k = (night * 7 + clients + repeat) as usize;
                    let tps = 1000.0 * clients as f64 * (1.0 + WOBBLE[k % WOBBLE.len()] / 100.0);
                    store
                        .write_run(&run(set_id, target_id, target, clients, repeat, tps))
                        .expect("run");
                }
            }
        }
    }
    sets * per_set
}

/// The analysis of the report, alone: seconds spent in comparisons and change points.
fn analysis(store: &mut Store) -> f64 {
    let mut names = BTreeMap::new();
    let mut per_set = Vec::new();
    for s in store.list_sets().expect("sets") {
        for t in store.targets(s.id).expect("targets") {
            names.insert(t.id, t.record.name);
        }
        let runs = store
            .readable_runs(&RunFilter {
                set_id: Some(s.id),
                ..Default::default()
            })
            .expect("runs");
        per_set.push(build_cells(store, &runs, &names).expect("cells"));
    }
    let started = Instant::now();
    let mut series: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for cells in &per_set {
        let (a, b): (Vec<_>, Vec<_>) = cells.iter().cloned().partition(|c| c.target == "a");
        let c = compare("a", &a, "b", &b, &Along::targets());
        assert!(!c.cells.is_empty());
        for cell in cells {
            series
                .entry(format!("{} {}", cell.target, cell.key.label()))
                .or_default()
                .push(cell.tps_median);
        }
    }
    for values in series.values() {
        std::hint::black_box(change_points(values));
    }
    started.elapsed().as_secs_f64()
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("RUNS is a number"))
        .unwrap_or(2000);
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("grown.db").display().to_string();
    let started = Instant::now();
    let written = build(&path, runs);
    println!(
        "store: {written} runs written through the store API in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let mut store = Store::open(&path).expect("store opens");
    let started = Instant::now();
    write_report(
        &mut store,
        &ReportRequest::default(),
        &dir.path().join("report"),
    )
    .expect("report");
    let report = started.elapsed().as_secs_f64();
    let analysis = analysis(&mut store);
    println!("report: {report:.2} s, of which the analysis {analysis:.3} s");
    println!(
        "report with the analysis / without: {:.3} (the analysis is {:.1} % of it)",
        report / (report - analysis),
        analysis / report * 100.0
    );
}
