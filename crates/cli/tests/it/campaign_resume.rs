//! `pgsurge campaign run` killed with SIGKILL in the middle, then run again: the set
//! ends with exactly the planned tests, none lost, none twice. Also `pgsurge results`
//! list/show/export on the result.

use std::process::Stdio;
use std::time::Duration;

use pgsurge_server::testing::TestServer;

use crate::campaigns::{export_runs, pgsurge, wait_while_running, Campaign};

#[test]
fn killed_campaign_resumes_with_exactly_the_planned_tests() {
    let srv = TestServer::shared();
    let db = srv.create_database("campaign_kill");
    let dir = pgsurge_testkit::scratch_dir("campaign-resume");
    let c = Campaign::write(
        dir.path(),
        &format!(
            r#"
[campaign]
name = "kill"
[[target]]
name = "fx"
conninfo = "{}"
[matrix]
scales = [1]
clients = [1, 2, 3]
scripts = ["select-only"]
repeats = 2
[run]
duration = 2
"#,
            srv.conninfo(&db)
        ),
    );

    let mut child = c
        .command(&["--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill it once two tests are stored and the third is under way: some session of
    // the campaign (hygiene or the benchmark's clients) is on the database.
    let busy_sql = format!(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = '{db}' \
         AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
    );
    let limit = Duration::from_secs(120);
    wait_while_running(&mut child, "two tests were stored", limit, || {
        c.stored().is_some_and(|n| n >= 2) && srv.psql(&db, &busy_sql).trim() != "0"
    });
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let stored_before = c.runs().len();
    assert!(
        (2..6).contains(&stored_before),
        "{stored_before} tests stored at the kill"
    );

    let stderr = c.run_ok(&[]);
    assert!(
        stderr.contains(&format!("{stored_before} already stored")),
        "resume message: {stderr}"
    );

    let runs = c.runs();
    let store = &c.store;
    let mut keys: Vec<String> = runs
        .iter()
        .map(|r| r["test_key"].as_str().unwrap().to_string())
        .collect();
    keys.sort();
    let mut expected: Vec<String> = [1, 2, 3]
        .iter()
        .flat_map(|c| [1, 2].map(|r| format!("fx/s1/select-only/c{c}/r-/{r}")))
        .collect();
    expected.sort();
    assert_eq!(keys, expected);
    assert!(runs.iter().all(|r| r["status"] == "ok"));
    let set_ids: std::collections::BTreeSet<i64> =
        runs.iter().map(|r| r["set_id"].as_i64().unwrap()).collect();
    assert_eq!(set_ids.len(), 1, "resumed into the same set");

    // results list / show / export csv read the same store.
    let list = pgsurge()
        .args(["results", "list", "--store", store])
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(list.contains("kill") && list.contains("complete"), "{list}");
    let show = pgsurge()
        .args(["results", "show", "--store", store])
        .output()
        .unwrap();
    let show = String::from_utf8_lossy(&show.stdout);
    // One table row per run: a row starts with its run id (the "run N (…)" lines after
    // the table are its facts, and a warning may name a test too).
    let rows = show
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .next()
                .is_some_and(|w| w.parse::<u64>().is_ok())
                && l.contains("fx/s1/select-only/")
        })
        .count();
    assert_eq!(rows, 6, "{show}");
    // Each warning is said once, however many tests stored it.
    let warnings: Vec<&str> = show
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .collect();
    let distinct: std::collections::BTreeSet<&&str> = warnings.iter().collect();
    assert_eq!(warnings.len(), distinct.len(), "{show}");
    let csv = pgsurge()
        .args(["results", "export", "--format", "csv", "--store", store])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&csv.stdout);
    assert_eq!(csv.lines().count(), 7, "{csv}");
    assert!(csv
        .lines()
        .next()
        .unwrap()
        .starts_with("run_id,set,target,set_id,test_key,repeat"));
}

