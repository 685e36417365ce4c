//! A campaign whose tests run as several generator processes (`[distributed]`): each
//! stored test is the exact merge of its generators — the client count is the total,
//! the per-second series and histograms are there, and the server's commits over the
//! test match the merged transaction count, as for an in-process test.

use pgsurge_server::testing::TestServer;

use crate::campaigns::Campaign;

#[test]
fn a_distributed_campaign_stores_the_merged_test_and_matches_the_server() {
    let srv = TestServer::shared();
    let db = srv.create_database("campaign_dist");
    let dir = pgsurge_testkit::scratch_dir("campaign-distributed");
    let c = Campaign::write(
        dir.path(),
        &format!(
            r#"
[campaign]
name = "distributed"
[[target]]
name = "existing"
conninfo = "{}"
[matrix]
scales = [1]
clients = [4]
scripts = ["select-only"]
[run]
duration = 3
[hygiene]
vacuum = false
checkpoint = false
# Time for the generator processes to start and connect before the common start,
# on a busy machine too.
[distributed]
generators = 2
start_in = 5
"#,
            srv.conninfo(&db)
        ),
    );
    c.run_ok(&[]);
    let runs = c.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run = &runs[0];
    assert_eq!(run["status"], "ok", "{run}");
    assert_eq!(run["clients"], 4);
    let transactions = run["transactions"].as_i64().unwrap();
    assert!(transactions > 0);
    // The merged result is the union of two generators of 2 clients each.
    let result = &run["result_json"];
    assert_eq!(result["options"]["clients"], 4, "{result}");
    // A merge has no single seed (each generator had its own): not an in-process run.
    assert!(result["options"]["random_seed"].is_null(), "{result}");
    let seconds = result["intervals"].as_array().unwrap();
    assert!(seconds.len() >= 2, "{result}");
    let per_second: u64 = seconds
        .iter()
        .map(|s| s["transactions"].as_u64().unwrap())
        .sum();
    assert_eq!(per_second as i64, transactions);
    // The server agrees with the merged count (the campaign's own check).
    let mismatch = run["commit_mismatch_pct"].as_f64().unwrap();
    assert!(
        mismatch < 1.0,
        "server and merged client counts {mismatch} % apart: {run}"
    );
}

#[test]
fn a_hung_generator_fails_its_test_by_the_deadline_and_keeps_its_output() {
    let srv = TestServer::shared();
    let db = srv.create_database("campaign_dist_hang");
    let dir = pgsurge_testkit::scratch_dir("campaign-distributed");
    // -T 1 ends only once the statement in flight is answered: every generator hangs.
    std::fs::write(dir.path().join("hang.sql"), "select pg_sleep(600);\n").unwrap();
    let c = Campaign::write(
        dir.path(),
        &format!(
            r#"
[campaign]
name = "hung"
[[target]]
name = "existing"
conninfo = "{}"
[matrix]
scales = [1]
clients = [2]
scripts = [{{ file = "hang.sql" }}]
[run]
duration = 1
[hygiene]
vacuum = false
checkpoint = false
# A generator process that comes up after the common start is refused.
[distributed]
generators = 2
start_in = 5
deadline_margin = 2
"#,
            srv.conninfo(&db)
        ),
    );
    let started = std::time::Instant::now();
    let out = c.run(&[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        started.elapsed().as_secs() < 90,
        "took {:?}: {err}",
        started.elapsed()
    );
    // A generator failure is the test's failure, not an outage to wait out.
    assert!(!err.contains("unreachable"), "{err}");
    let runs = c.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run = &runs[0];
    assert_eq!(run["status"], "failed", "{run}");
    let error = run["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("local-0 was still running 3 s after the common start"),
        "{error}"
    );
    // The error names the generators' outputs, and they are still there.
    let at = error.find("outputs in ").expect("names the outputs") + "outputs in ".len();
    let outputs = &error[at..error[at..].find(')').map_or(error.len(), |e| at + e)];
    assert!(
        std::path::Path::new(outputs).join("local-0.err").exists(),
        "{outputs}: {error}"
    );
    let _ = std::fs::remove_dir_all(outputs);
}
