//! The capacity search on a throwaway server the campaign starts: with a workload whose
//! latency is known to grow past the bound above some rate (each transaction sleeps
//! 20 ms in the server, twenty clients), the search finds a rate whose steps pass and a
//! rate above it, within the resolution, whose steps fail; every step ran its repeats
//! and is stored; `results show` recomputes the same answer from the store.
//!
//! The sleep sets the latency, not the machine: a busy machine adds a few
//! milliseconds to a transaction, far less than the bound leaves above the sleep. The
//! rates are hundreds a second, so that a one-second step's count of transactions
//! (their starts are random, as pgbench's `-R` draws them) keeps up with its rate.

use pgsurge_analysis::capacity::{results_of_runs, StoredRun};
use pgsurge_campaign::capacity::step_run;
use pgsurge_campaign::{run_campaign, Campaign, RunOptions};
use pgsurge_engine::StopFlag;
use pgsurge_store::validity::ValidityFacts;
use pgsurge_store::{RunFilter, Store};

#[test]
fn capacity_search_brackets_the_rate_at_the_latency_objective() {
    let dir = pgsurge_testkit::scratch_dir("capacity");
    std::fs::write(dir.path().join("sleep.sql"), "SELECT pg_sleep(0.02);\n").unwrap();
    let text = r#"
[campaign]
name = "capacity"

[[target]]
name = "local"

[matrix]
scales = [1]
clients = [20]
scripts = [{ file = "sleep.sql" }]

[run]
duration = 1

[hygiene]
vacuum = false
checkpoint = false

[capacity]
percentile = 99
bound = "100ms"
start_rate = 300
# Three repeats: a step's median holds against one run stalled by a busy machine.
repeats = 3
resolution = 0.2
"#;
    let campaign = Campaign::parse(text, "capacity.toml", dir.path()).unwrap();
    let store_path = dir.path().join("r.db");
    let mut store = Store::open(store_path.to_str().unwrap()).unwrap();
    let opts = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let out = run_campaign(&campaign, &mut store, &opts, &StopFlag::new()).unwrap();
    assert_eq!(out.remaining, 0, "{out:?}");
    assert_eq!(out.capacity.len(), 1, "{out:?}");
    let r = &out.capacity[0];
    eprintln!("{}", r.line());
    assert_eq!(r.cell, "local/s1/sleep/c20");
    let (pass, fail) = (
        r.rate.expect("a passing rate"),
        r.fail_rate.expect("a failing rate"),
    );
    // Twenty clients sleeping 20 ms each cannot exceed 1000 tps; a step of one second
    // at a higher rate passes only while the lag it builds stays under the bound, which
    // it does not past 1080 tps.
    assert!((300.0..1100.0).contains(&pass), "{}", r.line());
    assert!(
        fail > pass && fail / pass - 1.0 <= 0.2 + 1e-9,
        "{}",
        r.line()
    );
    let step = |rate: f64| r.steps.iter().find(|s| s.rate == rate).unwrap();
    assert!(
        step(pass).pass && step(pass).median_ms < 100.0,
        "{:?}",
        step(pass)
    );
    assert!(!step(fail).pass, "{:?}", step(fail));
    // Every passing step lies below every failing one (the objective is monotone here).
    let lowest_fail = r
        .steps
        .iter()
        .filter(|s| !s.pass)
        .map(|s| s.rate)
        .fold(f64::MAX, f64::min);
    assert!(
        r.steps
            .iter()
            .filter(|s| s.pass)
            .all(|s| s.rate < lowest_fail),
        "{:?}",
        r.steps
    );
    let (median, ci) = r.at_rate_ms.unwrap();
    let (lo, hi) = ci.expect("three repeats give an interval");
    assert!(
        lo <= median + 1e-9 && median <= hi + 1e-9,
        "{lo} {median} {hi}"
    );

    // Every step's repeats are stored, at the step's rate.
    let runs = store
        .list_runs(&RunFilter {
            set_id: Some(out.set_id),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(runs.len(), 3 * r.steps.len());
    for s in &r.steps {
        let at: Vec<_> = runs
            .iter()
            .filter(|x| x.record.rate == Some(s.rate))
            .collect();
        assert_eq!(at.len(), 3, "{}", s.rate);
        assert!(at
            .iter()
            .all(|x| x.record.test_key.contains(&format!("/cap-r{}/", s.rate))));
    }
    // The stored runs give the same answer, as `results show` prints it.
    let cap = campaign.spec.capacity.as_ref().unwrap();
    let validity = ValidityFacts::of_sets(&mut store, [out.set_id]).unwrap();
    let stored: Vec<StoredRun> = runs
        .iter()
        .map(|r| StoredRun {
            test_key: r.record.test_key.clone(),
            rate: r.record.rate,
            run: step_run(r, cap.percentile, &validity),
        })
        .collect();
    let again = results_of_runs(&stored, &cap.objective());
    assert_eq!(again, out.capacity);
}
