//! TLS against a real server with certificates made here (rcgen): every sslmode
//! that uses TLS, verification failures worded as psql words them, the default
//! `~/.postgresql/` files, client certificates, SCRAM-SHA-256-PLUS channel
//! binding, and the non-blocking path over TLS.

use crate::common::{empty_home, env_with_home, psql_error, wait_until_accepting};
use bytes::{Buf, BytesMut};
use pgsurge_server::testing::{TestServer, TestServerOptions};
use pgsurge_wire::codec::{self, BackendMessage};
use pgsurge_wire::{ConnConfig, ConnectErrorKind, Connection};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

struct Pki {
    ca_pem: String,
    other_ca_pem: String,
    server_cert: String,
    server_key: String,
    client_cert: String,
    client_key: String,
}

fn new_ca(name: &str) -> (String, Issuer<'static, KeyPair>) {
    let mut p = CertificateParams::new(Vec::<String>::new()).expect("params");
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name.push(DnType::CommonName, name);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let key = KeyPair::generate().expect("key");
    let cert = p.self_signed(&key).expect("self-signed");
    (cert.pem(), Issuer::new(p, key))
}

fn leaf(issuer: &Issuer<'static, KeyPair>, sans: &[&str], cn: &str) -> (String, String) {
    let mut p = CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        .expect("params");
    p.distinguished_name.push(DnType::CommonName, cn);
    let key = KeyPair::generate().expect("key");
    let cert = p.signed_by(&key, issuer).expect("sign");
    (cert.pem(), key.serialize_pem())
}

fn pki() -> &'static Pki {
    static PKI: OnceLock<Pki> = OnceLock::new();
    PKI.get_or_init(|| {
        let (ca_pem, ca) = new_ca("pgsurge test CA");
        let (other_ca_pem, _) = new_ca("some other CA");
        let (server_cert, server_key) = leaf(&ca, &["localhost"], "localhost");
        let (client_cert, client_key) = leaf(&ca, &[], "certuser");
        Pki {
            ca_pem,
            other_ca_pem,
            server_cert,
            server_key,
            client_cert,
            client_key,
        }
    })
}

fn tls_server() -> &'static TestServer {
    static SRV: OnceLock<TestServer> = OnceLock::new();
    SRV.get_or_init(|| {
        let p = pki();
        let srv = TestServer::start(TestServerOptions {
            settings: vec![
                ("ssl".into(), "on".into()),
                ("ssl_ca_file".into(), "ca.crt".into()),
            ],
            hba: vec![
                "hostssl all scramuser 127.0.0.1/32 scram-sha-256".into(),
                "hostnossl all scramuser 127.0.0.1/32 reject".into(),
                "hostssl all certuser 127.0.0.1/32 cert".into(),
            ],
            files: vec![
                ("server.crt".into(), p.server_cert.clone().into_bytes()),
                ("server.key".into(), p.server_key.clone().into_bytes()),
                ("ca.crt".into(), p.ca_pem.clone().into_bytes()),
            ],
            ..Default::default()
        });
        wait_until_accepting(&srv.conninfo("postgres"));
        srv.psql(
            "postgres",
            "create role scramuser login password 'scram-pw'; create role certuser login;",
        );
        srv
    })
}

/// Writes `contents` to `dir/name` with mode 0600 and returns the path.
fn file(dir: &Path, name: &str, contents: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, contents).expect("write");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    p
}

fn connect(conninfo: &str, home: &Path) -> Result<Connection, pgsurge_wire::ConnectError> {
    let cfg = ConnConfig::parse_with_env(conninfo, &env_with_home(home)).expect("config");
    Connection::connect(&cfg)
}

fn ssl_in_use(c: &mut Connection) -> bool {
    let r = c
        .simple_query("select ssl from pg_stat_ssl where pid = pg_backend_pid()")
        .expect("pg_stat_ssl");
    r[0].get(0, 0) == Some("t")
}

