//! Establishing a connection the way libpq's `PQconnectdbParams` does: the host
//! list walk, address resolution, TCP/Unix connect with `connect_timeout` per
//! address, SSLRequest and TLS per `sslmode` (with `prefer`/`allow` retries),
//! then the startup exchange (`startup.rs`) and `target_session_attrs`; so
//! [`Connection::connect`] is defined here.
//!
//! Owns the texts of connection failures (`connection to server ... failed: ...`).

use bytes::BytesMut;
use postgres_protocol::message::frontend;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use crate::cancel::CancelAddr;
use crate::codec::TransactionStatus;
use crate::connection::Connection;
use crate::conninfo::{ConnConfig, HostKind, HostSpec, SslMode, TargetSessionAttrs};
use crate::error::{strerror, SERVER_CLOSED};
use crate::startup::{bound, remaining, startup, Failure, PasswordSource, Startup};
use crate::transport::{connect_unix, Socket, Transport};
use crate::{ConnectError, ConnectErrorKind};

/// One resolved address of a host entry.
#[derive(Debug, Clone)]
enum Target {
    Unix(String),
    Tcp(SocketAddr),
}

impl Connection {
    /// Connects (blocking), trying each host of `cfg` in order, honouring
    /// `connect_timeout` per host. See [`ConnectError`] for the error texts.
    pub fn connect(cfg: &ConnConfig) -> Result<Connection, ConnectError> {
        connect(cfg)
    }
}

/// Host prefix of every per-attempt message.
fn prefix(host: &HostSpec, target: &Target) -> String {
    match target {
        Target::Unix(path) => format!("connection to server on socket \"{path}\" failed: "),
        Target::Tcp(addr) => {
            let displayed = if host.kind == HostKind::Address {
                host.hostaddr.clone().unwrap_or_default()
            } else {
                host.host.clone()
            };
            let ip = addr.ip().to_string();
            if host.kind != HostKind::Address && displayed != ip {
                format!(
                    "connection to server at \"{displayed}\" ({ip}), port {} failed: ",
                    host.port
                )
            } else {
                format!(
                    "connection to server at \"{displayed}\", port {} failed: ",
                    host.port
                )
            }
        }
    }
}

fn resolve(host: &HostSpec) -> Result<Vec<Target>, String> {
    match host.kind {
        HostKind::UnixSocket => {
            let path = host.socket_path().unwrap_or_default();
            // sun_path is 108 bytes including the terminating NUL.
            if path.len() >= 108 {
                return Err(format!(
                    "Unix-domain socket path \"{path}\" is too long (maximum 107 bytes)\n"
                ));
            }
            Ok(vec![Target::Unix(path)])
        }
        HostKind::Address => {
            let a = host.hostaddr.as_deref().unwrap_or("");
            match a.parse::<IpAddr>() {
                Ok(ip) => Ok(vec![Target::Tcp(SocketAddr::new(ip, host.port))]),
                Err(_) => Err(format!(
                    "could not parse network address \"{a}\": Name or service not known\n"
                )),
            }
        }
        HostKind::Name => match (host.host.as_str(), host.port).to_socket_addrs() {
            Ok(addrs) => {
                let v: Vec<Target> = addrs.map(Target::Tcp).collect();
                if v.is_empty() {
                    Err(format!(
                        "could not translate host name \"{}\" to address: Name or service not known\n",
                        host.host
                    ))
                } else {
                    Ok(v)
                }
            }
            Err(e) => {
                let msg = e.to_string();
                let msg = msg
                    .strip_prefix("failed to lookup address information: ")
                    .unwrap_or(&msg)
                    .to_string();
                Err(format!(
                    "could not translate host name \"{}\" to address: {msg}\n",
                    host.host
                ))
            }
        },
    }
}

