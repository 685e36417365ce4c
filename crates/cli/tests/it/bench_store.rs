//! `pgsurge bench --store[=LOCATION] [--set NAME]`: an ad-hoc run lands in the results
//! store with the report's figures, its histograms and per-second series, in a set that
//! is reused by the next run; `results show` lists it; no password reaches the store.

use std::process::Command;

use pgsurge_server::testing::TestServer;
use pgsurge_store::{RunFilter, Store};

fn pgsurge(srv: &TestServer, args: &[&str]) -> (String, String, i32) {
    let out = srv
        .apply_env(&mut Command::new(env!("CARGO_BIN_EXE_pgsurge")))
        .env("PGPASSWORD", "never-stored-pw")
        .args(args)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn bench_store_keeps_the_run_with_its_histograms() {
    let srv = TestServer::shared();
    let db = srv.create_database("bench_store");
    let (_, err, code) = pgsurge(srv, &["bench", "-i", "-s", "1", "-q", &db]);
    assert_eq!(code, 0, "{err}");
    let dir = pgsurge_testkit::scratch_dir("bench-store");
    let location = dir.path().join("r.db");
    let store_arg = format!("--store={}", location.display());
    let mut reports = Vec::new();
    for round in 1..=2 {
        let (out, err, code) = pgsurge(
            srv,
            &[
                "bench",
                "-n",
                "-S",
                "-c",
                "2",
                "-T",
                "2",
                &store_arg,
                "--set=tries",
                &db,
            ],
        );
        assert_eq!(code, 0, "{err}");
        assert!(
            err.contains(&format!("stored as run {round} in set 1 (\"tries\")")),
            "{err}"
        );
        reports.push(out);
    }
    let mut store = Store::open(location.to_str().unwrap()).unwrap();
    let runs = store
        .list_runs(&RunFilter {
            set_id: Some(1),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(runs.len(), 2);
    for (run, report) in runs.iter().zip(&reports) {
        let r = &run.record;
        let processed = report
            .lines()
            .find_map(|l| l.strip_prefix("number of transactions actually processed: "))
            .unwrap();
        assert_eq!(r.transactions.unwrap().to_string(), processed);
        let tps = report
            .lines()
            .find_map(|l| l.strip_prefix("tps = "))
            .and_then(|l| l.split(' ').next())
            .unwrap();
        assert!((r.tps.unwrap() - tps.parse::<f64>().unwrap()).abs() < 1e-3);
        assert_eq!((r.clients, r.scale), (Some(2), Some(1)));
        assert_eq!(r.status, "ok");
        let loaded = store.load_run(run.id).unwrap();
        let latency = loaded
            .histograms
            .iter()
            .find(|h| h.kind == "latency" && h.script_index == -1)
            .expect("whole-run latency histogram");
        assert_eq!(latency.count, r.transactions.unwrap());
        assert!(loaded.intervals.len() >= 2, "{:?}", loaded.intervals);
        let per_second: i64 = loaded.intervals.iter().map(|i| i.transactions).sum();
        assert_eq!(per_second, r.transactions.unwrap());
    }
    // The store's files (database, WAL) and everything printed: no password.
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains("never-stored-pw"));
    }
    assert!(!reports.concat().contains("never-stored-pw"));
    let (out, err, code) = pgsurge(srv, &["results", "show", "tries", &store_arg]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.matches("bench@").count(), 2, "{out}");
}

#[test]
fn set_without_store_is_refused() {
    let srv = TestServer::shared();
    let (_, err, code) = pgsurge(srv, &["bench", "--set=x", "-t", "1", "postgres"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("pgbench: error: --set requires --store"),
        "{err}"
    );
}
