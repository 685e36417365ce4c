//! Why a run's clients aborted, as a type: a connection lost under them (the server
//! stopped mid-run, their backends terminated) or one that could not be made is
//! `ErrorClass::Connection`, carried up from `pgsurge-wire` to
//! `RunResult::connection_lost` and `EngineError::ClientConnection`; an error of the
//! script's own SQL is not.

use std::time::{Duration, Instant};

use pgsurge_engine::{run, EngineError, RunHooks, RunLimit, RunScript, RunSpec};
use pgsurge_server::testing::{TestServer, TestServerOptions};
use pgsurge_wire::{ConnConfig, ErrorClass};

/// Two clients that sleep a little in every transaction, for up to ten minutes.
fn sleeping(srv: &TestServer, db: &str, sql: &str) -> RunSpec {
    let conn = ConnConfig::parse(&srv.conninfo(db)).expect("the fixture's conninfo parses");
    let script = RunScript::parse("s.sql", sql, 1).expect("parses");
    let mut spec = RunSpec::new(conn, vec![script]);
    spec.clients = 2;
    spec.threads = 2;
    spec.limit = RunLimit::Duration(600);
    spec
}

/// Waits until both clients of the run have their sessions on `db`.
fn wait_for_clients(srv: &TestServer, db: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let n: u32 = srv
            .psql(
                db,
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE datname = current_database() AND query LIKE 'SELECT pg_sleep%'",
            )
            .trim()
            .parse()
            .expect("a count");
        if n >= 2 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the run's clients never connected"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_server_stopped_mid_run_aborts_its_clients_as_connection_lost() {
    let srv = TestServer::start(TestServerOptions::default());
    let db = srv.create_database("lost");
    let spec = sleeping(&srv, &db, "SELECT pg_sleep(0.01);\n");
    let result = std::thread::scope(|s| {
        let running = s.spawn(|| run(&spec, RunHooks::default()));
        wait_for_clients(&srv, &db);
        assert!(srv.cluster().stop(), "the server stops");
        running.join().expect("the run returns")
    });
    let result = result.expect("a result whose clients aborted");
    assert!(result.aborted, "the clients aborted");
    assert!(result.connection_lost, "their connections were lost");
    // Against the stopped server no connection is made: of the same class.
    match run(&spec, RunHooks::default()) {
        Err(EngineError::ClientConnection { message, class }) => {
            assert_eq!(class, ErrorClass::Connection, "{message}");
        }
        Err(e) => panic!("expected a client connection error, got {e}"),
        Ok(_) => panic!("a run against a stopped server got a result"),
    }
}

#[test]
fn terminated_backends_are_a_lost_connection_and_a_failing_statement_is_not() {
    let srv = TestServer::shared();
    let db = srv.create_database("terminated");
    let spec = sleeping(srv, &db, "SELECT pg_sleep(0.01);\n");
    let result = std::thread::scope(|s| {
        let running = s.spawn(|| run(&spec, RunHooks::default()));
        wait_for_clients(srv, &db);
        srv.psql(
            &db,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
        );
        running.join().expect("the run returns")
    });
    let result = result.expect("a result whose clients aborted");
    assert!(result.aborted && result.connection_lost, "{result:?}");

    let failing = sleeping(srv, &db, "SELECT 1 FROM no_such_table;\n");
    let result = run(&failing, RunHooks::default()).expect("a result whose clients aborted");
    assert!(result.aborted, "the clients aborted");
    assert!(!result.connection_lost, "on an error of their SQL");
    // A refused password is no outage either.
    let mut wrong = failing.clone();
    wrong.conn =
        ConnConfig::parse(&format!("{} user=no_such_role", srv.conninfo(&db))).expect("parses");
    match run(&wrong, RunHooks::default()) {
        Err(EngineError::ClientConnection { class, message }) => {
            assert_eq!(class, ErrorClass::Other, "{message}");
        }
        Err(e) => panic!("expected a client connection error, got {e}"),
        Ok(_) => panic!("an unknown role got a result"),
    }
}
