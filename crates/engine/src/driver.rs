//! The per-thread driver loop: owns the sockets of one thread's clients, an epoll
//! instance (`mio`), the clock, and the thread's statistics, and advances each client's
//! state machine when its socket is readable or its timer expired (pgbench §3.2).
//!
//! One write per request: everything a client appended during one `advance` goes out in
//! one `write`. Reads drain the socket until `WouldBlock` (edge-triggered). Connections
//! are opened with the blocking `pgsurge-wire` connect (as pgbench does, also for `-C`),
//! then switched to non-blocking mode.

use std::io;
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use pgsurge_wire::{ConnConfig, Connection, ErrorClass};

use crate::cancel::CancelRequests;
use crate::client::{Client, ClientIo, ScriptHost, ThreadCtx, Wait};
use crate::clock::{monotonic_ns, Now, RunClock};
use crate::plan::Plan;
use crate::recorder::ThreadRecorder;
use crate::stderr::StderrDiag;
use crate::stop::StopFlag;
use crate::throttle::ThrottleSchedule;
use crate::timer::WakeTimer;
use std::os::fd::AsRawFd;

/// Token of the wake-up timer in the poll set.
const TIMER_TOKEN: Token = Token(usize::MAX);

/// Token of the `-T` end timer in the poll set.
const END_TOKEN: Token = Token(usize::MAX - 1);

/// Token of the stop flag's wake descriptor in the poll set. Like the timers' tokens it
/// is no slot's index: the event loop passes over it as over any token without a slot,
/// and learns of the stop from the flag at the top of its next round.
const WAKE_TOKEN: Token = Token(usize::MAX - 2);

/// How long a stopped run waits, once its cancel requests are delivered, for the
/// server's answers to the cancelled statements, before it closes their connections
/// anyway (a server too busy to act on a cancel at once).
const CANCEL_GRACE: Duration = Duration::from_secs(1);

/// Longest wait of a stopped run for its clients, however slow the cancel requests
/// themselves are (a server that does not accept connections).
const STOP_LIMIT: Duration = Duration::from_secs(3);

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

/// Starts loading the cache lines of slot `i` up to its connection (of which only the
/// socket, kept in the slot, is used per statement), if there is such a slot.
#[inline]
fn prefetch_state<H>(slots: &[Slot<H>], i: usize) {
    if let Some(s) = slots.get(i) {
        let start = (s as *const Slot<H>).cast::<u8>();
        let end = std::ptr::addr_of!(s.conn).cast::<u8>();
        prefetch(start, end as usize - start as usize);
    }
}

/// Starts loading the values slot `i`'s client keeps outside the slot (read through the
/// slot, so best done once the slot's lines have arrived).
#[inline]
fn prefetch_heap<H: ScriptHost>(slots: &[Slot<H>], i: usize) {
    if let Some(s) = slots.get(i) {
        prefetch(s.client.host.heap_hint(), 128);
    }
}

/// Asks the CPU to bring the cache lines of `len` bytes at `p` into its cache.
#[inline(always)]
fn prefetch(p: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let mut off = 0;
        while off < len {
            // SAFETY: a prefetch is a hint: it reads no value into the program, never
            // faults (not even for a null or dangling address) and changes only caches.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    p.wrapping_add(off).cast(),
                )
            };
            off += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, len);
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

/// The thread's own input and output buffers, lent to the client being run.
///
/// With hundreds of clients a client's own buffers are out of cache each time it runs:
/// the kernel would copy its reply into cold lines and the machine append its request to
/// cold lines. Instead the client about to read or send gets these (its own empty
/// buffers are swapped out, which moves three words each) and gives them back once they
/// are empty again, so every request and reply of the thread goes through the same few
/// hot cache lines. A client whose buffer still holds bytes (a partial reply, a request
/// the socket did not take whole) keeps it, and the thread holds the client's empty one
/// instead: both stay empty whenever they are the thread's. Used only with more than
/// [`CROWDED`] clients per thread: with fewer, their own buffers stay in cache anyway.
#[derive(Default)]
struct Lent {
    inbuf: bytes::BytesMut,
    out: Vec<u8>,
}

