//! A client whose backend is terminated mid-script (`pg_terminate_backend`): pgsurge
//! prints exactly pgbench's error lines — the server's FATAL as the abort reason and the
//! incomplete-run line, no extra "perhaps the backend died" line — and the same exit
//! status.

use std::process::Command;

use pgsurge_server::testing::TestServer;

use pgsurge_testkit::PGBENCH;

fn errors(srv: &TestServer, program: &str, pre: &[&str], args: &[&str]) -> (Vec<String>, i32) {
    let out = srv
        .apply_env(&mut Command::new(program))
        .args(pre)
        .args(args)
        .output()
        .unwrap();
    let lines = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("pgbench: error: "))
        .map(str::to_string)
        .collect();
    (lines, out.status.code().unwrap_or(-1))
}

#[test]
fn terminated_backend_gives_pgbench_s_lines_only() {
    if pgsurge_testkit::reference_pgbench().is_none() {
        return;
    }
    let srv = TestServer::shared();
    let db = srv.create_database("abort_diff");
    let dir = pgsurge_testkit::scratch_dir("abort-diff");
    let script = dir.path().join("term.sql");
    std::fs::write(&script, "select pg_terminate_backend(pg_backend_pid());\n").unwrap();
    let script = script.to_str().unwrap();
    let args = ["-n", "-t", "3", "-c", "1", "-f", script, &db];
    let theirs = errors(srv, PGBENCH, &[], &args);
    let ours = errors(srv, env!("CARGO_BIN_EXE_pgsurge"), &["bench"], &args);
    assert!(
        theirs
            .0
            .iter()
            .any(|l| l.contains("terminating connection")),
        "{theirs:?}"
    );
    assert_eq!(ours, theirs);
}
