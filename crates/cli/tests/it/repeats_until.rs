//! `[repeats] until`: a campaign of two cells on one target. The quiet cell's
//! transaction sleeps a fixed 50 ms on the server; the noisy cell's sleeps as long as
//! a table says, and a `before_test` hook sets it from the test's repeat: 10 ms in odd
//! repeats, 80 ms in even ones. So the noisy cell's repeats differ eightfold, round
//! after round, while each run is steady within itself: it cannot reach the precision
//! and runs to `max`. The quiet cell reaches it and stops before `max`, at the first
//! round after which it was precise. What is asserted is what the store holds: the
//! repeats of each cell and the precision stored with them, never a timing.

use std::path::Path;
use std::process::{Command, Output};

use pgsurge_analysis::precision::{of_cell, CellPrecision};
use pgsurge_server::testing::TestServer;
use pgsurge_store::{facts, RunFilter, Store};

/// Campaign text for `srv`'s database `db`: the two scripts of the module doc (the
/// noisy one only with `quiet`), `[repeats]` as given, each test `duration` seconds.
fn campaign(dir: &Path, srv: &TestServer, db: &str, repeats: &str, duration: u32) -> String {
    std::fs::write(dir.join("quiet.sql"), "SELECT pg_sleep(0.05);\n").unwrap();
    std::fs::write(
        dir.join("noisy.sql"),
        "SELECT pg_sleep(ms / 1000.0) FROM knob;\n",
    )
    .unwrap();
    srv.psql(
        db,
        "CREATE TABLE knob (ms int); INSERT INTO knob VALUES (10);",
    );
    let psql = srv.bin_dir().join("psql");
    format!(
        "[campaign]\nname = \"until\"\n[[target]]\nname = \"pg\"\nconninfo = \"{}\"\n\
         [matrix]\nscales = [1]\nclients = [8]\n\
         scripts = [{{ file = \"quiet.sql\" }}, {{ file = \"noisy.sql\" }}]\n\
         [repeats]\n{repeats}\n[run]\nduration = {duration}\n\
         [hooks]\nbefore_test = \"{} -X -q -c \\\"UPDATE knob SET ms = CASE WHEN $PGSURGE_REPEAT % 2 = 0 THEN 80 ELSE 10 END\\\"\"\n",
        srv.conninfo(db),
        psql.display()
    )
}

fn pgsurge(srv: &TestServer, args: &[&str]) -> Output {
    srv.apply_env(&mut Command::new(env!("CARGO_BIN_EXE_pgsurge")))
        .args(args)
        .output()
        .unwrap()
}

/// The stored repeats of the cell whose key holds `name`, as (repeat, tps) in repeat
/// order, and the `repeats_until` fact each of them holds.
fn cell(store: &mut Store, name: &str) -> (Vec<(u32, f64)>, Vec<Option<CellPrecision>>) {
    let runs = store.list_runs(&RunFilter::default()).unwrap();
    let mut repeats = Vec::new();
    let mut stored = Vec::new();
    for r in runs.iter().filter(|r| r.record.test_key.contains(name)) {
        assert_eq!(r.record.status, "ok", "{:?}", r.record);
        let repeat = r
            .record
            .test_key
            .rsplit('/')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        repeats.push((repeat, r.record.tps.unwrap()));
        let fact = store
            .load_run(r.id)
            .unwrap()
            .facts
            .into_iter()
            .find(|f| f.name == facts::REPEATS_UNTIL)
            .and_then(|f| serde_json::from_str(f.value.as_deref()?).ok());
        stored.push(fact);
    }
    repeats.sort_by_key(|(n, _)| *n);
    (repeats, stored)
}