impl Lent {
    /// Lends the input buffer to a client with no pending input.
    #[inline]
    fn lend_in(&mut self, io: &mut ClientIo) {
        if io.in_pos == 0 && io.inbuf.is_empty() {
            std::mem::swap(&mut io.inbuf, &mut self.inbuf);
        }
    }

    /// Takes the input buffer back once everything in it is consumed.
    #[inline]
    fn take_in(&mut self, io: &mut ClientIo) {
        if io.reset_if_drained() {
            std::mem::swap(&mut io.inbuf, &mut self.inbuf);
        }
    }

    /// Lends the output buffer to a client with nothing left to send.
    #[inline]
    fn lend_out(&mut self, io: &mut ClientIo, out_pos: usize) {
        if out_pos == 0 && io.out.is_empty() {
            std::mem::swap(&mut io.out, &mut self.out);
        }
    }

    /// Takes the output buffer back once it is all written.
    #[inline]
    fn take_out(&mut self, io: &mut ClientIo) {
        if io.out.is_empty() {
            std::mem::swap(&mut io.out, &mut self.out);
        }
    }
}

/// Runs the event loop of one thread until all its clients are done: each turn runs
/// the clients that are due ([`run_due`]), waits for the sockets, the timer or the stop
/// ([`wait_for_events`]), and runs the clients the events name ([`run_events`]).
///
/// `poll` is the thread's poll set, made by the caller before its clients connected:
/// a descriptor the run cannot do without is taken before the ones it can (the
/// timers), so a run at the open-files limit fails no thread's poll set.
#[cfg_attr(target_os = "linux", link_section = ".text.hot.pgsurge")]
pub fn run_loop<H: ScriptHost>(
    dctx: &DriverCtx<'_>,
    poll: std::io::Result<Poll>,
    slots: &mut [Slot<H>],
    streams: &mut ThreadStreams,
    schedule: &mut Option<ThrottleSchedule>,
    rec: &mut ThreadRecorder,
) -> LoopEnd {
    let mut diag = StderrDiag::new(dctx.plan.config.debug);
    let (mut poll, timer) = match register_sources(dctx, poll, slots, &mut diag) {
        Ok(p) => p,
        Err(end) => return end,
    };
    let mut events = Events::with_capacity(slots.len().max(16));
    let mut end = RunEnd::new(dctx, &poll);
    let mut env = StepEnv {
        dctx,
        streams,
        schedule,
        rec,
        debug: crate::client::Diagnostics::debug_enabled(&diag),
        diag: &mut diag,
        lent: Lent::default(),
    };
    let mut rounds = Rounds::new(slots);
    loop {
        let timer_exceeded = end.over(dctx);
        if timer_exceeded && dctx.stop.is_raised() {
            return stop_now(&mut poll, &mut events, slots);
        }
        let due = match run_due(&mut env, &poll, slots, &mut rounds, timer_exceeded) {
            Ok(due) => due,
            Err(end) => return end,
        };
        if rounds.remaining == 0 {
            return LoopEnd::AllDone;
        }
        match wait_for_events(
            &mut env,
            &mut poll,
            &mut events,
            &timer,
            &end,
            due,
            timer_exceeded,
        ) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(end) => return end,
        }
        // The end of the run, for the clients run from events below.
        end.note(&events);
        let ev_exceeded = end.over(dctx);
        if let Err(end) = run_events(
            &mut env,
            &poll,
            &events,
            &timer,
            slots,
            &mut rounds,
            ev_exceeded,
        ) {
            return end;
        }
    }
}

