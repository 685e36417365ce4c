//! `pgsurge replay capture` against a real server with its logging collector on: the
//! logging a replay needs is on while a pgbench runs, Ctrl-C ends the capture, every
//! setting is put back as it was in `postgresql.auto.conf` (one the server had there
//! kept, the others removed), and the log of the window replays (`--check`) with every
//! statement of the pgbench run; a role that may not change the settings is refused
//! with nothing changed.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use pgsurge_server::testing::{TestServer, TestServerOptions};

fn pgsurge() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
    c.env_remove("PGSURGE_STORE");
    c
}

/// Settings of `postgresql.auto.conf`, as the server reads them: (name, value).
fn auto_conf(srv: &TestServer, names: &str) -> String {
    srv.psql(
        "postgres",
        &format!(
            "SELECT string_agg(name || '=' || setting, ',' ORDER BY name) FROM pg_file_settings \
             WHERE sourcefile LIKE '%postgresql.auto.conf' AND name IN ({names})"
        ),
    )
    .trim()
    .to_string()
}

const LOGGING: &str = "'log_statement', 'log_connections', 'log_disconnections', \
                       'log_min_error_statement', 'lc_messages', 'log_line_prefix'";

#[test]
fn capture_logs_a_window_puts_the_settings_back_and_the_log_replays() {
    let srv = TestServer::start(TestServerOptions {
        settings: vec![
            ("logging_collector".into(), "on".into()),
            ("log_destination".into(), "stderr".into()),
            ("log_directory".into(), "log".into()),
        ],
        ..Default::default()
    });
    let db = srv.create_database("capture");
    let conninfo = srv.conninfo(&db);
    let before = auto_conf(&srv, LOGGING);
    assert_eq!(before, "lc_messages=C", "the test server's own");
    let init = pgsurge()
        .args(["bench", "-i", "-s", "1", "-q", &conninfo])
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );

    let dir = pgsurge_testkit::scratch_dir("replay-capture");
    let out = dir.path().join("captured");
    let mut capture = pgsurge()
        .args(["replay", "capture", &conninfo, "--for", "10m", "-o"])
        .arg(&out)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = Vec::new();
    let mut lines = BufReader::new(capture.stderr.take().unwrap()).lines();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let started = line.starts_with("capturing for");
        said.push(line);
        if started {
            break;
        }
    }
    assert!(
        said.last().is_some_and(|l| l.starts_with("capturing for")),
        "{said:?}"
    );
    assert_eq!(srv.psql(&db, "SHOW log_statement").trim(), "all");
    let bench = pgsurge()
        .args(["bench", "-n", "-S", "-c", "2", "-t", "50", &conninfo])
        .output()
        .unwrap();
    assert!(
        bench.status.success(),
        "{}",
        String::from_utf8_lossy(&bench.stderr)
    );
    // SAFETY: kill(2) on the process this test started.
    assert_eq!(unsafe { libc::kill(capture.id() as i32, libc::SIGINT) }, 0);
    said.extend(lines.map(|l| l.unwrap()));
    let status = capture.wait().unwrap();
    assert!(status.success(), "{said:?}");
    assert!(
        said.iter().any(|l| l.contains("as they were before")),
        "{said:?}"
    );

    // Put back: the server's own lc_messages kept, the others gone from auto.conf.
    assert_eq!(auto_conf(&srv, LOGGING), before);
    assert_eq!(srv.psql(&db, "SHOW log_statement").trim(), "none");

    // The window's log reads through, with the pgbench run's statements.
    let log = out.join("capture.log");
    let check = pgsurge()
        .args(["replay", "--check", "--json", "-"])
        .arg(&log)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&check.stderr),
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let doc: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
    let read = doc["read"]["statements"].as_u64().unwrap();
    assert!(read >= 100, "{read} statements read: {doc}");
    let selects = std::fs::read_to_string(&log)
        .unwrap()
        .matches("statement: SELECT abalance FROM pgbench_accounts")
        .count();
    assert_eq!(selects, 100, "the 2 × 50 transactions of the run");
}

#[test]
fn capture_refuses_a_role_that_may_not_change_the_settings() {
    let srv = TestServer::shared();
    let db = srv.create_database("capture_refused");
    srv.psql(
        &db,
        "DO $$ BEGIN CREATE ROLE capture_nobody LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$",
    );
    let before = srv.psql(&db, "SHOW log_statement");
    let dir = pgsurge_testkit::scratch_dir("replay-capture");
    let conninfo = format!("{} user=capture_nobody", srv.conninfo(&db));
    let out = pgsurge()
        .args(["replay", "capture", &conninfo, "--for", "1", "-o"])
        .arg(dir.path().join("never"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("role \"capture_nobody\" may not change log_statement"),
        "{err}"
    );
    assert!(err.contains("nothing was changed"), "{err}");
    assert_eq!(srv.psql(&db, "SHOW log_statement"), before);
    assert!(!dir.path().join("never").exists());
}

#[test]
fn a_capture_longer_than_the_clock_holds_is_refused_before_connecting() {
    // 1e19 s is a Duration but no Instant after now; 1e20 s is not even a Duration.
    for (given, says) in [
        ("1e19", "at most 366 days"),
        ("1e20", "at most 366 days"),
        ("inf", "at most 366 days"),
        ("367d", "at most 366 days"),
        ("NaN", "expected seconds"),
        ("-5", "expected seconds"),
        ("99999999999999999999y", "expected seconds"),
    ] {
        let out = pgsurge()
            .args(["replay", "capture", "host=/nonexistent", "-o"])
            .arg("/nonexistent/never")
            .arg(format!("--for={given}"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--for {given}: {err}");
        assert!(
            err.contains(says) && !err.contains("panicked"),
            "--for {given}: {err}"
        );
    }
}
