//! `pgsurge replay` timing and order on hand-written logs against the shared test
//! server: a paced replay keeps the log's schedule (divided by `--speed`), and
//! `--strict-order` names the statements that wait when the log's order cannot be kept
//! instead of hanging.

use std::path::Path;
use std::process::Command;

use pgsurge_server::testing::TestServer;
use serde_json::Value;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_pgsurge")
}

fn replay(srv: &TestServer, args: &[&str]) -> (i32, String, String) {
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

/// A stderr log line of session `s` at `ms` milliseconds past 18:00:00.
fn line(ms: u32, s: &str, rest: &str) -> String {
    format!(
        "2026-11-28 18:00:{:02}.{:03} UTC|postgres|db|65.{s}|{rest}\n",
        ms / 1000,
        ms % 1000
    )
}

fn write_log(dir: &Path, name: &str, lines: &[String]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, lines.concat()).expect("write log");
    p.to_string_lossy().into_owned()
}

/// Session `a` locks the table and commits only after session `b`, blocked by the
/// lock, has logged its next statement: in the log's order `b`'s second statement comes
/// before `a`'s commit, which alone could unblock `b`. `b` reads the table 1.5 s after
/// `a` locked it, so a replay at the log's pace holds the lock first however slowly the
/// machine starts `a`'s statements.
fn crossing_log(dir: &Path, table: &str) -> String {
    let c = "LOG:  connection authorized: user=postgres database=db";
    let d = "LOG:  disconnection: session time: 0:00:00.100 user=postgres database=db host=[local]";
    write_log(
        dir,
        "crossing.log",
        &[
            line(0, "a", c),
            line(1, "b", c),
            line(10, "a", "LOG:  statement: begin"),
            line(20, "a", &format!("LOG:  statement: lock table {table}")),
            line(
                1500,
                "b",
                &format!("LOG:  statement: select count(*) from {table}"),
            ),
            line(1510, "b", "LOG:  statement: select 2"),
            line(1520, "a", "LOG:  statement: commit"),
            line(1530, "a", d),
            line(1540, "b", d),
        ],
    )
}

#[test]
fn replay_strict_order_names_the_statements_of_a_stall() {
    let srv = TestServer::shared();
    let db = srv.create_database("strict");
    srv.psql(&db, "create table t (x int)");
    let dir = pgsurge_testkit::scratch_dir("replay-order");
    let log = crossing_log(dir.path(), "t");
    let (code, stdout, stderr) = replay(
        srv,
        &["--strict-order", "--stall-timeout", "1", "-d", &db, &log],
    );
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(
        stderr.contains(&format!(
            "statement #4 ({log}:6) is next, but its session 2 is still running statement #3 ({log}:5) for "
        )) && stderr.contains("select count(*) from t"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "1 statement of other sessions wait for their turn: #5 ({log}:7)"
        )),
        "{stderr}"
    );
    assert!(stdout.contains("ended early: "), "{stdout}");
    // The stalled replay cancelled what it had running and closed its sessions: the
    // lock is gone.
    let (code, _, stderr) = replay(srv, &["--max", "-d", &db, &log]);
    assert_eq!(code, 0, "independent sessions cannot stall: {stderr}");
}

#[test]
fn replay_at_a_speed_keeps_the_logs_schedule() {
    let srv = TestServer::shared();
    let db = srv.create_database("paced");
    let dir = pgsurge_testkit::scratch_dir("replay-order");
    let c = "LOG:  connection authorized: user=postgres database=db";
    let mut lines = vec![line(0, "a", c), line(0, "b", c)];
    for i in 0..10 {
        lines.push(line(100 * i, "a", &format!("LOG:  statement: select {i}")));
        lines.push(line(
            100 * i + 50,
            "b",
            &format!("LOG:  statement: select {i} + 1"),
        ));
    }
    let log = write_log(dir.path(), "paced.log", &lines);
    let (code, stdout, stderr) = replay(srv, &["--speed", "2", "-d", &db, "--json", "-", &log]);
    assert_eq!(code, 0, "{stderr}");
    let r: Value = serde_json::from_str(&stdout).expect("report");
    assert_eq!(r["replay"]["statements"], 20, "{r}");
    // 950 ms of log at twice the speed: the last statement goes 475 ms after the start.
    assert_eq!(r["replay"]["log_span_s"], 0.95, "{r}");
    let elapsed = r["replay"]["elapsed_s"].as_f64().unwrap();
    assert!(elapsed >= 0.475, "the schedule was not kept: {r}");
    assert_eq!(r["lag"]["scheduled"], true);
    let sent: u64 = r["lag"]["per_second"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["statements"].as_u64().unwrap())
        .sum();
    assert_eq!(sent, 20, "{r}");
    assert_eq!(r["settings"]["speed"], 2.0);
}