/// Puts the timer, the stop's wake-up and every client's socket in the poll set, or
/// says why the thread cannot run.
#[cold]
fn register_sources<H: ScriptHost>(
    dctx: &DriverCtx<'_>,
    poll: std::io::Result<Poll>,
    slots: &mut [Slot<H>],
    diag: &mut StderrDiag,
) -> Result<(Poll, Option<WakeTimer>), LoopEnd> {
    let poll = match poll {
        Ok(p) => p,
        Err(e) => {
            diag.error_line(&format!("epoll_create1() failed: {e}"));
            return Err(LoopEnd::PollFailed);
        }
    };
    // µs-precision wake-ups (throttling, \sleep); epoll alone only has ms.
    let timer = WakeTimer::new().ok();
    if let Some(t) = &timer {
        let fd = t.as_raw_fd();
        let _ = poll
            .registry()
            .register(&mut SourceFd(&fd), TIMER_TOKEN, Interest::READABLE);
    }
    // A stop wakes the loop at once, whatever it waits for.
    if let Some(fd) = dctx.stop.wake_fd() {
        let _ = poll
            .registry()
            .register(&mut SourceFd(&fd), WAKE_TOKEN, Interest::READABLE);
    }
    for (i, s) in slots.iter_mut().enumerate() {
        if let Some(c) = &s.conn {
            let fd = std::os::fd::AsRawFd::as_raw_fd(c);
            if poll
                .registry()
                .register(&mut SourceFd(&fd), Token(i), Interest::READABLE)
                .is_err()
            {
                diag.error_line("invalid socket: could not register client socket");
                return Err(LoopEnd::PollFailed);
            }
        }
        if register_spare(&poll, s, i).is_err() {
            diag.error_line("invalid socket: could not register client socket");
            return Err(LoopEnd::PollFailed);
        }
    }
    Ok((poll, timer))
}

/// Which clients a round runs, across the loop's turns.
struct Rounds {
    /// Enough clients that each one's state is out of cache by the time it runs again.
    crowded: bool,
    /// Clients not done yet.
    remaining: usize,
    /// The runnable clients, each listed once, in the order they became runnable: while
    /// no client sleeps until a time, a round runs just these instead of looking at every
    /// slot (with hundreds of clients, reading each slot's flags is a cache miss per slot
    /// per round).
    ready: Vec<usize>,
    /// The list of the round under way.
    running: Vec<usize>,
    /// Look at every slot: at the start, and while a client sleeps until a time.
    scan_all: bool,
}

impl Rounds {
    fn new<H>(slots: &[Slot<H>]) -> Rounds {
        Rounds {
            crowded: slots.len() > CROWDED,
            remaining: slots.iter().filter(|s| !s.done).count(),
            ready: Vec::with_capacity(slots.len()),
            running: Vec::with_capacity(slots.len()),
            scan_all: true,
        }
    }
}

/// What a round of due clients leaves for the wait.
struct Due {
    /// The round's time (`UNREAD` when nothing read it).
    now: i64,
    /// The earliest time a sleeping client wakes (`i64::MAX`: none sleeps).
    next_wake: i64,
    /// A client can run again at once.
    any_runnable: bool,
}

/// Runs the clients that are due: the runnable ones, and those whose wake-up time has
/// come (every slot is looked at while one sleeps until a time, or at the end).
#[inline(always)]
fn run_due<H: ScriptHost>(
    env: &mut StepEnv<'_, '_>,
    poll: &Poll,
    slots: &mut [Slot<H>],
    rounds: &mut Rounds,
    timer_exceeded: bool,
) -> Result<Due, LoopEnd> {
    let clock = env.dctx.clock;
    // The round's time, read when a sleeping client's wake-up is compared to it
    // (`UNREAD` until then, and again after each client that runs): a round of clients
    // that wait for input only reads no clock.
    let mut now = UNREAD;
    let mut next_wake = i64::MAX;
    let mut any_runnable = false;
    let full = rounds.scan_all || timer_exceeded;
    std::mem::swap(&mut rounds.ready, &mut rounds.running);
    rounds.ready.clear();
    let count = if full {
        slots.len()
    } else {
        rounds.running.len()
    };
    for k in 0..count {
        let i = match full {
            true => k,
            false => rounds.running.get(k).copied().unwrap_or(usize::MAX),
        };
        let Some(s) = slots.get_mut(i) else { continue };
        if s.done {
            continue;
        }
        let due = s.runnable
            || s.wake_at != i64::MAX
                && (timer_exceeded || s.wake_at <= round_time(clock, &mut now));
        if !due {
            next_wake = next_wake.min(s.wake_at);
            continue;
        }
        let at = &mut if now == UNREAD {
            Now::lazy(clock)
        } else {
            Now::read_at(clock, now)
        };
        // Whatever runs next compares with a fresh time.
        now = UNREAD;
        let stepped = if rounds.crowded {
            step_lent(env, poll, s, i, at, timer_exceeded)
        } else {
            step(env, poll, s, i, at, timer_exceeded)
        };
        match stepped {
            Stepped::Waits(t) => next_wake = next_wake.min(t),
            Stepped::Runnable => {
                any_runnable = true;
                rounds.ready.push(i);
            }
            Stepped::Done => rounds.remaining -= 1,
            Stepped::ExitOnAbort => return Err(LoopEnd::ExitOnAbort),
        }
    }
    // Every client not listed waits for input only, unless one sleeps until a time.
    rounds.scan_all = next_wake != i64::MAX;
    Ok(Due {
        now,
        next_wake,
        any_runnable,
    })
}

