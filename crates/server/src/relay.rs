//! A delay on a standby's replication link without the kernel's netem ([`LinkRelay`]):
//! the standby connects to a Unix socket of the relay, which opens a connection to the
//! primary's socket for each one it accepts and copies the bytes both ways, holding
//! every chunk it reads for the delay in force when it read it, in order.
//!
//! Each direction of a connection is two threads: one reads chunks and stamps each
//! with the time it is due, the other writes them when due, one after another, so a
//! shorter delay set later never lets a chunk overtake one read before it. The relay is
//! a stream copy: it cannot lose, reorder or throttle packets as netem can.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::{Result, ServerError};
use crate::run_as::RunAs;

/// The largest chunk read at once.
const CHUNK: usize = 64 * 1024;

/// What the accepting thread and the copying threads share with the relay's owner.
#[derive(Debug, Default)]
struct Shared {
    /// The delay each chunk read from now on is held, µs.
    delay_us: AtomicU64,
    /// The relay was dropped: accept nothing more.
    closed: AtomicBool,
    /// Both ends of every connection, shut down when the relay is dropped.
    open: Mutex<Vec<UnixStream>>,
}

/// A relay between a standby and its primary's Unix socket, with a settable delay in
/// each direction (0 at the start). Dropping it closes its socket and every connection
/// through it.
#[derive(Debug)]
pub struct LinkRelay {
    dir: PathBuf,
    port: u16,
    shared: Arc<Shared>,
}

impl LinkRelay {
    /// A relay listening in a temporary directory (readable by `ra`'s user, the
    /// standby's) on the socket name of `port`, to the primary's socket
    /// `upstream_dir/.s.PGSQL.port`.
    pub(crate) fn start(upstream_dir: &Path, port: u16, ra: Option<&RunAs>) -> Result<LinkRelay> {
        let dir = crate::datadir::make_temp_dir("pgsurge-relay", ra)?;
        crate::datadir::check_socket_path_length(&dir)?;
        let path = dir.join(format!(".s.PGSQL.{port}"));
        let bound = UnixListener::bind(&path).and_then(|l| {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777))?;
            Ok(l)
        });
        let listener = match bound {
            Ok(l) => l,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(ServerError::io(&path, e));
            }
        };
        let shared = Arc::new(Shared::default());
        let upstream = upstream_dir.join(format!(".s.PGSQL.{port}"));
        let accepting = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("link-relay".into())
            .spawn(move || accept_all(&listener, &upstream, &accepting))
            .map_err(|e| ServerError::io(&path, e))?;
        Ok(LinkRelay { dir, port, shared })
    }

    /// The directory of its socket: a standby's `host`, with the primary's port.
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }

    /// Holds every chunk read from now on for `delay` (zero: none).
    pub fn set_delay(&self, delay: Duration) {
        let us = u64::try_from(delay.as_micros()).unwrap_or(u64::MAX);
        self.shared.delay_us.store(us, Ordering::SeqCst);
    }

    /// The delay in force.
    pub fn delay(&self) -> Duration {
        Duration::from_micros(self.shared.delay_us.load(Ordering::SeqCst))
    }
}

