//! Parameter resolution tests: conninfo strings, URIs, pgbench's keyword order,
//! environment, service file, defaults, host lists. Error texts are libpq's
//! (checked against psql 15 on Debian).

use super::*;
use std::collections::HashMap;

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k: &str| map.get(k).cloned()
}

/// An environment with a fixed HOME (no real ~/.pg_service.conf) and nothing else.
fn clean_env() -> impl Fn(&str) -> Option<String> {
    env_of(&[
        ("HOME", "/nonexistent-home"),
        ("PGSYSCONFDIR", "/nonexistent-sysconf"),
    ])
}

fn parse(s: &str) -> Result<ConnConfig, ConfigError> {
    ConnConfig::parse_with_env(s, &clean_env())
}

fn err(s: &str) -> String {
    parse(s).expect_err(s).to_string()
}

#[test]
fn a_quoted_value_is_read_back_whole() {
    for value in [
        "plain",
        "",
        "a b",
        "tab\there",
        "line\nbreak",
        "vt\x0bff\x0ccr\r",
        "no\u{a0}break",
        "it's",
        r"C:\data",
        r"\'",
        "/tmp/dir with space",
    ] {
        let quoted = quote_conninfo(value);
        let text = format!("dbname={quoted} user=u");
        let parsed = parse_conninfo(&text).unwrap();
        assert_eq!(
            parsed,
            [
                ("dbname".to_string(), value.to_string()),
                ("user".into(), "u".into())
            ],
            "{value:?} as {quoted}"
        );
    }
    assert_eq!(quote_conninfo("abc"), "abc");
    assert_eq!(quote_conninfo("a\tb"), "'a\tb'");
    assert_eq!(quote_conninfo("it's"), r"'it\'s'");
    assert_eq!(quote_conninfo(""), "''");
}

#[test]
fn conninfo_quoting_and_escapes() {
    let c = parse(r"host = /tmp/sock  dbname='my db' user=a\ b password='it\'s' port=5433")
        .expect("valid");
    assert_eq!(c.host(), "/tmp/sock");
    assert_eq!(c.dbname(), "my db");
    assert_eq!(c.user(), "a b");
    assert_eq!(c.password(), Some("it's"));
    assert_eq!(c.port(), "5433");
    assert_eq!(
        c.hosts()[0].socket_path().as_deref(),
        Some("/tmp/sock/.s.PGSQL.5433")
    );
    // A later setting of the same keyword wins.
    assert_eq!(parse("dbname=a dbname=b").expect("valid").dbname(), "b");
}

#[test]
fn conninfo_errors_read_like_libpq() {
    assert_eq!(err("bogus=1"), "invalid connection option \"bogus\"");
    assert_eq!(
        err("host='abc"),
        "unterminated quoted string in connection info string"
    );
    assert_eq!(
        err("host"),
        "missing \"=\" after \"host\" in connection info string"
    );
    assert_eq!(
        err("port=abc"),
        "invalid integer value \"abc\" for connection option \"port\""
    );
    assert_eq!(err("port=0"), "invalid port number: \"0\"");
    assert_eq!(err("port=70000"), "invalid port number: \"70000\"");
    assert_eq!(err("sslmode=bogus"), "invalid sslmode value: \"bogus\"");
    assert_eq!(
        err("host=a,b port=1,2,3"),
        "could not match 3 port numbers to 2 hosts"
    );
    assert_eq!(
        err("host=/tmp hostaddr=1.2.3.4,5.6.7.8"),
        "could not match 1 host names to 2 hostaddr values"
    );
    assert_eq!(
        err("target_session_attrs=bogus"),
        "invalid target_session_attrs value: \"bogus\""
    );
    assert_eq!(
        err("channel_binding=foo"),
        "invalid channel_binding value: \"foo\""
    );
}

#[test]
fn uri_full_form() {
    let c = parse("postgresql://us%40er:p%3Ass@db.example.com:6543/my%20db?sslmode=require&application_name=x")
        .expect("valid");
    assert_eq!(c.user(), "us@er");
    assert_eq!(c.password(), Some("p:ss"));
    assert_eq!(c.host(), "db.example.com");
    assert_eq!(c.hosts()[0].kind, HostKind::Name);
    assert_eq!(c.port(), "6543");
    assert_eq!(c.dbname(), "my db");
    assert_eq!(c.ssl_mode(), SslMode::Require);
    assert_eq!(c.application_name(), Some("x"));
    assert_eq!(
        parse("postgres://h/d?ssl=true").expect("valid").ssl_mode(),
        SslMode::Require
    );
}