/// Waits for the sockets, the timer or the stop, no longer than until the next
/// wake-up or the end of the run (not at all when a client can run). False when the
/// wait was interrupted by a signal (the turn starts again).
#[inline(always)]
fn wait_for_events(
    env: &mut StepEnv<'_, '_>,
    poll: &mut Poll,
    events: &mut Events,
    timer: &Option<WakeTimer>,
    end: &RunEnd,
    due: Due,
    timer_exceeded: bool,
) -> Result<bool, LoopEnd> {
    let dctx = env.dctx;
    let Due {
        mut now,
        mut next_wake,
        any_runnable,
    } = due;
    // The time only matters when a client sleeps until a time (throttling, `\sleep`),
    // or when no timer tells the end of the run.
    let end_by_timeout = end.by_timeout(dctx) && !timer_exceeded && !any_runnable;
    if next_wake != i64::MAX || end_by_timeout {
        round_time(dctx.clock, &mut now);
    }
    if let (Some(t), false) = (timer, any_runnable) {
        let mut until = next_wake;
        if end_by_timeout {
            until = until.min(dctx.end_us);
        }
        // The timerfd wakes us on time; the poll timeout is then only a fallback.
        if until != i64::MAX
            && until - now < MAX_POLL.as_micros() as i64
            && t.arm_in(until - now).is_ok()
        {
            next_wake = i64::MAX;
        }
    }
    let mut timeout = if any_runnable {
        Duration::ZERO
    } else if next_wake == i64::MAX {
        MAX_POLL
    } else {
        Duration::from_micros((next_wake - now).max(0) as u64).min(MAX_POLL)
    };
    if end_by_timeout {
        timeout = timeout.min(Duration::from_micros((dctx.end_us - now).max(0) as u64));
    }
    match poll.poll(events, Some(timeout)) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(false),
        Err(e) => {
            env.diag.error_line(&format!("epoll_wait() failed: {e}"));
            Err(LoopEnd::PollFailed)
        }
    }
}

/// Runs the clients the events name, each at once while its slot is in cache.
#[inline(always)]
fn run_events<H: ScriptHost>(
    env: &mut StepEnv<'_, '_>,
    poll: &Poll,
    events: &Events,
    timer: &Option<WakeTimer>,
    slots: &mut [Slot<H>],
    rounds: &mut Rounds,
    ev_exceeded: bool,
) -> Result<(), LoopEnd> {
    let clock = env.dctx.clock;
    let crowded = rounds.crowded;
    // The slots of the events two ahead, then the variables of the next one, are asked
    // into cache while this one runs: their misses overlap instead of coming one after
    // the other as each client runs. With few clients everything is in cache and
    // nothing is fetched.
    let mut ahead = crowded.then(|| events.iter().skip(1));
    // The slot fetched last (the next event's), whose variables come next.
    let mut fetched = usize::MAX;
    if let Some(e) = ahead.as_mut().and_then(|a| a.next()) {
        fetched = e.token().0;
        prefetch_state(slots, fetched);
    }
    for ev in events.iter() {
        if let Some(a) = ahead.as_mut() {
            prefetch_heap(slots, fetched);
            fetched = a.next().map_or(usize::MAX, |e| e.token().0);
            prefetch_state(slots, fetched);
        }
        if ev.token() == TIMER_TOKEN {
            if let Some(t) = timer {
                t.drain();
            }
            continue;
        }
        if ev.token() == END_TOKEN {
            continue;
        }
        let i = ev.token().0;
        let Some(s) = slots.get_mut(i) else { continue };
        if ev.is_writable() && s.write_interest {
            write_pending(poll, s, i);
        }
        if !(ev.is_readable() || ev.is_read_closed() || ev.is_error()) {
            continue;
        }
        // Edge-triggered: a hang-up reported with the last data never shows up again,
        // so then read on to the EOF instead of stopping at a short read.
        let closed = ev.is_read_closed() || ev.is_error();
        if crowded {
            env.lent.lend_in(&mut s.io);
        }
        if !fill(s, closed) {
            s.client.connection_lost(&mut s.io);
        }
        if s.runnable || s.done {
            // Listed for the next round already (or finished).
            if crowded {
                env.lent.take_in(&mut s.io);
            }
            continue;
        }
        // Run the client now, while its slot is in cache, rather than listing it for
        // the round: with hundreds of clients a second pass over the slots would miss
        // the cache again for each one.
        let stepped = if crowded {
            let stepped = step_lent(env, poll, s, i, &mut Now::lazy(clock), ev_exceeded);
            env.lent.take_in(&mut s.io);
            stepped
        } else {
            step(env, poll, s, i, &mut Now::lazy(clock), ev_exceeded)
        };
        match stepped {
            // The next round looks at every slot, which also sets the timer.
            Stepped::Waits(t) => rounds.scan_all |= t != i64::MAX,
            Stepped::Runnable => rounds.ready.push(i),
            Stepped::Done => rounds.remaining -= 1,
            Stepped::ExitOnAbort => return Err(LoopEnd::ExitOnAbort),
        }
    }
    Ok(())
}

