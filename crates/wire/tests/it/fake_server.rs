//! Connection tests against a scripted in-process "server" on 127.0.0.1: the
//! authentication exchanges (a SCRAM-SHA-256 known-answer check computed here
//! independently from RFC 5802/7677, MD5, cleartext), missing passwords,
//! `connect_timeout` against a server that never answers, and a server that hangs
//! up. No PostgreSQL needed.

use crate::common;

use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use pgsurge_wire::{ConnConfig, ConnectErrorKind, Connection};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut m = Hmac::<Sha256>::new_from_slice(key).expect("any key length");
    m.update(data);
    m.finalize().into_bytes().to_vec()
}

/// RFC 5802 Hi() with HMAC-SHA-256.
fn hi(password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
    let mut u = hmac(password, &[salt, &[0, 0, 0, 1]].concat());
    let mut out = u.clone();
    for _ in 1..iterations {
        u = hmac(password, &u);
        for (o, x) in out.iter_mut().zip(&u) {
            *o ^= x;
        }
    }
    out
}

/// (client proof, server signature) for an exchange.
fn scram_expected(
    password: &str,
    salt: &[u8],
    iterations: u32,
    auth_message: &str,
) -> (Vec<u8>, Vec<u8>) {
    let salted = hi(password.as_bytes(), salt, iterations);
    let client_key = hmac(&salted, b"Client Key");
    let stored_key = Sha256::digest(&client_key);
    let client_sig = hmac(&stored_key, auth_message.as_bytes());
    let proof: Vec<u8> = client_key
        .iter()
        .zip(&client_sig)
        .map(|(a, b)| a ^ b)
        .collect();
    let server_key = hmac(&salted, b"Server Key");
    (proof, hmac(&server_key, auth_message.as_bytes()))
}

#[test]
fn scram_test_side_matches_rfc7677_vector() {
    // RFC 7677 section 3 example (user "user", password "pencil").
    let client_first_bare = "n=user,r=rOprNGfwEbeRWgbNEkqO";
    let server_first =
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
    let client_final_wo_proof = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
    let auth = format!("{client_first_bare},{server_first},{client_final_wo_proof}");
    let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").expect("b64");
    let (proof, sig) = scram_expected("pencil", &salt, 4096, &auth);
    assert_eq!(
        B64.encode(proof),
        "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    );
    assert_eq!(
        B64.encode(sig),
        "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    );
}

// ---- a tiny scripted server ---------------------------------------------------

struct Peer(TcpStream);

impl Peer {
    fn read_startup(&mut self) -> Vec<(String, String)> {
        let mut len = [0u8; 4];
        self.0.read_exact(&mut len).expect("startup length");
        let mut body = vec![0u8; u32::from_be_bytes(len) as usize - 4];
        self.0.read_exact(&mut body).expect("startup body");
        assert_eq!(&body[..4], &196608u32.to_be_bytes(), "protocol 3.0");
        let parts: Vec<String> = body[4..]
            .split(|b| *b == 0)
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect();
        parts
            .chunks(2)
            .filter(|c| c.len() == 2 && !c[0].is_empty())
            .map(|c| (c[0].clone(), c[1].clone()))
            .collect()
    }

    fn read_msg(&mut self) -> (u8, Vec<u8>) {
        let mut head = [0u8; 5];
        self.0.read_exact(&mut head).expect("message header");
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut body = vec![0u8; len - 4];
        self.0.read_exact(&mut body).expect("message body");
        (head[0], body)
    }

    fn send(&mut self, tag: u8, body: &[u8]) {
        self.0.write_all(&frame(tag, body)).expect("send");
    }

    fn auth(&mut self, code: i32, data: &[u8]) {
        self.send(b'R', &[&code.to_be_bytes()[..], data].concat());
    }

    /// AuthenticationOk through ReadyForQuery in one write: a client that gives up at
    /// the first message (require_auth) then cannot make a later write fail.
    fn ready(&mut self) {
        let mut m = frame(b'R', &0i32.to_be_bytes());
        m.extend(frame(
            b'K',
            &[&4242i32.to_be_bytes()[..], &7i32.to_be_bytes()].concat(),
        ));
        m.extend(frame(b'S', b"server_version\x0016.4\x00"));
        m.extend(frame(b'Z', b"I"));
        self.0.write_all(&m).expect("send");
    }

    fn fatal(&mut self, code: &str, msg: &str) {
        let body = format!("SFATAL\0VFATAL\0C{code}\0M{msg}\0\0");
        self.send(b'E', body.as_bytes());
    }
}

/// Runs `script` for one connection on a fresh port; returns the port and the
/// thread (join it to surface the script's assertion failures).
/// One backend message: tag, length, body.
fn frame(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![tag];
    m.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    m.extend_from_slice(body);
    m
}

fn serve(script: impl FnOnce(Peer) + Send + 'static) -> (u16, thread::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    let h = thread::spawn(move || {
        let (s, _) = l.accept().expect("accept");
        script(Peer(s));
    });
    (port, h)
}

