//! Store tests on SQLite: round trip of every table, resume queries, duplicate
//! detection, atomicity, migration from schema version 1.

use crate::common;

use pgsurge_store::{Store, StoreError, SCHEMA_VERSION};

#[test]
fn memory_store_round_trips_a_full_run() {
    let mut store = Store::open(":memory:").unwrap();
    common::round_trip(&mut store);
}

#[test]
fn file_store_round_trips_and_survives_reopen() {
    let dir = pgsurge_testkit::scratch_dir("sqlite");
    let path = dir.path().join("results.db");
    let path = path.to_str().unwrap();
    let run_id = {
        let mut store = Store::open(path).unwrap();
        common::round_trip(&mut store)
    };
    let mut store = Store::open(path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let loaded = store.load_run(run_id).unwrap();
    assert_eq!(loaded.intervals.len(), 3);
}

#[test]
fn duplicate_test_is_refused_and_leaves_nothing_half_written() {
    let mut store = Store::open(":memory:").unwrap();
    common::duplicate_and_atomicity(&mut store);
}

#[test]
fn live_events_are_kept_read_after_an_id_and_forgotten() {
    let mut store = Store::open(":memory:").unwrap();
    common::live_events(&mut store);
}

#[test]
fn writes_in_all_or_nothing_are_kept_together_or_not_at_all() {
    let mut store = Store::open(":memory:").unwrap();
    common::all_or_nothing(&mut store);
}

#[test]
fn store_in_missing_directory_is_a_clear_error() {
    let err = Store::open("/nonexistent-dir-xyz/results.db").unwrap_err();
    assert!(
        matches!(err, StoreError::BadLocation(ref m) if m.contains("does not exist")),
        "{err}"
    );
}

#[test]
fn newer_schema_is_refused() {
    let dir = pgsurge_testkit::scratch_dir("sqlite");
    let path = dir.path().join("new.db");
    let conn = rusqlite_conn(path.to_str().unwrap());
    conn.execute_batch(&format!("PRAGMA user_version = {}", SCHEMA_VERSION + 5))
        .unwrap();
    drop(conn);
    let err = Store::open(path.to_str().unwrap()).unwrap_err();
    assert!(matches!(err, StoreError::TooNew { .. }), "{err}");
}

#[test]
fn migrates_a_version_1_store_and_keeps_its_data() {
    let dir = pgsurge_testkit::scratch_dir("sqlite");
    let path = dir.path().join("v1.db");
    let path = path.to_str().unwrap();
    let run_id = {
        let mut v1 = Store::open_at_version(path, 1).unwrap();
        assert_eq!(v1.schema_version().unwrap(), 1);
        common::write_sample(&mut v1)
    };
    // Version 1 has none of version 2's indexes nor version 3's table.
    let count = |path: &str, kind: &str, name: &str| -> i64 {
        rusqlite_conn(path)
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = ?1 AND name = ?2",
                [kind, name],
                |r| r.get(0),
            )
            .unwrap()
    };
    assert_eq!(count(path, "index", "runs_target"), 0);
    assert_eq!(count(path, "table", "run_interval_histograms"), 0);
    let mut store = Store::open(path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    const { assert!(SCHEMA_VERSION >= 3) };
    assert_eq!(count(path, "index", "runs_target"), 1);
    assert_eq!(count(path, "table", "run_interval_histograms"), 1);
    let loaded = store.load_run(run_id).unwrap();
    assert_eq!(loaded.run.record.test_key, "t1");
    assert_eq!(loaded.metrics.len(), 4);
    common::check_migrated(&mut store, run_id);
}

fn rusqlite_conn(path: &str) -> rusqlite::Connection {
    rusqlite::Connection::open(path).unwrap()
}

#[test]
fn new_store_opened_by_many_at_once_is_created_once() {
    for round in 0..5 {
        let dir = pgsurge_testkit::scratch_dir("sqlite");
        let path = dir.path().join(format!("race{round}.db"));
        common::concurrent_first_open(path.to_str().unwrap());
    }
}

#[test]
fn one_writer_per_set_on_sqlite() {
    let dir = pgsurge_testkit::scratch_dir("sqlite");
    let path = dir.path().join("locks.db");
    common::set_locks(path.to_str().unwrap());
}

#[test]
fn foreign_sqlite_file_is_refused_and_left_as_it_was() {
    let dir = pgsurge_testkit::scratch_dir("sqlite");
    let path = dir.path().join("other.db");
    let p = path.to_str().unwrap();
    {
        let c = rusqlite_conn(p);
        c.execute_batch("CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('mine');")
            .unwrap();
    }
    let mode = || -> String {
        rusqlite_conn(p)
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(mode(), "delete");
    for err in [
        Store::open(p).unwrap_err(),
        Store::open_read_only(p).unwrap_err(),
    ] {
        assert!(
            err.to_string().contains("not a pgsurge results store"),
            "{err}"
        );
    }
    assert_eq!(mode(), "delete", "the foreign file was switched to WAL");
    assert_eq!(
        rusqlite_conn(p)
            .query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
            .unwrap(),
        0
    );
}

#[test]
fn tables_without_a_schema_version_are_refused_in_one_line() {
    let dir = pgsurge_testkit::scratch_dir("sqlite");
    let path = dir.path().join("unversioned.db");
    let p = path.to_str().unwrap();
    rusqlite_conn(p)
        .execute_batch("CREATE TABLE sets (id INT); CREATE TABLE runs (id INT);")
        .unwrap();
    for err in [
        Store::check_writable(p).unwrap_err(),
        Store::open(p).unwrap_err(),
        Store::open_read_only(p).unwrap_err(),
    ] {
        let text = err.to_string();
        assert!(
            text.contains("no pgsurge schema version, but tables: runs, sets"),
            "{text}"
        );
        assert_eq!(text.lines().count(), 1, "{text}");
    }
    let tables: i64 = rusqlite_conn(p)
        .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
        .unwrap();
    assert_eq!(tables, 2);
}

/// A tmpfs mounted for the test, unmounted on drop (also when the test fails).
struct Mount(std::path::PathBuf);

impl Mount {
    fn tmpfs(dir: &std::path::Path) -> Mount {
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=8m", "tmpfs"])
            .arg(dir)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(
            ok,
            "this test mounts a tmpfs (needs root, as CI runs): mount failed on {}",
            dir.display()
        );
        Mount(dir.to_path_buf())
    }

    fn read_only(&self) {
        let ok = std::process::Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(&self.0)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(ok, "remount read-only failed");
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn store_on_read_only_media_is_read_without_change() {
    let dir = pgsurge_testkit::scratch_dir("sqlite");
    let mnt = Mount::tmpfs(dir.path());
    let path = dir.path().join("results.db");
    let p = path.to_str().unwrap().to_string();
    let run_id = {
        let mut s = Store::open(&p).unwrap();
        common::write_sample(&mut s)
    };
    // The writer closed: WAL checkpointed, -wal and -shm removed.
    mnt.read_only();
    assert!(
        std::fs::write(dir.path().join("probe"), b"x").is_err(),
        "the mount is not read-only"
    );
    let before = std::fs::read(&path).unwrap();
    let mut s = Store::open_read_only(&p).unwrap();
    assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(s.load_run(run_id).unwrap().run.record.test_key, "t1");
    assert_eq!(s.list_sets().unwrap().len(), 1);
    drop(s);
    assert_eq!(std::fs::read(&path).unwrap(), before);
    // The writer's open is still an error, not a hang or a panic.
    assert!(Store::open(&p).is_err());
}

#[test]
fn read_only_open_changes_nothing_in_a_writable_store() {
    let dir = pgsurge_testkit::scratch_dir("sqlite");
    let path = dir.path().join("v1.db");
    let p = path.to_str().unwrap();
    {
        let mut v1 = Store::open_at_version(p, 1).unwrap();
        common::write_sample(&mut v1);
    }
    let mut s = Store::open_read_only(p).unwrap();
    // An old store is read as it is, not migrated.
    assert_eq!(s.schema_version().unwrap(), 1);
    assert_eq!(s.list_sets().unwrap().len(), 1);
    assert!(
        s.create_set(&common::sample_set()).is_err(),
        "a read-only store accepted a write"
    );
    drop(s);
    assert_eq!(
        rusqlite_conn(p)
            .query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
            .unwrap(),
        1
    );
    assert!(Store::open_read_only(dir.path().join("missing.db").to_str().unwrap()).is_err());
}

#[test]
fn credentials_in_settings_targets_and_environment_are_stored_masked() {
    use pgsurge_store::{SettingRecord, TargetRecord};
    let mut store = Store::open(":memory:").unwrap();
    let set_id = store.create_set(&common::sample_set()).unwrap();
    let target_id = store
        .upsert_target(&TargetRecord {
            set_id,
            name: "replica".into(),
            kind: "conninfo".into(),
            conninfo: Some("host=db user=u password=Tgt-s3cret".into()),
            settings: Some(serde_json::json!({
                "restore_command": "curl -s https://wal:Rc-s3cret@store.example/%f -o %p",
                "primary_conninfo": "host=primary user=rep password=Pc-s3cret",
            })),
            ..Default::default()
        })
        .unwrap();
    let mut run = common::sample_run(set_id, Some(target_id), "masked");
    run.settings = vec![
        SettingRecord {
            name: "primary_conninfo".into(),
            setting: Some("host=primary user=rep password=Pc-s3cret".into()),
            ..Default::default()
        },
        SettingRecord {
            name: "archive_command".into(),
            setting: Some("curl -T %p https://wal:Ac-s3cret@store.example/%f".into()),
            boot_val: Some("postgresql://u:Bv-s3cret@h/db".into()),
            ..Default::default()
        },
    ];
    run.environment = Some(serde_json::json!({
        "settings": {"restore_command": "wget https://u:Env-s3cret@h/x"},
        "db_password": "Key-s3cret",
        "hosts": ["postgres://a:List-s3cret@h"],
    }));
    run.run.options = Some(serde_json::json!({
        "clients": 4,
        "settings": {"primary_conninfo": "host=p password=Opt-s3cret"},
    }));
    run.run.error = Some("connection to \"host=h password=Err-s3cret\" failed".into());
    run.run.result_json = Some(serde_json::json!({
        "command_line": "pgbench 'postgresql://u:Res-s3cret@h/db'",
        "password": "Res2-s3cret",
    }));
    run.warnings = vec![pgsurge_store::WarningRecord {
        code: "hook".into(),
        message: "hook said PGPASSWORD=x password=Warn-s3cret".into(),
        ..Default::default()
    }];
    let run_id = store.write_run(&run).unwrap();
    let loaded = store.load_run(run_id).unwrap();
    let everything = format!(
        "{:?} {:?} {:?} {:?} {:?} {:?} {:?}",
        loaded.run.record.options,
        loaded.run.record.error,
        loaded.run.record.result_json,
        loaded.settings,
        loaded.environment,
        store.targets(set_id).unwrap(),
        loaded.warnings
    );
    assert!(
        everything.contains("connection to") && everything.contains("hook said"),
        "{everything}"
    );
    assert!(!everything.contains("s3cret"), "{everything}");
    // What is not a secret is kept.
    assert!(
        everything.contains("https://wal:********@store.example/%f"),
        "{everything}"
    );
    assert!(
        everything.contains("host=primary user=rep password=********"),
        "{everything}"
    );
}

/// Two stores open on one file (a campaign's runner and its event writer): a write
/// transaction that has read and then writes after the other committed must not fail
/// with "database is locked" — the other waits for it instead.
#[test]
fn a_write_transaction_that_reads_first_is_not_refused_by_another_connections_commit() {
    let dir = pgsurge_testkit::scratch_dir("sqlite");
    let path = dir.path().join("two.db").display().to_string();
    let mut first = Store::open(&path).unwrap();
    let set_id = first.create_set(&common::sample_set()).unwrap();
    let mut second = Store::open(&path).unwrap();
    let outcome = first
        .all_or_nothing(|s| {
            s.list_runs(&pgsurge_store::RunFilter::default())?;
            // The other connection writes while this transaction is open, between its
            // read and its write; it either commits now (a deferred transaction) or
            // waits for this one's lock.
            let other = std::thread::spawn(move || {
                second.write_run(&common::sample_run(set_id, None, "other"))
            });
            std::thread::sleep(std::time::Duration::from_millis(500));
            let mine = s.write_run(&common::sample_run(set_id, None, "mine"));
            Ok::<_, StoreError>((mine, other))
        })
        .unwrap()
        .unwrap();
    let (mine, other) = outcome;
    mine.expect("the transaction's own write");
    other.join().unwrap().expect("the other connection's write");
    assert_eq!(first.stored_tests(set_id).unwrap().len(), 2);
}
