//! End-to-end campaign on a throwaway server the campaign starts itself (local
//! binaries, a non-default setting): 2 scales × 3 client counts × 2 repeats, 2-second
//! tests. Every test, interval, histogram, metric family, counter and manifest field
//! must be in the store and plausible; a second invocation finds nothing left to do.
//! The other tests use the shared fixture server as an existing (conninfo) target.

use pgsurge_campaign::{run_campaign, Campaign, RunOptions};
use pgsurge_engine::StopFlag;
use pgsurge_server::testing::TestServer;
use pgsurge_store::{IntervalWindow, RunFilter, Store};

const E2E_CAMPAIGN: &str = r#"
[campaign]
name = "e2e"
seed = 3

[[target]]
name = "local"
settings = { shared_buffers = "48MB", track_io_timing = "on" }

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
"#;

#[test]
fn campaign_stores_every_test_with_intervals_metrics_and_manifest() {
    let campaign = Campaign::parse(E2E_CAMPAIGN, "e2e.toml", std::path::Path::new(".")).unwrap();
    let dir = pgsurge_testkit::scratch_dir("campaign-e2e");
    let store_path = dir.path().join("r.db");
    let mut store = Store::open(store_path.to_str().unwrap()).unwrap();
    let opts = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let out = run_campaign(&campaign, &mut store, &opts, &StopFlag::new()).unwrap();
    assert_eq!(out.planned, 12);
    assert_eq!((out.ok, out.failed, out.remaining), (12, 0, 0), "{out:?}");
    let targets = store.targets(out.set_id).unwrap();
    assert_eq!(targets.len(), 1);
    assert_eq!(targets[0].record.kind, "throwaway");
    assert!(targets[0].record.bin_dir.is_some());

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
                expected.push(format!("local/s{s}/select-only/c{c}/r-/{r}"));
            }
        }
    }
    expected.sort();
    assert_eq!(
        keys,
        expected.iter().map(String::as_str).collect::<Vec<_>>()
    );

    let infos: std::collections::BTreeSet<String> = store
        .metrics_info()
        .unwrap()
        .into_iter()
        .map(|i| i.metric)
        .collect();
    let mut sizes: Vec<(i64, f64, f64)> = Vec::new();
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
        assert!(
            full.intervals[0].elapsed_s.abs() < 0.5,
            "{:?}",
            full.intervals[0]
        );
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
        // Metrics: every OS and PostgreSQL family (PostgreSQL 16+ views are tested in
        // pg_versions.rs), each described in metrics_info.
        let names: std::collections::BTreeSet<&str> =
            full.metrics.iter().map(|m| m.metric.as_str()).collect();
        let mut wanted: Vec<String> = [
            "os.cpu.user_pct",
            "os.cpu.system_pct",
            "os.cpu.iowait_pct",
            "os.cpu.steal_pct",
            "os.cpu.idle_pct",
            "os.procs.running",
            "os.procs.blocked",
            "os.ctxt_per_s",
            "os.mem.dirty_mb",
            "os.mem.writeback_mb",
            "os.mem.cached_mb",
            "os.mem.available_mb",
            "os.postgres.cpu_pct",
            "pg.db.xact_commit_per_s",
            "pg.db.xact_rollback_per_s",
            "pg.db.blks_hit_per_s",
            "pg.db.blks_read_per_s",
            "pg.db.tup_returned_per_s",
            "pg.db.tup_fetched_per_s",
            "pg.db.deadlocks_per_s",
            "pg.db.temp_files_per_s",
            "pg.db.size_bytes",
            "pg.checkpointer.timed_per_s",
            "pg.checkpointer.requested_per_s",
            "pg.checkpointer.buffers_written_per_s",
            "pg.bgwriter.buffers_alloc_per_s",
            "pg.wal.records_per_s",
            "pg.wal.bytes_per_s",
            "pg.wal.lsn_bytes_per_s",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for dev in pgsurge_observe::manifest::default_devices() {
            for m in [
                "read_mbps",
                "write_mbps",
                "util_pct",
                "await_ms",
                "reads_per_s",
                "writes_per_s",
            ] {
                wanted.push(format!("os.disk.{dev}.{m}"));
            }
        }
        for m in &wanted {
            assert!(
                names.contains(m.as_str()),
                "{}: metric {m} missing from {names:?}",
                r.test_key
            );
        }
        assert!(
            names.iter().any(|n| n.starts_with("pg.backends.state.")),
            "{}: no backend states in {names:?}",
            r.test_key
        );
        let value_range = |name: &str| {
            let v: Vec<f64> = full
                .metrics
                .iter()
                .filter(|m| m.metric == name)
                .map(|m| m.value)
                .collect();
            (
                v.iter().cloned().fold(f64::INFINITY, f64::min),
                v.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
                v.len(),
            )
        };
        for pct in ["os.cpu.user_pct", "os.cpu.idle_pct"] {
            let (lo, hi, n) = value_range(pct);
            assert!(n >= 2 && lo >= 0.0 && hi <= 100.0, "{pct}: {lo}..{hi}");
        }
        // The throwaway server's own processes worked during the test: at most every
        // CPU of the host (percent of one CPU).
        let (lo, hi, n) = value_range("os.postgres.cpu_pct");
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        assert!(
            n >= 2 && lo >= 0.0 && hi > 0.0 && hi <= 100.0 * cpus * 1.05,
            "os.postgres.cpu_pct: {lo}..{hi} over {n} samples"
        );
        let (_, _, samples) = value_range("pg.db.xact_commit_per_s");
        assert!(samples >= 2, "{}: {samples} samples", r.test_key);
        // The series carries the run's commits (single seconds are lumpy: backends
        // publish their statistics in batches).
        let moved = full
            .counters
            .iter()
            .find(|c| c.name == "pg.db.xact_commit")
            .and_then(|c| c.delta)
            .expect("the commit counter");
        crate::series::assert_carries(&full.metrics, "pg.db.xact_commit_per_s", moved, &r.test_key);
        let (size_lo, size_hi, _) = value_range("pg.db.size_bytes");
        sizes.push((r.scale.unwrap(), size_lo, size_hi));
        assert!(
            full.metrics.iter().all(|m| m.value.is_finite()),
            "{}: a non-finite sample",
            r.test_key
        );
        for m in &wanted {
            assert!(
                infos.contains(m.as_str()),
                "{m} not described in metrics_info"
            );
        }
        // Per-transaction costs, stored with the result: the throwaway server runs
        // here, so its CPU is measured; select-only reads shared buffers.
        let costs = full
            .run
            .txn_costs()
            .expect("txn_costs stored with the result");
        assert_eq!(
            costs.transactions,
            full.run.record.transactions.unwrap() as u64,
            "{}",
            r.test_key
        );
        for name in [
            "server_cpu_user_us",
            "client_cpu_user_us",
            "shared_blks_hit",
            "server_context_switches",
        ] {
            assert!(
                costs.per_txn(name).is_some_and(|v| v > 0.0),
                "{}: {name} in {costs:?}",
                r.test_key
            );
        }
        assert!(costs.unavailable.is_empty(), "{costs:?}");
        // Counters (before/after snapshots) and settings in force.
        for c in [
            "pg.db.xact_commit",
            "pg.db.blks_hit",
            "pg.checkpointer.requested",
            "pg.bgwriter.buffers_alloc",
            "pg.wal.records",
            "pg.wal.lsn_bytes",
        ] {
            let found = full.counters.iter().find(|x| x.name == c);
            assert!(
                found.is_some_and(|x| x.delta.is_some_and(|d| d >= 0.0)),
                "{}: counter {c}: {found:?}",
                r.test_key
            );
        }
        assert!(full
            .settings
            .iter()
            .any(|s| s.name == "shared_buffers" && s.setting.as_deref() == Some("6144")));
        // Manifest: host and server.
        let env = full.environment.as_ref().expect("manifest");
        assert!(env["kernel"].as_str().is_some_and(|k| !k.is_empty()));
        assert!(env["cpu"]["count"].as_u64().unwrap() >= 1);
        assert!(env["cpu"]["model"].as_str().is_some() || env["cpu"]["model"].is_null());
        assert!(env["memory_bytes"].as_u64().unwrap() > 1 << 26);
        assert!(env["thp"].is_object() && env["vm"].is_object());
        assert!(env["block_devices"].is_object() && env["mounts"].is_array());
        let server = &env["server"];
        assert!(server["version"]
            .as_str()
            .unwrap()
            .starts_with("PostgreSQL"));
        assert!(server["pg_config"]["CONFIGURE"].as_str().is_some());
        assert_eq!(
            server["non_default_settings"]["shared_buffers"].as_str(),
            Some("6144"),
            "{:?}",
            server["non_default_settings"]
        );
        assert_eq!(
            r.scale,
            Some(if r.test_key.contains("/s1/") { 1 } else { 2 })
        );
    }
    // Each scale was initialized once: the database is larger at scale 2 (about 37 MB
    // against 22 MB), and every test of a scale saw the same order of size.
    let max_s1 = sizes
        .iter()
        .filter(|s| s.0 == 1)
        .map(|s| s.2)
        .fold(0.0, f64::max);
    let min_s2 = sizes
        .iter()
        .filter(|s| s.0 == 2)
        .map(|s| s.1)
        .fold(f64::INFINITY, f64::min);
    assert!(
        max_s1 > 15e6 && min_s2 > max_s1 * 1.3,
        "database sizes by scale: {sizes:?}"
    );

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
    let dir = pgsurge_testkit::scratch_dir("campaign-e2e");
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
fn exit_on_abort_fails_the_test_and_the_campaign_goes_on() {
    let srv = TestServer::shared();
    let db = srv.create_database("campaign_exit_abort");
    let dir = pgsurge_testkit::scratch_dir("campaign-e2e");
    std::fs::write(dir.path().join("div.sql"), "SELECT 1 / 0;\n").unwrap();
    let text = format!(
        r#"
[campaign]
name = "exit-on-abort"
shuffle = false
[[target]]
name = "fx"
conninfo = "{}"
[matrix]
scales = [1]
clients = [2]
scripts = [{{ file = "div.sql" }}, "select-only"]
[run]
duration = 5
threads = 2
extra_args = ["--exit-on-abort", "--failures-detailed"]
"#,
        srv.conninfo(&db)
    );
    let campaign = Campaign::parse(&text, "abort.toml", dir.path()).unwrap();
    let mut store = Store::open(":memory:").unwrap();
    let opts = RunOptions {
        quiet: true,
        ..Default::default()
    };
    // The process survives the abort (the engine returns an error; nothing exits).
    let out = run_campaign(&campaign, &mut store, &opts, &StopFlag::new()).unwrap();
    assert_eq!((out.ok, out.failed), (1, 1), "{out:?}");
    let runs = store.list_runs(&RunFilter::default()).unwrap();
    let div = runs
        .iter()
        .find(|r| r.record.test_key.contains("/div/"))
        .expect("the div test is stored");
    assert_eq!(div.record.status, "failed");
    let error = div.record.error.clone().unwrap_or_default();
    assert!(
        error.contains("Run was aborted due to an error in thread")
            && error.contains("division by zero"),
        "{error}"
    );
    let ok = runs
        .iter()
        .find(|r| r.record.test_key.contains("select-only"))
        .expect("the select-only test is stored");
    assert_eq!(ok.record.status, "ok");
    // The stored command line is rendered from the typed RunSpec.
    let line = ok.record.command_line.clone().unwrap_or_default();
    assert!(
        line.starts_with("pgbench --client=2 --jobs=2 --time=5 --protocol=simple ")
            && line.contains(" --builtin=select-only@1 ")
            && line.contains(" --exit-on-abort ")
            && line.contains(" --failures-detailed "),
        "{line}"
    );

    // extra_args holding anything else is refused when the campaign is loaded.
    let bad = text.replace("\"--failures-detailed\"", "\"-M\", \"prepared\"");
    let err = Campaign::parse(&bad, "abort.toml", dir.path()).unwrap_err();
    assert!(err.to_string().contains("run.extra_args"), "{err}");
}

