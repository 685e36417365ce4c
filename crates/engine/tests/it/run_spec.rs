//! Runs built in code, without a command line: a caller (a campaign, a test, a future
//! remote generator) describes the run as a `RunSpec` and hands it to the engine, against
//! a throwaway PostgreSQL.

use std::sync::{Arc, Mutex};

use pgsurge_engine::layout;
use pgsurge_engine::{
    run, DatabaseInfo, EarlyRead, EngineError, QueryMode, RunHooks, RunLimit, RunScript, RunSpec,
};
use pgsurge_init::{InitSpec, PartitionMethod};
use pgsurge_server::testing::TestServer;
use pgsurge_wire::{ConnConfig, Connection};

fn conn_config(srv: &TestServer, db: &str) -> ConnConfig {
    ConnConfig::parse(&srv.conninfo(db)).expect("the fixture's conninfo parses")
}

/// Hooks that keep the run's diagnostics (client errors, notices) in a list.
fn collecting_diagnostics() -> (RunHooks<'static>, Arc<Mutex<Vec<String>>>) {
    let messages = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&messages);
    let hooks = RunHooks {
        on_diagnostic: Some(Arc::new(move |d: &pgsurge_engine::Diagnostic<'_>| {
            sink.lock().unwrap().push(d.message.to_string());
        })),
        ..RunHooks::default()
    };
    (hooks, messages)
}

/// A database initialized at scale 1 with `pgbench_accounts` in two hash partitions.
fn initialized_db(srv: &TestServer, prefix: &str) -> String {
    let db = srv.create_database(prefix);
    let mut conn = Connection::connect(&conn_config(srv, &db)).expect("connect");
    let init = InitSpec {
        partitions: 2,
        partition_method: PartitionMethod::Hash,
        quiet: true,
        ..InitSpec::default()
    };
    pgsurge_init::initialize(&mut conn, &init, &mut Vec::new()).expect("initialize");
    db
}

#[test]
fn a_run_spec_built_in_code_runs_against_a_server() {
    let srv = TestServer::shared();
    let db = initialized_db(srv, "runspec_code");
    let conn = conn_config(srv, &db);
    let found = layout::detect(&mut Connection::connect(&conn).expect("connect")).expect("layout");
    assert_eq!(found.scale, 1);
    assert_eq!(found.partition_method, PartitionMethod::Hash);
    assert_eq!(found.partitions, 2);

    let custom = RunScript::parse("count.sql", "\\set n 1\nSELECT :n;\n", 1).expect("parses");
    let mut spec = RunSpec::new(
        conn,
        vec![RunScript::builtin("tpcb-like", 1).expect("builtin"), custom],
    );
    spec.clients = 3;
    spec.threads = 2;
    spec.limit = RunLimit::Transactions(15);
    spec.query_mode = QueryMode::Prepared;
    spec.latency_limit_us = Some(5_000_000);
    spec.random_seed = 42;
    spec.output.percentiles = Some(vec![50.0, 99.0]);
    spec.database = DatabaseInfo {
        scale: found.scale,
        partition_method: found.partition_method,
        partitions: found.partitions,
        server_version: Some("test".into()),
    };
    let result = run(&spec, RunHooks::default()).expect("the run succeeds");
    assert!(!result.aborted && !result.interrupted);
    assert_eq!(
        result.totals.transactions, 45,
        "3 clients × 15 transactions"
    );
    assert_eq!(result.totals.failures, 0);
    assert_eq!(result.options.query_mode, QueryMode::Prepared);
    assert_eq!(result.options.latency_limit_us, Some(5_000_000));
    assert_eq!(result.options.random_seed, Some(42));
    assert_eq!(result.options.threads, 2);
    assert_eq!(result.partition_method.as_deref(), Some("hash"));
    assert_eq!(result.partitions, 2);
    assert_eq!(result.scripts.len(), 2);
    let tpcb = result.scripts[0].stats.transactions;
    // Every tpcb-like transaction inserts one history row; the custom script none.
    let history: u64 = srv
        .psql(&db, "select count(*) from pgbench_history")
        .trim()
        .parse()
        .expect("count");
    assert_eq!(history, tpcb);
    assert_eq!(tpcb + result.scripts[1].stats.transactions, 45);
}

