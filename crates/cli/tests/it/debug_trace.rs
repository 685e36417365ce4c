//! `--debug` trace lines against the machine's pgbench (15.x, where the option is `-d`):
//! the same `executing`, `sending`, `preparing` and `receiving` lines in the same order,
//! for each query mode. How often `receiving` repeats depends on timing (pgbench prints
//! it on every entry into its wait-for-result state: right after sending, and again per
//! wake-up when the reply was not there yet), so runs of it are compared as one line.
//! The first line (connection parameters) is compared by shape only.

use std::process::Command;

use pgsurge_server::testing::TestServer;

use pgsurge_testkit::PGBENCH;

fn stderr_of(srv: &TestServer, program: &str, args: &[&str], dir: &std::path::Path) -> String {
    let mut c = Command::new(program);
    c.args(args).current_dir(dir);
    for (k, v) in srv.env() {
        c.env(k, v);
    }
    let out = c.output().expect("run");
    assert!(out.status.success(), "{program} {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The debug lines (`pgbench: client …`), consecutive `receiving` lines folded into one.
fn trace(stderr: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in stderr.lines().filter(|l| l.starts_with("pgbench: client ")) {
        if line.ends_with(" receiving") && out.last().is_some_and(|l| l == line) {
            continue;
        }
        out.push(line.to_string());
    }
    out
}

#[test]
fn debug_trace_matches_pgbench_in_every_query_mode() {
    if pgsurge_testkit::reference_pgbench().is_none() {
        return;
    }
    let srv = TestServer::shared();
    let db = srv.create_database("debug_trace");
    let dir = pgsurge_testkit::scratch_dir("debug-trace");
    std::fs::write(
        dir.path().join("t.sql"),
        "\\set a 5\n\\set b :a + 1\nSELECT :a AS a, :b AS b;\nSELECT 1 ; SELECT 2 AS two\n\\sleep 1 ms\n\\if :a > 3\nSELECT 3;\n\\elif :b > 3\nSELECT 4;\n\\else\nSELECT 5;\n\\endif\n",
    )
    .unwrap();
    for mode in ["simple", "extended", "prepared"] {
        let common = ["-n", "-t", "2", "-c", "1", "-f", "t.sql", "-M", mode, &db];
        let theirs = stderr_of(
            srv,
            PGBENCH,
            &[&["-d"][..], &common[..]].concat(),
            dir.path(),
        );
        let ours = stderr_of(
            srv,
            env!("CARGO_BIN_EXE_pgsurge"),
            &[&["bench", "--debug"][..], &common[..]].concat(),
            dir.path(),
        );
        let (t, o) = (trace(&theirs), trace(&ours));
        assert!(
            t.iter().any(|l| l.ends_with(" receiving")),
            "{mode}: pgbench printed no receiving line:\n{theirs}"
        );
        assert_eq!(o, t, "{mode}:\n--- pgbench:\n{theirs}\n--- ours:\n{ours}");
        // The connection line: same fields (values differ by version only in form).
        let head = |s: &str| {
            s.lines()
                .find(|l| l.starts_with("pgbench: pghost:"))
                .map(|l| {
                    l.split(' ')
                        .filter(|w| w.ends_with(':'))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
        };
        assert_eq!(head(&ours), head(&theirs), "{mode}");
    }
}
