//! Integration tests against real PostgreSQL servers from the `pgsurge-server`
//! fixture: trust over Unix and TCP, password/MD5/SCRAM users with hba rules, error
//! texts compared with psql's, `.pgpass`, multiple hosts, blocking helpers (simple
//! queries, COPY, prepare), notices, cancel, the non-blocking hot path, and a server
//! shut down under a connected client.

use crate::common::{config, empty_home, env_with_home, psql_error, wait_until_accepting};
use bytes::{Buf, BytesMut};
use pgsurge_server::testing::{TestServer, TestServerOptions};
use pgsurge_wire::codec::{self, BackendMessage};
use pgsurge_wire::{ConnConfig, Connection, PgbenchConnector, QueryError, TransactionStatus};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The shared server, once it accepts connections (a fresh cluster may still
/// be in startup recovery for a moment).
fn shared() -> &'static TestServer {
    static READY: std::sync::Once = std::sync::Once::new();
    let srv = TestServer::shared();
    READY.call_once(|| wait_until_accepting(&srv.conninfo("postgres")));
    srv
}

#[test]
fn trust_over_unix_socket() {
    let srv = shared();
    let db = srv.create_database("wire_unix");
    let mut c = Connection::connect(&config(&srv.conninfo(&db))).expect("connect");
    assert_eq!(c.host(), srv.socket_dir().display().to_string());
    assert_eq!(c.port(), srv.port());
    assert_eq!(c.dbname(), db);
    assert_eq!(c.user(), "postgres");
    assert!(!c.is_tls());
    assert_eq!(c.server_version_num() as u32, srv.version_num());
    assert!(c.parameter("server_version").is_some());
    let r = c
        .simple_query("select pg_backend_pid(), null::text as n, 'x y' as c; select 2")
        .expect("query");
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].columns, vec!["pg_backend_pid", "n", "c"]);
    assert_eq!(r[0].get(0, 0), Some(c.backend_pid().to_string().as_str()));
    assert_eq!(r[0].rows[0][1], None);
    assert_eq!(r[0].get(0, 2), Some("x y"));
    assert_eq!(r[0].command_tag, "SELECT 1");
    assert_eq!(r[1].get(0, 0), Some("2"));
    assert_eq!(c.transaction_status(), TransactionStatus::Idle);
    c.execute("begin").expect("begin");
    assert_eq!(c.transaction_status(), TransactionStatus::InTransaction);
    c.close();
}

#[test]
fn trust_over_tcp_with_prefer_falls_back_to_plain() {
    let srv = shared();
    let db = srv.create_database("wire_tcp");
    // The shared server has no TLS: sslmode=prefer (default) must go plain.
    let mut c = Connection::connect(&config(&srv.tcp_conninfo(&db))).expect("connect");
    assert_eq!(c.host(), "127.0.0.1");
    assert!(!c.is_tls());
    let r = c
        .simple_query("select inet_client_addr()::text")
        .expect("query");
    assert_eq!(r[0].get(0, 0), Some("127.0.0.1/32"));
    // sslmode=require cannot be met.
    let conninfo = format!("{} sslmode=require", srv.tcp_conninfo(&db));
    let e = Connection::connect(&config(&conninfo)).expect_err("require");
    let expect = format!(
        "connection to server at \"127.0.0.1\", port {} failed: server does not support SSL, but SSL was required",
        srv.port()
    );
    assert_eq!(e.to_string(), expect);
    if let Some(p) = psql_error(&conninfo, &[]) {
        assert_eq!(e.to_string(), p, "psql says it the same way");
    }
}

#[test]
fn unix_socket_ignores_sslmode_require_like_libpq() {
    let srv = shared();
    let conninfo = format!("{} sslmode=require", srv.conninfo("postgres"));
    let r = Connection::connect(&config(&conninfo));
    match psql_error(&conninfo, &[]) {
        None => assert!(r.is_ok(), "psql connects, so must we: {:?}", r.err()),
        Some(p) => assert_eq!(r.expect_err("psql fails").to_string(), p),
    }
}