#[test]
fn require_and_prefer_use_tls() {
    let srv = tls_server();
    let home = empty_home();
    for mode in ["require", "prefer"] {
        let mut c = connect(
            &format!(
                "host=127.0.0.1 port={} user=postgres dbname=postgres sslmode={mode}",
                srv.port()
            ),
            &home,
        )
        .unwrap_or_else(|e| panic!("{mode}: {e}"));
        assert!(c.is_tls(), "{mode}");
        assert!(ssl_in_use(&mut c), "{mode}: server sees TLS");
    }
    let mut c = connect(
        &format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres sslmode=disable",
            srv.port()
        ),
        &home,
    )
    .expect("disable");
    assert!(!c.is_tls());
    assert!(!ssl_in_use(&mut c));
}

#[test]
fn verify_ca_and_verify_full() {
    let srv = tls_server();
    let home = empty_home();
    let ca = file(&home, "ca.pem", &pki().ca_pem);
    let other = file(&home, "other.pem", &pki().other_ca_pem);
    let base = |host: &str, mode: &str, root: &Path| {
        format!(
            "host={host} port={} user=postgres dbname=postgres sslmode={mode} sslrootcert={}",
            srv.port(),
            root.display()
        )
    };
    // verify-ca does not check the name; verify-full does.
    connect(&base("127.0.0.1", "verify-ca", &ca), &home).expect("verify-ca by IP");
    connect(&base("localhost", "verify-full", &ca), &home).expect("verify-full by name");

    let conninfo = base("127.0.0.1", "verify-full", &ca);
    let e = connect(&conninfo, &home).expect_err("name mismatch");
    assert_eq!(e.kind(), ConnectErrorKind::Tls);
    assert_eq!(
        e.to_string(),
        format!(
            // libpq also examines the subject CN when no SAN is an IP address.
            "connection to server at \"127.0.0.1\", port {} failed: server certificate for \"localhost\" (and 1 other name) does not match host name \"127.0.0.1\"",
            srv.port()
        )
    );
    if let Some(p) = psql_error(&conninfo, &[]) {
        assert_eq!(e.to_string(), p);
    }

    let conninfo = base("127.0.0.1", "verify-ca", &other);
    let e = connect(&conninfo, &home).expect_err("unknown CA");
    assert_eq!(
        e.to_string(),
        format!(
            "connection to server at \"127.0.0.1\", port {} failed: SSL error: certificate verify failed",
            srv.port()
        )
    );
    if let Some(p) = psql_error(&conninfo, &[]) {
        assert_eq!(e.to_string(), p);
    }
}

#[test]
fn default_files_under_home_postgresql() {
    let srv = tls_server();
    let home = empty_home();
    let conninfo = format!(
        "host=localhost port={} user=postgres dbname=postgres sslmode=verify-full",
        srv.port()
    );
    let e = connect(&conninfo, &home).expect_err("no root.crt");
    assert!(
        e.to_string().ends_with(&format!(
            "failed: root certificate file \"{}/.postgresql/root.crt\" does not exist\n\
             Either provide the file, use the system's trusted roots with sslrootcert=system, or change sslmode to disable server certificate verification.",
            home.display()
        )),
        "{e}"
    );
    let dot = home.join(".postgresql");
    std::fs::create_dir(&dot).expect("mkdir");
    file(&dot, "root.crt", &pki().ca_pem);
    connect(&conninfo, &home).expect("~/.postgresql/root.crt used");
    // As in libpq, a root.crt present makes sslmode=require verify the chain.
    file(&dot, "root.crt", &pki().other_ca_pem);
    let e = connect(
        &format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres sslmode=require",
            srv.port()
        ),
        &home,
    )
    .expect_err("require verifies with root.crt present");
    assert!(
        e.to_string()
            .ends_with("SSL error: certificate verify failed"),
        "{e}"
    );
    // Client certificate from the default paths.
    file(&dot, "root.crt", &pki().ca_pem);
    file(&dot, "postgresql.crt", &pki().client_cert);
    file(&dot, "postgresql.key", &pki().client_key);
    let mut c = connect(
        &format!(
            "host=localhost port={} user=certuser dbname=postgres sslmode=verify-full",
            srv.port()
        ),
        &home,
    )
    .expect("cert auth");
    let r = c.simple_query("select current_user").expect("query");
    assert_eq!(r[0].get(0, 0), Some("certuser"));
    // A key readable by others is refused, as libpq does.
    std::fs::set_permissions(
        dot.join("postgresql.key"),
        std::fs::Permissions::from_mode(0o644),
    )
    .expect("chmod");
    let e = connect(
        &format!(
            "host=localhost port={} user=certuser dbname=postgres",
            srv.port()
        ),
        &home,
    )
    .expect_err("key too open");
    assert!(e.to_string().contains("has group or world access"), "{e}");
}