fn cfg(port: u16, extra: &str) -> ConnConfig {
    let env = |k: &str| (k == "HOME").then(|| "/nonexistent-home".to_string());
    ConnConfig::parse_with_env(
        &format!("host=127.0.0.1 port={port} user=alice dbname=db sslmode=disable {extra}"),
        &env,
    )
    .expect("valid conninfo")
}

#[test]
fn scram_sha_256_exchange_known_answer() {
    let salt = b"0123456789abcdef".to_vec();
    let (port, h) = serve(move |mut p| {
        let params = p.read_startup();
        assert!(params.contains(&("user".into(), "alice".into())));
        assert!(params.contains(&("database".into(), "db".into())));
        assert!(params.contains(&("application_name".into(), "pgbench".into())));
        p.auth(10, b"SCRAM-SHA-256\0\0");
        let (t, body) = p.read_msg();
        assert_eq!(t, b'p');
        let nul = body.iter().position(|b| *b == 0).expect("mechanism");
        assert_eq!(&body[..nul], b"SCRAM-SHA-256");
        let client_first = String::from_utf8(body[nul + 5..].to_vec()).expect("utf8");
        // No TLS: the client must say it does not support channel binding.
        let bare = client_first
            .strip_prefix("n,,")
            .expect("gs2 header n,,")
            .to_string();
        let cnonce = bare.strip_prefix("n=,r=").expect("nonce").to_string();
        let server_first = format!("r={cnonce}SERVERNONCE,s={},i=4096", B64.encode(&salt));
        p.auth(11, server_first.as_bytes());
        let (t, body) = p.read_msg();
        assert_eq!(t, b'p');
        let client_final = String::from_utf8(body).expect("utf8");
        let (without_proof, proof) = client_final.split_once(",p=").expect("proof");
        assert_eq!(without_proof, format!("c=biws,r={cnonce}SERVERNONCE"));
        let auth = format!("{bare},{server_first},{without_proof}");
        let (expect_proof, sig) = scram_expected("s3cret", &salt, 4096, &auth);
        assert_eq!(proof, B64.encode(expect_proof), "client proof");
        p.auth(12, format!("v={}", B64.encode(sig)).as_bytes());
        p.ready();
        let (t, _) = p.read_msg();
        assert_eq!(t, b'X', "Terminate on close");
    });
    let conn = Connection::connect(&cfg(
        port,
        "password=s3cret fallback_application_name=pgbench",
    ))
    .expect("SCRAM login");
    assert_eq!(conn.backend_pid(), 4242);
    assert_eq!(conn.server_version_num(), 160004);
    assert_eq!(conn.host(), "127.0.0.1");
    conn.close();
    h.join().expect("server script");
}

