//! `-i` with tablespaces, and failures: a missing tablespace and a user without
//! the right to create tables get pgbench's messages and exit status 1.

use std::os::unix::fs::MetadataExt;
use std::sync::OnceLock;

use crate::common::*;
use pgsurge_init::InitSpec;
use pgsurge_server::testing::TestServer;

/// A tablespace (with a name that needs quoting) on the shared server, created
/// once per test process in a directory owned by the server's user.
fn tablespace(srv: &TestServer) -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| {
        let name = format!("init ts{}", std::process::id());
        let dir = srv
            .data_dir()
            .join(format!("pgsurge_init_ts_{}", std::process::id()));
        std::fs::create_dir(&dir).expect("create tablespace directory");
        let owner = std::fs::metadata(srv.data_dir()).expect("stat data directory");
        std::os::unix::fs::chown(&dir, Some(owner.uid()), Some(owner.gid()))
            .expect("give the tablespace directory to the server's user");
        srv.psql(
            "postgres",
            &format!("create tablespace \"{name}\" location '{}'", dir.display()),
        );
        name
    })
}

#[test]
fn tablespaces_match_pgbench() {
    if !have_pgbench() {
        return;
    }
    let srv = TestServer::shared();
    let ts = tablespace(srv);
    let theirs_db = srv.create_database("init_ref_ts");
    let ours_db = srv.create_database("init_ours_ts");
    let args = [
        "-s",
        "1",
        "--tablespace",
        ts,
        "--index-tablespace",
        ts,
        "--partitions",
        "2",
        "--foreign-keys",
    ];
    let theirs = run_pgbench(srv, &theirs_db, None, &args);
    assert!(theirs.ok, "pgbench failed:\n{}", theirs.stderr);
    let spec = InitSpec {
        steps: "dtgvpf".into(),
        partitions: 2,
        tablespace: Some(ts.to_owned()),
        index_tablespace: Some(ts.to_owned()),
        ..InitSpec::default()
    };
    let ours = run_ours(srv, &ours_db, None, &spec);
    assert!(ours.ok, "initialize failed:\n{}", ours.stderr);
    let reference = fingerprint(srv, &theirs_db);
    let mine = fingerprint(srv, &ours_db);
    let rels = &mine
        .iter()
        .find(|(k, _)| k == "relations")
        .expect("relations")
        .1;
    assert!(rels.contains(ts), "tables are in the tablespace: {rels}");
    assert_same_fingerprint("tablespaces", &reference, &mine);
    assert_eq!(
        message_structure(&theirs.stderr),
        message_structure(&ours.stderr)
    );
}

/// Both fail the same way: same stderr (timings aside), exit status 1.
fn assert_same_failure(case: &str, theirs: &InitRun, ours: &InitRun) {
    eprintln!(
        "--- {case}, pgbench:\n{}--- ours:\n{}",
        theirs.stderr, ours.stderr
    );
    assert!(
        !theirs.ok && !ours.ok,
        "{case}: both must fail:\n{}\n{}",
        theirs.stderr,
        ours.stderr
    );
    assert_eq!(theirs.exit_code, 1, "{case}: pgbench's exit status");
    assert_eq!(ours.exit_code, 1, "{case}: our exit status");
    assert_eq!(
        message_structure(&theirs.stderr),
        message_structure(&ours.stderr),
        "{case}: stderr differs\n--- pgbench:\n{}--- ours:\n{}",
        theirs.stderr,
        ours.stderr
    );
}

#[test]
fn missing_tablespace_fails_like_pgbench() {
    if !have_pgbench() {
        return;
    }
    let srv = TestServer::shared();
    let theirs_db = srv.create_database("init_ref_nots");
    let ours_db = srv.create_database("init_ours_nots");
    let theirs = run_pgbench(srv, &theirs_db, None, &["--tablespace", "no_such_ts"]);
    let spec = InitSpec {
        tablespace: Some("no_such_ts".into()),
        ..InitSpec::default()
    };
    let ours = run_ours(srv, &ours_db, None, &spec);
    assert!(
        ours.stderr.contains(
            "pgbench: error: query failed: ERROR:  tablespace \"no_such_ts\" does not exist\n"
        ),
        "{}",
        ours.stderr
    );
    assert_same_failure("missing tablespace", &theirs, &ours);
}

#[test]
fn missing_index_tablespace_fails_like_pgbench() {
    if !have_pgbench() {
        return;
    }
    let srv = TestServer::shared();
    let theirs_db = srv.create_database("init_ref_noidxts");
    let ours_db = srv.create_database("init_ours_noidxts");
    let theirs = run_pgbench(
        srv,
        &theirs_db,
        None,
        &["-I", "dtp", "--index-tablespace", "no_such_ts"],
    );
    let spec = InitSpec {
        steps: "dtp".into(),
        index_tablespace: Some("no_such_ts".into()),
        ..InitSpec::default()
    };
    let ours = run_ours(srv, &ours_db, None, &spec);
    assert_same_failure("missing index tablespace", &theirs, &ours);
}

