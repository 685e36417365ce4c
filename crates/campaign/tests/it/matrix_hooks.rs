//! The matrix's extra dimensions (query modes, thread counts, server settings) and the
//! campaign's hooks, on real servers: the tests run in each combination, a swept setting
//! is in force during its tests (a session setting on an existing server, a restart on a
//! throwaway one), and every hook's status and output is stored with its test; a failing
//! hook fails that test only.

use std::collections::BTreeMap;
use std::path::Path;

use pgsurge_campaign::{run_campaign, Campaign, RunOptions};
use pgsurge_engine::StopFlag;
use pgsurge_server::testing::TestServer;
use pgsurge_store::{LoadedRun, RunFilter, Store};

fn quiet() -> RunOptions {
    RunOptions {
        quiet: true,
        new_set: true,
        ..Default::default()
    }
}

fn loaded_runs(store: &mut Store, set_id: i64) -> Vec<LoadedRun> {
    let runs = store
        .list_runs(&RunFilter {
            set_id: Some(set_id),
            ..Default::default()
        })
        .unwrap();
    runs.iter().map(|r| store.load_run(r.id).unwrap()).collect()
}

fn fact<'a>(run: &'a LoadedRun, name: &str) -> Option<&'a str> {
    run.facts
        .iter()
        .find(|f| f.name == name)
        .and_then(|f| f.value.as_deref())
}

#[test]
fn modes_threads_and_session_settings_with_hooks_on_an_existing_server() {
    let srv = TestServer::shared();
    let db = srv.create_database("matrix_hooks");
    srv.psql(&db, "CREATE TABLE seen (work_mem text, client int)");
    let dir = pgsurge_testkit::scratch_dir("matrix-hooks");
    let d = dir.path().display();
    std::fs::write(
        dir.path().join("seen.sql"),
        "INSERT INTO seen VALUES (current_setting('work_mem'), :client_id);\n",
    )
    .unwrap();
    let text = format!(
        r#"
[campaign]
name = "dims"
shuffle = false

[[target]]
name = "existing"
conninfo = "{conninfo}"

[matrix]
scales = [1]
clients = [2]
scripts = [{{ file = "seen.sql" }}]
query_modes = ["simple", "prepared"]
threads = [1, 2]
settings = {{ work_mem = ["1MB", "8MB"] }}

[run]
transactions = 5

[hygiene]
vacuum = false
checkpoint = false

[hooks]
set_start = "echo started >> {d}/set_start.log"
before_test = """
echo "$PGSURGE_TEST_KEY $PGDATABASE $PGSURGE_CLIENTS" >> {d}/before.log
case $PGSURGE_TEST_KEY in */Mprepared/j2/work_mem=8MB/*) echo refusing this one; exit 5;; esac
"""
after_test = "echo after $PGSURGE_TEST_KEY"
timeout = "30s"
"#,
        conninfo = srv.conninfo(&db)
    );
    let campaign = Campaign::parse(&text, "dims.toml", dir.path()).unwrap();
    let mut store = Store::open(":memory:").unwrap();
    let out = run_campaign(&campaign, &mut store, &quiet(), &StopFlag::new()).unwrap();
    assert_eq!(out.planned, 8);
    assert_eq!((out.ok, out.failed), (7, 1), "{out:?}");

    let runs = loaded_runs(&mut store, out.set_id);
    assert_eq!(runs.len(), 8);
    let mut cells = BTreeMap::new();
    for r in &runs {
        let rec = &r.run.record;
        let key = &rec.test_key;
        // The stored columns agree with the key's dimensions.
        let mode = rec.query_mode.as_deref().unwrap();
        let threads = rec.threads.unwrap();
        assert!(
            key.contains(&format!("/M{mode}/j{threads}/work_mem=")),
            "{key}"
        );
        let setting = rec.options.as_ref().unwrap()["settings"]["work_mem"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(key.ends_with(&format!("/work_mem={setting}/1")), "{key}");
        cells.insert((mode.to_string(), threads, setting), rec.status.clone());
        // Every test carries the set_start and before_test results.
        assert_eq!(fact(r, "hook.set_start.exit"), Some("0"), "{key}");
        if key.contains("/Mprepared/j2/work_mem=8MB/") {
            assert_eq!(rec.status, "failed");
            assert_eq!(
                rec.error.as_deref(),
                Some("before_test hook exited with status 5: refusing this one")
            );
            assert_eq!(fact(r, "hook.before_test.exit"), Some("5"));
            assert_eq!(fact(r, "hook.after_test.exit"), None, "not run: no test");
        } else {
            assert_eq!(rec.status, "ok", "{key}: {:?}", rec.error);
            assert_eq!(fact(r, "hook.before_test.exit"), Some("0"));
            assert_eq!(fact(r, "hook.after_test.exit"), Some("0"));
            assert_eq!(
                fact(r, "hook.after_test.output"),
                Some(format!("after {key}\n").as_str())
            );
        }
    }
    assert_eq!(cells.len(), 8, "every combination once: {cells:?}");

    // set_start ran once; before_test once per test, with the test in its environment.
    let started = std::fs::read_to_string(dir.path().join("set_start.log")).unwrap();
    assert_eq!(started, "started\n");
    let before = std::fs::read_to_string(dir.path().join("before.log")).unwrap();
    assert_eq!(before.lines().count(), 8, "{before}");
    assert!(
        before.lines().all(|l| l.ends_with(&format!(" {db} 2"))),
        "{before}"
    );

    // Each value was in force in its tests' sessions: 4 tests of 1MB, 3 that ran of 8MB,
    // 2 clients × 5 transactions each.
    let counts = srv.psql(
        &db,
        "SELECT work_mem, count(*) FROM seen GROUP BY 1 ORDER BY 1",
    );
    assert_eq!(counts.trim(), "1MB|40\n8MB|30");
}

#[test]
fn a_setting_a_session_cannot_change_is_refused_on_an_existing_server() {
    let srv = TestServer::shared();
    let db = srv.create_database("matrix_postmaster");
    let text = format!(
        r#"
[campaign]
name = "sb"

[[target]]
name = "existing"
conninfo = "{}"

[matrix]
scales = [1]
clients = [1]
scripts = ["select-only"]
settings = {{ shared_buffers = ["16MB"] }}

[run]
transactions = 2
"#,
        srv.conninfo(&db)
    );
    let campaign = Campaign::parse(&text, "sb.toml", Path::new(".")).unwrap();
    let mut store = Store::open(":memory:").unwrap();
    let out = run_campaign(&campaign, &mut store, &quiet(), &StopFlag::new()).unwrap();
    assert_eq!((out.ok, out.failed), (0, 1), "{out:?}");
    let runs = loaded_runs(&mut store, out.set_id);
    let error = runs[0].run.record.error.as_deref().unwrap();
    assert!(
        error.contains("setting shared_buffers cannot be swept on the existing server")
            && error.contains("context postmaster"),
        "{error}"
    );
}

#[test]
fn a_throwaway_server_restarts_with_each_value() {
    let text = r#"
[campaign]
name = "sweep"

[[target]]
name = "local"
settings = { track_io_timing = "on" }

[matrix]
scales = [1]
clients = [1]
scripts = ["select-only"]
settings = { shared_buffers = ["16MB", "24MB"] }

[run]
transactions = 3

[hygiene]
vacuum = false
"#;
    let campaign = Campaign::parse(text, "sweep.toml", Path::new(".")).unwrap();
    let mut store = Store::open(":memory:").unwrap();
    let out = run_campaign(&campaign, &mut store, &quiet(), &StopFlag::new()).unwrap();
    assert_eq!((out.ok, out.failed), (2, 0), "{out:?}");
    let runs = loaded_runs(&mut store, out.set_id);
    let mut seen = Vec::new();
    for r in &runs {
        let setting = |name: &str| {
            r.settings
                .iter()
                .find(|s| s.name == name)
                .and_then(|s| s.setting.clone())
        };
        // shared_buffers is kept in 8 kB pages; the target's own setting stays.
        seen.push((r.run.record.test_key.clone(), setting("shared_buffers")));
        assert_eq!(setting("track_io_timing").as_deref(), Some("on"));
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            (
                "local/s1/select-only/c1/r-/shared_buffers=16MB/1".to_string(),
                Some("2048".to_string())
            ),
            (
                "local/s1/select-only/c1/r-/shared_buffers=24MB/1".to_string(),
                Some("3072".to_string())
            ),
        ]
    );
}