/// Writes what a client's socket would not take whole before; once all is written,
/// the socket is watched for input only again.
#[inline(never)]
fn write_pending<H>(poll: &Poll, s: &mut Slot<H>, i: usize) {
    flush(s);
    if s.out_pos >= s.io.out.len() {
        if let Some(c) = &s.conn {
            let fd = std::os::fd::AsRawFd::as_raw_fd(c);
            let _ = poll
                .registry()
                .reregister(&mut SourceFd(&fd), Token(i), Interest::READABLE);
        }
        s.write_interest = false;
    }
}

/// Whether clients should stop starting transactions: a stop was asked for, another
/// thread met `--exit-on-abort`, or the `-T` end has come.
///
/// The end is a timer in the thread's poll set, set once to the `-T` end (pgbench takes
/// it from an alarm signal): the loop learns it has come from the poll it makes anyway,
/// rather than reading the clock after every wake-up to compare.
struct RunEnd {
    /// The end's timer (`None`: no `-T`, or no timer could be set up, when the clock
    /// is compared instead).
    timer: Option<WakeTimer>,
    /// The timer has fired.
    passed: bool,
}

impl RunEnd {
    /// Sets up the end's timer in `poll`, if the run has an end.
    fn new(dctx: &DriverCtx<'_>, poll: &Poll) -> RunEnd {
        let timer = (dctx.end_us > 0)
            .then(WakeTimer::new)
            .and_then(Result::ok)
            .filter(|t| {
                let fd = t.as_raw_fd();
                t.arm_at_monotonic(dctx.clock.monotonic_ns_at(dctx.end_us))
                    .is_ok()
                    && poll
                        .registry()
                        .register(&mut SourceFd(&fd), END_TOKEN, Interest::READABLE)
                        .is_ok()
            });
        RunEnd {
            timer,
            passed: false,
        }
    }

    /// Notes the end if its timer is among `events`: a whole batch of events is then
    /// handled as after the end.
    #[inline]
    fn note(&mut self, events: &Events) {
        if self.passed || self.timer.is_none() {
            return;
        }
        if events.iter().any(|e| e.token() == END_TOKEN) {
            self.passed = true;
            if let Some(t) = &self.timer {
                t.drain();
            }
        }
    }

    /// Whether clients should stop starting transactions now.
    #[inline]
    fn over(&self, dctx: &DriverCtx<'_>) -> bool {
        dctx.stop.is_raised()
            || dctx.halt.is_raised()
            || self.passed
            || self.by_timeout(dctx) && past_end(dctx)
    }

    /// The loop must wake up for the end by its poll timeout: there is no end timer.
    #[inline]
    fn by_timeout(&self, dctx: &DriverCtx<'_>) -> bool {
        self.timer.is_none() && dctx.end_us > 0
    }
}

/// Not read yet (the round's time in [`run_loop`]).
const UNREAD: i64 = i64::MIN;

