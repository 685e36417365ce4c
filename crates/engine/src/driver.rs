//! The per-thread driver loop: owns the sockets of one thread's clients, an epoll
//! instance (`mio`), the clock, and the thread's statistics, and advances each client's
//! state machine when its socket is readable or its timer expired (pgbench §3.2).
//!
//! One write per request: everything a client appended during one `advance` goes out in
//! one `write`. Reads drain the socket until `WouldBlock` (edge-triggered). Connections
//! are opened with the blocking `pgsurge-wire` connect (as pgbench does, also for `-C`),
//! then switched to non-blocking mode.
//!
//! This file holds a client's [`Slot`] (its machine, bytes and connections), the reads
//! and writes of its socket, the opening and closing of its connections, and what a
//! driver is given ([`DriverCtx`]); the jobs of the loop live in submodules:
//!
//! | module | owns |
//! |---|---|
//! | `event_loop` | [`run_loop`]: the turns of a thread's loop (due clients, the wait, clients run from events, fetching slots ahead) and the end of the run |
//! | `step` | one client's turn ([`Slot`] advanced, connected or closed, its request written, an early answer gone on with), the thread's lent buffers |
//! | `stop` | a stopped run: cancels sent, answers awaited within a grace, connections closed |

use std::io;
use std::time::Duration;

use mio::unix::SourceFd;
use mio::{Interest, Poll, Token};
use pgsurge_wire::{ConnConfig, Connection, ErrorClass};

use crate::client::{Client, ClientIo, ScriptHost};
use crate::clock::RunClock;
use crate::plan::Plan;
use crate::stop::StopFlag;

mod event_loop;
mod step;
mod stop;

pub use event_loop::run_loop;

/// Token of the wake-up timer in the poll set.
const TIMER_TOKEN: Token = Token(usize::MAX);

/// Token of the `-T` end timer in the poll set.
const END_TOKEN: Token = Token(usize::MAX - 1);

/// Token of the stop flag's wake descriptor in the poll set. Like the timers' tokens it
/// is no slot's index: the event loop passes over it as over any token without a slot,
/// and learns of the stop from the flag at the top of its next round.
const WAKE_TOKEN: Token = Token(usize::MAX - 2);

/// Clients per thread above which a client's state is taken to be out of cache when it
/// runs (so buffers are lent and state is fetched ahead); below, all of them fit in the
/// core's caches together.
const CROWDED: usize = 16;

/// Longest time the loop sleeps without looking at the stop flag.
const MAX_POLL: Duration = Duration::from_millis(50);

/// One client slot of a driver: the machine, its bytes and its connection. In
/// declaration order (`repr(C)`), the fields every round reads first, then the client,
/// then the connection (of which only the socket is used per statement). Each slot
/// starts a cache line, so the part before the connection is a fixed set of whole lines.
#[repr(C, align(64))]
pub struct Slot<H> {
    /// Advance on the next iteration regardless of time/input.
    runnable: bool,
    done: bool,
    write_interest: bool,
    /// `conn` is the standby connection (and `spare` the primary's).
    on_replica: bool,
    /// The socket of an unencrypted connection, else -1: reads and writes on it need
    /// nothing from `conn`, which then stays out of cache.
    fd: i32,
    /// Earliest time the client wants to run again (`i64::MAX`: only on input).
    wake_at: i64,
    /// Bytes of `io.out` already written.
    out_pos: usize,
    /// Its buffers.
    pub io: ClientIo,
    /// The client's script state machine (what it sends next, what it waits for).
    pub client: Client<H>,
    conn: Option<Connection>,
    /// The client's other connection when it runs scripts on a standby
    /// (`--replica-file`): swapped with `conn` between transactions.
    spare: Option<Box<Spare>>,
}

/// The connection of a [`Slot`] not in use, and its plain socket (-1: none).
struct Spare {
    conn: Option<Connection>,
    fd: i32,
}

impl<H> Slot<H> {
    /// Sends on the connection the transaction under way runs on: swaps `conn` with
    /// the spare one when the client starts a transaction on the other server. Between
    /// transactions everything sent has been answered, so no byte is left on the
    /// connection put aside.
    #[inline]
    fn route(&mut self) {
        if self.io.replica != self.on_replica {
            if let Some(spare) = self.spare.as_deref_mut() {
                std::mem::swap(&mut self.conn, &mut spare.conn);
                std::mem::swap(&mut self.fd, &mut spare.fd);
                self.on_replica = self.io.replica;
            }
        }
    }

