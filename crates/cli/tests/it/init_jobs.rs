//! `pgsurge bench -i --init-jobs=N` end to end: the binary opens the worker
//! connections itself (with the same connection options as the first one) and
//! leaves the same rows a serial `-i` leaves, with pgbench's messages.

use pgsurge_server::testing::TestServer;
use std::process::Command;

fn init(srv: &TestServer, db: &str, extra: &[&str]) -> (String, i32) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
    c.args(["bench", "-i", "-s", "2"]).args(extra).arg(db);
    for (k, v) in srv.env() {
        c.env(k, v);
    }
    let out = c.output().expect("run pgsurge bench -i");
    (
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn checksum(srv: &TestServer, db: &str) -> String {
    srv.psql(
        db,
        "select count(*), md5(string_agg(t::text, ',' order by aid)) from pgbench_accounts t",
    )
}

#[test]
fn init_jobs_loads_the_same_rows_as_a_serial_init() {
    let srv = TestServer::shared();
    let serial = srv.create_database("init_jobs_serial");
    let parallel = srv.create_database("init_jobs_parallel");
    let (_, code) = init(srv, &serial, &["--partitions=3", "--partition-method=hash"]);
    assert_eq!(code, 0);
    let (stderr, code) = init(
        srv,
        &parallel,
        &["--partitions=3", "--partition-method=hash", "--init-jobs=3"],
    );
    assert_eq!(code, 0, "{stderr}");
    for line in [
        "creating 3 partitions...",
        "200000 of 200000 tuples (100%) of pgbench_accounts done",
        "vacuuming...",
        "creating primary keys...",
    ] {
        assert!(stderr.contains(line), "missing {line:?} in:\n{stderr}");
    }
    assert!(stderr.contains("done in "), "{stderr}");
    let want = checksum(srv, &serial);
    assert!(want.starts_with("200000|"), "{want}");
    assert_eq!(checksum(srv, &parallel), want);
    // The primary key is the partitioned parent's, adopted by every partition.
    let keys = srv.psql(
        &parallel,
        "select count(*) from pg_constraint where conname like 'pgbench_accounts%pkey'",
    );
    assert_eq!(keys.trim(), "4");
}

#[test]
fn a_worker_that_cannot_connect_fails_the_init_with_exit_1() {
    let srv = TestServer::shared();
    let db = srv.create_database("init_jobs_limit");
    // Only two connections for this role: the first one and one worker of three.
    srv.psql(
        &db,
        "drop role if exists init_jobs_limited; \
         create role init_jobs_limited login connection limit 2; \
         grant create on schema public to init_jobs_limited",
    );
    let (stderr, code) = init(srv, &db, &["-U", "init_jobs_limited", "--init-jobs=3"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("could not create connection for initialization"),
        "{stderr}"
    );
}

#[test]
fn ctrl_c_stops_init_at_once_with_exit_1() {
    let srv = TestServer::shared();
    let db = srv.create_database("init_sigint");
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
    c.args(["bench", "-i", "-s", "40", &db])
        .stderr(std::process::Stdio::piped());
    for (k, v) in srv.env() {
        c.env(k, v);
    }
    let mut child = c.spawn().unwrap();
    // Interrupt once the load is under way (after its first progress line).
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut text = String::new();
    loop {
        let mut line = String::new();
        let n = std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
        assert!(n > 0, "init ended before loading: {text}");
        text.push_str(&line);
        if line.contains("tuples") {
            break;
        }
    }
    let sent = std::time::Instant::now();
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    std::io::Read::read_to_string(&mut stderr, &mut text).unwrap();
    let code = child.wait().unwrap().code();
    assert_eq!(code, Some(1), "{text}");
    assert!(
        sent.elapsed() < std::time::Duration::from_secs(10),
        "took {:?} to stop",
        sent.elapsed()
    );
    assert!(
        text.contains("canceling statement due to user request"),
        "{text}"
    );
    // The load's transaction was rolled back.
    assert_eq!(
        srv.psql(&db, "select count(*) from pgbench_accounts")
            .trim(),
        "0"
    );
}
