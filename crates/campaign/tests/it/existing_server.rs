//! Existing servers are left as found: a campaign run twice on one server loads the
//! pgbench tables once; a campaign stopped during its second scale and resumed loads
//! nothing that was already loaded; statistics are not reset by default.

use std::path::Path;
use std::time::Duration;

use pgsurge_campaign::{run_campaign, Campaign, RunOptions};
use pgsurge_engine::StopFlag;
use pgsurge_server::testing::TestServer;
use pgsurge_store::{RunFilter, Store};

fn campaign(name: &str, conninfo: &str, scales: &str, init: &str) -> Campaign {
    let text = campaign_text(name, conninfo, scales, init);
    Campaign::parse(&text, "existing.toml", Path::new(".")).unwrap()
}

fn campaign_text(name: &str, conninfo: &str, scales: &str, init: &str) -> String {
    format!(
        r#"
[campaign]
name = "{name}"
shuffle = false

[[target]]
name = "existing"
conninfo = "{conninfo}"
{init}

[matrix]
scales = {scales}
clients = [1, 2]
scripts = ["select-only"]

[run]
duration = 1

[hygiene]
vacuum = false
checkpoint = false

[sampling]
interval = 0.5
"#
    )
}

/// (test key, scale, init_performed) of every run of a set, in run order.
fn inits(store: &mut Store, set_id: i64) -> Vec<(String, i64, String)> {
    let runs = store
        .list_runs(&RunFilter {
            set_id: Some(set_id),
            ..Default::default()
        })
        .unwrap();
    runs.iter()
        .map(|r| {
            let l = store.load_run(r.id).unwrap();
            let performed = l
                .facts
                .iter()
                .find(|f| f.name == "init_performed")
                .and_then(|f| f.value.clone())
                .unwrap_or_else(|| "absent".into());
            (
                r.record.test_key.clone(),
                r.record.scale.unwrap(),
                performed,
            )
        })
        .collect()
}

fn quiet() -> RunOptions {
    RunOptions {
        quiet: true,
        new_set: true,
        ..Default::default()
    }
}

#[test]
fn a_second_campaign_reuses_the_loaded_tables() {
    let srv = TestServer::shared();
    let db = srv.create_database("reuse");
    let ci = srv.conninfo(&db);
    let dir = pgsurge_testkit::scratch_dir("existing-server");
    let mut store = Store::open(dir.path().join("r.db").to_str().unwrap()).unwrap();
    let c = campaign("twice", &ci, "[1]", "");
    let first = run_campaign(&c, &mut store, &quiet(), &StopFlag::new()).unwrap();
    assert_eq!((first.ok, first.failed), (2, 0), "{first:?}");
    let i1 = inits(&mut store, first.set_id);
    assert_eq!(
        i1.iter().filter(|x| x.2 == "true").count(),
        1,
        "the first test loads the tables: {i1:?}"
    );
    // A marker row the second campaign must not wipe out.
    srv.psql(
        &db,
        "UPDATE pgbench_branches SET filler = 'kept' WHERE bid = 1",
    );
    let second = run_campaign(&c, &mut store, &quiet(), &StopFlag::new()).unwrap();
    assert_ne!(second.set_id, first.set_id);
    assert_eq!((second.ok, second.failed), (2, 0), "{second:?}");
    let i2 = inits(&mut store, second.set_id);
    assert!(i2.iter().all(|x| x.2 == "false"), "{i2:?}");
    assert!(srv
        .psql(&db, "SELECT filler FROM pgbench_branches WHERE bid = 1")
        .contains("kept"));
    // init = "always" does load again.
    let always = campaign("always", &ci, "[1]", "init = \"always\"");
    let third = run_campaign(&always, &mut store, &quiet(), &StopFlag::new()).unwrap();
    let i3 = inits(&mut store, third.set_id);
    assert_eq!(i3.iter().filter(|x| x.2 == "true").count(), 1, "{i3:?}");
    assert!(!srv
        .psql(&db, "SELECT filler FROM pgbench_branches WHERE bid = 1")
        .contains("kept"));
}

#[test]
fn a_resume_during_the_second_scale_loads_nothing_again() {
    let srv = TestServer::shared();
    let db = srv.create_database("resume");
    let ci = srv.conninfo(&db);
    let dir = pgsurge_testkit::scratch_dir("existing-server");
    let path = dir.path().join("r.db");
    let mut store = Store::open(path.to_str().unwrap()).unwrap();
    // Stop as soon as the first test of scale 2 is stored, while the second is in hand:
    // its before_test hook waits for the stop (however long the watcher takes to see
    // the first stored, on a busy machine).
    let stopped = dir.path().join("stopped");
    let text = format!(
        "{}\n[hooks]\nbefore_test = \"\"\"\ncase $PGSURGE_TEST_KEY in */s2/*/c2/*)\n  \
         while [ ! -e '{}' ]; do sleep 0.05; done;;\nesac\n\"\"\"\n",
        campaign_text("resume", &ci, "[1, 2]", ""),
        stopped.display()
    );
    let c = Campaign::parse(&text, "existing.toml", Path::new(".")).unwrap();
    let stop = StopFlag::new();
    let watcher = {
        let stop = stop.clone();
        let path = path.clone();
        std::thread::spawn(move || {
            for _ in 0..6000 {
                std::thread::sleep(Duration::from_millis(100));
                if let Ok(mut s) = Store::open(path.to_str().unwrap()) {
                    let n = s
                        .list_runs(&RunFilter::default())
                        .map(|r| r.iter().filter(|r| r.record.scale == Some(2)).count())
                        .unwrap_or(0);
                    if n >= 1 {
                        stop.raise();
                        std::fs::write(&stopped, "").unwrap();
                        return;
                    }
                }
            }
        })
    };
    let first = run_campaign(
        &c,
        &mut store,
        &RunOptions {
            quiet: true,
            ..Default::default()
        },
        &stop,
    )
    .unwrap();
    watcher.join().unwrap();
    assert_eq!(first.ok, 3, "{first:?}");
    assert_eq!(first.remaining, 1, "{first:?}");
    let before = inits(&mut store, first.set_id);
    assert_eq!(
        before
            .iter()
            .filter(|x| x.2 == "true")
            .map(|x| x.1)
            .collect::<Vec<_>>(),
        [1, 2],
        "each scale loaded once: {before:?}"
    );
    let resumed = run_campaign(
        &c,
        &mut store,
        &RunOptions {
            quiet: true,
            ..Default::default()
        },
        &StopFlag::new(),
    )
    .unwrap();
    assert_eq!(resumed.set_id, first.set_id);
    assert_eq!((resumed.ok, resumed.remaining), (1, 0), "{resumed:?}");
    let after = inits(&mut store, first.set_id);
    let new: Vec<_> = after.iter().filter(|x| !before.contains(x)).collect();
    assert_eq!(new.len(), 1, "{after:?}");
    assert_eq!((new[0].1, new[0].2.as_str()), (2, "false"), "{new:?}");
}