#[test]
fn missing_database_message_matches_psql() {
    let srv = shared();
    for conninfo in [srv.conninfo("nope_db"), srv.tcp_conninfo("nope_db")] {
        let e = Connection::connect(&config(&conninfo)).expect_err("no such db");
        assert_eq!(e.code(), Some("3D000"));
        assert!(
            e.to_string()
                .ends_with("failed: FATAL:  database \"nope_db\" does not exist"),
            "{e}"
        );
        if let Some(p) = psql_error(&conninfo, &[]) {
            assert_eq!(e.to_string(), p);
        }
    }
}

#[test]
fn multiple_hosts_are_tried_in_order() {
    let srv = shared();
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let conninfo = format!(
        "host=127.0.0.1,{} port={dead},{} user=postgres dbname=postgres",
        srv.socket_dir().display(),
        srv.port()
    );
    let c = Connection::connect(&config(&conninfo)).expect("second host");
    assert_eq!(c.host(), srv.socket_dir().display().to_string());
    assert_eq!(c.port(), srv.port());
    // target_session_attrs: a primary is read-write, never read-only.
    let rw = format!(
        "{} target_session_attrs=read-write",
        srv.conninfo("postgres")
    );
    Connection::connect(&config(&rw)).expect("read-write");
    let ro = format!(
        "{} target_session_attrs=read-only",
        srv.conninfo("postgres")
    );
    let e = Connection::connect(&config(&ro)).expect_err("read-only");
    assert!(
        e.to_string().ends_with("failed: session is not read-only"),
        "{e}"
    );
}

#[test]
fn server_errors_are_structured_and_rendered_like_libpq() {
    let srv = shared();
    let db = srv.create_database("wire_err");
    let mut c = Connection::connect(&config(&srv.conninfo(&db))).expect("connect");
    let e = c.simple_query("selec 1").expect_err("syntax error");
    let QueryError::Db(d) = &e else {
        panic!("not a server error: {e:?}")
    };
    assert_eq!(d.code, "42601");
    assert_eq!(d.severity, "ERROR");
    assert_eq!(d.position, Some(1));
    assert_eq!(
        d.pq_message_with_query(Some("selec 1")),
        "ERROR:  syntax error at or near \"selec\"\nLINE 1: selec 1\n        ^\n"
    );
    let e = c
        .execute("select * from pgbench_branches")
        .expect_err("no table");
    assert_eq!(e.code(), Some("42P01"));
    assert_eq!(
        e.pq_message(),
        "ERROR:  relation \"pgbench_branches\" does not exist at character 15\n"
    );
    let e = c
        .execute("do $$ begin raise exception 'boom' using detail = 'd1', hint = 'h1'; end $$")
        .expect_err("raise");
    assert_eq!(
        e.pq_message(),
        "ERROR:  boom\nDETAIL:  d1\nHINT:  h1\nCONTEXT:  PL/pgSQL function inline_code_block line 1 at RAISE\n"
    );
    // The connection is still usable after errors.
    assert_eq!(
        c.simple_query("select 1").expect("ok")[0].get(0, 0),
        Some("1")
    );
}

#[test]
fn notices_go_to_the_handler() {
    let srv = shared();
    let mut c = Connection::connect(&config(&srv.conninfo("postgres"))).expect("connect");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = Arc::clone(&seen);
    c.set_notice_handler(Box::new(move |n| {
        s2.lock().expect("lock").push(n.pq_message())
    }));
    c.execute("do $$ begin raise notice 'hello %', 42; end $$")
        .expect("do");
    c.execute("drop table if exists no_such_table_here")
        .expect("drop");
    assert_eq!(
        *seen.lock().expect("lock"),
        vec![
            "NOTICE:  hello 42\n".to_string(),
            "NOTICE:  table \"no_such_table_here\" does not exist, skipping\n".to_string()
        ]
    );
}