#[test]
fn exit_on_abort_is_an_error_not_a_process_exit() {
    let srv = TestServer::shared();
    let db = srv.create_database("runspec_abort");
    let failing = RunScript::parse("fail.sql", "SELECT 1/0;\n", 1).expect("parses");
    let mut spec = RunSpec::new(conn_config(srv, &db), vec![failing]);
    spec.clients = 2;
    spec.threads = 2;
    spec.limit = RunLimit::Duration(60);
    spec.errors.exit_on_abort = true;
    let messages = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink_messages = std::sync::Arc::clone(&messages);
    let hooks = RunHooks {
        on_diagnostic: Some(std::sync::Arc::new(
            move |d: &pgsurge_engine::Diagnostic<'_>| {
                sink_messages.lock().unwrap().push(d.message.to_string());
            },
        )),
        ..RunHooks::default()
    };
    let started = std::time::Instant::now();
    match run(&spec, hooks) {
        Err(EngineError::ExitOnAbort { thread }) => assert!(thread < 2),
        Err(other) => panic!("expected ExitOnAbort, got {other}"),
        Ok(r) => panic!(
            "expected ExitOnAbort, got a result (aborted: {})",
            r.aborted
        ),
    }
    // The other thread stopped too, long before the 60 s duration.
    assert!(
        started.elapsed().as_secs() < 50,
        "took {:?}",
        started.elapsed()
    );
    let messages = messages.lock().unwrap();
    assert!(
        messages.iter().any(|m| m.contains("division by zero")),
        "{messages:?}"
    );

    // Without the flag, the same failure aborts the client and the run still reports.
    spec.errors.exit_on_abort = false;
    spec.limit = RunLimit::Transactions(3);
    let hooks = RunHooks {
        on_diagnostic: Some(std::sync::Arc::new(|_: &pgsurge_engine::Diagnostic<'_>| {})),
        ..RunHooks::default()
    };
    let result = run(&spec, hooks).expect("a result");
    assert!(result.aborted);
}

#[test]
fn an_invalid_spec_is_refused_before_connecting() {
    // Port 1 on a missing socket directory: connecting would fail differently.
    let conn = ConnConfig::parse("host=/nonexistent port=1 dbname=x").expect("conninfo");
    let mut spec = RunSpec::new(conn, vec![RunScript::builtin("select-only", 1).unwrap()]);
    spec.clients = 2;
    spec.threads = 3;
    match run(&spec, RunHooks::default()) {
        Err(EngineError::InvalidSpec(msg)) => assert!(msg.contains("threads"), "{msg}"),
        other => panic!("expected InvalidSpec, got {:?}", other.map(|r| r.tps)),
    }
}

/// A client that is done keeps its connection until the run's last transaction is
/// done, in its own thread and in the others: no backend exits while transactions are
/// under way. Then every connection is closed.
#[test]
fn connections_close_after_the_runs_last_transaction() {
    let srv = TestServer::shared();
    let db = srv.create_database("runspec_linger");
    let connected = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                     AND application_name = current_setting('application_name')";
    // Clients 0 and 1 (the first thread) are done at once; client 2 (the second thread)
    // fails with a division by zero if either has disconnected by then.
    let text = format!(
        "\\if :client_id = 2\n\\sleep 300 ms\nSELECT 1 / (({connected}) / 3);\n\\else\nSELECT 1;\n\\endif\n"
    );
    let script = RunScript::parse("linger.sql", &text, 1).expect("parses");
    let mut spec = RunSpec::new(conn_config(srv, &db), vec![script]);
    spec.clients = 3;
    spec.threads = 2;
    spec.limit = RunLimit::Transactions(1);
    let result = run(&spec, RunHooks::default()).expect("the run succeeds");
    assert!(
        !result.aborted,
        "a client disconnected before the last transaction"
    );
    assert_eq!(result.totals.transactions, 3);
    assert_eq!(result.totals.failures, 0);
    let left = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                AND pid <> pg_backend_pid()";
    let waiting = std::time::Instant::now();
    while srv.psql(&db, left).trim() != "0" {
        assert!(
            waiting.elapsed().as_secs() < 60,
            "connections left open after the run"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A client that aborts inside a transaction is disconnected at once, so the server
/// rolls its transaction back and the others do not wait on its locks.
#[test]
fn an_aborted_client_disconnects_at_once() {
    let srv = TestServer::shared();
    let db = srv.create_database("runspec_abort_close");
    srv.psql(&db, "CREATE SEQUENCE locked");
    // Client 0 takes a lock in a transaction, says so (a sequence is outside
    // transactions) and aborts on a failing `\set`; client 1 waits until it has the
    // lock, then needs it too, and gives up after half a minute if it is still held:
    // a client that stayed connected would hold it until the run's end, which comes
    // only when client 1 is done.
    let text =
        "\\if :client_id = 0\nBEGIN;\nSELECT pg_advisory_xact_lock(42), nextval('locked');\n\
                \\set x 1 / 0\nEND;\n\
                \\else\nDO $$ BEGIN WHILE pg_sequence_last_value('locked') IS NULL \
                AND clock_timestamp() < statement_timestamp() + interval '60 s' \
                LOOP PERFORM pg_sleep(0.01); END LOOP; END $$;\n\
                SET lock_timeout = '30s';\nSELECT pg_advisory_lock(42);\n\\endif\n";
    let script = RunScript::parse("abort.sql", text, 1).expect("parses");
    let mut spec = RunSpec::new(conn_config(srv, &db), vec![script]);
    spec.clients = 2;
    spec.threads = 1;
    spec.limit = RunLimit::Transactions(1);
    let (hooks, messages) = collecting_diagnostics();
    let result = run(&spec, hooks).expect("a result");
    let messages = messages.lock().unwrap();
    assert!(result.aborted, "client 0 aborts: {messages:?}");
    assert_eq!(
        result.totals.transactions, 1,
        "client 1 got the lock: {messages:?}"
    );
    assert!(
        messages.iter().all(|m| !m.contains("lock timeout")),
        "{messages:?}"
    );
}

/// A caller's stop ends a run at once wherever its clients are: one in a `\sleep`, one
/// in a statement, one in a pipeline's statement (both cancelled on the server). The
/// result covers the transactions completed before the stop, and nothing interrupted
/// is counted, nor reported as a failure or an abort.
#[test]
fn a_stop_ends_sleeps_and_cancels_statements_at_once() {
    let srv = TestServer::shared();
    let db = srv.create_database("runspec_stop");
    let text = "\\if :done\n\
                \\if :client_id = 0\n\\sleep 120 s\n\
                \\elif :client_id = 1\nSELECT pg_sleep(60) AS stop_marker;\n\
                \\else\n\\startpipeline\nSELECT pg_sleep(60) AS stop_marker;\n\\endpipeline\n\
                \\endif\n\
                \\else\n\\set done 1\nSELECT 1;\n\\endif\n";
    let script = RunScript::parse("stop.sql", text, 1).expect("parses");
    let mut spec = RunSpec::new(conn_config(srv, &db), vec![script]);
    spec.clients = 3;
    spec.threads = 2;
    spec.limit = RunLimit::Duration(600);
    spec.query_mode = QueryMode::Extended;
    spec.variables = vec![("done".into(), "0".into())];
    let running = "select count(*) from pg_stat_activity where datname = current_database() \
                   and pid <> pg_backend_pid() and state = 'active' \
                   and query like '%stop_marker%'";
    let count = |sql: &str| -> i64 { srv.psql(&db, sql).trim().parse().expect("a number") };
    let (hooks, messages) = collecting_diagnostics();
    let stop = hooks.stop.clone();
    let stopped_at = std::thread::scope(|scope| {
        let stopper = scope.spawn(|| {
            let waiting = std::time::Instant::now();
            while count(running) < 2 {
                assert!(
                    waiting.elapsed().as_secs() < 60,
                    "the two statements never ran"
                );
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            stop.raise();
            std::time::Instant::now()
        });
        let result = run(&spec, hooks).expect("a result");
        let stopped_at = stopper.join().expect("stopper");
        // At once: not at the end of the sleep or the statements (a minute and more).
        let took = stopped_at.elapsed();
        assert!(took.as_secs_f64() < 30.0, "ended {took:?} after the stop");
        assert!(result.interrupted && !result.aborted);
        assert_eq!(
            result.totals.transactions, 3,
            "one completed transaction per client"
        );
        assert_eq!(result.totals.failures, 0);
        stopped_at
    });
    let messages = messages.lock().unwrap();
    assert!(messages.is_empty(), "{messages:?}");
    // The statements were cancelled: no backend runs them any more (one whose client
    // merely went away would sleep on for a minute).
    while count(running) > 0 {
        assert!(
            stopped_at.elapsed().as_secs() < 30,
            "still running on the server"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// An answer read right after its request was sent is gone on with at once, in the same
/// turn of the driver. Reading after every send (as pgbench does), every answer still
/// reaches its own client whole: values of up to 90 kB round-tripped through `\gset`
/// and checked by the server (a wrong or cut one divides by zero), and a pipeline, in
/// every query mode, with few clients on a thread and with so many that the driver
/// lends them its buffers. The default (reading after slow sends only) runs the same.
#[test]
fn answers_read_right_after_sending_reach_their_own_clients() {
    let srv = TestServer::shared();
    let db = srv.create_database("runspec_early_read");
    let quoted = "\\set n random(1, 3)\n\
         SELECT :n AS m, repeat(chr(65 + :client_id % 26), 30000 * :n) AS big, :client_id AS who \\gset\n\
         SELECT 1 / (length(':big') = 30000 * :m AND :who::int = :client_id\n\
           AND ':big' = repeat(chr(65 + :client_id % 26), 30000 * :n))::int AS one;\n";
    let typed = quoted
        .replace("length(':big')", "length(:big::text)")
        .replace("':big' =", ":big::text =");
    let pipelined =
        "\\startpipeline\nSELECT repeat('y', 50000);\nSELECT 2 AS two;\n\\endpipeline\n\
                     SELECT :client_id AS c;\n";
    let script = |name: &str, text: &str| RunScript::parse(name, text, 1).expect("parses");
    for early in [EarlyRead::Always, EarlyRead::AfterSlowSend] {
        for (mode, scripts) in [
            (QueryMode::Simple, vec![script("q.sql", quoted)]),
            (
                QueryMode::Extended,
                vec![script("t.sql", &typed), script("p.sql", pipelined)],
            ),
            (
                QueryMode::Prepared,
                vec![script("t.sql", &typed), script("p.sql", pipelined)],
            ),
        ] {
            for clients in [4, 40] {
                let mut spec = RunSpec::new(conn_config(srv, &db), scripts.clone());
                spec.clients = clients;
                spec.threads = 1;
                spec.limit = RunLimit::Transactions(10);
                spec.query_mode = mode;
                spec.early_read = early;
                let (hooks, messages) = collecting_diagnostics();
                let result = run(&spec, hooks).expect("the run succeeds");
                let messages = messages.lock().unwrap();
                let case = format!("{early:?} {mode:?} -c {clients}: {messages:?}");
                assert!(!result.aborted, "{case}");
                assert_eq!(result.totals.transactions, clients as u64 * 10, "{case}");
                assert_eq!(result.totals.failures, 0, "{case}");
            }
        }
    }
}

/// By default a client reads right after a send only when the send was slow; asked to,
/// after every send.
#[test]
fn the_early_read_follows_slow_sends_by_default() {
    let conn = ConnConfig::parse("host=/nonexistent dbname=x").expect("conninfo");
    let spec = RunSpec::new(
        conn,
        vec![RunScript::builtin("select-only", 1).expect("builtin")],
    );
    assert_eq!(spec.early_read, EarlyRead::AfterSlowSend);
    assert_eq!(
        EarlyRead::AfterSlowSend.after_ns(),
        EarlyRead::SLOW_SEND.as_nanos() as i64
    );
    assert_eq!(EarlyRead::Always.after_ns(), 0);
}
