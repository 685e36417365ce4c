//! COPY FREEZE is used where pgbench 18 uses it (server 14+, the COPY target is
//! an ordinary table): the loaded pages are all-frozen right after `-I dtg`,
//! without any vacuum. A partitioned `pgbench_accounts` is loaded without it.

use crate::common::*;
use pgsurge_init::InitSpec;
use pgsurge_server::testing::TestServer;

/// All-frozen pages of `table` (visibility map) and its total page count.
fn visibility(srv: &TestServer, db: &str, table: &str) -> (i64, i64) {
    let row = srv.psql(
        db,
        &format!(
            "select all_frozen, pg_relation_size('{table}') / current_setting('block_size')::int \
             from pg_visibility_map_summary('{table}')"
        ),
    );
    let mut it = row
        .trim()
        .split('|')
        .map(|v| v.parse::<i64>().expect("number"));
    (it.next().expect("all_frozen"), it.next().expect("pages"))
}

fn prepared_db(srv: &TestServer, name: &str) -> Option<String> {
    let db = srv.create_database(name);
    if srv.try_psql(&db, "create extension pg_visibility").is_err() {
        pgsurge_testkit::missing_prerequisite("the pg_visibility extension is not installed");
        return None;
    }
    Some(db)
}

#[test]
fn unpartitioned_tables_are_copied_with_freeze() {
    let srv = TestServer::shared();
    if srv.version_num() < 140000 {
        pgsurge_testkit::missing_prerequisite(
            "a PostgreSQL 14 or newer server (COPY FREEZE marks pages frozen only from 14 on)",
        );
        return;
    }
    let Some(db) = prepared_db(srv, "init_freeze") else {
        return;
    };
    let run = run_ours(
        srv,
        &db,
        None,
        &InitSpec {
            steps: "dtg".into(),
            ..InitSpec::default()
        },
    );
    assert!(run.ok, "{}", run.stderr);
    for table in ["pgbench_accounts", "pgbench_tellers", "pgbench_branches"] {
        let (frozen, pages) = visibility(srv, &db, table);
        assert!(pages > 0, "{table} has pages");
        assert_eq!(frozen, pages, "{table}: every page frozen by COPY FREEZE");
    }
}

#[test]
fn partitioned_accounts_are_copied_without_freeze() {
    let srv = TestServer::shared();
    let Some(db) = prepared_db(srv, "init_nofreeze") else {
        return;
    };
    let spec = InitSpec {
        steps: "dtg".into(),
        partitions: 2,
        ..InitSpec::default()
    };
    let run = run_ours(srv, &db, None, &spec);
    assert!(run.ok, "{}", run.stderr);
    let (frozen, pages) = visibility(srv, &db, "pgbench_accounts_1");
    assert!(pages > 0);
    assert_eq!(
        frozen, 0,
        "rows routed through the partitioned parent are not frozen"
    );
}