#[test]
fn copy_in_streams_chunks_and_reports_source_failure() {
    let srv = shared();
    let db = srv.create_database("wire_copy");
    let mut c = Connection::connect(&config(&srv.conninfo(&db))).expect("connect");
    c.execute("create table t (a int, b text)").expect("create");
    let mut next = 0u32;
    let n = c
        .copy_in("copy t from stdin", |buf| {
            for _ in 0..1000 {
                next += 1;
                buf.extend_from_slice(format!("{next}\trow {next}\n").as_bytes());
            }
            Ok(next < 25_000)
        })
        .expect("copy");
    assert_eq!(n, 25_000);
    let r = c
        .simple_query("select count(*), sum(a), max(b) from t")
        .expect("check");
    assert_eq!(
        r[0].rows[0],
        vec![
            Some("25000".into()),
            Some("312512500".into()),
            Some("row 9999".into())
        ]
    );
    // A failing source aborts the COPY; nothing is inserted; the connection lives on.
    let e = c
        .copy_in("copy t from stdin", |buf| {
            buf.extend_from_slice(b"1\tx\n");
            Err(std::io::Error::other("generator broke"))
        })
        .expect_err("source failure");
    assert!(matches!(e, QueryError::CopySource(_)), "{e:?}");
    let r = c.simple_query("select count(*) from t").expect("count");
    assert_eq!(r[0].get(0, 0), Some("25000"));
    // Bad data: the server's error comes back.
    let e = c
        .copy_in("copy t from stdin", |buf| {
            buf.extend_from_slice(b"notanumber\tx\n");
            Ok(false)
        })
        .expect_err("bad data");
    assert_eq!(e.code(), Some("22P02"));
}