#[test]
fn a_precise_cell_stops_early_and_a_noisy_one_runs_to_max() {
    let srv = TestServer::shared();
    let db = srv.create_database("repeats_until");
    let dir = pgsurge_testkit::scratch_dir("repeats-until");
    let file = dir.path().join("c.toml");
    let text = campaign(dir.path(), srv, &db, "until = \"5%\"\nmin = 3\nmax = 6", 4);
    std::fs::write(&file, text).unwrap();
    let store_path = dir.path().join("r.db").display().to_string();
    let file_arg = file.display().to_string();
    let out = pgsurge(srv, &["campaign", "run", &file_arg, "--store", &store_path]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let mut store = Store::open(&store_path).unwrap();
    let (quiet, quiet_facts) = cell(&mut store, "quiet");
    let (noisy, noisy_facts) = cell(&mut store, "noisy");

    // The noisy cell runs all six repeats, odd and even ones eightfold apart, and its
    // runs say it did not reach ±5 %.
    assert_eq!(
        noisy.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5, 6]
    );
    assert!(noisy[0].1 > 3.0 * noisy[1].1, "{noisy:?}");
    let judged = of_cell(std::slice::from_ref(&noisy), 0.05);
    assert!(!judged.reached(), "{noisy:?}");
    assert!(
        noisy_facts.iter().all(|f| *f == Some(judged)),
        "{noisy_facts:?}"
    );

    // The quiet one stops before max, at the first round after which it was precise.
    assert!((3..6).contains(&quiet.len()), "{quiet:?}\n{err}");
    let judged = of_cell(std::slice::from_ref(&quiet), 0.05);
    assert!(judged.reached(), "{quiet:?}");
    assert_eq!(judged.repeats, quiet.len());
    if quiet.len() > 3 {
        assert!(!of_cell(&[quiet[..quiet.len() - 1].to_vec()], 0.05).reached());
    }
    assert!(
        quiet_facts.iter().all(|f| *f == Some(judged)),
        "{quiet_facts:?}"
    );
    assert!(err.contains("precise enough, reached"), "{err}");
    assert!(
        err.contains(&format!(
            "repeats until ±5%: 1 cells reached it, 1 did not; {} tests not needed",
            6 - quiet.len()
        )),
        "{err}"
    );

    // The report's cell table says it per cell.
    let report = dir.path().join("report");
    let out = pgsurge(
        srv,
        &[
            "report",
            "--store",
            &store_path,
            "-o",
            report.to_str().unwrap(),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let index = std::fs::read_to_string(report.join("index.html")).unwrap();
    assert!(index.contains(&judged.until_text()), "{index}");
    assert!(index.contains("until ±5 %: not reached, ±"), "{index}");

    // `campaign plan` estimates from this set what the precision will need: the noisy
    // cell all of max, the quiet one at most what it took.
    let out = pgsurge(
        srv,
        &[
            "campaign",
            "plan",
            &file_arg,
            "--store",
            &store_path,
            "--format",
            "json",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let needed = &plan["repeats"]["needed"];
    assert_eq!(plan["repeats"]["max"], 6, "{plan}");
    assert_eq!(plan["repeats"]["from_set"], 1, "{plan}");
    let by_name = |name: &str| {
        needed
            .as_object()
            .unwrap()
            .iter()
            .find(|(k, _)| k.contains(name))
            .and_then(|(_, v)| v.as_u64())
    };
    assert_eq!(by_name("noisy"), Some(6), "{plan}");
    assert!(
        by_name("quiet").is_some_and(|n| (3..=quiet.len() as u64).contains(&n)),
        "{plan}"
    );
    let out = pgsurge(
        srv,
        &["campaign", "plan", &file_arg, "--store", &store_path],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("planned at the worst case, every cell at 6"),
        "{text}"
    );
    assert!(text.contains("by the spread of set 1, "), "{text}");
    assert!(text.contains("estimated time: at most "), "{text}");
}

#[test]
fn a_spent_budget_leaves_out_the_rounds_beyond_min_and_the_campaign_ends_cleanly() {
    let srv = TestServer::shared();
    let db = srv.create_database("repeats_budget");
    let dir = pgsurge_testkit::scratch_dir("repeats-budget");
    let file = dir.path().join("c.toml");
    // Two rounds of two tests of a second each take longer than the budget of a
    // second: no cell starts a third repeat.
    let text = campaign(
        dir.path(),
        srv,
        &db,
        "until = \"1%\"\nmin = 2\nmax = 5\nbudget = \"1s\"",
        1,
    );
    std::fs::write(&file, text).unwrap();
    let store_path = dir.path().join("r.db").display().to_string();
    let out = pgsurge(
        srv,
        &[
            "campaign",
            "run",
            &file.display().to_string(),
            "--store",
            &store_path,
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let mut store = Store::open(&store_path).unwrap();
    let (noisy, noisy_facts) = cell(&mut store, "noisy");
    assert_eq!(noisy.len(), 2, "{noisy:?}");
    let judged = CellPrecision {
        budget_spent: true,
        ..of_cell(std::slice::from_ref(&noisy), 0.01)
    };
    assert!(!judged.reached());
    assert!(
        noisy_facts.iter().all(|f| *f == Some(judged)),
        "{noisy_facts:?}"
    );
    let (quiet, _) = cell(&mut store, "quiet");
    assert_eq!(quiet.len(), 2, "{quiet:?}");
    assert!(err.contains("budget spent, not reached, ±"), "{err}");
    assert!(
        err.contains(", the budget spent; 6 tests not needed"),
        "{err}"
    );
    assert!(err.contains("0 remaining"), "{err}");
    let sets = store.list_sets().unwrap();
    assert_eq!(sets[0].record.status, "complete", "{:?}", sets[0].record);
}