#[test]
fn uri_socket_dir_ipv6_and_host_lists() {
    let c = parse("postgresql://%2Fvar%2Flib%2Fpostgresql/dbname").expect("valid");
    assert_eq!(c.hosts()[0].kind, HostKind::UnixSocket);
    assert_eq!(c.host(), "/var/lib/postgresql");
    let c = parse("postgresql:///dbname?host=/tmp/x&port=5999").expect("valid");
    assert_eq!(
        c.hosts()[0].socket_path().as_deref(),
        Some("/tmp/x/.s.PGSQL.5999")
    );
    let c = parse("postgresql://[::1]:5433,[fe80::1%25eth0],h3:7/db").expect("valid");
    let hs: Vec<(&str, u16)> = c
        .hosts()
        .iter()
        .map(|h| (h.host.as_str(), h.port))
        .collect();
    assert_eq!(hs, vec![("::1", 5433), ("fe80::1%eth0", 5432), ("h3", 7)]);
    // No host at all: the default socket directory.
    let c = parse("postgresql://").expect("valid");
    assert_eq!(c.host(), default_socket_dir());
    assert_eq!(c.port(), "5432");
}

#[test]
fn uri_errors_read_like_libpq() {
    assert_eq!(
        err("postgresql://h/d?foo=1"),
        "invalid URI query parameter: \"foo\""
    );
    assert_eq!(
        err("postgresql://h/d?x"),
        "missing key/value separator \"=\" in URI query parameter: \"x\""
    );
    assert_eq!(
        err("postgresql://h/d?x=1=2"),
        "extra key/value separator \"=\" in URI query parameter: \"x=1=2\""
    );
    assert_eq!(
        err("postgresql://%zz/d"),
        "invalid percent-encoded token: \"%zz\""
    );
    assert_eq!(
        err("postgresql://h/%00"),
        "forbidden value %00 in percent-encoded value: \"%00\""
    );
    assert_eq!(
        err("postgresql://[::1"),
        "end of string reached when looking for matching \"]\" in IPv6 host address in URI: \"postgresql://[::1\""
    );
    assert_eq!(
        err("postgresql://[::1]x/d"),
        "unexpected character \"x\" at position 19 in URI (expected \":\" or \"/\"): \"postgresql://[::1]x/d\""
    );
    assert_eq!(
        err("postgresql://[]/d"),
        "IPv6 host address may not be empty in URI: \"postgresql://[]/d\""
    );
    assert_eq!(
        err("postgresql://h:5432x/d"),
        "invalid integer value \"5432x\" for connection option \"port\""
    );
}

#[test]
fn pgbench_keywords_and_expand_dbname() {
    let env = clean_env();
    let c = ConnConfig::for_pgbench(Some("/tmp"), Some("5440"), Some("bob"), "bench", &env)
        .expect("valid");
    assert_eq!(
        (c.host(), c.port().as_str(), c.user(), c.dbname()),
        ("/tmp", "5440", "bob", "bench")
    );
    assert_eq!(c.application_name(), Some("pgbench"));
    // A conninfo dbname overrides -h/-p/-U given before it, keeps the rest.
    let c = ConnConfig::for_pgbench(
        Some("/tmp"),
        Some("5440"),
        Some("bob"),
        "host=/other dbname=real application_name=mine",
        &env,
    )
    .expect("valid");
    assert_eq!(
        (c.host(), c.port().as_str(), c.user(), c.dbname()),
        ("/other", "5440", "bob", "real")
    );
    assert_eq!(c.application_name(), Some("mine"));
    // A URI dbname too.
    let c = ConnConfig::for_pgbench(None, None, None, "postgresql://u@127.0.0.1:5999/d", &env)
        .expect("valid");
    assert_eq!(
        (c.host(), c.port().as_str(), c.user(), c.dbname()),
        ("127.0.0.1", "5999", "u", "d")
    );
    // Empty values count as unset.
    let c = ConnConfig::for_pgbench(Some(""), Some(""), Some("x"), "", &env).expect("valid");
    assert_eq!((c.host(), c.dbname()), (default_socket_dir(), "x"));
    // Bad conninfo in dbname is reported as such.
    let e = ConnConfig::for_pgbench(None, None, None, "host=a nope=1", &env).expect_err("bad");
    assert_eq!(e.to_string(), "invalid connection option \"nope\"");
}

#[test]
fn environment_fills_unset_keywords() {
    let env = env_of(&[
        ("HOME", "/nonexistent-home"),
        ("PGSYSCONFDIR", "/nonexistent"),
        ("PGHOST", "h1,h2"),
        ("PGPORT", "5001,5002"),
        ("PGUSER", "envuser"),
        ("PGDATABASE", "envdb"),
        ("PGPASSWORD", "envpw"),
        ("PGAPPNAME", "envapp"),
        ("PGOPTIONS", "-c work_mem=64MB"),
        ("PGCONNECT_TIMEOUT", "1"),
        ("PGSSLMODE", "disable"),
        ("PGTARGETSESSIONATTRS", "read-write"),
    ]);
    let c = ConnConfig::for_pgbench(None, None, None, "", &env).expect("valid");
    let hs: Vec<(&str, u16)> = c
        .hosts()
        .iter()
        .map(|h| (h.host.as_str(), h.port))
        .collect();
    assert_eq!(hs, vec![("h1", 5001), ("h2", 5002)]);
    assert_eq!(
        (c.user(), c.dbname(), c.password()),
        ("envuser", "envdb", Some("envpw"))
    );
    assert_eq!(c.application_name(), Some("envapp"));
    assert_eq!(c.options(), Some("-c work_mem=64MB"));
    // libpq raises a 1-second timeout to 2.
    assert_eq!(c.connect_timeout(), Some(Duration::from_secs(2)));
    assert_eq!(c.ssl_mode(), SslMode::Disable);
    assert_eq!(c.target_session_attrs(), TargetSessionAttrs::ReadWrite);
    // Explicit options win over the environment.
    let c =
        ConnConfig::for_pgbench(Some("/tmp"), Some("1"), Some("me"), "db", &env).expect("valid");
    assert_eq!(
        (c.host(), c.port().as_str(), c.user(), c.dbname()),
        ("/tmp", "1", "me", "db")
    );
    // PGHOSTADDR pairs with hosts; the address is what gets connected to.
    let env = env_of(&[("HOME", "/x"), ("PGHOSTADDR", "127.0.0.1"), ("PGUSER", "u")]);
    let c = ConnConfig::for_pgbench(Some("db.local"), None, None, "d", &env).expect("valid");
    assert_eq!(c.hosts()[0].kind, HostKind::Address);
    assert_eq!(c.hosts()[0].hostaddr.as_deref(), Some("127.0.0.1"));
    assert_eq!(c.host(), "db.local");
}

