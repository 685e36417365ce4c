//! Store tests on PostgreSQL (the shared fixture server): the same bodies as on SQLite,
//! plus migration from schema version 1.

use crate::common;

use pgsurge_server::testing::TestServer;
use pgsurge_store::{Dialect, Store, SCHEMA_VERSION};

fn fresh_store_location(prefix: &str) -> String {
    let srv = TestServer::shared();
    let db = srv.create_database(prefix);
    srv.conninfo(&db)
}

#[test]
fn postgres_store_round_trips_a_full_run() {
    let location = fresh_store_location("store_rt");
    let mut store = Store::open(&location).unwrap();
    assert_eq!(store.dialect(), Dialect::Postgres);
    let run_id = common::round_trip(&mut store);
    drop(store);
    // Reopening finds the schema in place and the data intact.
    let mut store = Store::open(&location).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(store.load_run(run_id).unwrap().intervals.len(), 3);
}

#[test]
fn postgres_store_refuses_duplicates_atomically() {
    let mut store = Store::open(&fresh_store_location("store_dup")).unwrap();
    common::duplicate_and_atomicity(&mut store);
}

#[test]
fn postgres_store_keeps_live_events() {
    let mut store = Store::open(&fresh_store_location("store_live")).unwrap();
    common::live_events(&mut store);
}

#[test]
fn postgres_store_keeps_all_or_nothing_writes_together() {
    let mut store = Store::open(&fresh_store_location("store_aon")).unwrap();
    common::all_or_nothing(&mut store);
}

#[test]
fn postgres_store_migrates_from_version_1() {
    let srv = TestServer::shared();
    let db = srv.create_database("store_mig");
    let location = srv.conninfo(&db);
    let run_id = {
        let mut v1 = Store::open_at_version(&location, 1).unwrap();
        assert_eq!(v1.schema_version().unwrap(), 1);
        common::write_sample(&mut v1)
    };
    let index_sql = "SELECT count(*) FROM pg_indexes WHERE indexname = 'runs_target'";
    let table_sql = "SELECT count(*) FROM pg_tables WHERE tablename = 'run_interval_histograms'";
    assert_eq!(srv.psql(&db, index_sql).trim(), "0");
    assert_eq!(srv.psql(&db, table_sql).trim(), "0");
    let mut store = Store::open(&location).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    const { assert!(SCHEMA_VERSION >= 3) };
    assert_eq!(srv.psql(&db, index_sql).trim(), "1");
    assert_eq!(srv.psql(&db, table_sql).trim(), "1");
    let loaded = store.load_run(run_id).unwrap();
    assert_eq!(loaded.metrics.len(), 4);
    common::check_migrated(&mut store, run_id);
}

#[test]
fn unreachable_postgres_store_is_a_clear_error() {
    let err = Store::open("postgresql://127.0.0.1:1/nodb?connect_timeout=2").unwrap_err();
    assert!(err.to_string().contains("connecting to the store"), "{err}");
}

#[test]
fn postgres_new_store_opened_by_many_at_once_is_created_once() {
    for _ in 0..3 {
        common::concurrent_first_open(&fresh_store_location("store_race"));
    }
}

#[test]
fn one_writer_per_set_on_postgres() {
    common::set_locks(&fresh_store_location("store_locks"));
}

#[test]
fn postgres_store_read_only_open_does_not_write() {
    let location = fresh_store_location("store_ro");
    let run_id = {
        let mut s = Store::open(&location).unwrap();
        common::write_sample(&mut s)
    };
    let mut s = Store::open_read_only(&location).unwrap();
    assert_eq!(s.load_run(run_id).unwrap().run.record.test_key, "t1");
    assert!(s.create_set(&common::sample_set()).is_err());
    // An empty database is not a store, and reading it creates nothing.
    let empty = fresh_store_location("store_ro_empty");
    assert!(Store::open_read_only(&empty).is_err());
    let srv = TestServer::shared();
    let db = empty.rsplit("dbname=").next().unwrap().trim().to_string();
    assert_eq!(
        srv.psql(
            &db,
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        )
        .trim(),
        "0"
    );
}

#[test]
fn postgres_database_of_another_program_is_refused_and_left_as_it_was() {
    let srv = TestServer::shared();
    let db = srv.create_database("store_foreign");
    srv.psql(&db, "CREATE TABLE customers (id int)");
    let location = srv.conninfo(&db);
    for err in [
        Store::check_writable(&location).unwrap_err(),
        Store::open(&location).unwrap_err(),
        Store::open_read_only(&location).unwrap_err(),
    ] {
        let text = err.to_string();
        assert!(
            text.contains(
                "not a pgsurge results store (no pgsurge schema version, but tables: customers)"
            ),
            "{text}"
        );
        assert_eq!(text.lines().count(), 1, "{text}");
    }
    let tables = "SELECT string_agg(tablename, ',') FROM pg_tables WHERE schemaname = 'public'";
    assert_eq!(srv.psql(&db, tables).trim(), "customers");
    // A new database and a store this build knows pass the check.
    let fresh = fresh_store_location("store_check");
    Store::check_writable(&fresh).unwrap();
    drop(Store::open(&fresh).unwrap());
    Store::check_writable(&fresh).unwrap();
}