#[test]
fn scram_sha_256_plus_channel_binding() {
    let srv = tls_server();
    let home = empty_home();
    let conninfo = |extra: &str| {
        format!(
            "host=127.0.0.1 port={} user=scramuser password=scram-pw dbname=postgres {extra}",
            srv.port()
        )
    };
    // channel_binding=require only succeeds with SCRAM-SHA-256-PLUS.
    let mut c =
        connect(&conninfo("sslmode=require channel_binding=require"), &home).expect("SCRAM-PLUS");
    assert!(ssl_in_use(&mut c));
    connect(&conninfo("sslmode=require channel_binding=disable"), &home)
        .expect("plain SCRAM over TLS");
    // Wrong password over TLS.
    let e = connect(
        &format!(
            "host=127.0.0.1 port={} user=scramuser password=nope dbname=postgres sslmode=require",
            srv.port()
        ),
        &home,
    )
    .expect_err("wrong password");
    assert_eq!(e.code(), Some("28P01"));
    // Without TLS the hba rule rejects scramuser; channel_binding=require fails first.
    let e = connect(&conninfo("sslmode=disable"), &home).expect_err("hostnossl reject");
    assert!(
        e.to_string().contains(
            "FATAL:  pg_hba.conf rejects connection for host \"127.0.0.1\", user \"scramuser\""
        ),
        "{e}"
    );
}

#[test]
fn nonblocking_hot_path_over_tls() {
    let srv = tls_server();
    let home = empty_home();
    let mut c = connect(
        &format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres sslmode=require",
            srv.port()
        ),
        &home,
    )
    .expect("connect");
    c.set_nonblocking(true).expect("nonblocking");
    let mut out = BytesMut::new();
    // A large result crosses many TLS records.
    codec::query("select repeat('x', 200000), 2", &mut out).expect("query");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !out.is_empty() {
        match c.try_write(&out) {
            Ok(n) => out.advance(n),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("{e}"),
        }
    }
    while c.wants_write() {
        match c.flush() {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("{e}"),
        }
        assert!(Instant::now() < deadline);
    }
    let mut inp = BytesMut::new();
    let mut got = None;
    'outer: loop {
        assert!(Instant::now() < deadline, "no ReadyForQuery");
        match c.try_read(&mut inp) {
            Ok(0) => panic!("closed"),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => panic!("{e}"),
        }
        while let Some((m, len)) = codec::decode(&inp).expect("decode") {
            let ready = match m {
                BackendMessage::DataRow(r) => {
                    let v: Vec<usize> = r.values().map(|v| v.map_or(0, <[u8]>::len)).collect();
                    got = Some(v);
                    false
                }
                BackendMessage::ReadyForQuery(_) => true,
                _ => false,
            };
            inp.advance(len);
            if ready {
                break 'outer;
            }
        }
    }
    assert_eq!(got, Some(vec![200_000, 1]));
}