/// A `sleep` duration no other process has: its argument finds its processes.
fn marker() -> String {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    format!("26.{}{n:03}", std::process::id())
}

/// Live (not zombie) processes with `marker` as an argument, from /proc.
fn alive_with(marker: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let has = cmdline.split(|&b| b == 0).any(|a| a == marker.as_bytes());
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X']));
        if has && !zombie {
            found.push(pid);
        }
    }
    found
}

#[test]
fn what_a_hook_leaves_running_is_killed_and_stored() {
    let srv = TestServer::shared();
    let db = srv.create_database("hook_leftovers");
    let (m1, m2) = (marker(), marker());
    // A pattern that finds m1 in /proc but not in the grep looking for it.
    let m1_pattern = m1.replacen('.', "[.]", 1);
    let text = format!(
        r#"
[campaign]
name = "leftovers"

[[target]]
name = "existing"
conninfo = "{conninfo}"

[matrix]
scales = [1]
clients = [1]
scripts = ["select-only"]

[run]
transactions = 2

[hygiene]
vacuum = false
checkpoint = false

[hooks]
before_test = "sleep {m1} & echo started"
after_test = """
if grep -qs '{m1_pattern}' /proc/[0-9]*/cmdline; then echo before_test-child-still-running; fi
setsid sleep {m2} &
echo "$PGPORT $PGDATABASE ${{PGSURGE_TEST_KEY}}"
"""
timeout = "20s"
"#,
        conninfo = srv.conninfo(&db)
    );
    let campaign = Campaign::parse(&text, "leftovers.toml", Path::new(".")).unwrap();
    let mut store = Store::open(":memory:").unwrap();
    let out = run_campaign(&campaign, &mut store, &quiet(), &StopFlag::new()).unwrap();
    assert_eq!((out.ok, out.failed), (1, 0), "{out:?}");
    let runs = loaded_runs(&mut store, out.set_id);
    let r = &runs[0];
    let key = &r.run.record.test_key;
    // The hook's shell expanded the test's variables, not the launching shell's; the
    // before_test hook's child was gone before after_test ran.
    let port = pgsurge_wire::ConnConfig::parse(&srv.conninfo(&db))
        .unwrap()
        .port();
    assert_eq!(
        fact(r, "hook.after_test.output"),
        Some(format!("{port} {db} {key}\n").as_str())
    );
    assert_eq!(fact(r, "hook.before_test.output"), Some("started\n"));
    assert_eq!(fact(r, "hook.before_test.killed"), Some("1"));
    assert_eq!(fact(r, "hook.after_test.killed"), Some("1"));
    let leftovers: Vec<&str> = r
        .warnings
        .iter()
        .filter(|w| w.code == "hook_leftover")
        .map(|w| w.message.as_str())
        .collect();
    assert_eq!(leftovers.len(), 2, "{:?}", r.warnings);
    assert!(
        leftovers[0].starts_with("before_test hook left 1 process running (sleep (pid "),
        "{leftovers:?}"
    );
    // Killed as soon as the hook's shell ended: maybe before `setsid` ran `sleep`.
    assert!(
        leftovers[1].starts_with("after_test hook left 1 process running ("),
        "{leftovers:?}"
    );
    assert_eq!(alive_with(&m1), Vec::<i32>::new());
    assert_eq!(alive_with(&m2), Vec::<i32>::new());
}

