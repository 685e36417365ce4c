//! A store that cannot take a run fails `bench --store` before the benchmark; one
//! damaged run does not break `report`, `results show|export` or `compare` (it is left
//! out and named); impossible values are flagged; `results import` refuses reports that
//! contradict themselves or their log, naming the file and the line.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use pgsurge_server::testing::TestServer;
use pgsurge_store::{HistogramRecord, RunRecord, RunWrite, SetRecord, Store, SCHEMA_VERSION};

fn pgsurge(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pgsurge"))
        .env_remove("PGSURGE_STORE")
        .args(args)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn sqlite(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).unwrap()
}

#[test]
fn bench_store_refuses_an_unusable_store_before_the_run() {
    let srv = TestServer::shared();
    let dir = pgsurge_testkit::scratch_dir("store-integrity");
    let script = dir.path().join("one.sql");
    std::fs::write(&script, "SELECT 1;\n").unwrap();
    let future = dir.path().join("future.db");
    drop(Store::open(future.to_str().unwrap()).unwrap());
    sqlite(&future)
        .execute_batch(&format!("PRAGMA user_version = {}", SCHEMA_VERSION + 1))
        .unwrap();
    let foreign = dir.path().join("foreign.db");
    sqlite(&foreign)
        .execute_batch("CREATE TABLE customers (id INT); INSERT INTO customers VALUES (1);")
        .unwrap();
    // Tables named like the store's, but no schema version: not a store either.
    let unversioned = dir.path().join("unversioned.db");
    sqlite(&unversioned)
        .execute_batch("CREATE TABLE sets (id INT); CREATE TABLE runs (id INT);")
        .unwrap();
    let pg_db = srv.create_database("foreign_store");
    srv.psql(&pg_db, "CREATE TABLE customers (id int)");
    let cases = [
        (
            future.display().to_string(),
            "newer than this pgsurge knows",
        ),
        (foreign.display().to_string(), "not a pgsurge results store"),
        (
            unversioned.display().to_string(),
            "no pgsurge schema version",
        ),
        (srv.conninfo(&pg_db), "no pgsurge schema version"),
    ];
    for (location, expected) in cases {
        let store_arg = format!("--store={location}");
        let args = [
            "bench",
            "-n",
            "-f",
            script.to_str().unwrap(),
            "-T",
            "600",
            &store_arg,
            "postgres",
        ];
        let mut child = srv
            .apply_env(&mut Command::new(env!("CARGO_BIN_EXE_pgsurge")))
            .env_remove("PGSURGE_STORE")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > Duration::from_secs(60) {
                child.kill().unwrap();
                let _ = child.wait();
                panic!("{location}: the benchmark ran although the store cannot take it");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let out = child.wait_with_output().unwrap();
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(1), "{location}: {stderr}");
        assert_eq!(stdout, "", "{location}: a report was printed");
        assert_eq!(stderr.lines().count(), 1, "{location}: {stderr}");
        assert!(stderr.contains(expected), "{location}: {stderr}");
    }
    // The refused files are as they were.
    let tables = |p: &Path| -> i64 {
        sqlite(p)
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!((tables(&foreign), tables(&unversioned)), (1, 2));
    assert_eq!(
        srv.psql(
            &pg_db,
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        )
        .trim(),
        "1"
    );
}

/// A store with sets "a" (runs 1, 2) and "b" (runs 3, 4) of one cell, each run with its
/// result document and latency histogram.
fn four_runs(path: &Path) -> String {
    let location = path.display().to_string();
    let mut store = Store::open(&location).unwrap();
    let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    for v in 1..=100u64 {
        h.record(v * 10).unwrap();
    }
    for (set, rates) in [("a", [1000.0, 1010.0]), ("b", [1100.0, 1090.0])] {
        let set_id = store
            .create_set(&SetRecord {
                name: set.into(),
                kind: "campaign".into(),
                status: "complete".into(),
                created_at: "2026-01-01T00:00:00Z".into(),
                ..Default::default()
            })
            .unwrap();
        for (i, tps) in rates.into_iter().enumerate() {
            let run = RunRecord {
                set_id,
                test_key: format!("select-only/c2#{}", i + 1),
                repeat_no: i as i64 + 1,
                status: "ok".into(),
                script: Some("select-only".into()),
                scale: Some(1),
                clients: Some(2),
                query_mode: Some("simple".into()),
                tps: Some(tps),
                transactions: Some(10_000),
                latency_p99_ms: Some(0.99),
                result_json: Some(serde_json::json!({ "tps": tps })),
                ..Default::default()
            };
            let histograms =
                vec![HistogramRecord::from_histogram("latency", -1, None, &h).unwrap()];
            store
                .write_run(&RunWrite {
                    run,
                    histograms,
                    ..Default::default()
                })
                .unwrap();
        }
    }
    location
}

#[test]
fn one_damaged_run_is_left_out_and_named() {
    for damage in [
        "UPDATE runs SET result_json = '{\"tps\": 10' WHERE id = 2",
        "UPDATE run_histograms SET data = x'00112233' WHERE run_id = 2",
    ] {
        let dir = pgsurge_testkit::scratch_dir("store-integrity");
        let store = four_runs(&dir.path().join("r.db"));
        sqlite(&dir.path().join("r.db"))
            .execute_batch(damage)
            .unwrap();
        let named = "run 2 (set 1, test \"select-only/c2#2\")";
        let report_dir = dir.path().join("report");
        let report = report_dir.to_str().unwrap();
        for args in [
            vec!["report", "--store", &store, "-o", report],
            vec!["results", "show", "a", "--store", &store],
            vec!["results", "export", "--store", &store],
            vec!["compare", "set:a", "set:b", "--store", &store],
        ] {
            let out = pgsurge(&args);
            let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
            assert_eq!(out.status.code(), Some(0), "{damage}: {args:?}: {stderr}");
            assert!(stderr.contains(named), "{damage}: {args:?}: {stderr}");
            match args[0..2] {
                ["results", "show"] => {
                    assert!(
                        stdout.contains("c2#1") && !stdout.contains("c2#2"),
                        "{stdout}"
                    )
                }
                ["results", "export"] => {
                    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
                    let ids: Vec<i64> = doc["runs"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|r| r["id"].as_i64().unwrap())
                        .collect();
                    assert_eq!(ids, [1, 3, 4]);
                }
                ["compare", _] => assert!(stdout.contains("select-only"), "{stdout}"),
                _ => {
                    assert!(report_dir.join("run-1.html").is_file());
                    assert!(!report_dir.join("run-2.html").exists());
                }
            }
        }
    }
    // Nothing but the damaged run asked for: an error naming it.
    let dir = pgsurge_testkit::scratch_dir("store-integrity");
    let store = four_runs(&dir.path().join("r.db"));
    sqlite(&dir.path().join("r.db"))
        .execute_batch("UPDATE runs SET result_json = '[' WHERE id = 2")
        .unwrap();
    let out = pgsurge(&["results", "show", "--run", "2", "--store", &store]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("run 2 (set 1, test \"select-only/c2#2\"): column result_json")
    );
}

#[test]
fn impossible_values_are_flagged() {
    let dir = pgsurge_testkit::scratch_dir("store-integrity");
    let store = four_runs(&dir.path().join("r.db"));
    sqlite(&dir.path().join("r.db"))
        .execute_batch("UPDATE runs SET tps = -1010 WHERE id = 2")
        .unwrap();
    let out = pgsurge(&["results", "show", "a", "--store", &store]);
    assert_eq!(out.status.code(), Some(0));
    let row = text(&out.stdout)
        .lines()
        .find(|l| l.contains("c2#2"))
        .map(str::to_owned)
        .unwrap();
    assert!(row.contains("IMPOSSIBLE: tps = -1010"), "{row}");
    assert!(text(&out.stderr)
        .contains("run 2 (set 1, test \"select-only/c2#2\") holds impossible values: tps = -1010"));
    // Statistics leave it out, and say so.
    let report = dir.path().join("report");
    let out = pgsurge(&["report", "--store", &store, "-o", report.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stderr)
        .contains("run 2 (set 1, test \"select-only/c2#2\"): impossible values: tps = -1010"));
    assert!(!report.join("run-2.html").exists());
}

const REPORT: &str = "pgbench (15.4)\ntransaction type: <builtin: select only>\nscaling factor: 1\n\
query mode: simple\nnumber of clients: 1\nnumber of threads: 1\nmaximum number of tries: 1\n\
duration: 1 s\nnumber of transactions actually processed: 4\nnumber of failed transactions: 0 (0.000%)\n\
latency average = 0.250 ms\ninitial connection time = 2.000 ms\ntps = 4.000000 (without initial connection time)\n";

#[test]
fn import_refuses_reports_that_contradict_themselves_or_their_log() {
    let dir = pgsurge_testkit::scratch_dir("store-integrity");
    let store = dir.path().join("i.db").display().to_string();
    let file = |name: &str, body: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        p.display().to_string()
    };
    let log = |lines: usize| -> String {
        (0..lines)
            .map(|i| format!("0 {i} 250 0 1700000000 {i}\n"))
            .collect()
    };
    let good = file("good.txt", REPORT);
    let zero = file("zero.txt", &REPORT.replace("processed: 4", "processed: 0"));
    let huge = file(
        "huge.txt",
        &REPORT.replace("processed: 4", "processed: 99999999999999999999"),
    );
    let two = file("two.txt", &format!("{REPORT}{REPORT}"));
    let short_log = file("short.log", &log(3));
    let full_log = file("full.log", &log(4));
    for (args, expected) in [
        (
            vec![zero.as_str()],
            format!("{zero}: line 13: tps = 4 contradicts line 9: \"number of transactions actually processed: 0\""),
        ),
        (
            vec![huge.as_str()],
            format!("{huge}: line 9: \"number of transactions actually processed: 99999999999999999999\": the value is not a whole number in range"),
        ),
        (
            vec![two.as_str()],
            format!("{two}: line 15: a second report begins here (the first ends at line 13)"),
        ),
        (
            vec![good.as_str(), "--log", short_log.as_str()],
            format!("{good}: line 9: the report says 4 transactions were processed, but the log {short_log} holds 3"),
        ),
    ] {
        let mut argv = vec!["results", "import", "--store", &store];
        argv.extend(args);
        let out = pgsurge(&argv);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{argv:?}: {stderr}");
        assert!(stderr.contains(&expected), "{argv:?}: {stderr}");
    }
    let out = pgsurge(&[
        "results", "import", "--store", &store, &good, "--log", &full_log,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "imported 1 run(s) into set 1\n");
}

/// Real pgbench logs agree with their reports, per-transaction and aggregated, from
/// pgbench and from `pgsurge bench`.
#[test]
fn import_accepts_real_reports_with_their_logs() {
    let srv = TestServer::shared();
    let db = srv.create_database("import_logs");
    let bench = |program: &[&str], args: &[&str], cwd: &Path| -> String {
        let out = srv
            .apply_env(&mut Command::new(program[0]))
            .current_dir(cwd)
            .args(&program[1..])
            .args(args)
            .arg(&db)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let dir = pgsurge_testkit::scratch_dir("store-integrity");
    bench(&["/usr/bin/pgbench"], &["-i", "-s", "1", "-q"], dir.path());
    let store = dir.path().join("i.db").display().to_string();
    let programs: [&[&str]; 2] = [
        &["/usr/bin/pgbench"],
        &[env!("CARGO_BIN_EXE_pgsurge"), "bench"],
    ];
    for (i, program) in programs.into_iter().enumerate() {
        for extra in [None, Some("--aggregate-interval=1")] {
            let run_dir = dir.path().join(format!("{i}-{}", extra.is_some()));
            std::fs::create_dir(&run_dir).unwrap();
            let mut args = vec![
                "-n",
                "-S",
                "-c",
                "2",
                "-j",
                "1",
                "-T",
                "1",
                "-l",
                "--log-prefix=log",
            ];
            args.extend(extra);
            let report = run_dir.join("report.txt");
            std::fs::write(&report, bench(program, &args, &run_dir)).unwrap();
            let log = std::fs::read_dir(&run_dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("log."))
                .expect("the log");
            let out = pgsurge(&[
                "results",
                "import",
                "--store",
                &store,
                report.to_str().unwrap(),
                "--log",
                log.to_str().unwrap(),
            ]);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{program:?} {extra:?}: {}",
                text(&out.stderr)
            );
        }
    }
    // A run that ends inside its first aggregation interval leaves an empty log: the
    // report is imported without it, and says so.
    let report = dir.path().join("1-true").join("report.txt");
    let empty = dir.path().join("empty.log");
    std::fs::write(&empty, "").unwrap();
    let out = pgsurge(&[
        "results",
        "import",
        "--store",
        &store,
        report.to_str().unwrap(),
        "--log",
        empty.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("holds no line"),
        "{}",
        text(&out.stderr)
    );
}
