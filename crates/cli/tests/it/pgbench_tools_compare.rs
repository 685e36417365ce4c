//! A pgbench-tools results database imported with `results import --from
//! pgbench-tools`, then a campaign on the same cell (select-only, scale 1, one
//! client): `compare` of the imported set against the campaign's set matches the cell
//! and gives it a verdict.

use std::process::Command;

use pgsurge_server::testing::TestServer;

fn pgsurge(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_pgsurge"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn an_imported_pgbench_tools_set_compares_with_a_campaign_on_the_same_cells() {
    let srv = TestServer::shared();
    let results = srv.create_database("pgbt_cmp_results");
    let schema = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../records/tests/data/pgbench-tools/init/resultdb.sql"
    ))
    .unwrap()
    // The file drops this view without IF EXISTS, which fails on a fresh database.
    .replace(
        "DROP VIEW test_metrics_decode;",
        "DROP VIEW IF EXISTS test_metrics_decode;",
    );
    srv.psql(&results, &schema);
    srv.psql(
        &results,
        "INSERT INTO testset (server, info) VALUES ('db1', 'baseline');
         INSERT INTO tests (server, set, scale, start_time, end_time, tps, script, clients,
                            workers, trans, avg_latency, conn_method)
           VALUES ('db1', 1, 1, '2024-05-01 10:00:00', '2024-05-01 10:00:02', 900, 'select',
                   1, 1, 1800, 1.1, 'host'),
                  ('db1', 1, 1, '2024-05-01 10:01:00', '2024-05-01 10:01:02', 950, 'select',
                   1, 1, 1900, 1.05, 'host');",
    );
    let bench = srv.create_database("pgbt_cmp_bench");
    let dir = pgsurge_testkit::scratch_dir("pgbt-compare");
    let store = dir.path().join("r.db").display().to_string();
    ok(&pgsurge(&[
        "results",
        "import",
        "--store",
        &store,
        "--from",
        "pgbench-tools",
        &srv.conninfo(&results),
    ]));
    let file = dir.path().join("c.toml");
    std::fs::write(
        &file,
        format!(
            "[campaign]\nname = \"after\"\n[[target]]\nname = \"db1\"\nconninfo = \"{}\"\n\
             [matrix]\nscales = [1]\nclients = [1]\nscripts = [\"select-only\"]\nrepeats = 2\n\
             [run]\nduration = 1\n",
            srv.conninfo(&bench)
        ),
    )
    .unwrap();
    ok(&pgsurge(&[
        "campaign",
        "run",
        file.to_str().unwrap(),
        "--store",
        &store,
        "--quiet",
    ]));
    let out = ok(&pgsurge(&[
        "compare",
        "set:pgbench-tools-db1-set1",
        "set:after",
        "--store",
        &store,
        "--format",
        "json",
    ]));
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let cells = doc["cells"].as_array().unwrap_or_else(|| panic!("{doc}"));
    assert_eq!(cells.len(), 1, "{doc}");
    assert_eq!(cells[0]["label"], "select-only s=1 c=1", "{doc}");
    assert_eq!(
        (cells[0]["a_n"].as_u64(), cells[0]["b_n"].as_u64()),
        (Some(2), Some(2))
    );
    // Two repeats a side make an interval (a narrow one or not: on a busy machine
    // the verdict may be any of the four), and the analysis that made it is named.
    let tps = &cells[0]["tps"];
    assert!(
        tps["ci_low"].is_number() && tps["ci_high"].is_number(),
        "no interval: {doc}"
    );
    assert_eq!(tps["analysis"], "welch", "{doc}");
    let verdict = tps["verdict"].as_str().unwrap_or_default();
    assert!(
        ["faster", "slower", "no-difference", "inconclusive"].contains(&verdict),
        "no verdict: {doc}"
    );
    assert_eq!(doc["only_in_a"], serde_json::json!([]), "{doc}");
    assert_eq!(doc["only_in_b"], serde_json::json!([]), "{doc}");
}
