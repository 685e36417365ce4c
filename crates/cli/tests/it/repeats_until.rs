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

/// Whether a cell's stored rounds `k` (each `(round, tps)` per target) are where the
/// stopping rule ends it: at `max`, or at the first round from `min` on after which
/// it was done.
fn stops_by_the_rule(sides: &[Vec<(u32, f64)>], target: f64, min: usize, max: usize) -> bool {
    let k = sides[0].len();
    let first = |n: usize| -> Vec<Vec<(u32, f64)>> {
        sides
            .iter()
            .map(|s| {
                s.iter()
                    .filter(|(r, _)| *r as usize <= n)
                    .copied()
                    .collect()
            })
            .collect()
    };
    k == max
        || (of_cell(&first(k), target).reached()
            && (k == min || !of_cell(&first(k - 1), target).reached()))
}

#[test]
fn an_until_campaign_killed_halfway_resumes_with_every_round_once_and_the_same_rule() {
    let srv = TestServer::shared();
    let db = srv.create_database("repeats_until_resume");
    let dir = pgsurge_testkit::scratch_dir("repeats-until-resume");
    let d = dir.path();
    std::fs::write(d.join("quiet.sql"), "SELECT pg_sleep(0.05);\n").unwrap();
    std::fs::write(
        d.join("noisy.sql"),
        "SELECT pg_sleep(ms / 1000.0) FROM knob;\n",
    )
    .unwrap();
    srv.psql(
        &db,
        "CREATE TABLE knob (ms int); INSERT INTO knob VALUES (10);",
    );
    // The noisy cell's B is eight times slower than A in odd rounds and eight times
    // faster in even ones: its change never reaches ±5 %, so it runs to max. The
    // second test of its round 4 holds (until the file `go` appears, at most a
    // minute) once the first has run: the campaign is killed there, halfway through
    // a round.
    let hook = d.join("hook.sh");
    std::fs::write(
        &hook,
        format!(
            "case \"$PGSURGE_TARGET:$((PGSURGE_REPEAT % 2))\" in a:1|b:0) ms=10 ;; *) ms=80 ;; esac\n\
             {psql} -X -q -c \"UPDATE knob SET ms = $ms\"\n\
             case \"$PGSURGE_TEST_KEY\" in */noisy/*/4)\n\
               if [ -e {d}/round4 ]; then\n\
                 touch {d}/holding; n=0\n\
                 while [ ! -e {d}/go ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done\n\
               else touch {d}/round4; fi ;;\n\
             esac\n",
            psql = srv.bin_dir().join("psql").display(),
            d = d.display()
        ),
    )
    .unwrap();
    let file = d.join("c.toml");
    let conninfo = srv.conninfo(&db);
    std::fs::write(
        &file,
        format!(
            "[campaign]\nname = \"resume\"\n\
             [[target]]\nname = \"a\"\nconninfo = \"{conninfo}\"\n\
             [[target]]\nname = \"b\"\nconninfo = \"{conninfo}\"\n\
             [matrix]\nscales = [1]\nclients = [4]\n\
             scripts = [{{ file = \"quiet.sql\" }}, {{ file = \"noisy.sql\" }}]\n\
             [repeats]\nuntil = \"5%\"\nmin = 3\nmax = 6\n[run]\nduration = 2\n\
             [hooks]\nbefore_test = \"sh {}\"\n",
            hook.display()
        ),
    )
    .unwrap();
    let store_path = d.join("r.db").display().to_string();
    let args = [
        "campaign",
        "run",
        file.to_str().unwrap(),
        "--store",
        &store_path,
    ];
    let mut child = srv
        .apply_env(&mut Command::new(env!("CARGO_BIN_EXE_pgsurge")))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(d.join("first.err")).unwrap())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(600);
    while !d.join("holding").exists() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the campaign ended before round 4 of the noisy cell: {}",
            std::fs::read_to_string(d.join("first.err")).unwrap_or_default()
        );
        assert!(std::time::Instant::now() < deadline, "round 4 never came");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    std::fs::write(d.join("go"), "").unwrap();
    let mut store = Store::open(&store_path).unwrap();
    let runs_of = |store: &mut Store, name: &str, target: &str| {
        let (repeats, _) = cell(store, &format!("{target}/s1/{name}"));
        repeats
    };
    let killed_at = store.list_runs(&RunFilter::default()).unwrap().len();
    let (a4, b4) = (
        runs_of(&mut store, "noisy", "a").len(),
        runs_of(&mut store, "noisy", "b").len(),
    );
    assert_eq!(
        (a4.min(b4), a4.max(b4)),
        (3, 4),
        "killed halfway through round 4"
    );
    drop(store);

    let out = pgsurge(srv, &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!("{killed_at} already stored")),
        "{err}"
    );
    let mut store = Store::open(&store_path).unwrap();
    // The noisy cell never reaches ±5 %; the quiet one normally does in a few rounds,
    // but on a loaded machine one slow round can keep it from the precision up to max:
    // its count is checked against the rule, not assumed.
    let mut reached = 0;
    for (name, noisy) in [("quiet", false), ("noisy", true)] {
        let (a, a_facts) = cell(&mut store, &format!("a/s1/{name}"));
        let (b, b_facts) = cell(&mut store, &format!("b/s1/{name}"));
        // Every round once on each target: none lost, none twice.
        let rounds = |s: &[(u32, f64)]| s.iter().map(|(r, _)| *r).collect::<Vec<_>>();
        let k = a.len() as u32;
        assert_eq!(rounds(&a), (1..=k).collect::<Vec<_>>(), "{name}: {a:?}");
        assert_eq!(rounds(&b), rounds(&a), "{name}: {b:?}");
        let sides = vec![a, b];
        assert!(stops_by_the_rule(&sides, 0.05, 3, 6), "{name}: {sides:?}");
        // The precision stored with every run is that of all the cell's rounds.
        let judged = of_cell(&sides, 0.05);
        if noisy {
            assert_eq!(k, 6, "{name}: {sides:?}");
            assert!(!judged.reached(), "{name}: {judged:?}");
        }
        reached += usize::from(judged.reached());
        assert!(
            a_facts.iter().chain(&b_facts).all(|f| *f == Some(judged)),
            "{name}: {a_facts:?} {b_facts:?}"
        );
    }
    assert!(
        err.contains(&format!(
            "repeats until ±5%: {reached} cells reached it, {} did not",
            2 - reached
        )),
        "{err}"
    );
    let sets = store.list_sets().unwrap();
    assert_eq!(sets.len(), 1, "resumed into the same set");
    assert_eq!(sets[0].record.status, "complete", "{:?}", sets[0].record);
}
