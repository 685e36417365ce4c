//! `pgsurge quickstart` on a machine without local PostgreSQL binaries fetches a
//! PostgreSQL release (cached) instead of failing. "No local binaries" is simulated by
//! pointing `PGSURGE_PG_BIN` at a directory that does not exist, which makes discovery
//! fail before it looks anywhere else.

use std::process::Command;

#[test]
fn quickstart_without_local_binaries_fetches_a_server() {
    let dir = pgsurge_testkit::scratch_dir("quickstart-fetch");
    let tmp = crate::quickstart::server_tmp(dir.path());
    let store = dir.path().join("fetch.db");
    let report = dir.path().join("report");
    let out = Command::new(env!("CARGO_BIN_EXE_pgsurge"))
        .current_dir(dir.path())
        .env("PGSURGE_PG_BIN", dir.path().join("no-such-bin-dir"))
        .env("TMPDIR", &tmp)
        .args([
            "quickstart",
            "--quiet",
            "--duration",
            "1",
            "--clients",
            "1",
            "--scale",
            "1",
        ])
        .arg("--store")
        .arg(&store)
        .arg("--report-dir")
        .arg(&report)
        .output()
        .expect("run pgsurge quickstart");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "quickstart failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    // The report's target table names the server version actually run: the fetched 17.
    let index = std::fs::read_to_string(report.join("index.html")).expect("report index");
    let version = regex::Regex::new(r"<td[^>]*>(\d+)\.\d+[^<]*<").unwrap();
    let majors: Vec<String> = version
        .captures_iter(&index)
        .map(|c| c[1].to_string())
        .collect();
    assert!(
        majors.iter().any(|m| m == "17"),
        "no PostgreSQL 17 target in the report: {majors:?}\n{stdout}"
    );
    assert!(
        crate::quickstart::quickstart_postgres(&tmp).is_empty(),
        "left running: {:?}",
        crate::quickstart::quickstart_postgres(&tmp)
    );
}