/// Connects as libpq does; see [`Connection::connect`].
pub(crate) fn connect(cfg: &ConnConfig) -> Result<Connection, ConnectError> {
    let mut message = String::new();
    let mut last: Option<Failure> = None;
    let passes: &[TargetSessionAttrs] = match cfg.target_session_attrs() {
        TargetSessionAttrs::PreferStandby => {
            &[TargetSessionAttrs::Standby, TargetSessionAttrs::Any]
        }
        other => match other {
            TargetSessionAttrs::Any => &[TargetSessionAttrs::Any],
            TargetSessionAttrs::ReadWrite => &[TargetSessionAttrs::ReadWrite],
            TargetSessionAttrs::ReadOnly => &[TargetSessionAttrs::ReadOnly],
            TargetSessionAttrs::Primary => &[TargetSessionAttrs::Primary],
            _ => &[TargetSessionAttrs::Standby],
        },
    };
    'passes: for want in passes {
        for host in cfg.hosts() {
            let password = host_password(cfg, host);
            let targets = match resolve(host) {
                Ok(t) => t,
                Err(text) => {
                    message.push_str(&text);
                    last = Some(Failure::new(ConnectErrorKind::Io, text));
                    continue;
                }
            };
            for target in &targets {
                match attempt_with_ssl_fallback(cfg, host, target, &password, *want) {
                    Ok(conn) => return Ok(conn),
                    Err(mut f) => {
                        message.push_str(&prefix(host, target));
                        message.push_str(&f.text);
                        if let (Some(db), PasswordSource::File { path: file, .. }) =
                            (&f.db_error, &password)
                        {
                            if db.code == "28P01" {
                                let note = format!("password retrieved from file \"{}\"\n", file);
                                message.push_str(&note);
                                f.text.push_str(&note);
                            }
                        }
                        let stop = !f.try_next_host;
                        last = Some(f);
                        if stop {
                            break 'passes;
                        }
                    }
                }
            }
        }
    }
    let last =
        last.unwrap_or_else(|| Failure::new(ConnectErrorKind::Config, "no host to connect to"));
    Err(ConnectError {
        kind: last.kind,
        message,
        db_error: last.db_error,
        needs_password: last.needs_password,
    })
}

/// Per-host password: explicit, else `.pgpass` (looked up before connecting, as
/// libpq's connectOptions2 does, so its warnings appear even for trust auth).
fn host_password(cfg: &ConnConfig, host: &HostSpec) -> PasswordSource {
    if let Some(p) = cfg.password() {
        return PasswordSource::Given(p.to_string());
    }
    let Some(file) = cfg.passfile() else {
        return PasswordSource::None;
    };
    let pw_host = if host.host.is_empty() {
        host.hostaddr.as_deref().unwrap_or("")
    } else {
        host.host.as_str()
    };
    let mut stderr = io::stderr();
    match crate::pgpass::lookup(
        &file,
        pw_host,
        &host.port.to_string(),
        cfg.dbname(),
        cfg.user(),
        &mut stderr,
    ) {
        Some(password) => PasswordSource::File {
            password,
            path: file.display().to_string(),
        },
        None => PasswordSource::None,
    }
}

/// One address, with libpq's `sslmode` retries: `prefer` falls back to plain
/// when the server rejects the TLS session, `allow` retries with TLS when the
/// server rejects the plain one.
fn attempt_with_ssl_fallback(
    cfg: &ConnConfig,
    host: &HostSpec,
    target: &Target,
    password: &PasswordSource,
    want: TargetSessionAttrs,
) -> Result<Connection, Failure> {
    let is_tcp = matches!(target, Target::Tcp(_));
    let mode = cfg.ssl_mode();
    // No TLS over Unix-domain sockets (libpq skips it there whatever sslmode says).
    let first_tls = is_tcp && !matches!(mode, SslMode::Disable | SslMode::Allow);
    match attempt(cfg, host, target, password, want, first_tls) {
        Ok(c) => Ok(c),
        Err(f) if f.kind == ConnectErrorKind::Server && is_tcp => match (mode, f.tls_used) {
            (SslMode::Prefer, true) => attempt(cfg, host, target, password, want, false),
            (SslMode::Allow, false) => attempt(cfg, host, target, password, want, true),
            _ => Err(f),
        },
        Err(f) => Err(f),
    }
}

fn attempt(
    cfg: &ConnConfig,
    host: &HostSpec,
    target: &Target,
    password: &PasswordSource,
    want: TargetSessionAttrs,
    try_tls: bool,
) -> Result<Connection, Failure> {
    let deadline = cfg.connect_timeout().map(|t| Instant::now() + t);
    let (socket, cancel_addr) = open_socket(target, deadline)?;
    let mut transport = Transport::Plain(socket);
    if try_tls {
        transport = negotiate_tls(cfg, host, transport, deadline)?;
    }
    let tls_used = transport.is_tls();
    let mut st = Startup {
        transport,
        inbuf: BytesMut::with_capacity(8192),
        outbuf: BytesMut::with_capacity(1024),
        params: Vec::new(),
        process_id: 0,
        secret_key: Vec::new(),
        tx_status: TransactionStatus::Idle,
        notices: Vec::new(),
    };
    let r = startup(cfg, &mut st, password, deadline);
    if let Err(mut f) = r {
        f.tls_used = tls_used;
        return Err(f);
    }
    // Back to plain blocking mode without timeouts for the caller (only a deadline
    // set any).
    if deadline.is_some() {
        st.transport
            .socket()
            .set_timeouts(None)
            .map_err(|e| Failure::io(&e, None))?;
    }
    let mut conn = Connection {
        transport: st.transport,
        host: host.clone(),
        dbname: cfg.dbname().to_string(),
        user: cfg.user().to_string(),
        params: st.params,
        process_id: st.process_id,
        secret_key: st.secret_key,
        tx_status: st.tx_status,
        inbuf: st.inbuf,
        outbuf: st.outbuf,
        notice_handler: crate::connection::default_notice_handler(),
        cancel_addr,
        nonblocking: false,
        terminated: false,
    };
    for n in &st.notices {
        conn.handle_notice(n);
    }
    check_session_attrs(&mut conn, want)?;
    Ok(conn)
}

