//! The test fixture itself: shared server, databases, psql, env, private servers.

use pgsurge_server::testing::{TestServer, TestServerOptions};

#[test]
fn shared_server_answers_queries() {
    let srv = TestServer::shared();
    let db = srv.create_database("fixture");
    assert!(db.starts_with("fixture_"));
    assert_eq!(srv.psql(&db, "select current_database()").trim(), db);
    assert_eq!(srv.psql(&db, "show fsync").trim(), "off");
    let max: u32 = srv
        .psql(&db, "show max_connections")
        .trim()
        .parse()
        .unwrap();
    assert!(max >= 250);
    let v: u32 = srv
        .psql(&db, "show server_version_num")
        .trim()
        .parse()
        .unwrap();
    assert_eq!(v, srv.version_num());
    assert_eq!(srv.superuser(), "postgres");
    assert!(srv.conninfo(&db).contains(&format!("port={}", srv.port())));
}

#[test]
fn shared_server_is_the_same_across_tests_and_databases_are_unique() {
    let a = TestServer::shared();
    let b = TestServer::shared();
    assert!(std::ptr::eq(a, b));
    let d1 = a.create_database("same");
    let d2 = a.create_database("same");
    assert_ne!(d1, d2);
}

#[test]
fn env_reaches_child_processes() {
    let srv = TestServer::shared();
    let psql = srv.bin_dir().join("psql");
    let mut cmd = std::process::Command::new(psql);
    srv.apply_env(&mut cmd);
    let out = cmd
        .args(["-X", "-At", "-c", "select current_user"])
        .env("PGDATABASE", "postgres")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "postgres");
}

#[test]
fn tcp_listens_on_loopback() {
    let srv = TestServer::shared();
    let out = srv.psql("postgres", "select inet_server_addr() is null");
    assert_eq!(out.trim(), "t", "socket connection has no server address");
    let psql = srv.bin_dir().join("psql");
    let out = std::process::Command::new(psql)
        .args([
            "-X",
            "-At",
            "-d",
            &srv.tcp_conninfo("postgres"),
            "-c",
            "select inet_server_addr()",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "127.0.0.1");
}

#[test]
fn private_server_with_hba_settings_and_files() {
    let own = TestServer::start(TestServerOptions {
        settings: vec![("password_encryption".into(), "md5".into())],
        hba: vec!["host all md5user 127.0.0.1/32 md5".into()],
        files: vec![("extra/hello.txt".into(), b"hi".to_vec())],
        ..Default::default()
    });
    assert_ne!(own.port(), TestServer::shared().port());
    assert_eq!(
        own.psql("postgres", "show password_encryption").trim(),
        "md5"
    );
    let rules = own.psql(
        "postgres",
        "select user_name[1] from pg_hba_file_rules order by line_number limit 1",
    );
    assert_eq!(rules.trim(), "md5user");
    let data = own.data_dir().to_path_buf();
    assert_eq!(std::fs::read(data.join("extra/hello.txt")).unwrap(), b"hi");
    let pid = own.cluster().pid();
    drop(own);
    assert!(!data.exists(), "data directory removed on drop");
    assert!(!pgsurge_server::is_alive(pid), "postmaster stopped on drop");
}
