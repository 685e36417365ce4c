//! `pgsurge-sink`: a PostgreSQL wire-protocol (v3) server that answers every request at
//! once and does nothing else.
//!
//! A benchmark harness, not part of the product. A replay's rate against a real server
//! on the same cores is bounded by the server's own CPU; against the sink, whose work
//! per statement is a few system calls, what bounds it is the replaying client: the
//! ceiling a client reaches when the server runs on a host of its own. `bench/replay.sh`
//! with `SERVER=sink` replays its logs onto it.
//!
//! It listens on a Unix socket, `DIR/.s.PGSQL.PORT` (`-k DIR -p PORT`), so libpq, pgbench,
//! pgreplay and pgsurge connect to it with `PGHOST=DIR PGPORT=PORT` as to a server.
//! Startup needs no password; each statement gets its CommandComplete without rows
//! (`protocol.rs` says what is answered how, `sql.rs` what is read of a statement).
//!
//! Two ways to serve connections, `--model`: `threads` (a thread per connection,
//! blocking reads, as a server's backend per session) and `epoll` (one thread, a
//! level-triggered epoll over every connection). The one thread costs less, and is the
//! default: replaying select-only `-M simple` logs of 4 and 64 sessions with `pgsurge
//! replay --max` (`bench/replay.sh`, 3 rounds, 2 cores shared with other work, load
//! average 2.3 to 4.4), the sink took 4.1 and 3.3 µs of CPU per statement with `epoll`
//! against 15.8 and 15.1 µs with `threads`, and the client 4.8 and 4.1 µs against 14.5
//! and 11.7 µs: a thread per connection is a sleep and a wake-up per statement on each
//! side, where the loop finds several sessions' requests ready at once. Either way the
//! answers to one read are written with one `write`, as a backend flushes its output
//! buffer.
//!
//! It runs until it is killed; a socket file left by a killed sink is removed by the
//! next start on it (one that still answers is refused as in use).

mod protocol;
mod sql;

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU32, Ordering};

use pgsurge_floor::epoll::Epoll;
use protocol::{Next, Session};

const USAGE: &str = "usage: pgsurge-sink -k SOCKET_DIR -p PORT [--model epoll|threads]";

/// The size of a read: a batch of requests of many sessions' worth fits whole.
const READ_SIZE: usize = 64 * 1024;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Model {
    Epoll,
    Threads,
}

struct Config {
    socket: String,
    model: Model,
}