#[test]
fn scram_rejects_wrong_server_signature() {
    let (port, h) = serve(|mut p| {
        p.read_startup();
        p.auth(10, b"SCRAM-SHA-256\0\0");
        let (_, body) = p.read_msg();
        let nul = body.iter().position(|b| *b == 0).expect("mechanism");
        let cnonce = String::from_utf8_lossy(&body[nul + 5 + 8..]).into_owned();
        p.auth(
            11,
            format!("r={cnonce}X,s={},i=4096", B64.encode(b"salt")).as_bytes(),
        );
        let _ = p.read_msg();
        p.auth(12, format!("v={}", B64.encode([0u8; 32])).as_bytes());
        // The client hangs up.
        let mut b = [0u8; 1];
        let _ = p.0.read(&mut b);
    });
    let e = Connection::connect(&cfg(port, "password=pw")).expect_err("bad signature");
    assert_eq!(
        e.to_string(),
        format!(
            "connection to server at \"127.0.0.1\", port {port} failed: incorrect server signature"
        )
    );
    drop(e);
    h.join().expect("server script");
}

#[test]
fn md5_and_cleartext_passwords() {
    let (port, h) = serve(|mut p| {
        p.read_startup();
        p.auth(5, b"abcd");
        let (t, body) = p.read_msg();
        assert_eq!(t, b'p');
        // md5(md5(password + user) + salt), hex, "md5" prefix.
        let inner = format!("{:x}", md5_of(b"pwalice"));
        let outer = format!("md5{:x}", md5_of(&[inner.as_bytes(), b"abcd"].concat()));
        assert_eq!(body, [outer.as_bytes(), b"\0"].concat());
        p.ready();
    });
    Connection::connect(&cfg(port, "password=pw")).expect("md5 login");
    h.join().expect("server script");

    let (port, h) = serve(|mut p| {
        p.read_startup();
        p.auth(3, b"");
        let (t, body) = p.read_msg();
        assert_eq!((t, body.as_slice()), (b'p', &b"pw\0"[..]));
        p.ready();
        // Dropping the connection sends Terminate, as PQfinish does.
        let (t, _) = p.read_msg();
        assert_eq!(t, b'X');
    });
    drop(Connection::connect(&cfg(port, "password=pw")).expect("cleartext login"));
    h.join().expect("server script");
}

/// MD5 via postgres-protocol's password helper would hide mistakes; compute it
/// with a minimal independent implementation instead.
fn md5_of(data: &[u8]) -> Md5Hex {
    Md5Hex(md5_digest(data))
}

struct Md5Hex([u8; 16]);

impl std::fmt::LowerHex for Md5Hex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// RFC 1321 MD5.
fn md5_digest(input: &[u8]) -> [u8; 16] {
    const S: [u32; 64] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5,
        9, 14, 20, 5, 9, 14, 20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10,
        15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
    ];
    let k: Vec<u32> = (0..64)
        .map(|i| ((i as f64 + 1.0).sin().abs() * 4294967296.0) as u32)
        .collect();
    let mut msg = input.to_vec();
    let bit_len = (input.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bit_len.to_le_bytes());
    let (mut a0, mut b0, mut c0, mut d0) =
        (0x67452301u32, 0xefcdab89u32, 0x98badcfeu32, 0x10325476u32);
    for chunk in msg.chunks(64) {
        let m: Vec<u32> = chunk
            .chunks(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect();
        let (mut a, mut b, mut c, mut d) = (a0, b0, c0, d0);
        for i in 0..64 {
            let (f, g) = match i / 16 {
                0 => ((b & c) | (!b & d), i),
                1 => ((d & b) | (!d & c), (5 * i + 1) % 16),
                2 => (b ^ c ^ d, (3 * i + 5) % 16),
                _ => (c ^ (b | !d), (7 * i) % 16),
            };
            let f = f.wrapping_add(a).wrapping_add(k[i]).wrapping_add(m[g]);
            a = d;
            d = c;
            c = b;
            b = b.wrapping_add(f.rotate_left(S[i]));
        }
        a0 = a0.wrapping_add(a);
        b0 = b0.wrapping_add(b);
        c0 = c0.wrapping_add(c);
        d0 = d0.wrapping_add(d);
    }
    let mut out = [0u8; 16];
    for (i, v) in [a0, b0, c0, d0].iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
    }
    out
}

#[test]
fn md5_helper_matches_rfc1321() {
    assert_eq!(
        format!("{:x}", md5_of(b"")),
        "d41d8cd98f00b204e9800998ecf8427e"
    );
    assert_eq!(
        format!("{:x}", md5_of(b"abc")),
        "900150983cd24fb0d6963f7d28e17f72"
    );
}

