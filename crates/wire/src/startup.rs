//! The startup exchange on an open transport: the startup packet, the
//! authentication request loop (cleartext, MD5, SCRAM-SHA-256 and -PLUS with
//! `tls-server-end-point` channel binding), and the messages up to the first
//! ReadyForQuery. Owns the client-side authentication failure texts and the failure of
//! one connection attempt ([`Failure`]).

use bytes::{Buf, BytesMut};
use postgres_protocol::authentication::sasl::{ChannelBinding, ScramSha256};
use postgres_protocol::message::frontend;
use std::io;
use std::time::{Duration, Instant};

use crate::codec::{self, BackendMessage, TransactionStatus};
use crate::connection::set_param;
use crate::conninfo::ConnConfig;
use crate::error::{strerror, SERVER_CLOSED};
use crate::transport::{Socket, Transport};
use crate::{ConnectErrorKind, DbError};

/// Why one attempt failed: text after the host prefix, plus details.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) kind: ConnectErrorKind,
    pub(crate) text: String,
    pub(crate) db_error: Option<Box<DbError>>,
    pub(crate) needs_password: bool,
    /// Whether the next host should be tried (libpq stops after an
    /// authentication-phase server error).
    pub(crate) try_next_host: bool,
    /// Whether TLS was up when it failed (for `sslmode=prefer` fallback).
    pub(crate) tls_used: bool,
}

impl Failure {
    pub(crate) fn new(kind: ConnectErrorKind, text: impl Into<String>) -> Failure {
        let mut text = text.into();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        Failure {
            kind,
            text,
            db_error: None,
            needs_password: false,
            try_next_host: true,
            tls_used: false,
        }
    }
    pub(crate) fn timeout() -> Failure {
        Failure::new(ConnectErrorKind::Timeout, "timeout expired")
    }
    pub(crate) fn io(e: &io::Error, deadline: Option<Instant>) -> Failure {
        if deadline.is_some()
            && matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            )
        {
            return Failure::timeout();
        }
        match e.kind() {
            io::ErrorKind::UnexpectedEof => Failure::new(ConnectErrorKind::Io, SERVER_CLOSED),
            _ => match e.raw_os_error() {
                Some(libc::EPIPE) | Some(libc::ECONNRESET) => {
                    Failure::new(ConnectErrorKind::Io, SERVER_CLOSED)
                }
                _ => Failure::new(
                    ConnectErrorKind::Io,
                    format!("could not receive data from server: {}", strerror(e)),
                ),
            },
        }
    }
    pub(crate) fn server(e: DbError) -> Failure {
        let mut f = Failure::new(ConnectErrorKind::Server, e.pq_message());
        f.db_error = Some(Box::new(e));
        f.try_next_host = false;
        f
    }
}

/// Bounds the socket's blocking reads and writes by the time left until `deadline`.
/// Without a deadline it does nothing: a new socket has no timeouts and none is set
/// without a deadline, so there is nothing to clear (two system calls per step saved,
/// six per connection).
pub(crate) fn bound(sock: &Socket, deadline: Option<Instant>) -> Result<(), Failure> {
    if deadline.is_none() {
        return Ok(());
    }
    sock.set_timeouts(remaining(deadline)?)
        .map_err(|e| Failure::io(&e, deadline))
}