fn main() -> ExitCode {
    let config = match parse_args(std::env::args().skip(1)) {
        Ok(c) => c,
        Err(msg) => {
            eprintln!("pgsurge-sink: {msg}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let served = listen(&config.socket).and_then(|listener| {
        eprintln!("pgsurge-sink: listening on {}", config.socket);
        match config.model {
            Model::Epoll => serve_epoll(listener),
            Model::Threads => serve_threads(listener),
        }
    });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pgsurge-sink: {}: {e}", config.socket);
            ExitCode::from(1)
        }
    }
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Config, String> {
    let (mut dir, mut port, mut model) = (None, None, Model::Epoll);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "-k" => dir = Some(value()?),
            "-p" => {
                let v = value()?;
                port = Some(
                    v.parse::<u16>()
                        .ok()
                        .filter(|&p| p > 0)
                        .ok_or(format!("-p: not a port number: {v}"))?,
                );
            }
            "--model" => {
                model = match value()?.as_str() {
                    "epoll" => Model::Epoll,
                    "threads" => Model::Threads,
                    other => return Err(format!("--model: epoll or threads, not {other}")),
                }
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    let dir = dir.ok_or("-k SOCKET_DIR is needed")?;
    let port = port.ok_or("-p PORT is needed")?;
    Ok(Config {
        socket: format!("{}/.s.PGSQL.{port}", dir.trim_end_matches('/')),
        model,
    })
}

/// Binds the socket, replacing a file a killed sink left there.
fn listen(path: &str) -> io::Result<UnixListener> {
    if std::path::Path::new(path).exists() {
        if UnixStream::connect(path).is_ok() {
            return Err(io::Error::other("in use: a server answers on it"));
        }
        std::fs::remove_file(path)?;
    }
    UnixListener::bind(path)
}

/// The BackendKeyData process ids, one per connection.
static KEYS: AtomicU32 = AtomicU32::new(1);

/// Reads one batch, answers it, writes the answers: false once the connection ends.
fn serve_batch(stream: &mut UnixStream, session: &mut Session, buf: &mut [u8]) -> bool {
    let n = match stream.read(buf) {
        Ok(0) | Err(_) => return false,
        Ok(n) => n,
    };
    let next = session.feed(&buf[..n]);
    let written = session.out.is_empty() || stream.write_all(&session.out).is_ok();
    session.out.clear();
    written && next == Next::Continue
}

/// A thread per connection, blocking on its socket.
fn serve_threads(listener: UnixListener) -> io::Result<()> {
    for stream in listener.incoming() {
        let mut stream = match stream {
            Ok(s) => s,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        std::thread::Builder::new()
            .name("session".into())
            .stack_size(256 * 1024)
            .spawn(move || {
                let mut session = Session::new(KEYS.fetch_add(1, Ordering::Relaxed));
                let mut buf = vec![0u8; READ_SIZE];
                while serve_batch(&mut stream, &mut session, &mut buf) {}
            })?;
    }
    Ok(())
}

/// One connection of the epoll loop: the answers not yet written start at `written`.
struct Conn {
    stream: UnixStream,
    session: Session,
    written: usize,
    /// The session ended: close once the answers are written.
    closing: bool,
}

impl Conn {
    /// Writes what the socket takes; true when all of it is written.
    fn flush(&mut self) -> bool {
        while self.written < self.session.out.len() {
            match self.stream.write(&self.session.out[self.written..]) {
                Ok(n) => self.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    // The peer is gone: nothing more to write, the session ends.
                    self.closing = true;
                    break;
                }
            }
        }
        self.session.out.clear();
        self.written = 0;
        true
    }

    /// Serves a readiness: false once the connection is to be dropped.
    fn ready(&mut self, epoll: &Epoll, token: u64, buf: &mut [u8]) -> io::Result<bool> {
        let waiting_to_write = !self.session.out.is_empty();
        if !waiting_to_write {
            match self.stream.read(buf) {
                Ok(0) => return Ok(false),
                Ok(n) => self.closing |= self.session.feed(&buf[..n]) == Next::Close,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) =>
                {
                    return Ok(true)
                }
                Err(_) => return Ok(false),
            }
        }
        let flushed = self.flush();
        if flushed && self.closing {
            return Ok(false);
        }
        // A client that does not read its answers: wait until the socket takes them,
        // reading nothing more from it meanwhile.
        if flushed == waiting_to_write {
            let interest = if flushed {
                libc::EPOLLIN
            } else {
                libc::EPOLLOUT
            };
            epoll.control(
                libc::EPOLL_CTL_MOD,
                self.stream.as_raw_fd(),
                interest,
                token,
            )?;
        }
        Ok(true)
    }
}

/// One thread, a level-triggered epoll over the listener and every connection.
fn serve_epoll(listener: UnixListener) -> io::Result<()> {
    const LISTENER: u64 = u64::MAX;
    listener.set_nonblocking(true)?;
    let epoll = Epoll::new()?;
    epoll.control(
        libc::EPOLL_CTL_ADD,
        listener.as_raw_fd(),
        libc::EPOLLIN,
        LISTENER,
    )?;
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut buf = vec![0u8; READ_SIZE];
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; 256];
    loop {
        let ready = epoll.wait(&mut events, -1)?;
        for event in &events[..ready] {
            let token = event.u64;
            if token == LISTENER {
                accept_all(&listener, &epoll, &mut conns)?;
                continue;
            }
            let Some(conn) = conns.get_mut(token as usize).and_then(Option::as_mut) else {
                continue;
            };
            if !conn.ready(&epoll, token, &mut buf)? {
                // Dropping the stream closes it, which takes it out of the epoll set.
                conns[token as usize] = None;
            }
        }
    }
}