#[test]
fn server_commit_mismatch_is_stored_and_reported() {
    let srv = TestServer::shared();
    let db = srv.create_database("campaign_mismatch");
    let dir = pgsurge_testkit::scratch_dir("campaign-e2e");
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

#[test]
fn an_edited_campaign_starts_a_new_set_and_the_abandoned_one_is_interrupted() {
    let srv = TestServer::shared();
    let db = srv.create_database("campaign_edited");
    let dir = pgsurge_testkit::scratch_dir("campaign-e2e");
    let store_path = dir.path().join("r.db").display().to_string();
    let text = |transactions: u32| {
        format!(
            "[campaign]\nname = \"edited\"\n[[target]]\nname = \"fx\"\nconninfo = \"{}\"\n\
             [matrix]\nscales = [1]\nclients = [1]\nscripts = [\"select-only\"]\n\
             [run]\ntransactions = {transactions}\n[hygiene]\nvacuum = false\ncheckpoint = false\n",
            srv.conninfo(&db)
        )
    };
    let parse = |t: &str| Campaign::parse(t, "edited.toml", dir.path()).unwrap();
    let opts = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let mut store = Store::open(&store_path).unwrap();
    // A version of the file whose set a live process holds: left as it is.
    let (held_id, held_lock) = store
        .claim_set(
            &pgsurge_store::SetRecord {
                name: "edited".into(),
                kind: "campaign".into(),
                spec_hash: Some(parse(&text(4)).identity_hash()),
                status: "running".into(),
                created_at: pgsurge_store::now_rfc3339(),
                ..Default::default()
            },
            true,
        )
        .unwrap();
    let first = run_campaign(&parse(&text(2)), &mut store, &opts, &StopFlag::new()).unwrap();
    // A version other than the held one: a set of its own, said so.
    assert_eq!(first.notices.len(), 1, "{:?}", first.notices);
    assert!(
        first.notices[0].starts_with(&format!(
            "the campaign file changed since set {held_id} was run (running, 0 tests stored)"
        )),
        "{:?}",
        first.notices
    );
    // As a campaign killed mid-way leaves its set: `running`, locked by a process that
    // is gone.
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = i64::from(gone.id());
    gone.wait().unwrap();
    store.set_set_status(first.set_id, "running", None).unwrap();
    store
        .query(
            "INSERT INTO set_locks (set_id, host, pid, token, acquired_at, heartbeat_epoch) \
             VALUES (?, ?, ?, 'killed', '2026-01-01T00:00:00Z', ?)",
            &[
                pgsurge_store::Value::Int(first.set_id),
                pgsurge_store::Value::Text(pgsurge_store::this_host()),
                pgsurge_store::Value::Int(dead_pid),
                pgsurge_store::Value::Real(pgsurge_store::now_epoch()),
            ],
        )
        .unwrap();

    // The file is edited (another transaction count) and run again.
    let second = run_campaign(&parse(&text(3)), &mut store, &opts, &StopFlag::new()).unwrap();
    assert_ne!(second.set_id, first.set_id);
    assert_eq!((second.ok, second.failed), (1, 0), "{second:?}");
    assert_eq!(second.notices.len(), 1, "{:?}", second.notices);
    let notice = &second.notices[0];
    assert!(
        notice.starts_with(&format!(
            "the campaign file changed since set {} was run (interrupted, 1 of 1 tests stored)",
            first.set_id
        )) && notice.contains(&format!("so a new set {} is started", second.set_id)),
        "{notice}"
    );
    assert_eq!(
        store.set(first.set_id).unwrap().record.status,
        "interrupted"
    );
    assert_eq!(store.set(held_id).unwrap().record.status, "running");
    let warnings = store.warnings(Some(first.set_id)).unwrap();
    assert!(
        warnings.iter().any(|w| w.record.code == "interrupted"),
        "{warnings:?}"
    );

    // The file as it was resumes its set (nothing left to run), with nothing to say.
    let again = run_campaign(&parse(&text(2)), &mut store, &opts, &StopFlag::new()).unwrap();
    assert_eq!(again.set_id, first.set_id);
    assert_eq!(again.already_stored, 1);
    assert!(again.notices.is_empty(), "{:?}", again.notices);
    assert_eq!(store.set(first.set_id).unwrap().record.status, "complete");
    assert_eq!(store.set(held_id).unwrap().record.status, "running");
    held_lock.release();
}
