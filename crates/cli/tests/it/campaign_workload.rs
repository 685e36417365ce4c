//! A campaign whose matrix holds a workload pack (`{ workload = "tpcc" }`) beside a
//! pgbench script: each target loads the pack with its loader, every test stores the
//! pack's metrics with its result, and the report and `compare` show NOPM beside tps.

use std::process::Command;

use pgsurge_server::testing::TestServer;

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

/// `(test_key, result document)` of every stored run.
fn stored_runs(store: &str) -> Vec<(String, serde_json::Value)> {
    let db = rusqlite::Connection::open(store).unwrap();
    let mut q = db
        .prepare("SELECT test_key, status, result_json FROM runs ORDER BY id")
        .unwrap();
    let rows = q
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
            ))
        })
        .unwrap();
    rows.map(|r| {
        let (key, status, doc) = r.unwrap();
        assert_eq!(status, "ok", "test {key} did not pass");
        let doc = serde_json::from_str(&doc.expect("a result document")).unwrap();
        (key, doc)
    })
    .collect()
}

fn metric(doc: &serde_json::Value, name: &str) -> Option<f64> {
    doc["workload_metrics"]
        .as_array()?
        .iter()
        .find(|m| m["name"] == name)
        .and_then(|m| m["value"].as_f64())
}