    /// Takes a new pair of connections: `primary` in use, `replica` put aside.
    fn set_connections(&mut self, primary: Connection, replica: Option<Connection>) {
        self.fd = primary.plain_fd().unwrap_or(-1);
        self.conn = Some(primary);
        self.on_replica = false;
        self.spare = replica.map(|c| {
            Box::new(Spare {
                fd: c.plain_fd().unwrap_or(-1),
                conn: Some(c),
            })
        });
    }

    /// Closes the connection put aside, if any.
    fn close_spare(&mut self, poll: Option<&Poll>) {
        if let Some(c) = self.spare.take().and_then(|s| s.conn) {
            if let Some(poll) = poll {
                let fd = std::os::fd::AsRawFd::as_raw_fd(&c);
                let _ = poll.registry().deregister(&mut SourceFd(&fd));
            }
            c.close();
        }
    }
}

/// Opens a client's connection, and with `replica` its standby connection.
fn open_pair(
    cfg: &ConnConfig,
    replica: Option<&ConnConfig>,
) -> Result<(Connection, Option<Connection>), (String, ErrorClass)> {
    let primary = open_connection(cfg)?;
    let replica = replica.map(open_connection).transpose()?;
    Ok((primary, replica))
}

/// Registers a slot's spare connection, which wakes the slot like its own.
fn register_spare<H>(poll: &Poll, s: &Slot<H>, i: usize) -> io::Result<()> {
    match s.spare.as_deref().and_then(|sp| sp.conn.as_ref()) {
        Some(c) => {
            let fd = std::os::fd::AsRawFd::as_raw_fd(c);
            poll.registry()
                .register(&mut SourceFd(&fd), Token(i), Interest::READABLE)
        }
        None => Ok(()),
    }
}

impl<H> Slot<H> {
    /// A slot with no connection yet.
    pub fn new(client: Client<H>) -> Self {
        Slot {
            client,
            io: ClientIo::default(),
            conn: None,
            out_pos: 0,
            wake_at: 0,
            runnable: true,
            done: false,
            write_interest: false,
            on_replica: false,
            fd: -1,
            spare: None,
        }
    }
}

/// What the driver needs besides its clients.
pub struct DriverCtx<'a> {
    /// Scripts and settings.
    pub plan: &'a Plan,
    /// Connection parameters of every client connection.
    pub conn_config: &'a ConnConfig,
    /// Those of each client's standby connection (`--replica-file`).
    pub replica_config: Option<&'a ConnConfig>,
    /// Run clock.
    pub clock: &'a RunClock,
    /// Stop request (signals, library callers).
    pub stop: &'a StopFlag,
    /// Raised by another thread of the run that met `--exit-on-abort`.
    pub halt: &'a StopFlag,
    /// `-T` end on the run clock (0 = none).
    pub end_us: i64,
    /// `--exit-on-abort`.
    pub exit_on_abort: bool,
    /// A send that took at least this long (ns) is followed by a read of the answer
    /// ([`crate::EarlyRead`]).
    pub early_read_after_ns: i64,
}

/// Thread-level random streams (adapter over the script crate's PRNGs).
pub struct ThreadStreams {
    /// Script choice stream.
    pub choose: pgsurge_script::Prng,
    /// Throttle stream.
    pub throttle: pgsurge_script::Prng,
}

impl crate::client::ThreadRng for ThreadStreams {
    fn choose(&mut self, total_weight: i64) -> i64 {
        if total_weight <= 1 {
            return 0;
        }
        self.choose.uint64_range(0, (total_weight - 1) as u64) as i64
    }
    fn throttle_double(&mut self) -> f64 {
        self.throttle.double()
    }
}

/// Opens a client connection in non-blocking mode; on failure, libpq's text and
/// whether the server was out of reach ([`ErrorClass`]).
pub fn open_connection(cfg: &ConnConfig) -> Result<Connection, (String, ErrorClass)> {
    let mut c = Connection::connect(cfg).map_err(|e| (e.to_string(), e.class()))?;
    c.set_nonblocking(true)
        .map_err(|e| (e.to_string(), ErrorClass::Connection))?;
    Ok(c)
}

/// How the thread's loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopEnd {
    /// Every client finished or aborted.
    AllDone,
    /// `--exit-on-abort` and a client aborted.
    ExitOnAbort,
    /// The poller failed (pgbench: thread error, exit status 2).
    PollFailed,
    /// The stop flag was raised: every client ended where it was.
    Stopped,
}