#[test]
fn init_never_fails_the_test_when_the_tables_are_missing() {
    let srv = TestServer::shared();
    let db = srv.create_database("never");
    let dir = pgsurge_testkit::scratch_dir("existing-server");
    let mut store = Store::open(dir.path().join("r.db").to_str().unwrap()).unwrap();
    let c = campaign("never", &srv.conninfo(&db), "[1]", "init = \"never\"");
    let out = run_campaign(&c, &mut store, &quiet(), &StopFlag::new()).unwrap();
    assert_eq!((out.ok, out.failed), (0, 2), "{out:?}");
    let runs = store
        .list_runs(&RunFilter {
            set_id: Some(out.set_id),
            ..Default::default()
        })
        .unwrap();
    let err = runs[0].record.error.as_deref().unwrap();
    assert!(
        err.contains("init = \"never\"") && err.contains("do not exist"),
        "{err}"
    );
}

#[test]
fn init_jobs_loads_the_partitions_in_parallel_and_frozen() {
    let srv = TestServer::shared();
    let db = srv.create_database("initjobs");
    let ci = srv.conninfo(&db);
    let dir = pgsurge_testkit::scratch_dir("existing-server");
    let mut store = Store::open(dir.path().join("r.db").to_str().unwrap()).unwrap();
    let init = "\n[init]\npartitions = 3\npartition_method = \"hash\"\njobs = 2\n";
    let c = campaign("jobs", &ci, "[1]", init);
    let done = run_campaign(&c, &mut store, &quiet(), &StopFlag::new()).unwrap();
    assert_eq!((done.ok, done.failed), (2, 0), "{done:?}");
    assert_eq!(
        srv.psql(
            &db,
            "SELECT count(*), count(DISTINCT aid) FROM pgbench_accounts"
        )
        .trim(),
        "100000|100000"
    );
    // Each partition was loaded by one job with COPY FREEZE: every page is
    // all-frozen (a serial -i copies into the partitioned parent, unfrozen).
    srv.psql(&db, "CREATE EXTENSION IF NOT EXISTS pg_visibility");
    let unfrozen = srv.psql(
        &db,
        "SELECT sum((SELECT count(*) FROM pg_visibility_map(c.oid) WHERE NOT all_frozen)) \
         FROM pg_class c WHERE relname LIKE 'pgbench_accounts_%' AND relkind = 'r'",
    );
    assert_eq!(unfrozen.trim(), "0");
    let partitions = srv.psql(
        &db,
        "SELECT count(*) FROM pg_inherits WHERE inhparent = 'pgbench_accounts'::regclass",
    );
    assert_eq!(partitions.trim(), "3");
}

#[test]
fn a_role_that_may_not_checkpoint_benchmarks_with_the_step_skipped_and_said() {
    let srv = TestServer::shared();
    let role = format!("bench_role_{}", std::process::id());
    let db = format!("{role}_db");
    srv.psql("postgres", &format!("CREATE ROLE {role} LOGIN"));
    srv.psql("postgres", &format!("CREATE DATABASE {db} OWNER {role}"));
    let conninfo = format!("{} user={role}", srv.conninfo(&db));
    let text = format!(
        r#"
[campaign]
name = "no-checkpoint"
[[target]]
name = "existing"
conninfo = "{conninfo}"
[matrix]
scales = [1]
clients = [1]
scripts = ["select-only"]
[run]
transactions = 5
[hygiene]
checkpoint = true
vacuum = true
"#
    );
    let campaign = Campaign::parse(&text, "nocp.toml", Path::new(".")).unwrap();
    let mut store = Store::open(":memory:").unwrap();
    let out = run_campaign(&campaign, &mut store, &quiet(), &StopFlag::new()).unwrap();
    assert_eq!((out.ok, out.failed), (1, 0), "{out:?}");
    let runs = store
        .list_runs(&RunFilter {
            set_id: Some(out.set_id),
            ..Default::default()
        })
        .unwrap();
    let loaded = store.load_run(runs[0].id).unwrap();
    let skipped: Vec<_> = loaded
        .warnings
        .iter()
        .filter(|w| w.code == "checkpoint_skipped")
        .collect();
    assert_eq!(skipped.len(), 1, "{:?}", loaded.warnings);
    assert!(
        skipped[0]
            .message
            .contains(&format!("role \"{role}\" may not run it")),
        "{}",
        skipped[0].message
    );
}