#[test]
fn results_import_reads_a_pgbench_report_and_log() {
    let dir = pgsurge_testkit::scratch_dir("campaign-resume");
    let report = dir.path().join("out.txt");
    std::fs::write(
        &report,
        "transaction type: <builtin: select only>\nscaling factor: 1\nquery mode: simple\n\
         number of clients: 2\nnumber of threads: 1\nduration: 2 s\n\
         number of transactions actually processed: 3\nlatency average = 2.000 ms\n\
         tps = 1.5 (without initial connection time)\n",
    )
    .unwrap();
    let log = dir.path().join("pgbench_log.1");
    std::fs::write(
        &log,
        "0 0 1000 0 1700000000 1\n1 0 2000 0 1700000000 2\n0 1 3000 0 1700000001 3\n",
    )
    .unwrap();
    let store = dir.path().join("i.db").display().to_string();
    let out = pgsurge()
        .args(["results", "import", "--store", &store, "--log"])
        .arg(&log)
        .arg(&report)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let runs = export_runs(&store);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["tps"], 1.5);
    assert_eq!(runs[0]["clients"], 2);
    assert_eq!(runs[0]["status"], "imported");
    assert_eq!(
        runs[0]["latency_max_ms"].as_f64().map(|v| v.round()),
        Some(3.0)
    );
    let bad = pgsurge()
        .args(["results", "import", "--store", &store])
        .arg(&log)
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no pgbench report found"));
}

#[test]
fn failed_test_error_is_shown_by_results_and_the_report() {
    let srv = TestServer::shared();
    let db = srv.create_database("campaign_error_shown");
    let dir = pgsurge_testkit::scratch_dir("campaign-resume");
    std::fs::write(
        dir.path().join("missing.sql"),
        "SELECT * FROM table_that_is_not_there;\n",
    )
    .unwrap();
    let c = Campaign::write(
        dir.path(),
        &format!(
            r#"
[campaign]
name = "errshown"
[[target]]
name = "fx"
conninfo = "{}"
[matrix]
scales = [1]
clients = [1]
scripts = [{{ file = "missing.sql" }}]
[run]
duration = 1
"#,
            srv.conninfo(&db)
        ),
    );
    let store = c.store.clone();
    let server_message = "relation \"table_that_is_not_there\" does not exist";
    let run = c.command(&[]).current_dir(dir.path()).output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    // Exit status 3: the campaign completed with failed tests.
    assert_eq!(run.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("FAILED") && stderr.contains(server_message),
        "{stderr}"
    );

    let runs = c.runs();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "failed");
    let error = runs[0]["error"].as_str().unwrap();
    assert!(
        error.contains("client 0 script 0 aborted in command 0 query 0: ERROR:  ")
            && error.contains(server_message),
        "{error}"
    );
    let run_id = runs[0]["id"]
        .as_i64()
        .or(runs[0]["run_id"].as_i64())
        .unwrap();

    let show = pgsurge()
        .args(["results", "show", "--store", &store])
        .output()
        .unwrap();
    let show = String::from_utf8_lossy(&show.stdout);
    assert!(
        show.contains("failed") && show.contains(server_message),
        "{show}"
    );
    let show_run = pgsurge()
        .args([
            "results",
            "show",
            "--store",
            &store,
            "--run",
            &run_id.to_string(),
        ])
        .output()
        .unwrap();
    let show_run = String::from_utf8_lossy(&show_run.stdout);
    assert!(
        show_run.contains("error:\n") && show_run.contains(server_message),
        "{show_run}"
    );

    let report_dir = dir.path().join("report");
    let rep = pgsurge()
        .args(["report", "--store", &store, "-o"])
        .arg(&report_dir)
        .output()
        .unwrap();
    assert!(
        rep.status.success(),
        "{}",
        String::from_utf8_lossy(&rep.stderr)
    );
    let escaped = server_message.replace('"', "&quot;");
    let mut found = false;
    for entry in walk(&report_dir) {
        if entry.extension().is_some_and(|e| e == "html") {
            let html = std::fs::read_to_string(&entry).unwrap();
            found |= html.contains(&escaped) || html.contains(server_message);
        }
    }
    assert!(found, "the report does not show the server's error");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
