//! `results import --from pgbench-tools`: a results database made from pgbench-tools'
//! own schema (the vendored `init/resultdb.sql`) and filled the way its `benchwarmer`
//! fills it, imported into a store: every test with its figures, metrics, settings,
//! per-second series and initialization facts; a NULL tps completed from the
//! test's `results.txt`; a second import adds nothing; the conninfo's password is in
//! no byte of the store; a renamed or missing column is refused by name; a failing
//! write leaves the store as it was; every row that cannot be imported is named.

use std::ffi::OsString;
use std::path::Path;

use pgsurge_records::pgbench_tools::{import, ImportOptions};
use pgsurge_server::testing::TestServer;
use pgsurge_store::{RunFilter, Store};

const SECRET: &str = "Pgbt-s3cret-pw";

fn schema_sql() -> String {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pgbench-tools/init/resultdb.sql");
    // The file drops a view without IF EXISTS inside its transaction, which only
    // succeeds on a database that already has it; a fresh database needs IF EXISTS.
    std::fs::read_to_string(path).unwrap().replace(
        "DROP VIEW test_metrics_decode;",
        "DROP VIEW IF EXISTS test_metrics_decode;",
    )
}

/// A results database holding one testset of server `db1`: an initialization test,
/// then select tests at 1 and 2 clients (one with tps NULL) and a rate-limited one.
fn results_database(srv: &TestServer, prefix: &str) -> String {
    let db = srv.create_database(prefix);
    let cfg = pgsurge_wire::ConnConfig::parse(&srv.conninfo(&db)).unwrap();
    let mut conn = pgsurge_wire::Connection::connect(&cfg).unwrap();
    conn.set_notice_handler(Box::new(|_| {}));
    conn.simple_query(&schema_sql()).unwrap();
    conn.simple_query(
        "INSERT INTO testset (server, info) VALUES ('db1', 'first trial');
         INSERT INTO tests (server, set, scale, dbsize, start_time, end_time, tps, script, clients,
                            workers, trans, conn_method, rate_limit, client_limit, multi)
           VALUES ('db1', 1, 1, 23000000, '2024-05-01 10:00:00', '2024-05-01 10:00:04', 0,
                   ':-i -I dtGvp', 1, 1, 0, 'host', NULL, 0, 0);
         INSERT INTO tests (server, set, scale, dbsize, start_time, end_time, tps, script, clients,
                            workers, trans, avg_latency, max_latency, percentile_90_latency,
                            wal_written, cleanup, rate_limit, client_limit, multi, conn_method,
                            server_mem_gb, server_cpu, server_os_release, uname, server_disk)
           VALUES
           ('db1', 1, 1, 23100000, '2024-05-01 10:01:00', '2024-05-01 10:01:05', 810.5, 'select',
            1, 1, 4052, 1.23, 9.5, 1.8, 120000, '2 seconds', NULL, 0, 0, 'host', 16,
            'Test CPU', 'Test OS 1', 'Linux', 'sda'),
           ('db1', 1, 1, 23100000, '2024-05-01 10:02:00', '2024-05-01 10:02:05', NULL, 'select',
            2, 2, NULL, NULL, 12.5, 2.9, 130000, NULL, NULL, 0, 0, 'host prepared', 16,
            'Test CPU', 'Test OS 1', 'Linux', 'sda'),
           ('db1', 1, 1, 23100000, '2024-05-01 10:03:00', '2024-05-01 10:03:05', 99.8, 'tpc-b',
            2, 2, 499, 3.1, 20.0, 4.2, 900000, NULL, 100, 50, 0, 'host', 16,
            'Test CPU', 'Test OS 1', 'Linux', 'sda');
         INSERT INTO test_bgwriter (server, test, checkpoints_timed, checkpoints_req,
                                    buffers_checkpoint, buffers_clean, maxwritten_clean,
                                    buffers_backend, buffers_alloc, buffers_backend_fsync, max_dirty)
           VALUES ('db1', 2, 0, 1, 40, 3, 0, 7, 120, 0, 4096);
         INSERT INTO test_stat_database (server, test, collected, xact_commit, xact_rollback,
                                         blks_read, blks_hit)
           VALUES ('db1', 2, '2024-05-01 10:01:05', 4060, 1, 10, 50000);
         INSERT INTO test_statio (server, test, collected, nspname, tablename, indexname, size,
                                  rel_blks_read, rel_blks_hit)
           VALUES ('db1', 2, '2024-05-01 10:01:05', 'public', 'pgbench_accounts', NULL,
                   13000000, 5, 8000);
         INSERT INTO test_settings (server, test, name, setting, unit, source, boot_val)
           VALUES ('db1', 2, 'shared_buffers', '16384', '8kB', 'configuration file', '1024'),
                  ('db1', 2, 'work_mem', '4096', 'kB', 'default', '4096');
         INSERT INTO timing (ts, filenum, latency, test, server, schedule_lag)
           VALUES ('2024-05-01 10:01:00.2', 0, 1.0, 2, 'db1', 0),
                  ('2024-05-01 10:01:00.7', 0, 3.0, 2, 'db1', 0),
                  ('2024-05-01 10:01:01.5', 0, 2.0, 2, 'db1', 0);
         INSERT INTO test_metrics_data (collected, value, metric, test, server)
           VALUES ('2024-05-01 10:01:01', 42.0, 'cpu_busy', 2, 'db1'),
                  ('2024-05-01 10:01:02', 43.0, 'cpu_busy', 2, 'db1');",
    )
    .unwrap();
    db
}