#[test]
fn cancel_interrupts_a_running_query() {
    let srv = shared();
    for conninfo in [srv.conninfo("postgres"), srv.tcp_conninfo("postgres")] {
        let mut c = Connection::connect(&config(&conninfo)).expect("connect");
        let token = c.cancel_token();
        let pid = c.backend_pid();
        let watch = conninfo.clone();
        // The cancel is sent once the query runs (one sent before would find the
        // session idle, and be lost).
        let t = std::thread::spawn(move || {
            let mut w = Connection::connect(&config(&watch)).expect("connect");
            let sql = format!(
                "select count(*) from pg_stat_activity where pid = {pid} and state = 'active'"
            );
            let start = Instant::now();
            while w.simple_query(&sql).expect("pg_stat_activity")[0].get(0, 0) != Some("1") {
                assert!(
                    start.elapsed() < Duration::from_secs(60),
                    "the query never ran"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
            token.cancel()
        });
        let t0 = Instant::now();
        let e = c.execute("select pg_sleep(60)").expect_err("cancelled");
        assert_eq!(e.code(), Some("57014"), "{e}");
        // Ended by the cancel, not by the end of the sleep.
        assert!(t0.elapsed() < Duration::from_secs(45));
        t.join().expect("thread").expect("cancel sent");
        c.execute("select 1").expect("still usable");
    }
}

#[test]
fn prepared_statement_over_the_nonblocking_hot_path() {
    let srv = shared();
    let mut c = Connection::connect(&config(&srv.conninfo("postgres"))).expect("connect");
    c.prepare("P_0", "select $1::int + 1, $2::text")
        .expect("prepare");
    c.set_nonblocking(true).expect("nonblocking");
    let mut out = BytesMut::new();
    let mut inp = BytesMut::new();
    let mut rows = Vec::new();
    for i in 0..50 {
        out.clear();
        let v = i.to_string();
        codec::bind("", "P_0", [Some(v.as_bytes()), None], &mut out).expect("bind");
        codec::describe_portal("", &mut out).expect("describe");
        codec::execute("", 0, &mut out).expect("execute");
        codec::sync(&mut out);
        let mut sent = 0;
        let deadline = Instant::now() + Duration::from_secs(10);
        while sent < out.len() {
            match c.try_write(&out[sent..]) {
                Ok(n) => sent += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("write: {e}"),
            }
            assert!(Instant::now() < deadline);
        }
        'wait: loop {
            assert!(Instant::now() < deadline, "no ReadyForQuery");
            match c.try_read(&mut inp) {
                Ok(0) => panic!("server closed"),
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => panic!("read: {e}"),
            }
            while let Some((m, len)) = codec::decode(&inp).expect("decode") {
                let done = match m {
                    BackendMessage::DataRow(r) => {
                        let v: Vec<Option<Vec<u8>>> =
                            r.values().map(|v| v.map(<[u8]>::to_vec)).collect();
                        rows.push(v);
                        false
                    }
                    BackendMessage::ErrorResponse(f) => panic!("error {:?}", f.to_db_error()),
                    BackendMessage::ReadyForQuery(s) => {
                        assert_eq!(s, TransactionStatus::Idle);
                        true
                    }
                    _ => false,
                };
                inp.advance(len);
                if done {
                    break 'wait;
                }
            }
        }
    }
    assert_eq!(rows.len(), 50);
    assert_eq!(rows[49], vec![Some(b"50".to_vec()), None]);
    // The blocking helpers still work on a non-blocking connection.
    assert_eq!(
        c.simple_query("select 7").expect("q")[0].get(0, 0),
        Some("7")
    );
}

/// One private server with password rules for three users.
fn password_server() -> TestServer {
    let srv = TestServer::start(TestServerOptions {
        hba: vec![
            "host all scramuser 127.0.0.1/32 scram-sha-256".into(),
            "host all md5user 127.0.0.1/32 md5".into(),
            "host all pwuser 127.0.0.1/32 password".into(),
            "local all scramuser scram-sha-256".into(),
        ],
        ..Default::default()
    });
    wait_until_accepting(&srv.conninfo("postgres"));
    srv.psql(
        "postgres",
        "create role scramuser login password 'scram-pw'; \
         set password_encryption = 'md5'; \
         create role md5user login password 'md5-pw'; \
         reset password_encryption; \
         create role pwuser login password 'plain-pw';",
    );
    srv
}

#[test]
fn password_md5_and_scram_users() {
    let srv = password_server();
    let tcp = |user: &str, pw: &str| {
        format!(
            "host=127.0.0.1 port={} user={user} dbname=postgres password={pw} sslmode=disable",
            srv.port()
        )
    };
    for (user, pw) in [
        ("scramuser", "scram-pw"),
        ("md5user", "md5-pw"),
        ("pwuser", "plain-pw"),
    ] {
        let mut c =
            Connection::connect(&config(&tcp(user, pw))).unwrap_or_else(|e| panic!("{user}: {e}"));
        let r = c.simple_query("select current_user").expect("query");
        assert_eq!(r[0].get(0, 0), Some(user));
    }
    // Over the Unix socket too (scram via the `local` rule).
    let unix = format!(
        "host={} port={} user=scramuser dbname=postgres password=scram-pw",
        srv.socket_dir().display(),
        srv.port()
    );
    Connection::connect(&config(&unix)).expect("scram over unix");

    // Wrong password: libpq's message, as psql prints it.
    for user in ["scramuser", "md5user", "pwuser"] {
        let conninfo = tcp(user, "wrong");
        let e = Connection::connect(&config(&conninfo)).expect_err("wrong password");
        assert_eq!(e.code(), Some("28P01"));
        assert_eq!(
            e.to_string(),
            format!(
                "connection to server at \"127.0.0.1\", port {} failed: FATAL:  password authentication failed for user \"{user}\"",
                srv.port()
            )
        );
        if let Some(p) = psql_error(&conninfo, &[]) {
            assert_eq!(e.to_string(), p);
        }
    }
    // No password at all.
    let conninfo = format!(
        "host=127.0.0.1 port={} user=scramuser dbname=postgres sslmode=disable",
        srv.port()
    );
    let e = Connection::connect(&config(&conninfo)).expect_err("no password");
    assert!(e.needs_password());
    assert_eq!(
        e.to_string(),
        format!("connection to server at \"127.0.0.1\", port {} failed: fe_sendauth: no password supplied", srv.port())
    );
    if let Some(p) = psql_error(&conninfo, &[]) {
        assert_eq!(e.to_string(), p);
    }
    // PGPASSWORD through the environment (pgbench's usual way).
    let home = empty_home();
    let env = |k: &str| match k {
        "HOME" => Some(home.display().to_string()),
        "PGPASSWORD" => Some("scram-pw".to_string()),
        "PGSSLMODE" => Some("disable".to_string()),
        _ => None,
    };
    let port = srv.port().to_string();
    let cfg = ConnConfig::for_pgbench(
        Some("127.0.0.1"),
        Some(&port),
        Some("scramuser"),
        "postgres",
        &env,
    )
    .expect("config");
    Connection::connect(&cfg).expect("PGPASSWORD");
}

#[test]
fn pgpass_file_is_used_and_permission_checked() {
    use std::os::unix::fs::PermissionsExt;
    let srv = password_server();
    let home = empty_home();
    let pgpass = home.join(".pgpass");
    std::fs::write(
        &pgpass,
        "# test\n127.0.0.1:*:postgres:scramuser:scram-pw\n*:*:*:md5user:bad\\:pw\n",
    )
    .expect("write");
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let cfg = |user: &str| {
        ConnConfig::parse_with_env(
            &format!(
                "host=127.0.0.1 port={} user={user} dbname=postgres sslmode=disable",
                srv.port()
            ),
            &env_with_home(&home),
        )
        .expect("config")
    };
    Connection::connect(&cfg("scramuser")).expect("password from ~/.pgpass");
    // A wrong password from the file gets libpq's extra line.
    let e = Connection::connect(&cfg("md5user")).expect_err("wrong pgpass password");
    assert!(
        e.to_string().ends_with(&format!(
            "FATAL:  password authentication failed for user \"md5user\"\npassword retrieved from file \"{}\"",
            pgpass.display()
        )),
        "{e}"
    );
    if let Some(p) = psql_error(
        &format!(
            "host=127.0.0.1 port={} user=md5user dbname=postgres sslmode=disable",
            srv.port()
        ),
        &[("PGPASSFILE", &pgpass.display().to_string())],
    ) {
        assert_eq!(e.to_string(), p);
    }
    // Group/world readable: ignored (with a warning on stderr), so no password.
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let e = Connection::connect(&cfg("scramuser")).expect_err("ignored file");
    assert!(e.needs_password(), "{e}");
}

#[test]
fn server_shutdown_while_connected_gives_a_clean_error() {
    let srv = TestServer::start(TestServerOptions::default());
    wait_until_accepting(&srv.conninfo("postgres"));
    let mut unix = Connection::connect(&config(&srv.conninfo("postgres"))).expect("connect");
    let mut tcp = Connection::connect(&config(&srv.tcp_conninfo("postgres"))).expect("connect");
    unix.execute("select 1").expect("alive");
    let mut hot = Connection::connect(&config(&srv.tcp_conninfo("postgres"))).expect("connect");
    hot.set_nonblocking(true).expect("nonblocking");
    assert!(srv.cluster().stop(), "server stopped");
    // The engine's view: the FATAL message, then end of stream, never a hang.
    let mut inp = BytesMut::new();
    let mut codes = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        assert!(Instant::now() < deadline, "no end of stream");
        match hot.try_read(&mut inp) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => {
                assert_eq!(
                    pgsurge_wire::io_error_text(&e, false),
                    pgsurge_wire::SERVER_CLOSED_TEXT
                );
                break;
            }
        }
        while let Some((m, len)) = codec::decode(&inp).expect("decode") {
            if let BackendMessage::ErrorResponse(f) = m {
                codes.push(f.code().to_string());
            }
            inp.advance(len);
        }
    }
    assert_eq!(codes, vec!["57P01".to_string()]);
    for c in [&mut unix, &mut tcp] {
        let e = c.execute("select 1").expect_err("server gone");
        let QueryError::ConnectionLost { message, .. } = &e else {
            panic!("expected a lost connection: {e:?}")
        };
        assert!(
            message.ends_with(
                "server closed the connection unexpectedly\n\tThis probably means the server terminated abnormally\n\tbefore or while processing the request.\n"
            ),
            "{message}"
        );
        assert!(
            message.starts_with("FATAL:  terminating connection due to administrator command\n")
                || message.starts_with("server closed"),
            "{message}"
        );
    }
    // Reconnecting now fails with the refused/missing-socket text.
    let e = Connection::connect(&config(&srv.conninfo("postgres"))).expect_err("down");
    assert!(e.to_string().contains("No such file or directory"), "{e}");
}