/// The `-T` end has come, by the clock (when the end has no timer).
#[inline(never)]
fn past_end(dctx: &DriverCtx<'_>) -> bool {
    dctx.clock.now() >= dctx.end_us
}

/// The round's time `now`, read from `clock` if it is [`UNREAD`].
#[inline]
fn round_time(clock: &RunClock, now: &mut i64) -> i64 {
    if *now == UNREAD {
        *now = read_clock(clock);
    }
    *now
}

/// [`RunClock::now`] out of line: the loop reads the time in several places, rarely.
#[inline(never)]
fn read_clock(clock: &RunClock) -> i64 {
    clock.now()
}

/// What [`step`] borrows from its thread.
struct StepEnv<'e, 'a> {
    dctx: &'e DriverCtx<'a>,
    streams: &'e mut ThreadStreams,
    schedule: &'e mut Option<ThrottleSchedule>,
    rec: &'e mut ThreadRecorder,
    diag: &'e mut StderrDiag,
    /// `diag` wants debug messages.
    debug: bool,
    /// The buffers lent to the client being run.
    lent: Lent,
}

impl StepEnv<'_, '_> {
    /// What the client machine is given for one call.
    fn thread_ctx(&mut self, timer_exceeded: bool) -> ThreadCtx<'_> {
        ThreadCtx {
            plan: self.dctx.plan,
            rng: &mut *self.streams,
            schedule: self.schedule.as_mut(),
            end_us: self.dctx.end_us,
            timer_exceeded,
            rec: &mut *self.rec,
            diag: &mut *self.diag,
            debug: self.debug,
        }
    }
}

/// Where a client stands after [`step`].
enum Stepped {
    /// Waits for input (`i64::MAX`) or until this time.
    Waits(i64),
    /// Runs again in the next round.
    Runnable,
    /// Finished.
    Done,
    /// Aborted under `--exit-on-abort`.
    ExitOnAbort,
}

/// Advances client `i`, opens or closes its connection when it asks to, and writes what
/// it appended; an answer found right after its request was sent
/// ([`crate::EarlyRead`]) is gone on with at once, up to [`READ_EARLY_LIMIT`] times.
#[cfg_attr(target_os = "linux", link_section = ".text.hot.pgsurge")]
fn step<H: ScriptHost>(
    env: &mut StepEnv<'_, '_>,
    poll: &Poll,
    s: &mut Slot<H>,
    i: usize,
    now: &mut Now<'_>,
    timer_exceeded: bool,
) -> Stepped {
    let mut read_early = 0;
    loop {
        let may_read = read_early < READ_EARLY_LIMIT;
        match step_once(env, poll, s, i, now, timer_exceeded, may_read) {
            Some(stepped) => return stepped,
            None => read_early += 1,
        }
    }
}

/// Answers a client goes on with in one [`step`], read right after their requests were
/// sent. While its backend keeps answering during the sends, a client could otherwise
/// keep the thread from its other clients for as long as that lasts.
const READ_EARLY_LIMIT: u32 = 64;

