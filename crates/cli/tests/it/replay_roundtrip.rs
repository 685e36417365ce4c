//! `pgsurge replay` against real logs: a real pgbench (tpcb-like, `-M simple` and
//! `-M prepared`, three clients, a fixed seed) runs on a server that logs the way a
//! replay needs, in stderr, csvlog and jsonlog at once; each log is replayed onto a copy
//! of the database made before the run, and the copy must end as the original did (sums
//! of balances, history rows) with every fingerprint's count as logged.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use pgsurge_server::testing::{TestServer, TestServerOptions};
use serde_json::Value;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_pgsurge")
}

/// The settings of a server whose log a replay can read, in the three formats.
pub fn logging_server() -> TestServer {
    let settings = [
        ("logging_collector", "on"),
        ("log_destination", "stderr,csvlog,jsonlog"),
        ("log_directory", "log"),
        ("log_filename", "postgresql.log"),
        ("log_rotation_age", "0"),
        ("log_rotation_size", "0"),
        ("log_statement", "all"),
        ("log_connections", "on"),
        ("log_disconnections", "on"),
        ("log_min_duration_statement", "0"),
        ("log_min_error_statement", "error"),
        ("log_line_prefix", "%m|%u|%d|%c|"),
        ("lc_messages", "C"),
    ];
    TestServer::start(TestServerOptions {
        settings: settings
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Default::default()
    })
}

/// The server's three log files.
pub fn log_files(srv: &TestServer) -> [PathBuf; 3] {
    let dir = srv.data_dir().join("log");
    ["postgresql.log", "postgresql.csv", "postgresql.json"].map(|f| dir.join(f))
}

/// Where each log file ends now.
pub fn log_marks(srv: &TestServer) -> [u64; 3] {
    log_files(srv).map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
}

/// The bytes each log got since `marks`, once `sessions` disconnections are in all
/// three (the logging collector writes them a little later), written to `dir`.
pub fn log_slices(
    srv: &TestServer,
    marks: [u64; 3],
    sessions: usize,
    dir: &Path,
    name: &str,
) -> [PathBuf; 3] {
    let files = log_files(srv);
    let started = Instant::now();
    loop {
        let slices: Vec<Vec<u8>> = files
            .iter()
            .zip(marks)
            .map(|(p, m)| {
                std::fs::read(p)
                    .map(|b| b[m as usize..].to_vec())
                    .unwrap_or_default()
            })
            .collect();
        let done = slices.iter().all(|s| {
            String::from_utf8_lossy(s)
                .matches("disconnection: ")
                .count()
                >= sessions
                && s.ends_with(b"\n")
        });
        if done {
            let exts = ["log", "csv", "json"];
            return std::array::from_fn(|i| {
                let p = dir.join(format!("{name}.{}", exts[i]));
                std::fs::write(&p, &slices[i]).expect("write log slice");
                p
            });
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the logs never showed {sessions} disconnections"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs `pgsurge replay ARGS` against `srv`; its status, stdout and stderr.
pub fn replay(srv: &TestServer, args: &[&str]) -> (i32, String, String) {
    let mut c = Command::new(bin());
    c.arg("replay").args(args);
    srv.apply_env(&mut c);
    let out = c.output().expect("run pgsurge replay");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Sums of balances and history rows: what a tpcb-like run changes.
fn state(srv: &TestServer, db: &str) -> String {
    srv.psql(
        db,
        "select (select sum(abalance) from pgbench_accounts), (select sum(tbalance) from pgbench_tellers), \
         (select sum(bbalance) from pgbench_branches), (select count(*) from pgbench_history), \
         (select sum(delta) from pgbench_history)",
    )
}

/// Every fingerprint replayed as often as logged, nothing failed or left unsent.
fn assert_faithful(report: &Value, what: &str) {
    let r = &report["replay"];
    assert_eq!(r["unexpected_errors"], 0, "{what}: {r}");
    assert_eq!(r["not_sent"], 0, "{what}: {r}");
    assert_eq!(r["failed_connections"], 0, "{what}: {r}");
    let fps = report["fingerprints"].as_array().expect("fingerprints");
    assert!(
        fps.len() >= 5,
        "{what}: tpcb-like has at least 5 statements: {fps:?}"
    );
    for f in fps {
        assert_eq!(
            f["logged"]["statements"], f["replayed"]["statements"],
            "{what}: {}",
            f["statement"]
        );
        assert!(
            f["logged"]["statements"].as_u64().unwrap() > 0,
            "{what}: {f}"
        );
    }
    let logged: u64 = fps
        .iter()
        .map(|f| f["logged"]["statements"].as_u64().unwrap())
        .sum();
    assert_eq!(
        report["read"]["statements"].as_u64(),
        Some(logged),
        "{what}"
    );
    assert_eq!(r["statements"].as_u64(), Some(logged), "{what}");
}

#[test]
fn replay_of_pgbench_logs_leaves_the_tables_as_pgbench_did() {
    let Some(pgbench) = pgsurge_testkit::reference_pgbench() else {
        return;
    };
    let srv = logging_server();
    let dir = pgsurge_testkit::scratch_dir("replay-roundtrip");
    let db = srv.create_database("rt");
    let init = Command::new(pgbench)
        .args(["-i", "-s", "1", "-q", &db])
        .envs(srv.env())
        .output()
        .expect("pgbench -i");
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    for mode in ["simple", "prepared"] {
        let copies = ["stderr", "csv", "json"].map(|f| format!("{db}_{mode}_{f}"));
        for c in &copies {
            srv.psql("postgres", &format!("create database {c} template {db}"));
        }
        let marks = log_marks(&srv);
        let run = Command::new(pgbench)
            .args([
                "-n",
                "-M",
                mode,
                "-c",
                "3",
                "-j",
                "1",
                "-t",
                "40",
                "--random-seed=7",
                &db,
            ])
            .envs(srv.env())
            .output()
            .expect("pgbench");
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        // pgbench's own connection and its three clients.
        let logs = log_slices(&srv, marks, 4, dir.path(), mode);
        let expected = state(&srv, &db);
        for (log, copy) in logs.iter().zip(&copies) {
            let json = dir.path().join(format!("{copy}.report.json"));
            let (code, stdout, stderr) = replay(
                &srv,
                &[
                    "--max",
                    "-d",
                    copy,
                    "--json",
                    json.to_str().unwrap(),
                    log.to_str().unwrap(),
                ],
            );
            assert_eq!(code, 0, "{mode} {}: {stderr}\n{stdout}", log.display());
            let report: Value =
                serde_json::from_slice(&std::fs::read(&json).expect("report")).expect("json");
            let what = format!("{mode} {}", log.display());
            assert_faithful(&report, &what);
            assert_eq!(report["read"]["sessions"], 4, "{what}");
            if mode == "prepared" {
                assert!(report["read"]["executes"].as_u64().unwrap() > 0, "{what}");
            }
            assert_eq!(state(&srv, copy), expected, "{what}");
            assert!(stdout.contains("replayed: 4 sessions"), "{what}: {stdout}");
        }
    }
}
