//! Scripts are bytes: pgbench (`/usr/bin/pgbench`) and `pgsurge bench` run the same
//! script files on one cluster and must behave alike, in every query mode:
//!
//! * bytes that are not UTF-8 reach the server as they are, so a UTF8 server rejects
//!   them with the same error (not two U+FFFD characters that it would accept);
//! * a LATIN1 script with `PGCLIENTENCODING=LATIN1` stores the same characters;
//! * the text stops at a NUL byte, as pgbench reads it.

use std::process::Command;

use pgsurge_server::testing::TestServer;

use pgsurge_testkit::PGBENCH;
const MODES: [&str; 3] = ["simple", "extended", "prepared"];

struct Outcome {
    /// `pgbench: error:` lines and the abort lines, as printed.
    errors: Vec<String>,
    /// The report's transaction and failure lines.
    counts: Vec<String>,
    status: i32,
}

fn run(srv: &TestServer, pgsurge: bool, env: &[(&str, &str)], args: &[&str]) -> Outcome {
    let mut cmd = if pgsurge {
        let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
        c.arg("bench");
        c
    } else {
        Command::new(PGBENCH)
    };
    srv.apply_env(&mut cmd);
    let out = cmd.envs(env.iter().copied()).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    Outcome {
        errors: stderr
            .lines()
            .filter(|l| l.starts_with("pgbench: error: ") || l.contains(" aborted "))
            .map(str::to_string)
            .collect(),
        counts: stdout
            .lines()
            .filter(|l| {
                l.starts_with("number of transactions actually processed")
                    || l.starts_with("number of failed transactions")
            })
            .map(str::to_string)
            .collect(),
        status: out.status.code().unwrap_or(-1),
    }
}

fn both(srv: &TestServer, env: &[(&str, &str)], args: &[&str]) -> (Outcome, Outcome) {
    (run(srv, false, env, args), run(srv, true, env, args))
}

fn have_pgbench() -> bool {
    pgsurge_testkit::reference_pgbench().is_some()
}

#[test]
fn bytes_that_are_not_utf8_reach_the_server_unchanged() {
    if !have_pgbench() {
        return;
    }
    let srv = TestServer::shared();
    let db = srv.create_database("script_bytes_invalid");
    let dir = pgsurge_testkit::scratch_dir("script-bytes-diff");
    let script = dir.path().join("ff.sql");
    std::fs::write(&script, b"SELECT '\xff\xfe';\n").unwrap();
    let script = script.to_str().unwrap();
    for mode in MODES {
        let args = ["-n", "-t", "2", "-M", mode, "-f", script, &db];
        let (theirs, ours) = both(srv, &[], &args);
        assert!(
            theirs
                .errors
                .iter()
                .any(|l| l.contains("invalid byte sequence for encoding \"UTF8\": 0xff")),
            "{mode}: {:?}",
            theirs.errors
        );
        assert_eq!(ours.errors, theirs.errors, "{mode}");
        assert_eq!(ours.status, theirs.status, "{mode}");
    }
}

#[test]
fn latin1_script_stores_the_same_characters() {
    if !have_pgbench() {
        return;
    }
    let srv = TestServer::shared();
    let db = srv.create_database("script_bytes_latin1");
    srv.psql(&db, "CREATE TABLE latin1 (tool text, mode text, v text)");
    let dir = pgsurge_testkit::scratch_dir("script-bytes-diff");
    let latin1 = [("PGCLIENTENCODING", "LATIN1")];
    for mode in MODES {
        for (tool, pgsurge) in [("pgbench", false), ("pgsurge", true)] {
            let script = dir.path().join(format!("{tool}-{mode}.sql"));
            let mut text = format!("INSERT INTO latin1 VALUES ('{tool}', '{mode}', '").into_bytes();
            // "été ÿ" in LATIN1, a variable reference after it
            text.extend_from_slice(b"\xe9t\xe9 \xff' || :client_id);\n");
            std::fs::write(&script, text).unwrap();
            let script = script.to_str().unwrap();
            let out = run(
                srv,
                pgsurge,
                &latin1,
                &["-n", "-t", "1", "-M", mode, "-f", script, &db],
            );
            assert_eq!(out.status, 0, "{tool} {mode}: {:?}", out.errors);
        }
    }
    let rows = srv.psql(
        &db,
        "SELECT mode, tool, v, encode(convert_to(v, 'UTF8'), 'hex') FROM latin1 ORDER BY 1, 2",
    );
    let rows: Vec<&str> = rows.lines().collect();
    assert_eq!(rows.len(), 6, "{rows:?}");
    for pair in rows.chunks(2) {
        let value = |row: &str| row.split('|').skip(2).collect::<Vec<_>>().join("|");
        assert!(pair[0].contains("été ÿ0"), "{pair:?}");
        assert_eq!(value(pair[0]), value(pair[1]), "{pair:?}");
    }
}

#[test]
fn text_after_a_nul_byte_is_ignored() {
    if !have_pgbench() {
        return;
    }
    let srv = TestServer::shared();
    let db = srv.create_database("script_bytes_nul");
    let dir = pgsurge_testkit::scratch_dir("script-bytes-diff");
    let script = dir.path().join("nul.sql");
    std::fs::write(&script, b"SELECT 1;\n\0SELECT 1/0;\n").unwrap();
    let script = script.to_str().unwrap();
    for mode in MODES {
        let args = ["-n", "-t", "3", "-M", mode, "-f", script, &db];
        let (theirs, ours) = both(srv, &[], &args);
        assert_eq!(theirs.status, 0, "{mode}: {:?}", theirs.errors);
        assert_eq!(ours.status, theirs.status, "{mode}: {:?}", ours.errors);
        assert_eq!(ours.errors, theirs.errors, "{mode}");
        assert_eq!(ours.counts, theirs.counts, "{mode}");
        assert!(!ours.counts.is_empty());
    }
}