#[test]
fn a_hook_past_its_timeout_fails_its_test_with_the_configured_timeout() {
    let srv = TestServer::shared();
    let db = srv.create_database("hook_timeout");
    let m = marker();
    let text = format!(
        r#"
[campaign]
name = "slow-hook"

[[target]]
name = "existing"
conninfo = "{conninfo}"

[matrix]
scales = [1]
clients = [1]
scripts = ["select-only"]

[run]
transactions = 2

[hygiene]
vacuum = false
checkpoint = false

[hooks]
before_test = "setsid sleep {m} & echo waiting; sleep 30"
# Time for the shell to start its child and print, on a busy machine too.
timeout = "5s"
"#,
        conninfo = srv.conninfo(&db)
    );
    let campaign = Campaign::parse(&text, "slow.toml", Path::new(".")).unwrap();
    let mut store = Store::open(":memory:").unwrap();
    let started = std::time::Instant::now();
    let out = run_campaign(&campaign, &mut store, &quiet(), &StopFlag::new()).unwrap();
    // Killed at its timeout, not at the end of its sleep.
    assert!(started.elapsed() < std::time::Duration::from_secs(25));
    assert_eq!((out.ok, out.failed), (0, 1), "{out:?}");
    let runs = loaded_runs(&mut store, out.set_id);
    let r = &runs[0];
    assert_eq!(
        r.run.record.error.as_deref(),
        Some("before_test hook ran past its timeout of 5 s and was killed: waiting")
    );
    assert_eq!(fact(r, "hook.before_test.exit"), Some("timeout"));
    assert_eq!(fact(r, "hook.before_test.killed"), Some("1"));
    assert!(
        r.warnings.iter().any(|w| w.code == "hook_leftover"
            && w.message
                .ends_with("killed when the hook was killed at its timeout")),
        "{:?}",
        r.warnings
    );
    assert_eq!(alive_with(&m), Vec::<i32>::new());
}

#[test]
fn a_swept_value_the_server_rejects_fails_only_its_tests() {
    let text = r#"
[campaign]
name = "banana"
shuffle = false

[[target]]
name = "local"

[matrix]
scales = [1]
clients = [1]
scripts = ["select-only"]
repeats = 2
settings = { shared_buffers = ["banana", "16MB"] }

[run]
transactions = 2

[hygiene]
vacuum = false
checkpoint = false
"#;
    let campaign = Campaign::parse(text, "banana.toml", Path::new(".")).unwrap();
    let mut store = Store::open(":memory:").unwrap();
    let out = run_campaign(&campaign, &mut store, &quiet(), &StopFlag::new()).unwrap();
    assert_eq!((out.ok, out.failed, out.remaining), (2, 2, 0), "{out:?}");
    let runs = loaded_runs(&mut store, out.set_id);
    assert_eq!(runs.len(), 4);
    for r in &runs {
        let rec = &r.run.record;
        if rec.test_key.contains("/shared_buffers=banana/") {
            assert_eq!(rec.status, "failed", "{}", rec.test_key);
            let error = rec.error.as_deref().unwrap_or("");
            assert!(
                error.starts_with("target \"local\" did not start with shared_buffers=banana: ")
                    && error.contains("invalid value for parameter \"shared_buffers\": \"banana\""),
                "{error}"
            );
            assert_eq!(
                rec.options.as_ref().unwrap()["settings"]["shared_buffers"],
                "banana"
            );
        } else {
            assert_eq!(rec.status, "ok", "{}: {:?}", rec.test_key, rec.error);
        }
    }
}
