//! pgbench-tools itself (the vendored copy of its scripts) runs its `runset` on a
//! throwaway server with pgsurge as its pgbench (`BENCHBIN` is a `pgbench` symlink to
//! the binary): scale 1, clients 1 and 2, 3 seconds each. Its results database is then
//! imported with `results import --from pgbench-tools`, and every test's scale,
//! clients, transactions, tps and latencies are checked against pgbench-tools' own
//! `tests` rows and, for the tps its scripts leave NULL, against its `results.txt`.
//! The same config converted with `campaign convert --from pgbench-tools` plans the
//! tests runset ran, in its order.

use std::path::{Path, PathBuf};
use std::process::Command;

use pgsurge_server::testing::TestServer;
use pgsurge_store::{RunFilter, Store};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../records/tests/data/pgbench-tools"
);

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
            // The scripts lose their mode in the repository's fixture copy.
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
}

fn have(cmd: &str) -> bool {
    Command::new(cmd)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `tps = X (…)` of a pgbench report.
fn report_tps(path: &Path) -> f64 {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("tps = "))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no tps line in {}:\n{text}", path.display()))
}

fn num(v: &str) -> Option<f64> {
    (!v.is_empty()).then(|| v.parse().unwrap())
}

#[test]
fn runset_with_pgsurge_as_pgbench_is_imported_with_its_own_figures() {
    for tool in ["bash", "psql", "python3"] {
        if !have(tool) {
            pgsurge_testkit::missing_prerequisite(&format!(
                "{tool} (pgbench-tools' runset needs it)"
            ));
            return;
        }
    }
    let srv = TestServer::shared();
    let bench_db = srv.create_database("pgbt_runset_bench");
    let results_db = srv.create_database("pgbt_runset_results");
    let schema = std::fs::read_to_string(Path::new(FIXTURE).join("init/resultdb.sql"))
        .unwrap()
        // The file drops this view without IF EXISTS, which fails on a fresh database.
        .replace(
            "DROP VIEW test_metrics_decode;",
            "DROP VIEW IF EXISTS test_metrics_decode;",
        );
    srv.psql(&results_db, &schema);

    let dir = pgsurge_testkit::scratch_dir("pgbt-runset");
    let tools: PathBuf = dir.path().join("pgbench-tools");
    copy_tree(Path::new(FIXTURE), &tools);
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_pgsurge"), bin.join("pgbench")).unwrap();
    let socket = srv.socket_dir().display().to_string();
    let port = srv.port();
    let overrides = format!(
        "\nBENCHBIN={bench}\nGNUPLOT=\"\"\nTESTHOST={socket}\nTESTUSER=postgres\nTESTPORT={port}\n\
         TESTDB={bench_db}\nRESULTHOST={socket}\nRESULTUSER=postgres\nRESULTPORT={port}\n\
         RESULTDB={results_db}\nSERVERNAME=testsrv\nOSDATA=0\nSCRIPT=select\nSCALES=\"1\"\n\
         SETCLIENTS=\"1 2\"\nSETTIMES=1\nRUNTIME=3\nTOTTRANS=\"\"\nMAX_WORKERS=2\n",
        bench = bin.join("pgbench").display()
    );
    let config = tools.join("config");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&overrides);
    std::fs::write(&config, text).unwrap();

    for (script, args) in [("./newset", vec!["runset test"]), ("./runset", vec![])] {
        let mut cmd = Command::new("bash");
        cmd.arg(script).args(&args).current_dir(&tools);
        srv.apply_env(&mut cmd);
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{script}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // pgbench-tools' own rows.
    let rows = srv.psql(
        &results_db,
        "SELECT test, scale, clients, coalesce(trans::text, ''), coalesce(tps::text, ''), \
         coalesce(avg_latency::text, ''), coalesce(percentile_90_latency::text, ''), \
         coalesce(max_latency::text, '') FROM tests WHERE script NOT LIKE ':%' ORDER BY test",
    );
    let expected: Vec<Vec<String>> = rows
        .lines()
        .map(|l| l.split('|').map(str::to_string).collect())
        .collect();
    assert_eq!(expected.len(), 2, "runset should have run 2 tests:\n{rows}");
    let inits = srv.psql(
        &results_db,
        "SELECT count(*) FROM tests WHERE script LIKE ':%'",
    );
    assert_eq!(
        inits.trim(),
        "1",
        "one initialization test for the one scale"
    );

    // The converted config plans the tests runset ran, in its order.
    let campaign = dir.path().join("converted.toml");
    let out = Command::new(env!("CARGO_BIN_EXE_pgsurge"))
        .args(["campaign", "convert", "--from", "pgbench-tools"])
        .arg(&config)
        .arg("-o")
        .arg(&campaign)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(env!("CARGO_BIN_EXE_pgsurge"))
        .args(["campaign", "plan", "--format", "json"])
        .arg(&campaign)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let planned: Vec<String> = plan["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            format!(
                "{}|{}|{}|{}",
                t["scale"], t["clients"], t["rate"], t["script"]
            )
        })
        .collect();
    let ran: Vec<String> = srv
        .psql(
            &results_db,
            "SELECT scale, clients, coalesce(rate_limit::text, 'null') FROM tests \
             WHERE script NOT LIKE ':%' ORDER BY test",
        )
        .lines()
        .map(|l| format!("{}|\"select-only\"", l))
        .collect();
    assert_eq!(planned, ran, "{plan}");

    let store = dir.path().join("r.db").display().to_string();
    let results_dir = tools.join("results").display().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_pgsurge"))
        .args([
            "results",
            "import",
            "--store",
            &store,
            "--from",
            "pgbench-tools",
        ])
        .args(["--results-dir", &results_dir, &srv.conninfo(&results_db)])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut s = Store::open(&store).unwrap();
    let runs = s.list_runs(&RunFilter::default()).unwrap();
    assert_eq!(runs.len(), expected.len(), "{runs:?}");
    for row in &expected {
        let test: i64 = row[0].parse().unwrap();
        let run = runs
            .iter()
            .find(|r| r.record.seq == Some(test))
            .unwrap_or_else(|| panic!("test {test} was not imported"));
        let r = &run.record;
        assert_eq!(r.scale, Some(row[1].parse().unwrap()), "test {test} scale");
        assert_eq!(
            r.clients,
            Some(row[2].parse().unwrap()),
            "test {test} clients"
        );
        assert_eq!(
            r.transactions,
            num(&row[3]).map(|v| v as i64),
            "test {test} transactions"
        );
        let report = tools
            .join("results/testsrv")
            .join(test.to_string())
            .join("results.txt");
        let tps = num(&row[4]).unwrap_or_else(|| report_tps(&report));
        assert_eq!(r.tps, Some(tps), "test {test} tps");
        assert!(tps > 0.0, "test {test} ran no transaction");
        assert_eq!(
            r.latency_mean_ms,
            num(&row[5]),
            "test {test} average latency"
        );
        assert_eq!(
            r.latency_p90_ms,
            num(&row[6]),
            "test {test} 90th percentile"
        );
        assert_eq!(r.latency_max_ms, num(&row[7]), "test {test} max latency");
        assert_eq!(r.script.as_deref(), Some("select-only"));
        let loaded = s.load_run(run.id).unwrap();
        assert!(
            loaded
                .counters
                .iter()
                .any(|c| c.name.starts_with("pg_stat_bgwriter.")),
            "test {test}: no test_bgwriter counters"
        );
    }
    let first = runs.iter().min_by_key(|r| r.record.seq).unwrap();
    let facts = s.load_run(first.id).unwrap().facts;
    assert!(
        facts
            .iter()
            .any(|f| f.name == "init_performed" && f.value.as_deref() == Some("true")),
        "{facts:?}"
    );
}