#[test]
fn a_campaign_loads_runs_stores_and_compares_a_workload_pack() {
    let srv = TestServer::shared();
    let (db_a, db_b) = (
        srv.create_database("campaign_pack_a"),
        srv.create_database("campaign_pack_b"),
    );
    let dir = pgsurge_testkit::scratch_dir("campaign-workload");
    let file = dir.path().join("c.toml");
    std::fs::write(
        &file,
        format!(
            r#"
[campaign]
name = "packs"
[[target]]
name = "a"
conninfo = "{}"
[[target]]
name = "b"
conninfo = "{}"
[matrix]
scales = [1]
clients = [2]
scripts = [{{ workload = "tpcc" }}, "select-only"]
repeats = 2
[run]
duration = 1
max_tries = 10
"#,
            srv.conninfo(&db_a),
            srv.conninfo(&db_b)
        ),
    )
    .unwrap();
    let store = dir.path().join("r.db").display().to_string();
    let file = file.display().to_string();

    let (ok, plan, err) = pgsurge(&["campaign", "plan", &file]);
    assert!(ok, "{err}");
    assert!(plan.contains("a/s1/tpcc/c2/r-/1"), "{plan}");

    let (ok, _, err) = pgsurge(&["campaign", "run", &file, "--store", &store]);
    assert!(ok, "{err}");
    assert!(
        err.contains("loading workload tpcc at scale 1"),
        "the pack's loader is announced: {err}"
    );
    // The pack's tables are on both targets, the pgbench tables too.
    for db in [&db_a, &db_b] {
        assert_eq!(srv.psql(db, "SELECT count(*) FROM warehouse").trim(), "1");
        assert_eq!(
            srv.psql(db, "SELECT count(*) FROM pgbench_branches").trim(),
            "1"
        );
    }

    // A pack's test is stored as the command that repeats it: its scripts are not files.
    let lines: Vec<String> = rusqlite::Connection::open(&store)
        .unwrap()
        .prepare("SELECT command_line FROM runs WHERE test_key LIKE '%/tpcc/%'")
        .unwrap()
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(lines.len(), 4);
    for line in &lines {
        assert!(
            line.starts_with("pgsurge bench --workload=tpcc ")
                && !line.contains("--file=")
                && line.contains("--client=2"),
            "{line}"
        );
    }

    let runs = stored_runs(&store);
    assert_eq!(runs.len(), 8, "2 targets × 2 workloads × 2 repeats");
    for (key, doc) in &runs {
        let nopm = metric(doc, "NOPM");
        if !key.contains("/tpcc/") {
            assert_eq!(nopm, None, "{key} is no pack's test");
            continue;
        }
        let nopm = nopm.unwrap_or_else(|| panic!("{key} stored no NOPM: {doc}"));
        // NOPM is read from the server (sum(d_next_o_id)); the client's own count of
        // New-Orders that committed must agree.
        let new_order = doc["scripts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"].as_str().unwrap_or("").contains("new_order"))
            .expect("the new_order script");
        let committed = new_order["stats"]["transactions"].as_f64().unwrap()
            - metric(doc, "New-Order rollbacks").unwrap();
        let minutes = doc["bench_duration_us"].as_f64().unwrap() / 1e6 / 60.0;
        let client_nopm = committed / minutes;
        assert!(
            nopm > 0.0 && (nopm - client_nopm).abs() <= 0.01 * client_nopm + 1.0 / minutes,
            "{key}: NOPM {nopm} from the server, {client_nopm} from the client"
        );
    }

    let (ok, out, err) = pgsurge(&[
        "compare", "target:a", "target:b", "--format", "json", "--store", &store,
    ]);
    assert!(ok, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let (ok, schema, err) = pgsurge(&["schema", "compare"]);
    assert!(ok, "{err}");
    pgsurge_testkit::schema::assert_valid(&schema, &doc);
    let cells = doc["cells"].as_array().unwrap();
    let tpcc = cells
        .iter()
        .find(|c| c["key"]["script"] == "tpcc")
        .expect("a tpcc cell");
    let nopm = tpcc["workload_metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "NOPM")
        .expect("NOPM compared");
    assert_eq!(nopm["unit"], "per minute");
    assert_eq!(
        (nopm["a_n"].as_u64(), nopm["b_n"].as_u64()),
        (Some(2), Some(2))
    );
    assert!(nopm["comparison"]["a"].as_f64().unwrap() > 0.0);
    let select = cells
        .iter()
        .find(|c| c["key"]["script"] == "select-only")
        .expect("a select-only cell");
    assert!(select.get("workload_metrics").is_none(), "{select}");

    let (ok, text, err) = pgsurge(&["compare", "target:a", "target:b", "--store", &store]);
    assert!(ok, "{err}");
    assert!(
        text.contains("workload metrics") && text.contains("NOPM (per minute)"),
        "{text}"
    );

    let tpcc_id = runs
        .iter()
        .position(|(k, _)| k.contains("/tpcc/"))
        .expect("a tpcc run")
        + 1;
    let (ok, shown, err) = pgsurge(&[
        "results",
        "show",
        "--run",
        &tpcc_id.to_string(),
        "--store",
        &store,
    ]);
    assert!(ok, "{err}");
    assert!(
        shown.contains("  NOPM = ") && shown.contains("(per minute)"),
        "{shown}"
    );

    let report = dir.path().join("report");
    let report_dir = report.display().to_string();
    let (ok, _, err) = pgsurge(&["report", "--store", &store, "--output", &report_dir]);
    assert!(ok, "{err}");
    let index = std::fs::read_to_string(report.join("index.html")).unwrap();
    assert!(index.contains("NOPM"), "NOPM beside tps on the index page");
    let page = std::fs::read_to_string(report.join(format!("run-{tpcc_id}.html"))).unwrap();
    assert!(
        page.contains("NOPM") && page.contains("per minute"),
        "run page"
    );
}

#[test]
fn a_pack_in_a_mix_or_in_a_distributed_campaign_is_refused() {
    let dir = pgsurge_testkit::scratch_dir("campaign-workload-refused");
    let file = dir.path().join("c.toml");
    for (matrix, extra, key, says) in [
        (
            r#"scripts = [{ name = "m", mix = [{ workload = "tpcc" }, { builtin = "select-only" }] }]"#,
            "",
            "matrix.scripts[0]",
            "a workload pack is a whole workload",
        ),
        (
            r#"scripts = [{ workload = "no-such-pack" }]"#,
            "",
            "matrix.scripts[0]",
            "no-such-pack",
        ),
        (
            r#"scripts = [{ workload = "tpcc" }]"#,
            "[distributed]\ngenerators = 2\n",
            "matrix.scripts[0]",
            "workload packs run on one load generator",
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
        assert!(!ok, "{matrix} {extra}: accepted");
        assert!(err.contains(key) && err.contains(says), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}