#[test]
fn no_password_supplied() {
    let (port, h) = serve(|mut p| {
        p.read_startup();
        p.auth(10, b"SCRAM-SHA-256\0\0");
        // The client hangs up; reading fails or returns EOF.
        let mut b = [0u8; 1];
        let _ = p.0.read(&mut b);
    });
    let e = Connection::connect(&cfg(port, "passfile=/nonexistent")).expect_err("no password");
    assert!(e.needs_password());
    assert_eq!(e.kind(), ConnectErrorKind::Auth);
    assert_eq!(
        e.to_string(),
        format!("connection to server at \"127.0.0.1\", port {port} failed: fe_sendauth: no password supplied")
    );
    h.join().expect("server script");
}

#[test]
fn server_error_during_startup_stops_the_host_walk() {
    let (port, h) = serve(|mut p| {
        p.read_startup();
        p.fatal("3D000", "database \"db\" does not exist");
    });
    // The second host would be refused; libpq does not try it after a server error.
    let env = |k: &str| (k == "HOME").then(|| "/nonexistent-home".to_string());
    let two = ConnConfig::parse_with_env(
        &format!("host=127.0.0.1,127.0.0.1 port={port},1 user=alice dbname=db sslmode=disable"),
        &env,
    )
    .expect("valid");
    let e = Connection::connect(&two).expect_err("fatal");
    assert_eq!(e.code(), Some("3D000"));
    assert_eq!(
        e.to_string(),
        format!("connection to server at \"127.0.0.1\", port {port} failed: FATAL:  database \"db\" does not exist")
    );
    h.join().expect("server script");
}

#[test]
fn connect_timeout_against_a_server_that_never_answers() {
    // The kernel completes the TCP handshake from the listen backlog; nothing ever
    // answers the startup packet.
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    let t0 = Instant::now();
    let e = Connection::connect(&cfg(port, "connect_timeout=2")).expect_err("timeout");
    let took = t0.elapsed();
    assert_eq!(e.kind(), ConnectErrorKind::Timeout);
    assert_eq!(
        e.to_string(),
        format!("connection to server at \"127.0.0.1\", port {port} failed: timeout expired")
    );
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(30),
        "{took:?}"
    );
    if let Some(p) = common::psql_error(
        &format!(
            "host=127.0.0.1 port={port} user=alice dbname=db sslmode=disable connect_timeout=2"
        ),
        &[],
    ) {
        assert_eq!(e.to_string(), p);
    }
    // Two hosts: the timeout applies to each, and both failures are reported.
    let env = |k: &str| (k == "HOME").then(|| "/nonexistent-home".to_string());
    let two = ConnConfig::parse_with_env(
        &format!("host=127.0.0.1,127.0.0.1 port={port} connect_timeout=1 user=a dbname=b sslmode=disable"),
        &env,
    )
    .expect("valid");
    let t0 = Instant::now();
    let e = Connection::connect(&two).expect_err("timeout");
    let line =
        format!("connection to server at \"127.0.0.1\", port {port} failed: timeout expired");
    assert_eq!(e.to_string(), format!("{line}\n{line}"));
    assert!(
        t0.elapsed() >= Duration::from_millis(3900),
        "{:?}",
        t0.elapsed()
    );
    drop(l);
}

#[test]
fn server_hangs_up_during_startup() {
    let (port, h) = serve(|mut p| {
        p.read_startup();
    });
    let e = Connection::connect(&cfg(port, "")).expect_err("hang-up");
    assert_eq!(
        e.to_string(),
        format!(
            "connection to server at \"127.0.0.1\", port {port} failed: server closed the connection unexpectedly\n\
             \tThis probably means the server terminated abnormally\n\tbefore or while processing the request."
        )
    );
    h.join().expect("server script");
}