fn conninfo_with_password(srv: &TestServer, db: &str) -> String {
    format!("{} password={SECRET}", srv.conninfo(db))
}

fn run_cli(args: &[&str]) -> i32 {
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    pgsurge_records::results_main(&args)
}

#[test]
fn a_pgbench_tools_database_is_imported_once_with_every_figure_and_no_password() {
    let srv = TestServer::shared();
    let db = results_database(srv, "pgbt_import");
    let dir = pgsurge_testkit::scratch_dir("pgbt-import");
    let results = dir.path().join("results");
    let t3 = results.join("db1").join("3");
    std::fs::create_dir_all(&t3).unwrap();
    std::fs::write(
        t3.join("results.txt"),
        "pgbench (16.2)\ntransaction type: tests/select.sql\nscaling factor: 1\n\
         query mode: prepared\nnumber of clients: 2\nnumber of threads: 2\nduration: 5 s\n\
         number of transactions actually processed: 7010\nlatency average = 1.426 ms\n\
         tps = 1402.0 (without initial connection time)\n",
    )
    .unwrap();
    let store_path = dir.path().join("store.db");
    let store = store_path.to_str().unwrap();
    let conninfo = conninfo_with_password(srv, &db);
    let args = [
        "import",
        "--store",
        store,
        "--from",
        "pgbench-tools",
        "--results-dir",
        results.to_str().unwrap(),
        conninfo.as_str(),
    ];
    assert_eq!(run_cli(&args), 0);

    let mut s = Store::open(store).unwrap();
    let sets = s.list_sets().unwrap();
    assert_eq!(sets.len(), 1, "{sets:?}");
    assert_eq!(sets[0].record.name, "pgbench-tools-db1-set1");
    assert_eq!(sets[0].record.kind, "import");
    assert!(sets[0]
        .record
        .description
        .as_deref()
        .unwrap()
        .contains("first trial"));
    let runs = s
        .list_runs(&RunFilter {
            set_id: Some(sets[0].id),
            ..Default::default()
        })
        .unwrap();
    // The initialization test is not a run.
    assert_eq!(runs.len(), 3, "{runs:?}");
    let by_test = |n: i64| runs.iter().find(|r| r.record.seq == Some(n)).unwrap();

    let r2 = &by_test(2).record;
    assert_eq!(r2.script.as_deref(), Some("select-only"));
    assert_eq!(
        (r2.scale, r2.clients, r2.threads, r2.transactions),
        (Some(1), Some(1), Some(1), Some(4052))
    );
    assert_eq!(r2.tps, Some(810.5));
    assert_eq!(
        (r2.latency_mean_ms, r2.latency_p90_ms, r2.latency_max_ms),
        (Some(1.23), Some(1.8), Some(9.5))
    );
    assert_eq!(r2.duration_s, Some(5.0));
    assert_eq!(r2.wal_bytes, Some(120000));
    assert_eq!(r2.db_size_start, Some(23100000));
    assert_eq!(r2.cleanup_s, Some(2.0));
    assert_eq!(r2.query_mode.as_deref(), Some("simple"));
    assert_eq!(r2.rate, None);
    assert_eq!(r2.server_commits, Some(4060));

    let r3 = &by_test(3).record;
    assert_eq!(
        r3.tps,
        Some(1402.0),
        "tps NULL in the database, read from results.txt"
    );
    assert_eq!(r3.transactions, Some(7010));
    assert_eq!(r3.latency_mean_ms, Some(1.426));
    assert_eq!(r3.query_mode.as_deref(), Some("prepared"));

    let r4 = &by_test(4).record;
    assert_eq!(r4.script.as_deref(), Some("tpcb-like"));
    assert_eq!((r4.rate, r4.rate_per_client), (Some(100.0), Some(50.0)));

    let loaded = s.load_run(by_test(2).id).unwrap();
    let counter = |name: &str| {
        loaded
            .counters
            .iter()
            .find(|c| c.name == name)
            .and_then(|c| c.delta)
    };
    assert_eq!(counter("pg_stat_bgwriter.buffers_checkpoint"), Some(40.0));
    assert_eq!(counter("pg_stat_bgwriter.max_dirty"), Some(4096.0));
    assert_eq!(counter("pg_stat_database.blks_hit"), Some(50000.0));
    let metric = |name: &str| {
        loaded
            .metrics
            .iter()
            .filter(|m| m.metric == name)
            .map(|m| m.value)
            .collect::<Vec<_>>()
    };
    assert_eq!(metric("pgbench_tools.cpu_busy"), vec![42.0, 43.0]);
    assert_eq!(
        metric("pgbench_tools.statio.public.pgbench_accounts.rel_blks_hit"),
        vec![8000.0]
    );
    let settings: Vec<&str> = loaded.settings.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(settings, vec!["shared_buffers"]);
    let per_second: Vec<i64> = loaded.intervals.iter().map(|i| i.transactions).collect();
    assert_eq!(per_second, vec![2, 1]);
    let fact = |name: &str| {
        loaded
            .facts
            .iter()
            .find(|f| f.name == name)
            .and_then(|f| f.value.clone())
    };
    assert_eq!(fact("init_performed").as_deref(), Some("true"));
    assert_eq!(fact("init_method").as_deref(), Some("server"));
    assert_eq!(fact("init_duration_s").as_deref(), Some("4.000"));
    let target = loaded
        .target
        .expect("imported runs have the server as target");
    assert_eq!(target.record.name, "db1");
    let servers = s.servers().unwrap();
    assert_eq!(servers[0].record.cpu_model.as_deref(), Some("Test CPU"));
    assert_eq!(servers[0].record.memory_bytes, Some(16 << 30));
    drop(s);

    // A second import finds the set and stores nothing new.
    assert_eq!(run_cli(&args), 0);
    let mut s = Store::open(store).unwrap();
    assert_eq!(s.list_sets().unwrap().len(), 1);
    assert_eq!(s.list_runs(&RunFilter::default()).unwrap().len(), 3);
    drop(s);

    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let p = entry.unwrap().path();
        if p.is_file() {
            let bytes = std::fs::read(&p).unwrap();
            assert!(
                !bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()),
                "the password is in {}",
                p.display()
            );
        }
    }
}