/// Writes pending output; false if the connection broke. An unencrypted connection is
/// written through the socket kept in the slot, without touching `conn`.
#[cfg_attr(target_os = "linux", link_section = ".text.hot.pgsurge")]
fn flush<H>(s: &mut Slot<H>) -> bool {
    if s.fd < 0 && s.conn.is_none() {
        s.io.out.clear();
        s.out_pos = 0;
        return true;
    }
    while s.out_pos < s.io.out.len() {
        let pending = &s.io.out[s.out_pos..];
        // The socket is tested first: `conn` is not read on the plain path.
        let written = if s.fd >= 0 {
            pgsurge_wire::write_plain(s.fd, pending)
        } else {
            match s.conn.as_mut() {
                Some(c) => c.try_write(pending),
                None => return false,
            }
        };
        match written {
            Ok(0) => return false,
            Ok(n) => s.out_pos += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    // TLS may still hold encrypted bytes.
    if s.fd < 0 {
        if let Some(c) = s.conn.as_mut().filter(|c| c.wants_write()) {
            match c.flush() {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(_) => return false,
            }
        }
    }
    s.io.out.clear();
    s.out_pos = 0;
    true
}

/// Reads everything available; false on EOF or error. `closed`: the poller reported a
/// hang-up, so the socket is read until EOF even when a read came back short. An
/// unencrypted connection is read through the socket kept in the slot.
#[cfg_attr(target_os = "linux", link_section = ".text.hot.pgsurge")]
fn fill<H>(s: &mut Slot<H>, closed: bool) -> bool {
    if s.fd < 0 && s.conn.is_none() {
        return false;
    }
    // Plain sockets: a read that leaves spare room drained the socket, so the usual
    // extra read that only returns EAGAIN is skipped. TLS may hold decrypted bytes.
    let shortcut = s.fd >= 0 && !closed;
    loop {
        let read = if s.fd >= 0 {
            pgsurge_wire::read_plain(s.fd, &mut s.io.inbuf)
        } else {
            match s.conn.as_mut() {
                Some(c) => c.try_read(&mut s.io.inbuf),
                None => return false,
            }
        };
        match read {
            Ok(0) => return false,
            Ok(_) => {
                if shortcut && s.io.inbuf.len() < s.io.inbuf.capacity() {
                    return true;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}

/// Stops watching the socket of a finished client whose connection stays open.
fn quiet<H>(poll: &Poll, s: &mut Slot<H>) {
    let spare = s.spare.as_deref().and_then(|sp| sp.conn.as_ref());
    for c in s.conn.iter().chain(spare) {
        let fd = std::os::fd::AsRawFd::as_raw_fd(c);
        let _ = poll.registry().deregister(&mut SourceFd(&fd));
    }
    s.fd = -1;
    s.io.connected = false;
}

/// Takes the connections [`run_loop`] left open: those of clients that finished
/// cleanly, kept for after the run's last transaction, and any other still open (the
/// loop's poll set is gone by then).
#[cold]
pub fn take_open<H>(slots: &mut [Slot<H>]) -> impl Iterator<Item = Connection> + '_ {
    slots.iter_mut().flat_map(|s| {
        let spare = s.spare.take().and_then(|sp| sp.conn);
        s.conn.take().into_iter().chain(spare)
    })
}

fn close<H>(poll: &Poll, s: &mut Slot<H>) {
    s.close_spare(Some(poll));
    s.fd = -1;
    if let Some(c) = s.conn.take() {
        let fd = std::os::fd::AsRawFd::as_raw_fd(&c);
        let _ = poll.registry().deregister(&mut SourceFd(&fd));
        c.close();
    }
    s.io.connected = false;
    s.io.out.clear();
    s.out_pos = 0;
    s.write_interest = false;
}

/// Connects every slot (not `-C`), sequentially as pgbench does. On failure returns the
/// failing client id and the message.
pub fn connect_all<H: ScriptHost>(
    cfg: &ConnConfig,
    replica: Option<&ConnConfig>,
    slots: &mut [Slot<H>],
) -> Result<(), (usize, String, ErrorClass)> {
    for s in slots.iter_mut() {
        match open_pair(cfg, replica) {
            Ok((c, replica)) => {
                s.set_connections(c, replica);
                s.client.connected(&mut s.io);
            }
            Err((m, class)) => return Err((s.client.id, m, class)),
        }
    }
    Ok(())
}