#[test]
fn permission_failure_fails_like_pgbench() {
    if !have_pgbench() {
        return;
    }
    let srv = TestServer::shared();
    let role = format!("init_nopriv_{}", std::process::id());
    srv.psql("postgres", &format!("create role {role} login"));
    let theirs_db = srv.create_database("init_ref_nopriv");
    let ours_db = srv.create_database("init_ours_nopriv");
    for db in [&theirs_db, &ours_db] {
        // Servers before 15 let everyone create in public; take that away.
        srv.psql(db, "revoke create on schema public from public");
    }
    let theirs = run_pgbench(srv, &theirs_db, Some(&role), &[]);
    let ours = run_ours(srv, &ours_db, Some(&role), &InitSpec::default());
    assert!(
        ours.stderr.contains("permission denied for schema public"),
        "{}",
        ours.stderr
    );
    assert_same_failure("no create privilege", &theirs, &ours);
}

#[test]
fn generating_without_tables_fails_like_pgbench() {
    if !have_pgbench() {
        return;
    }
    let srv = TestServer::shared();
    let theirs_db = srv.create_database("init_ref_notables");
    let ours_db = srv.create_database("init_ours_notables");
    let theirs = run_pgbench(srv, &theirs_db, None, &["-I", "g"]);
    let ours = run_ours(
        srv,
        &ours_db,
        None,
        &InitSpec {
            steps: "g".into(),
            ..InitSpec::default()
        },
    );
    assert_same_failure("no tables", &theirs, &ours);
}

/// Waits (up to a minute) until the session `pid` is loading `pgbench_accounts`.
fn wait_for_the_accounts_copy(srv: &TestServer, pid: i32) {
    let sql = format!(
        "SELECT count(*) FROM pg_stat_activity WHERE pid = {pid} AND state = 'active' \
         AND query LIKE 'copy pgbench_accounts%'"
    );
    let start = std::time::Instant::now();
    while srv.psql("postgres", &sql).trim() != "1" {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "the load of pgbench_accounts never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn cancel_flag_cancels_the_running_step_and_commits_nothing() {
    use pgsurge_init::{initialize_with, InitContext, MonotonicClock};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    let srv = TestServer::shared();
    let db = srv.create_database("init_cancel");
    let mut conn = connect(srv, &db, None);
    let pid = conn.backend_pid();
    // Big enough that client-side generation is still running when the flag is set.
    let spec = InitSpec {
        steps: "dtg".into(),
        scale: 20,
        ..InitSpec::default()
    };
    let flag = AtomicBool::new(false);
    let clock = MonotonicClock::new();
    let ctx = InitContext {
        clock: &clock,
        stderr_is_tty: false,
        cancel: Some(&flag),
    };
    let mut err = Vec::new();
    let started = Instant::now();
    let result = std::thread::scope(|s| {
        s.spawn(|| {
            wait_for_the_accounts_copy(srv, pid);
            flag.store(true, Ordering::Release);
        });
        initialize_with(&mut conn, &spec, &mut err, &ctx)
    });
    let e = result.expect_err("a cancelled init fails");
    assert_eq!(e.exit_code(), 1);
    let text = e.render();
    assert!(
        text.contains("canceling statement due to user request"),
        "{text}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "cancel took effect promptly"
    );
    // The loading transaction was rolled back.
    drop(conn);
    assert_eq!(
        srv.psql(&db, "select count(*) from pgbench_accounts")
            .trim(),
        "0"
    );
}

#[test]
fn backend_killed_mid_generation_is_a_clean_exit_1() {
    use std::time::{Duration, Instant};

    let srv = TestServer::shared();
    let db = srv.create_database("init_killed");
    let mut conn = connect(srv, &db, None);
    let pid = conn.backend_pid();
    let spec = InitSpec {
        steps: "dtg".into(),
        scale: 20,
        ..InitSpec::default()
    };
    let started = Instant::now();
    let run = std::thread::scope(|s| {
        s.spawn(|| {
            wait_for_the_accounts_copy(srv, pid);
            srv.psql("postgres", &format!("select pg_terminate_backend({pid})"));
        });
        let mut err = Vec::new();
        let result = pgsurge_init::initialize_with(
            &mut conn,
            &spec,
            &mut err,
            &pgsurge_init::InitContext {
                clock: &pgsurge_init::MonotonicClock::new(),
                stderr_is_tty: false,
                cancel: None,
            },
        );
        (result, String::from_utf8_lossy(&err).into_owned())
    });
    let (result, stderr) = run;
    let e = result.expect_err("a killed backend fails the init");
    assert_eq!(e.exit_code(), 1);
    let text = e.render();
    eprintln!("{stderr}{text}");
    // pgbench's wording depends on where libpq notices the loss.
    assert!(
        text.ends_with("pgbench: error: PQputline failed\n")
            || text.ends_with("pgbench: error: PQendcopy failed\n")
            || text.contains("pgbench: error: query failed: "),
        "{stderr}{text}"
    );
    assert!(started.elapsed() < Duration::from_secs(60), "no hang");
}
