//! A replay as a campaign's workload: a log written by a real pgbench (tpcb-like,
//! `-M prepared`, two clients, a fixed seed) is the matrix's workload
//! (`scripts = [{ replay = "…", max = true }]`) on a throwaway server the campaign
//! starts and on an existing database, two repeats each. The data is initialized again
//! before each repeat, so the existing database ends as pgbench left the original; every
//! test is stored with its fidelity report, the report shows it, and `compare` compares
//! two replays of the log fingerprint by fingerprint — also with a replay kept by
//! `pgsurge replay --store`.

use std::process::Command;

use serde_json::Value;

use crate::replay_roundtrip::{logged_pgbench, logging_server, pgbench_init, state};

fn pgsurge(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pgsurge"))
        .args(args)
        .output()
        .expect("run pgsurge");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `(id, test_key, status, transactions)` of every stored run.
fn stored_runs(store: &str) -> Vec<(i64, String, String, Option<i64>)> {
    let db = rusqlite::Connection::open(store).unwrap();
    let mut q = db
        .prepare("SELECT id, test_key, status, transactions FROM runs ORDER BY id")
        .unwrap();
    q.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// The fidelity report stored with run `id`.
fn stored_report(store: &str, id: i64) -> Value {
    let db = rusqlite::Connection::open(store).unwrap();
    let text: String = db
        .query_row(
            "SELECT value FROM run_facts WHERE run_id = ?1 AND name = 'replay_report'",
            [id],
            |r| r.get(0),
        )
        .unwrap_or_else(|e| panic!("run {id} has no replay report: {e}"));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_campaign_replays_a_log_on_restored_data_and_compares_the_replays() {
    let Some(pgbench) = pgsurge_testkit::reference_pgbench() else {
        return;
    };
    let srv = logging_server();
    let dir = pgsurge_testkit::scratch_dir("replay-campaign");
    let db = srv.create_database("orig");
    let target_db = srv.create_database("target");
    pgbench_init(pgbench, &srv, &db);
    let copy = format!("{db}_copy");
    srv.psql("postgres", &format!("create database {copy} template {db}"));
    let run = ["-M", "prepared", "-c", "2", "-t", "30", "--random-seed=5"];
    let ([log, _, _], expected) = logged_pgbench(pgbench, &srv, &db, (&run, 2), dir.path(), "prod");

    let file = dir.path().join("c.toml");
    std::fs::write(
        &file,
        format!(
            r#"
[campaign]
name = "replayed"
[[target]]
name = "existing"
conninfo = "{}"
[[target]]
name = "throwaway"
[matrix]
scales = [1]
clients = [1]
scripts = [{{ replay = "prod.log", max = true }}]
repeats = 2
"#,
            srv.conninfo(&target_db)
        ),
    )
    .unwrap();
    let store = dir.path().join("r.db").display().to_string();
    let file = file.display().to_string();
    let (ok, plan, err) = pgsurge(&["campaign", "plan", &file]);
    assert!(ok, "{err}");
    assert!(
        plan.contains("existing/s1/replay:prod.log@max/c1/r-/2"),
        "{plan}"
    );
    let (ok, out, err) = pgsurge(&["campaign", "run", &file, "--store", &store]);
    assert!(ok, "{err}\n{out}");
    assert!(
        err.contains("the replay of prod.log changed the data"),
        "the data is loaded again before the second repeat: {err}"
    );
    // The second repeat replayed onto freshly loaded tables: they end as the original.
    assert_eq!(state(&srv, &target_db), expected);

    let runs = stored_runs(&store);
    assert_eq!(runs.len(), 4, "2 targets × 2 repeats: {runs:?}");
    for (id, key, status, transactions) in &runs {
        assert_eq!(status, "ok", "{key}");
        let report = stored_report(&store, *id);
        crate::replay_roundtrip::assert_schema(&report);
        let r = &report["replay"];
        assert_eq!(r["unexpected_errors"], 0, "{key}: {r}");
        assert_eq!(r["not_sent"], 0, "{key}: {r}");
        let logged = report["read"]["statements"].as_i64().unwrap();
        assert!(logged >= 2 * 30 * 5, "{key}: {logged} statements read");
        assert_eq!(*transactions, Some(logged), "{key}");
        for f in report["fingerprints"].as_array().unwrap() {
            assert_eq!(
                f["logged"]["statements"], f["replayed"]["statements"],
                "{key}: {f}"
            );
        }
        let sha = report["logs"][0]["sha256"].as_str().unwrap_or_default();
        assert_eq!(sha.len(), 64, "{key}: the log's digest is kept");
    }

    // `pgsurge replay --store` keeps a replay of the same log beside the campaign's.
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
    c.args([
        "replay",
        "--max",
        "-d",
        &copy,
        "--store",
        &store,
        log.to_str().unwrap(),
    ]);
    srv.apply_env(&mut c);
    let out = c.output().expect("pgsurge replay");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("stored as run 5"), "{err}");
    assert_eq!(state(&srv, &copy), expected);

    let report = dir.path().join("report");
    let report_dir = report.display().to_string();
    let (ok, _, err) = pgsurge(&["report", "--store", &store, "--output", &report_dir]);
    assert!(ok, "{err}");
    let page = std::fs::read_to_string(report.join("run-1.html")).unwrap();
    assert!(page.contains("Replay fidelity"), "run page");
    assert!(
        page.contains("UPDATE pgbench_accounts"),
        "fingerprints on the run page"
    );

    let (ok, text, err) = pgsurge(&["compare", "run:1", "run:5", "--store", &store]);
    assert!(ok, "{err}");
    assert!(text.starts_with("replays of one log"), "{text}");
    assert!(text.contains("UPDATE pgbench_accounts"), "{text}");
    let (ok, json, err) = pgsurge(&[
        "compare", "run:2", "run:4", "--format", "json", "--store", &store,
    ]);
    assert!(ok, "{err}");
    let doc: Value = serde_json::from_str(&json).unwrap();
    let (ok, schema, err) = pgsurge(&["schema", "replay-compare"]);
    assert!(ok, "{err}");
    pgsurge_testkit::schema::assert_valid(&schema, &doc);
    assert_eq!(doc["format"], "pgsurge-replay-compare");
    let fps = doc["fingerprints"].as_array().unwrap();
    assert!(fps.len() >= 5, "{doc}");
    for f in fps {
        assert_eq!(f["statements"][0], f["statements"][1], "{f}");
        assert!(f["mean_ms"][0].as_f64().unwrap() > 0.0, "{f}");
    }

    // The usual comparison of the two targets over their repeats.
    let (ok, text, err) = pgsurge(&[
        "compare",
        "target:existing",
        "target:throwaway",
        "--store",
        &store,
    ]);
    assert!(ok, "{err}");
    assert!(text.contains("replay:prod.log@max"), "{text}");
}

#[test]
fn a_replay_in_a_campaign_is_refused_where_it_cannot_run() {
    let dir = pgsurge_testkit::scratch_dir("replay-campaign-refused");
    std::fs::write(dir.path().join("prod.log"), "").unwrap();
    let file = dir.path().join("c.toml");
    for (matrix, extra, says) in [
        (
            r#"scripts = [{ name = "m", mix = [{ replay = "prod.log" }, { builtin = "select-only" }] }]"#,
            "",
            "a replay is a whole workload",
        ),
        (
            r#"scripts = [{ replay = "missing.log" }]"#,
            "",
            "missing.log is not a file",
        ),
        (
            r#"scripts = [{ replay = "prod.log", speed = 0 }]"#,
            "",
            "replay speed must be above 0",
        ),
        (
            r#"scripts = [{ builtin = "select-only", speed = 2 }]"#,
            "",
            "speed and max pace a replay",
        ),
        (
            r#"scripts = [{ replay = "prod.log" }]"#,
            "[distributed]\ngenerators = 2\n",
            "a replay runs on one load generator",
        ),
    ] {
        std::fs::write(
            &file,
            format!(
                "[campaign]\nname = \"x\"\n[[target]]\nname = \"t\"\nconninfo = \"dbname=x\"\n\
                 [matrix]\nscales = [1]\nclients = [1]\n{matrix}\n[run]\nduration = 1\n{extra}"
            ),
        )
        .unwrap();
        let (ok, _, err) = pgsurge(&["campaign", "plan", &file.display().to_string()]);
        assert!(!ok, "{matrix} {extra}");
        assert!(
            err.contains("matrix.scripts[0]") && err.contains(says),
            "{says}: {err}"
        );
    }
}
