//! End-to-end campaign on the fixture server: 2 scales × 3 client counts × 2 repeats,
//! 2-second tests. Every test, interval, metric, counter and manifest must be in the
//! store and plausible; a second invocation finds nothing left to do.

use pgsurge_engine::StopFlag;
use pgsurge_lab::{run_campaign, Campaign, RunOptions};
use pgsurge_server::testing::TestServer;
use pgsurge_store::{IntervalWindow, RunFilter, Store};

fn campaign_text(conninfo: &str) -> String {
    format!(
        r#"
[campaign]
name = "e2e"
seed = 3

[[target]]
name = "fixture"
conninfo = "{conninfo}"

[matrix]
scales = [1, 2]
clients = [1, 2, 4]
scripts = ["select-only"]
repeats = 2

[run]
duration = 2
threads = "auto"

[sampling]
interval = 0.5
"#
    )
}

#[test]
fn campaign_stores_every_test_with_intervals_metrics_and_manifest() {
    let srv = TestServer::shared();
    let db = srv.create_database("campaign_e2e");
    let text = campaign_text(&srv.conninfo(&db));
    let campaign = Campaign::parse(&text, "e2e.toml", std::path::Path::new(".")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store_path = dir.path().join("r.db");
    let mut store = Store::open(store_path.to_str().unwrap()).unwrap();
    let opts = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let out = run_campaign(&campaign, &mut store, &opts, &StopFlag::new()).unwrap();
    assert_eq!(out.planned, 12);
    assert_eq!((out.ok, out.failed, out.remaining), (12, 0, 0), "{out:?}");

    let runs = store
        .list_runs(&RunFilter {
            set_id: Some(out.set_id),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(runs.len(), 12);
    let mut keys: Vec<&str> = runs.iter().map(|r| r.record.test_key.as_str()).collect();
    keys.sort();
    let mut expected = Vec::new();
    for s in [1, 2] {
        for c in [1, 2, 4] {
            for r in [1, 2] {
                expected.push(format!("fixture/s{s}/select-only/c{c}/r-/{r}"));
            }
        }
    }
    expected.sort();
    assert_eq!(
        keys,
        expected.iter().map(String::as_str).collect::<Vec<_>>()
    );

    for run in &runs {
        let full = store.load_run(run.id).unwrap();
        let r = &full.run.record;
        assert_eq!(r.status, "ok", "{:?}", r.error);
        let tps = r.tps.unwrap();
        assert!(tps > 10.0, "{}: tps {tps}", r.test_key);
        let n = r.transactions.unwrap();
        assert!(n > 10);
        assert!(r.latency_p99_ms.unwrap() >= r.latency_p50_ms.unwrap());
        assert!(r.latency_mean_ms.unwrap() > 0.0);
        // Server-side ground truth within the 5 % tolerance.
        let commits = r.server_commits.unwrap();
        assert!(
            r.commit_mismatch_pct.unwrap() <= 5.0,
            "{}: server {commits} vs client {n}",
            r.test_key
        );
        // Intervals: one per second plus the remainder after the last full one, summing
        // to the transactions.
        assert!(
            (2..=4).contains(&full.intervals.len()),
            "{}: intervals {:?}",
            r.test_key,
            full.intervals
        );
        let sum: i64 = full.intervals.iter().map(|i| i.transactions).sum();
        assert_eq!(sum, n, "{}: intervals vs run", r.test_key);
        assert!(full.intervals[0].elapsed_s.abs() < 0.5, "{:?}", full.intervals[0]);
        // Histogram: as many values as transactions.
        let h = pgsurge_store::histogram::merged(&full.histograms, "latency", -1)
            .unwrap()
            .expect("latency histogram stored");
        assert_eq!(h.len() as i64, n);
        // Interval histograms (one per interval that recorded something) merge to
        // exactly the run's histogram, so they give the percentiles the engine reported.
        let ivh = store
            .interval_histograms(&[run.id], "latency", IntervalWindow::default())
            .unwrap();
        assert!(
            ivh.len() >= 2 && ivh.len() <= full.intervals.len(),
            "{}: {} interval histograms for {} intervals",
            r.test_key,
            ivh.len(),
            full.intervals.len()
        );
        assert_eq!(
            ivh.iter().map(|x| x.record.count).sum::<i64>(),
            full.intervals.iter().map(|i| i.transactions).sum::<i64>(),
            "{}: interval histogram counts vs interval transactions",
            r.test_key
        );
        // Compressed V2: about 1 kB for a second of a few thousand transactions
        // (measured 0.4-1.2 kB here).
        let bytes: usize = ivh.iter().map(|x| x.record.data.len()).sum();
        eprintln!(
            "{}: {} interval histograms, {} bytes",
            r.test_key,
            ivh.len(),
            bytes
        );
        assert!(bytes / ivh.len() < 2048, "{}: {bytes} bytes", r.test_key);
        let from_intervals = pgsurge_store::histogram::merged_intervals(&ivh)
            .unwrap()
            .unwrap();
        assert_eq!(from_intervals, h, "{}", r.test_key);
        let reported: pgsurge_results::RunResult =
            serde_json::from_value(r.result_json.clone().unwrap()).unwrap();
        for rank in [50.0, 90.0, 99.0, 99.9] {
            let engine_ms = reported.totals.latency.percentile(rank).unwrap();
            let merged_ms = from_intervals.value_at_percentile(rank) as f64 / 1000.0;
            assert_eq!(merged_ms, engine_ms, "{}: p{rank}", r.test_key);
        }
        // A window: the first second alone.
        let first = store
            .interval_histograms(
                &[run.id],
                "latency",
                IntervalWindow {
                    from_s: Some(-0.5),
                    to_s: Some(0.5),
                },
            )
            .unwrap();
        assert_eq!(first.len(), 1, "{}", r.test_key);
        assert_eq!(first[0].record.count, full.intervals[0].transactions);
        // Metrics: OS and PostgreSQL.
        let names: std::collections::BTreeSet<&str> =
            full.metrics.iter().map(|m| m.metric.as_str()).collect();
        for m in [
            "os.cpu.user_pct",
            "os.mem.dirty_mb",
            "pg.db.xact_commit_per_s",
            "pg.db.size_bytes",
        ] {
            assert!(
                names.contains(m),
                "{}: metric {m} missing from {names:?}",
                r.test_key
            );
        }
        let cpu: Vec<f64> = full
            .metrics
            .iter()
            .filter(|m| m.metric == "os.cpu.user_pct")
            .map(|m| m.value)
            .collect();
        assert!(cpu.iter().all(|v| (0.0..=100.0).contains(v)));
        // Counters and settings.
        assert!(full.counters.iter().any(|c| c.name == "pg.db.xact_commit"));
        assert!(full.settings.iter().any(|s| s.name == "port"
            || s.name == "listen_addresses"
            || s.name == "unix_socket_directories"));
        // Manifest.
        let env = full.environment.as_ref().expect("manifest");
        assert!(env["kernel"].as_str().is_some());
        assert!(env["cpu"]["count"].as_u64().unwrap() >= 1);
        assert!(env["server"]["version"]
            .as_str()
            .unwrap()
            .starts_with("PostgreSQL"));
        assert_eq!(
            r.scale,
            Some(if r.test_key.contains("/s1/") { 1 } else { 2 })
        );
    }
    // The database really holds the last scale.
    let branches = srv.psql(&db, "select count(*) from pgbench_branches");
    assert_eq!(branches.trim(), "2");

    // Nothing left: a rerun stores nothing new.
    let again = run_campaign(&campaign, &mut store, &opts, &StopFlag::new()).unwrap();
    assert_eq!(again.set_id, out.set_id);
    assert_eq!((again.already_stored, again.ok + again.failed), (12, 0));
    assert_eq!(store.set(out.set_id).unwrap().record.status, "complete");
}

#[test]
fn failed_test_is_recorded_with_the_server_error_and_campaign_goes_on() {
    let srv = TestServer::shared();
    let db = srv.create_database("campaign_fail");
    let dir = tempfile::tempdir().unwrap();
    // Scripts that fail on their first run (unknown table; division by zero in the
    // second command), next to one that works.
    std::fs::write(dir.path().join("bad.sql"), "SELECT * FROM no_such_table;\n").unwrap();
    std::fs::write(dir.path().join("div.sql"), "SELECT 1;\nSELECT 1 / 0;\n").unwrap();
    let text = format!(
        r#"
[campaign]
name = "fail"
shuffle = false
[[target]]
name = "fx"
conninfo = "{}"
[matrix]
scales = [1]
clients = [2]
scripts = [{{ file = "bad.sql" }}, {{ file = "div.sql" }}, "select-only"]
[run]
duration = 1
"#,
        srv.conninfo(&db)
    );
    let campaign = Campaign::parse(&text, "fail.toml", dir.path()).unwrap();
    let mut store = Store::open(":memory:").unwrap();
    let opts = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let out = run_campaign(&campaign, &mut store, &opts, &StopFlag::new()).unwrap();
    assert_eq!((out.ok, out.failed), (1, 2), "{out:?}");
    let runs = store.list_runs(&RunFilter::default()).unwrap();
    let error_of = |part: &str| {
        let run = runs
            .iter()
            .find(|r| r.record.test_key.contains(part))
            .unwrap_or_else(|| panic!("no test {part}"));
        assert_eq!(run.record.status, "failed", "{part}");
        run.record.error.clone().unwrap_or_default()
    };
    // The stored error is what pgbench prints on stderr for each aborted client: the
    // client, script, command and query, then the server's own message.
    let bad = error_of("/bad/");
    assert!(bad.starts_with("benchmark run aborted:\n"), "{bad}");
    assert!(
        bad.contains("script 0 aborted in command 0 query 0: ERROR:  relation \"no_such_table\" does not exist"),
        "{bad}"
    );
    for client in ["client 0 ", "client 1 "] {
        assert!(bad.contains(client), "{client} missing from {bad}");
    }
    let div = error_of("/div/");
    assert!(
        div.contains("aborted in command 1 query 0: ERROR:  division by zero"),
        "{div}"
    );
    // --retry-failed runs only the failed tests again.
    let retry = RunOptions {
        quiet: true,
        retry_failed: true,
        ..Default::default()
    };
    let again = run_campaign(&campaign, &mut store, &retry, &StopFlag::new()).unwrap();
    assert_eq!((again.already_stored, again.ok + again.failed), (1, 2));
    assert_eq!(store.list_runs(&RunFilter::default()).unwrap().len(), 3);
}

#[test]
fn server_commit_mismatch_is_stored_and_reported() {
    let srv = TestServer::shared();
    let db = srv.create_database("campaign_mismatch");
    let dir = tempfile::tempdir().unwrap();
    // Two autocommit statements per pgbench transaction: the server counts two commits
    // for each transaction the client counts.
    std::fs::write(dir.path().join("two.sql"), "SELECT 1;\nSELECT 2;\n").unwrap();
    let text = format!(
        r#"
[campaign]
name = "mismatch"
[[target]]
name = "fx"
conninfo = "{}"
[matrix]
scales = [1]
clients = [1]
scripts = [{{ file = "two.sql" }}]
[run]
duration = 2
warmup = 2
"#,
        srv.conninfo(&db)
    );
    let campaign = Campaign::parse(&text, "m.toml", dir.path()).unwrap();
    let mut store = Store::open(":memory:").unwrap();
    let opts = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let out = run_campaign(&campaign, &mut store, &opts, &StopFlag::new()).unwrap();
    assert_eq!(out.ok, 1, "{out:?}");
    assert!(
        out.warnings.iter().any(|w| w.contains("commits")),
        "{:?}",
        out.warnings
    );
    let run = &store.list_runs(&RunFilter::default()).unwrap()[0];
    let pct = run.record.commit_mismatch_pct.unwrap();
    // The warm-up ran before the measured window: its intervals are kept, flagged, and
    // not counted in the run's transactions.
    let full = store.load_run(run.id).unwrap();
    let warm: i64 = full
        .intervals
        .iter()
        .filter(|i| i.warmup)
        .map(|i| i.transactions)
        .sum();
    let measured: i64 = full
        .intervals
        .iter()
        .filter(|i| !i.warmup)
        .map(|i| i.transactions)
        .sum();
    assert!(warm > 0, "warm-up intervals: {:?}", full.intervals);
    assert!(full
        .intervals
        .iter()
        .filter(|i| i.warmup)
        .all(|i| i.elapsed_s <= 0.0));
    assert!(measured <= run.record.transactions.unwrap());
    assert!((90.0..=110.0).contains(&pct), "mismatch {pct} %");
    let warnings = store.warnings(Some(out.set_id)).unwrap();
    assert!(warnings
        .iter()
        .any(|w| w.record.code == "commit_mismatch" && w.record.run_id == Some(run.id)));
}