/// The time left before `deadline` (none without one); a timeout failure once it has
/// passed.
pub(crate) fn remaining(deadline: Option<Instant>) -> Result<Option<Duration>, Failure> {
    match deadline {
        None => Ok(None),
        Some(d) => {
            let now = Instant::now();
            if now >= d {
                Err(Failure::timeout())
            } else {
                Ok(Some(d - now))
            }
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) enum PasswordSource {
    Given(String),
    /// From the password file (its path, for the failure note).
    File {
        password: String,
        path: String,
    },
    None,
}

impl PasswordSource {
    pub(crate) fn get(&self) -> Option<&str> {
        match self {
            PasswordSource::Given(p) => Some(p),
            PasswordSource::File { password, .. } => Some(password),
            PasswordSource::None => None,
        }
    }
}

/// Startup state collected while the server gets the session ready.
pub(crate) struct Startup {
    pub(crate) transport: Transport,
    pub(crate) inbuf: BytesMut,
    pub(crate) outbuf: BytesMut,
    pub(crate) params: Vec<(String, String)>,
    pub(crate) process_id: i32,
    pub(crate) secret_key: Vec<u8>,
    pub(crate) tx_status: TransactionStatus,
    pub(crate) notices: Vec<DbError>,
}

pub(crate) fn send(st: &mut Startup, deadline: Option<Instant>) -> Result<(), Failure> {
    bound(st.transport.socket(), deadline)?;
    let r = st.transport.write_all(&st.outbuf);
    st.outbuf.clear();
    r.map_err(|e| Failure::io(&e, deadline))
}

pub(crate) fn fill(st: &mut Startup, deadline: Option<Instant>) -> Result<(), Failure> {
    bound(st.transport.socket(), deadline)?;
    loop {
        return match st.transport.try_read(&mut st.inbuf) {
            Ok(0) => Err(Failure::new(ConnectErrorKind::Io, SERVER_CLOSED)),
            Ok(_) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::InvalidData => Err(Failure::new(
                ConnectErrorKind::Tls,
                format!("SSL error: {}", e),
            )),
            Err(e) => Err(Failure::io(&e, deadline)),
        };
    }
}

/// What the auth loop must do after a message.
enum Step {
    Nothing,
    Ready,
    Fail(Failure),
    SendPassword,
    SendMd5([u8; 4]),
    StartSasl(Vec<String>),
    SaslContinue(Vec<u8>),
    SaslFinal(Vec<u8>),
    AuthOk,
}

/// The startup and authentication exchange of a new connection. It mirrors libpq's
/// `PQconnectPoll` and `pg_fe_sendauth`: one arm per message and authentication request
/// the server can send, each with libpq's checks and messages, so it stays one match.
pub(crate) fn startup(
    cfg: &ConnConfig,
    st: &mut Startup,
    password: &PasswordSource,
    deadline: Option<Instant>,
) -> Result<(), Failure> {
    let mut params: Vec<(&str, &str)> = vec![("user", cfg.user()), ("database", cfg.dbname())];
    if let Some(r) = cfg.get("replication").filter(|s| !s.is_empty()) {
        params.push(("replication", r));
    }
    if let Some(o) = cfg.options() {
        params.push(("options", o));
    }
    if let Some(a) = cfg.application_name() {
        params.push(("application_name", a));
    }
    if let Some(e) = cfg
        .get("client_encoding")
        .filter(|s| !s.is_empty() && *s != "auto")
    {
        params.push(("client_encoding", e));
    }
    frontend::startup_message(params.iter().copied(), &mut st.outbuf)
        .map_err(|e| Failure::new(ConnectErrorKind::Config, e.to_string()))?;
    send(st, deadline)?;

    let channel_binding = cfg.get("channel_binding").unwrap_or("prefer");
    let mut scram: Option<ScramSha256> = None;
    let mut sasl_done = false;
    // Whether the client proved itself (libpq's client_finished_auth).
    let mut client_finished = false;
    let mut used_channel_binding = false;
    loop {
        let decoded =
            codec::decode(&st.inbuf).map_err(|e| Failure::new(ConnectErrorKind::Protocol, e.0))?;
        let Some((msg, len)) = decoded else {
            fill(st, deadline)?;
            continue;
        };
        if let BackendMessage::Authentication { code, .. } = msg {
            if let Some(rule) = cfg.require_auth() {
                // SASL continuation messages belong to an exchange already allowed.
                if !(scram.is_some() && (code == 11 || code == 12)) {
                    if let Err(text) = rule.check(code, client_finished) {
                        let mut f = Failure::new(ConnectErrorKind::Auth, text);
                        f.try_next_host = false;
                        return Err(f);
                    }
                }
            }
        }
        let step = match msg {
            BackendMessage::Authentication { code, data } => match code {
                0 => Step::AuthOk,
                3 => Step::SendPassword,
                5 => match data.get(..4) {
                    Some(s) => Step::SendMd5([s[0], s[1], s[2], s[3]]),
                    None => Step::Fail(Failure::new(
                        ConnectErrorKind::Protocol,
                        "malformed authentication request",
                    )),
                },
                10 => Step::StartSasl(
                    data.split(|b| *b == 0)
                        .filter(|m| !m.is_empty())
                        .map(|m| String::from_utf8_lossy(m).into_owned())
                        .collect(),
                ),
                11 => Step::SaslContinue(data.to_vec()),
                12 => Step::SaslFinal(data.to_vec()),
                2 => Step::Fail(Failure::new(
                    ConnectErrorKind::Auth,
                    "Kerberos 5 authentication not supported",
                )),
                7 | 8 => Step::Fail(Failure::new(
                    ConnectErrorKind::Auth,
                    "GSSAPI authentication not supported",
                )),
                9 => Step::Fail(Failure::new(
                    ConnectErrorKind::Auth,
                    "SSPI authentication not supported",
                )),
                other => Step::Fail(Failure::new(
                    ConnectErrorKind::Auth,
                    format!("authentication method {other} not supported"),
                )),
            },
            BackendMessage::ErrorResponse(fields) => {
                Step::Fail(Failure::server(fields.to_db_error()))
            }
            BackendMessage::NoticeResponse(fields) => {
                st.notices.push(fields.to_db_error());
                Step::Nothing
            }
            BackendMessage::ParameterStatus { name, value } => {
                set_param(&mut st.params, name, value);
                Step::Nothing
            }
            BackendMessage::BackendKeyData {
                process_id,
                secret_key,
            } => {
                st.process_id = process_id;
                st.secret_key = secret_key.to_vec();
                Step::Nothing
            }
            BackendMessage::ReadyForQuery(s) => {
                st.tx_status = s;
                Step::Ready
            }
            BackendMessage::NegotiateProtocolVersion(_) => Step::Nothing,
            _ => Step::Fail(Failure::new(
                ConnectErrorKind::Protocol,
                format!(
                    "expected authentication request from server, but received {}",
                    st.inbuf[0] as char
                ),
            )),
        };
        st.inbuf.advance(len);
        match step {
            Step::Nothing => {}
            Step::Ready => return Ok(()),
            Step::Fail(f) => return Err(f),
            Step::AuthOk => {
                if channel_binding == "require" && !used_channel_binding {
                    return Err(Failure::new(
                        ConnectErrorKind::Auth,
                        "channel binding required, but server authenticated client without channel binding",
                    ));
                }
                if scram.is_some() && !sasl_done {
                    return Err(Failure::new(
                        ConnectErrorKind::Auth,
                        "server accepted connection without a valid SCRAM exchange",
                    ));
                }
            }
            Step::SendPassword | Step::SendMd5(_) => {
                if channel_binding == "require" {
                    return Err(Failure::new(
                        ConnectErrorKind::Auth,
                        "channel binding required but not supported by server's authentication request",
                    ));
                }
                let Some(pw) = password.get().filter(|p| !p.is_empty()) else {
                    return Err(no_password());
                };
                let r = match step {
                    Step::SendMd5(salt) => {
                        let hash = postgres_protocol::authentication::md5_hash(
                            cfg.user().as_bytes(),
                            pw.as_bytes(),
                            salt,
                        );
                        frontend::password_message(hash.as_bytes(), &mut st.outbuf)
                    }
                    _ => frontend::password_message(pw.as_bytes(), &mut st.outbuf),
                };
                r.map_err(|e| Failure::new(ConnectErrorKind::Auth, e.to_string()))?;
                send(st, deadline)?;
                client_finished = true;
            }
            Step::StartSasl(mechs) => {
                let tls_hash = match &st.transport {
                    Transport::Tls(tls, _) => tls
                        .peer_certificates()
                        .and_then(|c| c.first())
                        .and_then(|c| crate::tls::server_end_point_hash(c.as_ref())),
                    Transport::Plain(_) => None,
                };
                let plus_offered = mechs.iter().any(|m| m == "SCRAM-SHA-256-PLUS");
                if plus_offered && !st.transport.is_tls() {
                    // Not sane without TLS (a proxy may have stripped it).
                    return Err(Failure::new(
                        ConnectErrorKind::Auth,
                        "server offered SCRAM-SHA-256-PLUS authentication over a non-SSL connection",
                    ));
                }
                let plain_offered = mechs.iter().any(|m| m == "SCRAM-SHA-256");
                let (mech, binding) = if plus_offered
                    && channel_binding != "disable"
                    && tls_hash.is_some()
                {
                    used_channel_binding = true;
                    (
                        "SCRAM-SHA-256-PLUS",
                        ChannelBinding::tls_server_end_point(tls_hash.unwrap_or_default()),
                    )
                } else if channel_binding == "require" {
                    return Err(Failure::new(
                        ConnectErrorKind::Auth,
                        "channel binding is required, but server did not offer an authentication method that supports channel binding",
                    ));
                } else if plain_offered {
                    let b = if st.transport.is_tls() && channel_binding != "disable" {
                        ChannelBinding::unrequested()
                    } else {
                        ChannelBinding::unsupported()
                    };
                    ("SCRAM-SHA-256", b)
                } else {
                    return Err(Failure::new(
                        ConnectErrorKind::Auth,
                        "none of the server's SASL authentication mechanisms are supported",
                    ));
                };
                let Some(pw) = password.get().filter(|p| !p.is_empty()) else {
                    return Err(no_password());
                };
                let s = ScramSha256::new(pw.as_bytes(), binding);
                frontend::sasl_initial_response(mech, s.message(), &mut st.outbuf)
                    .map_err(|e| Failure::new(ConnectErrorKind::Auth, e.to_string()))?;
                scram = Some(s);
                send(st, deadline)?;
            }
            Step::SaslContinue(data) => {
                let Some(s) = scram.as_mut() else {
                    return Err(Failure::new(
                        ConnectErrorKind::Protocol,
                        "out of order SASL message from server",
                    ));
                };
                s.update(&data).map_err(|e| {
                    Failure::new(
                        ConnectErrorKind::Auth,
                        format!("malformed SCRAM message ({e})"),
                    )
                })?;
                frontend::sasl_response(s.message(), &mut st.outbuf)
                    .map_err(|e| Failure::new(ConnectErrorKind::Auth, e.to_string()))?;
                send(st, deadline)?;
            }
            Step::SaslFinal(data) => {
                let Some(s) = scram.as_mut() else {
                    return Err(Failure::new(
                        ConnectErrorKind::Protocol,
                        "out of order SASL message from server",
                    ));
                };
                s.finish(&data).map_err(|_| {
                    Failure::new(ConnectErrorKind::Auth, "incorrect server signature")
                })?;
                sasl_done = true;
                client_finished = true;
            }
        }
    }
}

pub(crate) fn no_password() -> Failure {
    let mut f = Failure::new(ConnectErrorKind::Auth, "fe_sendauth: no password supplied");
    f.needs_password = true;
    f.try_next_host = false;
    f
}