fn open_socket(
    target: &Target,
    deadline: Option<Instant>,
) -> Result<(Socket, CancelAddr), Failure> {
    let hint_unix = "\n\tIs the server running locally and accepting connections on that socket?";
    let hint_tcp = "\n\tIs the server running on that host and accepting TCP/IP connections?";
    match target {
        Target::Unix(path) => {
            let s = connect_unix(Path::new(path)).map_err(|e| {
                Failure::new(ConnectErrorKind::Io, format!("{}{hint_unix}", strerror(&e)))
            })?;
            Ok((Socket::Unix(s), CancelAddr::Unix(path.into())))
        }
        Target::Tcp(addr) => {
            let s = match remaining(deadline)? {
                Some(t) => TcpStream::connect_timeout(addr, t),
                None => TcpStream::connect(addr),
            };
            let s = s.map_err(|e| {
                if e.kind() == io::ErrorKind::TimedOut && deadline.is_some() {
                    Failure::timeout()
                } else {
                    Failure::new(ConnectErrorKind::Io, format!("{}{hint_tcp}", strerror(&e)))
                }
            })?;
            // libpq sets TCP_NODELAY and SO_KEEPALIVE on TCP connections.
            let _ = s.set_nodelay(true);
            set_keepalive(&s);
            Ok((Socket::Tcp(s), CancelAddr::Tcp(*addr)))
        }
    }
}

fn set_keepalive(s: &TcpStream) {
    let on: libc::c_int = 1;
    // SAFETY: valid fd and a correctly sized option value.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_KEEPALIVE,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// SSLRequest, then the TLS handshake if the server agrees.
fn negotiate_tls(
    cfg: &ConnConfig,
    host: &HostSpec,
    transport: Transport,
    deadline: Option<Instant>,
) -> Result<Transport, Failure> {
    let Transport::Plain(mut sock) = transport else {
        return Ok(transport);
    };
    let config = cfg
        .tls_config()
        .map_err(|t| Failure::new(ConnectErrorKind::Tls, t))?;
    bound(&sock, deadline)?;
    // sslnegotiation=direct (PostgreSQL 17+): TLS right away, no SSLRequest.
    if cfg.get("sslnegotiation") == Some("direct") {
        return handshake(host, sock, config, deadline);
    }
    let mut req = BytesMut::with_capacity(8);
    frontend::ssl_request(&mut req);
    sock.write_all(&req)
        .map_err(|e| Failure::io(&e, deadline))?;
    // Read exactly one byte: anything after it belongs to the TLS handshake.
    let mut b = [0u8; 1];
    loop {
        match sock.read(&mut b) {
            Ok(0) => return Err(Failure::new(ConnectErrorKind::Io, SERVER_CLOSED)),
            Ok(_) => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Failure::io(&e, deadline)),
        }
    }
    match b[0] {
        b'S' => {}
        b'N' => {
            if matches!(
                cfg.ssl_mode(),
                SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull
            ) {
                let mut f = Failure::new(
                    ConnectErrorKind::Tls,
                    "server does not support SSL, but SSL was required",
                );
                f.try_next_host = true;
                return Err(f);
            }
            return Ok(Transport::Plain(sock));
        }
        // The server refused the session before TLS (e.g. too many clients): libpq
        // reads the ErrorResponse and reports the server's error, whatever sslmode says
        // (no TLS was in use, so `prefer` has nothing to retry without).
        b'E' => return Err(ssl_request_refused(&mut sock, deadline)),
        other => {
            return Err(Failure::new(
                ConnectErrorKind::Protocol,
                format!(
                    "received invalid response to SSL negotiation: {}",
                    other as char
                ),
            ))
        }
    }
    handshake(host, sock, config, deadline)
}