#[test]
fn query_params_sends_text_parameters_and_nulls() {
    let srv = shared();
    let mut c = Connection::connect(&config(&srv.conninfo("postgres"))).expect("connect");
    let r = c
        .query_params(
            "select $1::int * 2, $2::text is null, $3",
            &[Some("21"), None, Some("it's")],
        )
        .expect("query");
    assert_eq!(
        r[0].rows[0],
        vec![Some("42".into()), Some("t".into()), Some("it's".into())]
    );
    let e = c
        .query_params("select $1::int", &[Some("x")])
        .expect_err("bad int");
    assert_eq!(e.code(), Some("22P02"));
    assert_eq!(
        c.query_params("select 1", &[]).expect("ok")[0].get(0, 0),
        Some("1")
    );
}

#[test]
fn pgbench_connector_prompts_once_and_remembers() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let srv = password_server();
    let home = empty_home();
    let env = env_with_home(&home);
    let port = srv.port().to_string();
    let asked = Arc::new(AtomicUsize::new(0));
    let a2 = Arc::clone(&asked);
    let connector = PgbenchConnector::new(
        Some("127.0.0.1"),
        Some(&port),
        Some("scramuser"),
        "postgres",
        &env,
    )
    .with_prompt(Box::new(move |prompt| {
        assert_eq!(prompt, "Password: ");
        a2.fetch_add(1, Ordering::SeqCst);
        Some("scram-pw".into())
    }));
    for _ in 0..3 {
        let mut c = connector.connect().expect("connect after prompt");
        assert_eq!(
            c.simple_query("select current_user").expect("q")[0].get(0, 0),
            Some("scramuser")
        );
    }
    assert_eq!(asked.load(Ordering::SeqCst), 1, "prompted exactly once");
    // A wrong answer is not asked again: the failure is reported.
    let connector = PgbenchConnector::new(
        Some("127.0.0.1"),
        Some(&port),
        Some("scramuser"),
        "postgres",
        &env,
    )
    .with_prompt(Box::new(|_| Some("wrong".into())));
    let e = connector.connect().expect_err("wrong password");
    assert_eq!(e.code(), Some("28P01"));
    // An empty answer means no password, as in libpq.
    let connector = PgbenchConnector::new(
        Some("127.0.0.1"),
        Some(&port),
        Some("scramuser"),
        "postgres",
        &env,
    )
    .with_prompt(Box::new(|_| Some(String::new())));
    let e = connector.connect().expect_err("empty password");
    assert!(
        e.to_string().ends_with("fe_sendauth: no password supplied"),
        "{e}"
    );
    // Bad parameters are reported by connect, like PQconnectdbParams does.
    let connector = PgbenchConnector::new(None, None, None, "host=x bogus=1", &env);
    let e = connector.connect().expect_err("bad conninfo");
    assert_eq!(e.to_string(), "invalid connection option \"bogus\"");
}

#[test]
fn connections_can_move_between_threads() {
    fn assert_send<T: Send>() {}
    assert_send::<Connection>();
    assert_send::<pgsurge_wire::CancelToken>();
    fn assert_sync<T: Sync>() {}
    assert_sync::<PgbenchConnector>();
    let srv = shared();
    let mut c = Connection::connect(&config(&srv.conninfo("postgres"))).expect("connect");
    let r = std::thread::spawn(move || c.simple_query("select 5").expect("q"))
        .join()
        .expect("thread");
    assert_eq!(r[0].get(0, 0), Some("5"));
}