impl Drop for LinkRelay {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        // Wakes the accepting thread, which then sees `closed`.
        let _ = UnixStream::connect(self.dir.join(format!(".s.PGSQL.{}", self.port)));
        let open = std::mem::take(&mut *lock(&self.shared.open));
        for s in open {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn accept_all(listener: &UnixListener, upstream: &Path, shared: &Arc<Shared>) {
    for incoming in listener.incoming() {
        if shared.closed.load(Ordering::SeqCst) {
            return;
        }
        let Ok(down) = incoming else { continue };
        // A primary that is down refuses the standby as its own socket would.
        let Ok(up) = UnixStream::connect(upstream) else {
            continue;
        };
        let _ = relay_both_ways(down, up, shared);
    }
}

/// Starts the copying threads of one connection.
fn relay_both_ways(down: UnixStream, up: UnixStream, shared: &Arc<Shared>) -> std::io::Result<()> {
    {
        let mut open = lock(&shared.open);
        open.push(down.try_clone()?);
        open.push(up.try_clone()?);
    }
    pump(down.try_clone()?, up.try_clone()?, shared)?;
    pump(up, down, shared)
}

/// A chunk and when it is due, or the end of the stream (None).
type Held = (Instant, Option<Vec<u8>>);

/// Copies `from` to `to` with the delay: a reading and a writing thread.
fn pump(mut from: UnixStream, mut to: UnixStream, shared: &Arc<Shared>) -> std::io::Result<()> {
    let (tx, rx) = mpsc::channel::<Held>();
    let delays = Arc::clone(shared);
    std::thread::Builder::new()
        .name("link-relay-read".into())
        .spawn(move || {
            let mut buf = vec![0u8; CHUNK];
            loop {
                let n = from.read(&mut buf).unwrap_or(0);
                let due =
                    Instant::now() + Duration::from_micros(delays.delay_us.load(Ordering::SeqCst));
                let chunk = (n > 0).then(|| buf[..n].to_vec());
                let end = chunk.is_none();
                if tx.send((due, chunk)).is_err() || end {
                    return;
                }
            }
        })?;
    std::thread::Builder::new()
        .name("link-relay-write".into())
        .spawn(move || {
            for (due, chunk) in rx {
                let now = Instant::now();
                if due > now {
                    std::thread::sleep(due - now);
                }
                let Some(chunk) = chunk else { break };
                if to.write_all(&chunk).is_err() {
                    // The other end is gone: close both so the reader stops too.
                    let _ = to.shutdown(std::net::Shutdown::Both);
                    return;
                }
            }
            let _ = to.shutdown(std::net::Shutdown::Write);
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An upstream "server" on a Unix socket that echoes what it reads.
    fn echo_server(dir: &Path, port: u16) {
        let listener = UnixListener::bind(dir.join(format!(".s.PGSQL.{port}"))).unwrap();
        std::thread::spawn(move || {
            for s in listener.incoming() {
                let Ok(mut s) = s else { return };
                std::thread::spawn(move || {
                    let mut w = s.try_clone().unwrap();
                    let _ = std::io::copy(&mut s, &mut w);
                });
            }
        });
    }

    fn round_trip(c: &mut UnixStream, msg: &[u8]) -> (Vec<u8>, Duration) {
        let t = Instant::now();
        c.write_all(msg).unwrap();
        let mut back = vec![0u8; msg.len()];
        c.read_exact(&mut back).unwrap();
        (back, t.elapsed())
    }

    #[test]
    fn each_direction_holds_its_chunks_for_the_delay_in_order_and_zero_removes_it() {
        let up = tempfile::tempdir().unwrap();
        echo_server(up.path(), 6001);
        let relay = LinkRelay::start(up.path(), 6001, None).unwrap();
        let mut c = UnixStream::connect(relay.socket_dir().join(".s.PGSQL.6001")).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        assert_eq!(round_trip(&mut c, b"hello").0, b"hello");

        // Held once on the way up and once on the way back: at least twice the delay.
        relay.set_delay(Duration::from_millis(100));
        assert_eq!(relay.delay(), Duration::from_millis(100));
        let (back, took) = round_trip(&mut c, b"slow");
        assert_eq!(back, b"slow");
        assert!(took >= Duration::from_millis(200), "{took:?}");

        // Chunks written while held come back whole and in order, also when the
        // delay is removed while some are still held.
        let mut sent = Vec::new();
        for i in 0..200u32 {
            let chunk = format!("<{i}>");
            c.write_all(chunk.as_bytes()).unwrap();
            sent.extend_from_slice(chunk.as_bytes());
            if i == 100 {
                relay.set_delay(Duration::ZERO);
            }
        }
        let mut back = vec![0u8; sent.len()];
        c.read_exact(&mut back).unwrap();
        assert_eq!(back, sent);
        assert_eq!(round_trip(&mut c, b"fast").0, b"fast");

        let dir = relay.socket_dir().to_path_buf();
        drop(relay);
        assert!(!dir.exists(), "{}", dir.display());
        // The connection through it is closed.
        let mut rest = Vec::new();
        assert_eq!(c.read_to_end(&mut rest).unwrap_or(0), 0);
    }

    #[test]
    fn a_primary_that_is_not_there_is_refused_like_its_socket() {
        let up = tempfile::tempdir().unwrap();
        let relay = LinkRelay::start(up.path(), 6002, None).unwrap();
        let mut c = UnixStream::connect(relay.socket_dir().join(".s.PGSQL.6002")).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let mut rest = Vec::new();
        assert_eq!(c.read_to_end(&mut rest).unwrap(), 0);
    }
}