fn accept_all(
    listener: &UnixListener,
    epoll: &Epoll,
    conns: &mut Vec<Option<Conn>>,
) -> io::Result<()> {
    loop {
        let stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                ) =>
            {
                continue
            }
            Err(e) => return Err(e),
        };
        stream.set_nonblocking(true)?;
        let slot = match conns.iter().position(Option::is_none) {
            Some(free) => free,
            None => {
                conns.push(None);
                conns.len() - 1
            }
        };
        epoll.control(
            libc::EPOLL_CTL_ADD,
            stream.as_raw_fd(),
            libc::EPOLLIN,
            slot as u64,
        )?;
        conns[slot] = Some(Conn {
            stream,
            session: Session::new(KEYS.fetch_add(1, Ordering::Relaxed)),
            written: 0,
            closing: false,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A directory of its own under the temporary directory, removed at the end.
    struct TempDir(std::path::PathBuf);

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn message(out: &mut Vec<u8>, kind: u8, body: &[u8]) {
        out.push(kind);
        out.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        out.extend_from_slice(body);
    }

    fn connect(path: &str) -> UnixStream {
        let stream = UnixStream::connect(path).unwrap();
        // A generous bound: a sink that stops answering fails the test instead of hanging it.
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut startup = 0x0003_0000u32.to_be_bytes().to_vec();
        startup.extend_from_slice(b"user\0u\0\0");
        let mut out = ((startup.len() + 4) as u32).to_be_bytes().to_vec();
        out.extend_from_slice(&startup);
        (&stream).write_all(&out).unwrap();
        stream
    }

    /// Reads until `count` ReadyForQuery messages came; the bytes read.
    fn read_readies(stream: &mut UnixStream, count: usize) -> Vec<u8> {
        let mut got = Vec::new();
        let (mut at, mut seen) = (0, 0);
        let mut buf = [0u8; 65536];
        while seen < count {
            let n = stream.read(&mut buf).expect("the sink answers");
            assert!(n > 0, "the sink closed the connection after {seen} answers");
            got.extend_from_slice(&buf[..n]);
            while got.len() - at >= 5 {
                let len = u32::from_be_bytes(got[at + 1..at + 5].try_into().unwrap()) as usize;
                if got.len() - at < 1 + len {
                    break;
                }
                seen += usize::from(got[at] == b'Z');
                at += 1 + len;
            }
        }
        got
    }

    /// A client that sends many queries before it reads any answer does not stop the
    /// sink from serving another one, and gets every answer once it reads.
    fn a_client_that_does_not_read_holds_up_no_other(model: Model) {
        let dir = std::env::temp_dir().join(format!(
            "pgsurge-sink-test.{}.{}",
            std::process::id(),
            model as u8
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let dir = TempDir(dir);
        let path = format!("{}/.s.PGSQL.5432", dir.0.display());
        let listener = listen(&path).unwrap();
        std::thread::spawn(move || match model {
            Model::Epoll => serve_epoll(listener),
            Model::Threads => serve_threads(listener),
        });
        const QUERIES: usize = 50_000; // about 1 MB of answers: more than a socket buffers
        let mut flood = connect(&path);
        let mut queries = Vec::new();
        for _ in 0..QUERIES {
            message(&mut queries, b'Q', b"SELECT 1\0");
        }
        let writer = {
            let flood = flood.try_clone().unwrap();
            std::thread::spawn(move || (&flood).write_all(&queries).unwrap())
        };
        let mut other = connect(&path);
        read_readies(&mut other, 1);
        let mut query = Vec::new();
        message(&mut query, b'Q', b"BEGIN\0");
        other.write_all(&query).unwrap();
        assert!(read_readies(&mut other, 1).ends_with(b"BEGIN\0Z\0\0\0\x05T"));
        let answers = read_readies(&mut flood, QUERIES + 1);
        writer.join().unwrap();
        let answer = b"C\0\0\0\x0dSELECT 0\0Z\0\0\0\x05I";
        assert_eq!(
            answers
                .windows(answer.len())
                .filter(|w| w == answer)
                .count(),
            QUERIES
        );
    }

    #[test]
    fn epoll_serves_others_while_a_client_does_not_read() {
        a_client_that_does_not_read_holds_up_no_other(Model::Epoll);
    }

    #[test]
    fn threads_serve_others_while_a_client_does_not_read() {
        a_client_that_does_not_read_holds_up_no_other(Model::Threads);
    }

    #[test]
    fn a_socket_that_answers_is_not_replaced() {
        let dir =
            std::env::temp_dir().join(format!("pgsurge-sink-test.{}.busy", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let dir = TempDir(dir);
        let path = format!("{}/.s.PGSQL.5432", dir.0.display());
        let first = listen(&path).unwrap();
        assert!(listen(&path).is_err());
        drop(first);
        // The file a closed listener left is stale: the next start takes its place.
        assert!(listen(&path).is_ok());
    }
}
