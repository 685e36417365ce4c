//! Error texts compared with another libpq's psql, typically libpq 18 from
//! `shared/tools/reference-pgbench.sh` (`PGSURGE_REF_PSQL=<bin>/psql`; `.ci/run` builds
//! it and sets the variable). Without it the test goes through the prerequisite gate,
//! so CI cannot skip it. Only cases that do not need TLS: the reference build has no
//! SSL support.

use crate::common;
use pgsurge_server::testing::{TestServer, TestServerOptions};
use pgsurge_wire::Connection;
use std::process::Command;

fn psql18(conninfo: &str) -> String {
    let bin = std::env::var("PGSURGE_REF_PSQL").expect("checked by the caller");
    let home = common::empty_home();
    let mut cmd = Command::new(bin);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("PG") {
            cmd.env_remove(&k);
        }
    }
    let out = cmd
        .env("HOME", &home)
        .env("PGPASSFILE", home.join("x"))
        .args(["-X", "-w", "-c", "select 1", conninfo])
        .output()
        .expect("psql18");
    let e = String::from_utf8_lossy(&out.stderr).into_owned();
    e.strip_prefix("psql: error: ")
        .unwrap_or(&e)
        .trim_end_matches('\n')
        .to_string()
}

#[test]
fn connection_error_texts_match_reference_libpq() {
    if std::env::var_os("PGSURGE_REF_PSQL").is_none() {
        pgsurge_testkit::missing_prerequisite(
            "PGSURGE_REF_PSQL, a psql built with libpq 18 (shared/tools/reference-pgbench.sh)",
        );
        return;
    }
    let srv = TestServer::start(TestServerOptions {
        hba: vec![
            "host all scramuser 127.0.0.1/32 scram-sha-256".into(),
            "host all md5user 127.0.0.1/32 md5".into(),
        ],
        ..Default::default()
    });
    common::wait_until_accepting(&srv.conninfo("postgres"));
    srv.psql("postgres", "create role scramuser login password 'pw'; set password_encryption='md5'; create role md5user login password 'pw';");
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let silent = l.local_addr().expect("addr").port();
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let p = srv.port();
    let cases = vec![
        srv.conninfo("nope_db"),
        srv.tcp_conninfo("nope_db"),
        format!("host=127.0.0.1 port={p} user=scramuser password=wrong dbname=postgres"),
        format!("host=127.0.0.1 port={p} user=md5user password=wrong dbname=postgres"),
        format!("host=127.0.0.1 port={p} user=scramuser dbname=postgres"),
        format!("host=127.0.0.1 port={dead} user=x"),
        format!("host=localhost,127.0.0.1 port={dead} user=x"),
        format!("host=/tmp/nonexist port={dead} user=x"),
        format!("host=127.0.0.1 port={silent} user=x connect_timeout=2"),
        format!("host=127.0.0.1 port={silent} user=x connect_timeout=2 sslmode=disable"),
        format!("host=nosuch.invalid user=x"),
        "bogus=1".to_string(),
        "port=abc".to_string(),
        "postgresql://h/d?x=1".to_string(),
        format!("host=127.0.0.1 port={silent} user=x connect_timeout=2 sslmode=disable"),
        format!("host=127.0.0.1 port={p} user=x require_auth=password,!md5"),
        format!("host=127.0.0.1 port={p} user=postgres dbname=postgres require_auth=scram-sha-256"),
        format!("host=127.0.0.1 port={p} user=md5user password=pw dbname=postgres require_auth=scram-sha-256"),
    ];
    let mut bad = 0;
    for c in cases {
        let ours = match pgsurge_wire::ConnConfig::parse_with_env(
            &c,
            &common::env_with_home(&common::empty_home()),
        ) {
            Err(e) => e.to_string(),
            Ok(cfg) => match Connection::connect(&cfg) {
                Ok(_) => "CONNECTED".into(),
                Err(e) => e.to_string(),
            },
        };
        let theirs = psql18(&c);
        if ours == theirs {
            eprintln!("SAME  {c}");
        } else {
            bad += 1;
            eprintln!("DIFF  {c}\n  ours:   {ours:?}\n  libpq18: {theirs:?}");
        }
    }
    drop(l);
    assert_eq!(bad, 0, "texts differ from the reference libpq (see above)");
}