#[test]
fn defaults_user_and_dbname() {
    let c = parse("").expect("valid");
    assert!(!c.user().is_empty(), "defaults to the OS user");
    assert_eq!(c.dbname(), c.user());
    assert_eq!(c.ssl_mode(), SslMode::Prefer);
    assert_eq!(c.connect_timeout(), None);
    assert_eq!(c.host(), default_socket_dir());
    assert_eq!(
        c.passfile(),
        Some(PathBuf::from("/nonexistent-home/.pgpass"))
    );
    let c = parse("connect_timeout=0 passfile=/p").expect("valid");
    assert_eq!(c.connect_timeout(), None);
    assert_eq!(c.passfile(), Some(PathBuf::from("/p")));
    assert_eq!(
        err("connect_timeout=abc"),
        "invalid integer value \"abc\" for connection option \"connect_timeout\""
    );
}

#[test]
fn service_file_sits_between_explicit_and_environment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("services");
    std::fs::write(&file, "[bench]\nhost=/svc\nport=6000\ndbname=svcdb\n").expect("write");
    let file_s = file.display().to_string();
    let env = env_of(&[
        ("HOME", "/nonexistent-home"),
        ("PGSERVICEFILE", &file_s),
        ("PGSERVICE", "bench"),
        ("PGPORT", "7000"),
        ("PGUSER", "envuser"),
    ]);
    let c = ConnConfig::for_pgbench(None, None, None, "", &env).expect("valid");
    assert_eq!(
        (c.host(), c.port().as_str(), c.dbname(), c.user()),
        ("/svc", "6000", "svcdb", "envuser")
    );
    let c = ConnConfig::for_pgbench(None, Some("1"), None, "service=bench", &env).expect("valid");
    assert_eq!(c.port(), "1");
    let e = ConnConfig::for_pgbench(None, None, None, "service=other", &env).expect_err("missing");
    assert_eq!(e.to_string(), "definition of service \"other\" not found");
}

#[test]
fn tls_option_rules() {
    assert_eq!(
        err("sslnegotiation=bogus"),
        "invalid sslnegotiation value: \"bogus\""
    );
    for mode in ["disable", "allow", "prefer"] {
        assert_eq!(
            err(&format!("sslmode={mode} sslnegotiation=direct")),
            format!("weak sslmode \"{mode}\" may not be used with sslnegotiation=direct (use \"require\", \"verify-ca\", or \"verify-full\")")
        );
    }
    assert!(parse("sslmode=require sslnegotiation=direct").is_ok());
    // sslrootcert=system: verify-full by default, and nothing weaker.
    assert_eq!(
        parse("sslrootcert=system").expect("valid").ssl_mode(),
        SslMode::VerifyFull
    );
    assert_eq!(
        err("sslrootcert=system sslmode=require"),
        "weak sslmode \"require\" may not be used with sslrootcert=system (use \"verify-full\")"
    );
    assert_eq!(
        err("load_balance_hosts=x"),
        "invalid load_balance_hosts value: \"x\""
    );
    let c = parse("host=a,b,c,d,e,f,g,h load_balance_hosts=random").expect("valid");
    let mut names: Vec<&str> = c.hosts().iter().map(|h| h.host.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, vec!["a", "b", "c", "d", "e", "f", "g", "h"]);
}

/// Random strings built from the characters that matter to the parsers must
/// parse or fail cleanly, never panic.
#[test]
fn random_conninfo_and_uris_never_panic() {
    let alphabet: Vec<char> = "postgresql://@:/?&=,[]%' \\\thost port user dbname 0123456789abcfé"
        .chars()
        .collect();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for i in 0..20_000 {
        let mut s = String::new();
        if i % 2 == 0 {
            s.push_str("postgresql://");
        }
        let len = (x % 30) as usize;
        for _ in 0..len {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            s.push(alphabet[(x % alphabet.len() as u64) as usize]);
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let _ = parse(&s);
    }
}
