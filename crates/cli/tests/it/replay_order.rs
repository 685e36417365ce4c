//! `pgsurge replay` timing and order on hand-written logs against the shared test
//! server: a paced replay keeps the log's schedule (divided by `--speed`), and
//! `--strict-order` names the statements that wait when the log's order cannot be kept
//! instead of hanging; a session whose end the log does not show closes where the log
//! proves it had ended (its pid reused, the server restarted), not at the log's end, so
//! a replay that falls behind a log of many short sessions holds no more connections
//! than the log had sessions at once.

use std::path::Path;
use std::process::Command;

use pgsurge_server::testing::{TestServer, TestServerOptions};
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

#[test]
fn replay_ends_sessions_whose_end_the_log_does_not_show() {
    let srv = TestServer::shared();
    let db = srv.create_database("unlogged_ends");
    srv.psql(&db, "create table t (x int)");
    let dir = pgsurge_testkit::scratch_dir("replay-order");
    let at = |ms: u32, session: &str, rest: &str| {
        format!(
            "2026-11-28 18:00:{:02}.{:03} UTC|postgres|db|{session}|{rest}\n",
            ms / 1000,
            ms % 1000
        )
    };
    let c = "LOG:  connection authorized: user=postgres database=db";
    // No disconnection is logged. Session 65.a (pid 10) locks t; the next process of
    // pid 10, 66.a, locks it in turn, and the server restarts before 67.b (pid 11)
    // reads t. Each waits for the lock at most 20 s, and the log goes on for 25 s: a
    // replay that kept an ended session's connection until the log's end (read 2 s
    // before its schedule) would fail both reads. Session 65.d's statements fill the
    // reader's first batches, so that the replay starts before the log is read through.
    let lock = ["LOG:  statement: begin", "LOG:  statement: lock table t"];
    let read = [
        "LOG:  statement: set lock_timeout = '20s'",
        "LOG:  statement: select count(*) from t",
    ];
    let mut lines = vec![
        at(0, "65.a", c),
        at(10, "65.a", lock[0]),
        at(20, "65.a", lock[1]),
        at(30, "65.d", c),
    ];
    lines.extend((0..2000).map(|i| at(30 + i / 20, "65.d", "LOG:  statement: select 1")));
    lines.extend([
        at(200, "66.a", "LOG:  connection received: host=[local]"),
        at(210, "66.a", c),
        at(220, "66.a", read[0]),
        at(230, "66.a", read[1]),
        at(240, "66.a", lock[0]),
        at(250, "66.a", lock[1]),
        at(
            400,
            "60.1",
            "LOG:  all server processes terminated; reinitializing",
        ),
        at(500, "67.b", c),
        at(510, "67.b", read[0]),
        at(520, "67.b", read[1]),
        at(25_000, "67.b", "LOG:  statement: select 1"),
    ]);
    let log = write_log(dir.path(), "unlogged.log", &lines);
    let (code, stdout, stderr) = replay(srv, &["-d", &db, "--json", "-", &log]);
    assert_eq!(code, 0, "{stderr}");
    let r: Value = serde_json::from_str(&stdout).expect("report");
    crate::replay_roundtrip::assert_schema(&r);
    assert_eq!(
        r["replay"]["unexpected_errors"], 0,
        "an ended session kept its lock: {}",
        r["replay"]["error_examples"]
    );
    // 65.a by its pid; 66.a and 65.d by the restart.
    let ends = &r["read"]["unlogged_ends"];
    assert_eq!(
        (&ends["pid_reused"], &ends["server_restart"]),
        (&Value::from(1), &Value::from(2)),
        "{}",
        r["read"]
    );
    assert_eq!(r["replay"]["sessions"], 4, "{}", r["replay"]);
    assert_eq!(r["replay"]["ended_in_transaction"], 2, "{}", r["replay"]);
    let (code, stdout, stderr) = replay(srv, &["--check", &log]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("sessions without a logged end: 1 ended where another process had their pid, 2 where the server restarted"),
        "{stdout}"
    );
}

#[test]
fn replay_behind_a_log_of_short_sessions_holds_only_the_sessions_live_at_once() {
    // A server of 40 connections, and a log of 400 sessions of two statements each
    // whose pids are reused among 4, so at most 4 are live at once; every third
    // session logs its disconnection, the others end where their pid is reused. Ten
    // sessions start per millisecond, faster than any server accepts connections, so
    // the replay is late and every connection is due when the driver comes to it: the
    // open sessions must go on (and end) between the connections it opens.
    let srv = TestServer::start(TestServerOptions {
        settings: vec![("max_connections".into(), "40".into())],
        ..Default::default()
    });
    let db = srv.create_database("short_sessions");
    let dir = pgsurge_testkit::scratch_dir("replay-order");
    let mut lines = Vec::new();
    for n in 0..400u32 {
        let session = format!("{:x}.{:x}", 0x6a00 + n, 10 + n % 4);
        let ms = n / 10;
        lines.push(at_ms(
            ms,
            &session,
            "LOG:  connection authorized: user=postgres database=db",
        ));
        lines.push(at_ms(ms, &session, &format!("LOG:  statement: select {n}")));
        lines.push(at_ms(ms, &session, "LOG:  statement: select 1"));
        if n % 3 == 0 {
            lines.push(at_ms(ms, &session, "LOG:  disconnection: session time: 0:00:00.001 user=postgres database=db host=[local]"));
        }
    }
    let log = write_log(dir.path(), "short.log", &lines);
    let (code, stdout, stderr) = replay(&srv, &["-d", &db, "--json", "-", &log]);
    assert_eq!(code, 0, "{stderr}");
    let r: Value = serde_json::from_str(&stdout).expect("report");
    assert_eq!(
        r["replay"]["failed_connections"], 0,
        "connections refused\n{stderr}\n{}",
        r["replay"]
    );
    assert_eq!(r["replay"]["sessions"], 400, "{}", r["replay"]);
    assert_eq!(r["replay"]["statements"], 800, "{}", r["replay"]);
    assert_eq!(
        r["read"]["unlogged_ends"]["pid_reused"], 264,
        "{}",
        r["read"]
    );
}

/// A stderr log line of session id `session` at `ms` milliseconds past 18:00:00.
fn at_ms(ms: u32, session: &str, rest: &str) -> String {
    format!(
        "2026-11-28 18:00:{:02}.{:03} UTC|postgres|db|{session}|{rest}\n",
        ms / 1000,
        ms % 1000
    )
}