/// Reads the ErrorResponse whose tag byte answered the SSLRequest, as the failure
/// to report.
fn ssl_request_refused(sock: &mut Socket, deadline: Option<Instant>) -> Failure {
    let mut message = vec![b'E', 0, 0, 0, 0];
    if let Err(e) = sock.read_exact(&mut message[1..5]) {
        return Failure::io(&e, deadline);
    }
    let len = u32::from_be_bytes([message[1], message[2], message[3], message[4]]) as usize;
    // An error message is short; anything else is not an ErrorResponse.
    if !(4..=64 * 1024).contains(&len) {
        return Failure::new(
            ConnectErrorKind::Protocol,
            "received invalid response to SSL negotiation: E",
        );
    }
    message.resize(1 + len, 0);
    if let Err(e) = sock.read_exact(&mut message[5..]) {
        return Failure::io(&e, deadline);
    }
    match crate::codec::decode(&message) {
        Ok(Some((crate::codec::BackendMessage::ErrorResponse(fields), _))) => {
            Failure::server(fields.to_db_error())
        }
        _ => Failure::new(
            ConnectErrorKind::Protocol,
            "received invalid response to SSL negotiation: E",
        ),
    }
}

/// The TLS handshake on a connected socket.
fn handshake(
    host: &HostSpec,
    mut sock: Socket,
    config: Arc<rustls::ClientConfig>,
    deadline: Option<Instant>,
) -> Result<Transport, Failure> {
    let name_host = if host.host.is_empty() {
        host.hostaddr.as_deref().unwrap_or("")
    } else {
        host.host.as_str()
    };
    let mut tls =
        rustls::ClientConnection::new(Arc::clone(&config), crate::tls::server_name(name_host))
            .map_err(|e| {
                Failure::new(
                    ConnectErrorKind::Tls,
                    format!("could not establish SSL connection: {e}"),
                )
            })?;
    while tls.is_handshaking() {
        bound(&sock, deadline)?;
        if let Err(e) = tls.complete_io(&mut sock) {
            if deadline.is_some()
                && matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                )
            {
                return Err(Failure::timeout());
            }
            return Err(Failure::new(
                ConnectErrorKind::Tls,
                crate::tls::describe_error(&e, name_host),
            ));
        }
    }
    Ok(Transport::Tls(Box::new(tls), sock))
}

/// `target_session_attrs` checks after the session is ready; a mismatch moves on
/// to the next host.
fn check_session_attrs(conn: &mut Connection, want: TargetSessionAttrs) -> Result<(), Failure> {
    let mismatch = |text: &str| {
        let mut f = Failure::new(ConnectErrorKind::Server, text);
        f.try_next_host = true;
        f
    };
    let query_bool = |conn: &mut Connection, sql: &str| -> Result<bool, Failure> {
        let r = conn
            .simple_query(sql)
            .map_err(|e| Failure::new(ConnectErrorKind::Server, e.pq_message()))?;
        Ok(r.first()
            .and_then(|r| r.get(0, 0))
            .is_some_and(|v| v == "on" || v == "t"))
    };
    match want {
        TargetSessionAttrs::Any => Ok(()),
        TargetSessionAttrs::ReadWrite | TargetSessionAttrs::ReadOnly => {
            let ro = match (
                conn.parameter("default_transaction_read_only"),
                conn.parameter("in_hot_standby"),
            ) {
                (Some(d), Some(h)) => d == "on" || h == "on",
                _ => query_bool(conn, "SHOW transaction_read_only")?,
            };
            match (want, ro) {
                (TargetSessionAttrs::ReadWrite, true) => Err(mismatch("session is read-only")),
                (TargetSessionAttrs::ReadOnly, false) => Err(mismatch("session is not read-only")),
                _ => Ok(()),
            }
        }
        TargetSessionAttrs::Primary
        | TargetSessionAttrs::Standby
        | TargetSessionAttrs::PreferStandby => {
            let standby = match conn.parameter("in_hot_standby") {
                Some(h) => h == "on",
                None => query_bool(conn, "SELECT pg_catalog.pg_is_in_recovery()")?,
            };
            match (want, standby) {
                (TargetSessionAttrs::Primary, true) => {
                    Err(mismatch("server is in hot standby mode"))
                }
                (TargetSessionAttrs::Standby | TargetSessionAttrs::PreferStandby, false) => {
                    Err(mismatch("server is not in hot standby mode"))
                }
                _ => Ok(()),
            }
        }
    }
}