#[test]
fn a_renamed_column_is_refused_naming_table_and_column() {
    let srv = TestServer::shared();
    let db = results_database(srv, "pgbt_renamed");
    srv.psql(
        &db,
        "ALTER TABLE tests RENAME COLUMN avg_latency TO latency_avg",
    );
    let dir = pgsurge_testkit::scratch_dir("pgbt-renamed");
    let mut store = Store::open(dir.path().join("s.db").to_str().unwrap()).unwrap();
    let e = import(
        &mut store,
        &ImportOptions {
            conninfo: conninfo_with_password(srv, &db),
            results_dir: None,
            name: "pgbench-tools".into(),
        },
    )
    .unwrap_err();
    assert!(
        e.contains("table tests has column latency_avg"),
        "unexpected error: {e}"
    );
    assert!(!e.contains(SECRET));
    assert!(store.list_sets().unwrap().is_empty());
}

fn options(srv: &TestServer, db: &str, results_dir: Option<&Path>) -> ImportOptions {
    ImportOptions {
        conninfo: srv.conninfo(db),
        results_dir: results_dir.map(Path::to_path_buf),
        name: "pgbench-tools".into(),
    }
}

#[test]
fn an_import_is_all_or_nothing_and_names_every_row_it_leaves_out() {
    let srv = TestServer::shared();
    let db = results_database(srv, "pgbt_partial");
    // tps as text, as a hand-made results table may hold it; then rows an import
    // cannot take: a test of a set with no testset row, a set with no tests, a tps
    // that is not a number, NaN, 1e300, a negative latency.
    srv.psql(
        &db,
        "ALTER TABLE tests ADD COLUMN tps_text text;
         UPDATE tests SET tps_text = tps::text;
         ALTER TABLE tests DROP COLUMN tps CASCADE;
         ALTER TABLE tests RENAME COLUMN tps_text TO tps;
         INSERT INTO testset (server, set, info) VALUES ('db1', 2, 'empty');
         INSERT INTO tests (server, set, scale, start_time, end_time, tps, script, clients,
                            workers, trans, avg_latency, conn_method)
           VALUES ('db1', 7, 1, '2024-05-01 11:00:00', '2024-05-01 11:00:05', '50', 'select',
                   1, 1, 250, 2.0, 'host'),
                  ('db1', 1, 1, '2024-05-01 11:01:00', '2024-05-01 11:01:05', '12abc', 'select',
                   1, 1, 250, 2.0, 'host'),
                  ('db1', 1, 1, '2024-05-01 11:02:00', '2024-05-01 11:02:05', 'NaN', 'select',
                   1, 1, 250, 2.0, 'host'),
                  ('db1', 1, 1, '2024-05-01 11:03:00', '2024-05-01 11:03:05', '1e300', 'select',
                   1, 1, 250, 2.0, 'host'),
                  ('db1', 1, 1, '2024-05-01 11:04:00', '2024-05-01 11:04:05', '40', 'select',
                   1, 1, 200, -3.0, 'host');",
    );
    // A results.txt that is not a pgbench report for test 3 (tps NULL in the database).
    let dir = pgsurge_testkit::scratch_dir("pgbt-partial");
    let results = dir.path().join("results");
    std::fs::create_dir_all(results.join("db1/3")).unwrap();
    std::fs::write(
        results.join("db1/3/results.txt"),
        "pgbench (16.2)\ntransaction type: tests/select.sql\nscaling factor: 1\n\
         query mode: simple\nnumber of clients: 2\nnumber of threads: 2\nduration: 5 s\n\
         number of transactions actually processed: -5\nlatency average = 1.4 ms\n\
         tps = 1402.0 (without initial connection time)\n",
    )
    .unwrap();

    // The store is PostgreSQL with a trigger that fails the write of test 4, after the
    // set, its target and test 2 are written: the whole import is rolled back.
    let store_db = srv.create_database("pgbt_partial_store");
    let mut store = Store::open(&srv.conninfo(&store_db)).unwrap();
    srv.psql(
        &store_db,
        "CREATE FUNCTION refuse_test_4() RETURNS trigger LANGUAGE plpgsql AS
           $$BEGIN IF NEW.seq = 4 THEN RAISE EXCEPTION 'test 4 refused'; END IF;
           RETURN NEW; END$$;
         CREATE TRIGGER refuse_test_4 BEFORE INSERT ON runs
           FOR EACH ROW EXECUTE FUNCTION refuse_test_4();",
    );
    let e = import(&mut store, &options(srv, &db, Some(&results))).unwrap_err();
    assert!(
        e.contains("test 4 refused") && e.contains("nothing was imported"),
        "{e}"
    );
    assert!(store.list_sets().unwrap().is_empty());
    assert!(store.list_runs(&RunFilter::default()).unwrap().is_empty());
    assert!(store.servers().unwrap().is_empty());
    assert!(store.warnings(None).unwrap().is_empty());

    // Without the trigger: what can be imported is, and every row left out is named.
    srv.psql(&store_db, "DROP TRIGGER refuse_test_4 ON runs;");
    let summary = import(&mut store, &options(srv, &db, Some(&results))).unwrap();
    let left: Vec<String> = summary.left_out.iter().map(|l| l.to_string()).collect();
    let expect = [
        "tests row (server \"db1\", set 1, test 6): tps \"12abc\" is not a number",
        "testset row (server \"db1\", set 2): no test of the tests table is in this set",
        "tests row (server \"db1\", set 1, test 3): ",
        "tests row (server \"db1\", set 1, test 7): impossible value: tps = NaN",
        "tests row (server \"db1\", set 1, test 8): impossible value: tps = 1e300",
        "tests row (server \"db1\", set 1, test 9): impossible value: avg_latency = -3",
        "tests row (server \"db1\", set 7, test 5): testset has no row for set 7",
    ];
    for e in expect {
        assert!(
            left.iter().any(|l| l.starts_with(e)),
            "{e:?} not in {left:#?}"
        );
    }
    assert_eq!(left.len(), expect.len(), "{left:#?}");
    assert!(left.iter().any(|l| l.contains("results.txt")), "{left:#?}");
    assert_eq!(summary.runs_written, 2, "{summary:?}");

    let sets = store.list_sets().unwrap();
    assert_eq!(sets.len(), 1, "{sets:?}");
    let set = &sets[0];
    // Seven benchmark tests in the set, two stored: incomplete, saying which are missing.
    assert_eq!(
        (set.record.status.as_str(), set.record.planned_tests),
        ("incomplete", Some(7))
    );
    let warnings: Vec<String> = store
        .warnings(Some(set.id))
        .unwrap()
        .into_iter()
        .map(|w| w.record.message)
        .collect();
    assert_eq!(warnings.len(), 5, "{warnings:#?}");
    assert!(
        warnings.iter().any(|w| w.contains("tps = NaN")),
        "{warnings:#?}"
    );

    // Imported again: nothing new, no warning twice.
    let again = import(&mut store, &options(srv, &db, Some(&results))).unwrap();
    assert_eq!((again.runs_written, again.runs_present), (0, 2));
    assert_eq!(store.warnings(Some(set.id)).unwrap().len(), 5);
}

#[test]
fn a_missing_result_column_is_refused_and_nothing_is_written() {
    let srv = TestServer::shared();
    let db = results_database(srv, "pgbt_no_avg");
    srv.psql(&db, "ALTER TABLE tests DROP COLUMN avg_latency CASCADE");
    let dir = pgsurge_testkit::scratch_dir("pgbt-no-avg");
    let mut store = Store::open(dir.path().join("s.db").to_str().unwrap()).unwrap();
    let e = import(&mut store, &options(srv, &db, None)).unwrap_err();
    assert!(e.contains("table tests lacks column avg_latency"), "{e}");
    assert!(store.list_sets().unwrap().is_empty());
}
