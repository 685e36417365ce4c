//! Store tests on SQLite: round trip of every table, resume queries, duplicate
//! detection, atomicity, migration from schema version 1.

mod common;

use pgsurge_store::{Store, StoreError, SCHEMA_VERSION};

#[test]
fn memory_store_round_trips_a_full_run() {
    let mut store = Store::open(":memory:").unwrap();
    common::round_trip(&mut store);
}

#[test]
fn file_store_round_trips_and_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
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
fn store_in_missing_directory_is_a_clear_error() {
    let err = Store::open("/nonexistent-dir-xyz/results.db").unwrap_err();
    assert!(
        matches!(err, StoreError::BadLocation(ref m) if m.contains("does not exist")),
        "{err}"
    );
}

#[test]
fn newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
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
    let dir = tempfile::tempdir().unwrap();
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
