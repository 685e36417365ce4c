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

/// Where each log file ends, once every session that connected has its disconnection
/// in all three (the logging collector writes a little after the sessions): a slice
/// from here holds no line of a session that connected before it.
pub fn log_marks(srv: &TestServer) -> [u64; 3] {
    let started = Instant::now();
    loop {
        let texts = log_files(srv).map(|p| std::fs::read(p).unwrap_or_default());
        let quiet = texts.iter().all(|t| {
            let t = String::from_utf8_lossy(t);
            t.ends_with('\n')
                && t.matches("connection authorized: ").count()
                    == t.matches("disconnection: ").count()
        });
        if quiet {
            return texts.map(|t| t.len() as u64);
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the logs never showed every session's end"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The bytes each log got since `marks`, once `sessions` disconnections from database
/// `db` are in all three (the logging collector writes them a little later), written to
/// `dir`.
pub fn log_slices(
    srv: &TestServer,
    db: &str,
    marks: [u64; 3],
    sessions: usize,
    dir: &Path,
    name: &str,
) -> [PathBuf; 3] {
    let ended = format!("database={db} host=");
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
                .lines()
                .filter(|l| l.contains("disconnection: ") && l.contains(&ended))
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

/// Makes `db` a pgbench database at scale 1 with the reference `pgbench -i`.
pub fn pgbench_init(pgbench: &str, srv: &TestServer, db: &str) {
    let init = Command::new(pgbench)
        .args(["-i", "-s", "1", "-q", db])
        .envs(srv.env())
        .output()
        .expect("pgbench -i");
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
}

/// A log to replay: the reference pgbench run on `db` with `args` (`-n`, `-j 1` and
/// `db` added), its `clients`' sessions and its own connection in the server's logs.
/// The three slices of the logs it wrote (`dir/name.{log,csv,json}`) and the state it
/// left ([`state`]).
pub fn logged_pgbench(
    pgbench: &str,
    srv: &TestServer,
    db: &str,
    (args, clients): (&[&str], usize),
    dir: &Path,
    name: &str,
) -> ([PathBuf; 3], String) {
    let marks = log_marks(srv);
    let run = Command::new(pgbench)
        .args(["-n", "-j", "1"])
        .args(args)
        .arg(db)
        .envs(srv.env())
        .output()
        .expect("pgbench");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    // pgbench's own connection and its clients.
    let logs = log_slices(srv, db, marks, clients + 1, dir, name);
    (logs, state(srv, db))
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
pub fn state(srv: &TestServer, db: &str) -> String {
    srv.psql(
        db,
        "select (select sum(abalance) from pgbench_accounts), (select sum(tbalance) from pgbench_tellers), \
         (select sum(bbalance) from pgbench_branches), (select count(*) from pgbench_history), \
         (select sum(delta) from pgbench_history)",
    )
}

/// `report` follows the committed schema (`pgsurge schema replay`).
pub fn assert_schema(report: &Value) {
    let out = Command::new(bin())
        .args(["schema", "replay"])
        .output()
        .expect("schema");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    pgsurge_testkit::schema::assert_valid(&String::from_utf8_lossy(&out.stdout), report);
}

/// Every fingerprint replayed as often as logged, nothing failed or left unsent.
fn assert_faithful(report: &Value, what: &str) {
    assert_schema(report);
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
    pgbench_init(pgbench, &srv, &db);
    for mode in ["simple", "prepared"] {
        let copies = ["stderr", "csv", "json"].map(|f| format!("{db}_{mode}_{f}"));
        for c in &copies {
            srv.psql("postgres", &format!("create database {c} template {db}"));
        }
        let run = ["-M", mode, "-c", "3", "-t", "40", "--random-seed=7"];
        let (logs, expected) = logged_pgbench(pgbench, &srv, &db, (&run, 3), dir.path(), mode);
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

/// Runs psql with each of `commands` as a `-c` on `db` (one session).
fn psql_session(srv: &TestServer, db: &str, commands: &[&str]) -> std::process::Child {
    let mut c = Command::new(srv.bin_dir().join("psql"));
    c.args(["-X", "-q", "-d", db]);
    for cmd in commands {
        c.args(["-c", cmd]);
    }
    srv.apply_env(&mut c);
    c.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("psql")
}

#[test]
fn replay_of_failures_cancels_and_open_transactions_expects_them() {
    let srv = logging_server();
    let dir = pgsurge_testkit::scratch_dir("replay-failures");
    let db = srv.create_database("fail");
    srv.psql(&db, "create table t (id int primary key, note text)");
    let copy = format!("{db}_copy");
    srv.psql("postgres", &format!("create database {copy} template {db}"));
    let marks = log_marks(&srv);
    let sessions: [&[&str]; 3] = [
        // A failed statement in a transaction, the statements it leaves aborted, a
        // statement the parser refuses, a duplicate key.
        &[
            "insert into t values (1, 'one')",
            "begin; select 1/0; insert into t values (2, 'lost'); commit;",
            "selec 1",
            "insert into t values (5, 'ignored')",
            "rollback",
            "insert into t values (1, 'again')",
            "insert into t values (3, 'it''s three')",
        ],
        // A session that ends inside its transaction: the server rolls it back.
        &["begin", "insert into t values (4, 'rolled back')"],
        &["select 1"],
    ];
    for s in sessions {
        let out = psql_session(&srv, &db, s).wait_with_output().expect("psql");
        let _ = out;
    }
    // A statement its client cancels (psql sends a cancel request on SIGINT).
    let sleeper = psql_session(&srv, &db, &["select pg_sleep(30)"]);
    std::thread::sleep(Duration::from_millis(800));
    // SAFETY: signalling our own child process.
    unsafe { libc::kill(sleeper.id() as i32, libc::SIGINT) };
    let _ = sleeper.wait_with_output();
    let logs = log_slices(&srv, &db, marks, 4, dir.path(), "failures");
    let expected = srv.psql(
        &db,
        "select string_agg(id || ':' || note, ',' order by id) from t",
    );
    assert_eq!(expected.trim(), "1:one,3:it's three");
    let json = dir.path().join("report.json");
    let (code, stdout, stderr) = replay(
        &srv,
        &[
            "-d",
            &copy,
            "--json",
            json.to_str().unwrap(),
            logs[0].to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    let report: Value =
        serde_json::from_slice(&std::fs::read(&json).expect("report")).expect("json");
    let read = &report["read"];
    let r = &report["replay"];
    assert_eq!(read["cancels"], 1, "{read}");
    // 1/0, the refused statement, the insert in the aborted transaction, the duplicate
    // key and the cancel: each logged failure failed again.
    let logged_errors = read["errors"].as_u64().unwrap();
    assert_eq!(logged_errors, 5, "{read}");
    assert_eq!(
        r["expected_errors"].as_u64(),
        Some(logged_errors),
        "{r}\n{stdout}"
    );
    assert_eq!(r["missing_errors"], 0, "{r}");
    assert_eq!(r["unexpected_errors"], 0, "{r}\n{stdout}");
    assert_eq!(r["cancels_sent"], 1, "{r}");
    assert_eq!(r["ended_in_transaction"], 1, "{r}");
    assert_eq!(r["not_sent"], 0, "{r}");
    let syntax = report["fingerprints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            f["statement"]
                .as_str()
                .is_some_and(|s| s.starts_with("selec 1"))
        })
        .unwrap_or_else(|| panic!("the refused statement is replayed: {report}"));
    assert_eq!(syntax["logged"]["errors"], 1);
    assert_eq!(syntax["replayed"]["errors"], 1);
    let replayed = srv.psql(
        &copy,
        "select string_agg(id || ':' || note, ',' order by id) from t",
    );
    assert_eq!(replayed, expected);
    assert!(stdout.contains("1 cancels sent"), "{stdout}");
}