/// Advances client `i` once and writes what it appended. `None`: the request went out,
/// the send took long enough for the server to have answered meanwhile, and the answer
/// was there: read, and the client can go on with it (`may_read_early`: a read is
/// allowed).
#[inline(always)]
fn step_once<H: ScriptHost>(
    env: &mut StepEnv<'_, '_>,
    poll: &Poll,
    s: &mut Slot<H>,
    i: usize,
    now: &mut Now<'_>,
    timer_exceeded: bool,
    may_read_early: bool,
) -> Option<Stepped> {
    let dctx = env.dctx;
    s.runnable = false;
    // A client goes on from one transaction to the next within `advance`
    // (bounded there): it yields only after several without waiting.
    let wait = s
        .client
        .advance(&mut env.thread_ctx(timer_exceeded), &mut s.io, now);
    s.route();
    // A request about to go out whole on a plain socket, after which the client waits
    // for its answer: the send is timed.
    let timed = may_read_early
        && matches!(wait, Wait::Read)
        && s.fd >= 0
        && s.out_pos == 0
        && !s.io.out.is_empty();
    match wait {
        Wait::Read => s.wake_at = i64::MAX,
        Wait::Until(t) => s.wake_at = t,
        Wait::Yield => {
            s.wake_at = i64::MAX;
            s.runnable = true;
        }
        Wait::Connect => {
            let t0 = dctx.clock.now();
            match open_pair(dctx.conn_config, dctx.replica_config) {
                Ok((c, replica)) => {
                    let fd = std::os::fd::AsRawFd::as_raw_fd(&c);
                    let _ =
                        poll.registry()
                            .register(&mut SourceFd(&fd), Token(i), Interest::READABLE);
                    s.set_connections(c, replica);
                    let _ = register_spare(poll, s, i);
                    s.out_pos = 0;
                    s.write_interest = false;
                    s.client.connected(&mut s.io);
                }
                Err(_) if dctx.plan.config.reconnect => {
                    s.client.reconnect_failed(dctx.clock.now());
                }
                Err((msg, class)) => {
                    if class == ErrorClass::Connection {
                        // Told apart at the run's end: a client that could not reach
                        // the server aborted with its connection gone.
                        s.client.connection_lost(&mut s.io);
                    }
                    s.client
                        .connect_failed(&mut env.thread_ctx(timer_exceeded), msg.trim_end());
                }
            }
            env.rec.connection_time(dctx.clock.now() - t0);
            s.runnable = true;
            s.wake_at = i64::MAX;
        }
        Wait::Disconnect => {
            let t0 = dctx.clock.now();
            flush(s);
            close(poll, s);
            env.rec.connection_time(dctx.clock.now() - t0);
            s.runnable = true;
            s.wake_at = i64::MAX;
        }
        Wait::Done => {
            // A client that finished cleanly keeps its idle connection until the
            // run's last transaction is done (see `take_open`): backends exiting
            // would take the cores from those still answering.
            if !flush(s) || s.out_pos < s.io.out.len() || !s.client.finished_idle() {
                close(poll, s);
            } else {
                quiet(poll, s);
            }
            s.done = true;
            if dctx.exit_on_abort && s.client.is_aborted() {
                return Some(Stepped::ExitOnAbort);
            }
            return Some(Stepped::Done);
        }
    }
    let sent_ns = if timed { monotonic_ns() } else { 0 };
    if !flush(s) {
        s.client.connection_lost(&mut s.io);
        s.runnable = true;
    } else if timed && s.io.out.is_empty() {
        // Written whole (a socket that took nothing keeps it all in `out`).
        let done_ns = monotonic_ns();
        if done_ns - sent_ns >= dctx.early_read_after_ns {
            let before = s.io.inbuf.len();
            if !fill(s, false) {
                s.client.connection_lost(&mut s.io);
                s.runnable = true;
            } else if s.io.inbuf.len() > before {
                // The answer arrived by the time the send returned.
                now.set_read(dctx.clock.at_monotonic_ns(done_ns));
                return None;
            }
        }
    } else if s.out_pos < s.io.out.len() && !s.write_interest {
        if let Some(c) = &s.conn {
            let fd = std::os::fd::AsRawFd::as_raw_fd(c);
            let _ = poll.registry().reregister(
                &mut SourceFd(&fd),
                Token(i),
                Interest::READABLE | Interest::WRITABLE,
            );
            s.write_interest = true;
        }
    }
    Some(if s.runnable {
        Stepped::Runnable
    } else {
        Stepped::Waits(s.wake_at)
    })
}