#[test]
fn refused_and_unresolvable() {
    // Find a port nobody listens on.
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let e = Connection::connect(&cfg(port, "")).expect_err("refused");
    assert_eq!(
        e.to_string(),
        format!(
            "connection to server at \"127.0.0.1\", port {port} failed: Connection refused\n\
             \tIs the server running on that host and accepting TCP/IP connections?"
        )
    );
    // hostaddr wins for the display; host lists accumulate one block per host.
    let other = {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    for conninfo in [
        format!("host=foo hostaddr=127.0.0.1 port={port} user=x sslmode=disable"),
        format!("host=localhost,127.0.0.1 port={port},{other} user=x sslmode=disable"),
    ] {
        let e = Connection::connect(&common::config(&conninfo)).expect_err("refused");
        assert!(e.to_string().contains("Connection refused"), "{e}");
        if let Some(p) = common::psql_error(&conninfo, &[]) {
            assert_eq!(e.to_string(), p);
        }
    }
    let env = |k: &str| (k == "HOME").then(|| "/nonexistent-home".to_string());
    let c = ConnConfig::parse_with_env("host=nosuchhost.invalid user=a", &env).expect("valid");
    let e = Connection::connect(&c).expect_err("unresolvable");
    assert_eq!(
        e.to_string(),
        "could not translate host name \"nosuchhost.invalid\" to address: Name or service not known"
    );
    let dir = pgsurge_testkit::scratch_dir("fake-server");
    let c = ConnConfig::parse_with_env(&format!("host={} user=a", dir.path().display()), &env)
        .expect("valid");
    let e = Connection::connect(&c).expect_err("no socket");
    assert_eq!(
        e.to_string(),
        format!(
            "connection to server on socket \"{}/.s.PGSQL.5432\" failed: No such file or directory\n\
             \tIs the server running locally and accepting connections on that socket?",
            dir.path().display()
        )
    );
}

#[test]
fn require_auth_refuses_unwanted_methods() {
    // The server asks for MD5 while only SCRAM is acceptable.
    let (port, h) = serve(|mut p| {
        p.read_startup();
        p.auth(5, b"salt");
        let mut b = [0u8; 1];
        let _ = p.0.read(&mut b);
    });
    let e = Connection::connect(&cfg(port, "password=pw require_auth=scram-sha-256"))
        .expect_err("md5 refused");
    assert_eq!(
        e.to_string(),
        format!(
            "connection to server at \"127.0.0.1\", port {port} failed: authentication method requirement \"scram-sha-256\" failed: server requested a hashed password"
        )
    );
    h.join().expect("server script");
    // Trust (no request at all) when a password method is required.
    let (port, h) = serve(|mut p| {
        p.read_startup();
        p.ready();
        let mut b = [0u8; 1];
        let _ = p.0.read(&mut b);
    });
    let e = Connection::connect(&cfg(port, "require_auth=password")).expect_err("trust refused");
    assert!(
        e.to_string().ends_with(
            "authentication method requirement \"password\" failed: server did not complete authentication"
        ),
        "{e}"
    );
    h.join().expect("server script");
    // And allowed when it matches.
    let (port, h) = serve(|mut p| {
        p.read_startup();
        p.auth(3, b"");
        let _ = p.read_msg();
        p.ready();
    });
    Connection::connect(&cfg(port, "password=pw require_auth=password,md5")).expect("allowed");
    h.join().expect("server script");
}

#[test]
fn an_error_answering_the_ssl_request_is_the_server_s_error_in_prefer_mode() {
    // A server that cannot take the session (here: too many clients) may answer the
    // SSLRequest with an ErrorResponse instead of 'S' or 'N': libpq reports that error
    // (no TLS was started, so sslmode=prefer has nothing to retry without).
    let (port, h) = serve(|mut p| {
        let mut req = [0u8; 8];
        p.0.read_exact(&mut req).expect("SSLRequest");
        assert_eq!(&req[4..], &80877103u32.to_be_bytes());
        p.fatal("53300", "sorry, too many clients already");
    });
    let e = Connection::connect(&cfg(port, "sslmode=prefer")).expect_err("refused");
    assert_eq!(e.code(), Some("53300"));
    assert_eq!(
        e.to_string(),
        format!("connection to server at \"127.0.0.1\", port {port} failed: FATAL:  sorry, too many clients already")
    );
    assert!(!e.to_string().contains("SSL was required"));
    h.join().expect("server script");
}