/// [`step`] with the thread's output buffer lent to the client (many clients per thread).
#[inline(never)]
#[cfg_attr(target_os = "linux", link_section = ".text.hot.pgsurge")]
fn step_lent<H: ScriptHost>(
    env: &mut StepEnv<'_, '_>,
    poll: &Poll,
    s: &mut Slot<H>,
    i: usize,
    now: &mut Now<'_>,
    timer_exceeded: bool,
) -> Stepped {
    env.lent.lend_out(&mut s.io, s.out_pos);
    let stepped = step(env, poll, s, i, now, timer_exceeded);
    env.lent.take_out(&mut s.io);
    stepped
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

/// The stop flag was raised: every client ends where it is, and no transaction it has
/// under way is counted (nor reported as failed). Clients between statements, in a
/// `\sleep` or a `-R` wait end at once. For those with a statement under way on the
/// server a cancel request is sent, and their connections are closed once the server
/// has answered all they sent (it is then idle, their transactions rolled back), or
/// [`CANCEL_GRACE`] after the requests were delivered, within [`STOP_LIMIT`].
#[cold]
#[inline(never)]
fn stop_now<H: ScriptHost>(poll: &mut Poll, events: &mut Events, slots: &mut [Slot<H>]) -> LoopEnd {
    let started = Instant::now();
    let mut tokens = Vec::new();
    // Per slot, the ReadyForQuery messages still awaited before its connection closes.
    let mut owed = vec![0u32; slots.len()];
    let mut awaited = 0usize;
    for (i, s) in slots.iter_mut().enumerate() {
        if s.done {
            continue;
        }
        let pipeline = s.client.in_pipeline();
        let mut expect = s.client.unanswered_syncs();
        if let (Some(c), true) = (&s.conn, expect > 0 || pipeline) {
            if !s.io.lost {
                tokens.push(c.cancel_token());
                // Only a request sent whole makes the server answer; one cut short
                // leaves it waiting for the rest, and is not sent further.
                let mut sent = s.out_pos >= s.io.out.len();
                if sent && pipeline {
                    // Statements of a pipeline are answered up to a Sync.
                    pgsurge_wire::codec::append::sync(&mut s.io.out);
                    expect += 1;
                    sent = flush(s) && s.out_pos >= s.io.out.len();
                }
                if sent && expect > 0 {
                    owed[i] = expect;
                    awaited += 1;
                    continue;
                }
            }
        }
        end_stopped(poll, s);
    }
    let cancels = CancelRequests::send(tokens);
    // Answers that arrived before the stop was noticed raise no new event: read them now.
    for (i, s) in slots.iter_mut().enumerate() {
        if owed[i] > 0 && answered(s, &mut owed[i]) {
            end_stopped(poll, s);
            awaited -= 1;
        }
    }
    let mut delivered_at = None;
    while awaited > 0 {
        let now = Instant::now();
        if delivered_at.is_none() && cancels.delivered() {
            delivered_at = Some(now);
        }
        let limit = started + STOP_LIMIT;
        let deadline = delivered_at.map_or(limit, |t: Instant| (t + CANCEL_GRACE).min(limit));
        if now >= deadline {
            break;
        }
        // While requests are still being sent, look again soon to start the grace.
        let timeout = match delivered_at {
            Some(_) => deadline - now,
            None => (deadline - now).min(Duration::from_millis(5)),
        };
        if let Err(e) = poll.poll(events, Some(timeout)) {
            if e.kind() != io::ErrorKind::Interrupted {
                break;
            }
            continue;
        }
        for ev in events.iter() {
            let i = ev.token().0;
            let (Some(s), Some(o)) = (slots.get_mut(i), owed.get_mut(i)) else {
                continue;
            };
            if *o > 0 && !s.done && answered(s, o) {
                end_stopped(poll, s);
                awaited -= 1;
            }
        }
    }
    for s in slots.iter_mut().filter(|s| !s.done) {
        end_stopped(poll, s);
    }
    LoopEnd::Stopped
}

/// Reads what the server sent a stopped client and counts the ReadyForQuery messages
/// in it against `owed`: true once none is owed any more, or the connection is gone.
/// The rest of the answers is dropped unread: nothing of them is counted.
fn answered<H>(s: &mut Slot<H>, owed: &mut u32) -> bool {
    if !fill(s, false) {
        return true;
    }
    let io = &mut s.io;
    let mut at = io.in_pos;
    while let Some(header) = io.inbuf.get(at..at + 5) {
        let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
        if len < 4 {
            // Not the protocol: nothing more can be read from this connection.
            return true;
        }
        if io.inbuf.len() - at <= len {
            break;
        }
        if header[0] == b'Z' {
            *owed = owed.saturating_sub(1);
        }
        at += 1 + len;
    }
    io.in_pos = at;
    io.compact();
    *owed == 0
}

/// Ends a client of a stopped run: its connection closes (the server rolls back what
/// it left open), and it is done.
fn end_stopped<H>(poll: &Poll, s: &mut Slot<H>) {
    close(poll, s);
    s.done = true;
    s.runnable = false;
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
