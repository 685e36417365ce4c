//! The loop of one driver thread: each turn runs the clients that are due, waits for
//! their sockets, the wake-up timer or the stop, and runs the clients the events name
//! (fetching the next ones' slots into cache meanwhile); and the end of the run as the
//! loop learns it.

use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};

use super::step::{step, step_lent, Lent, StepEnv, Stepped};
use super::stop::stop_now;
use super::{
    fill, flush, register_spare, DriverCtx, LoopEnd, Slot, ThreadStreams, CROWDED, END_TOKEN,
    MAX_POLL, TIMER_TOKEN, WAKE_TOKEN,
};
use crate::client::ScriptHost;
use crate::clock::{Now, RunClock};
use crate::recorder::ThreadRecorder;
use crate::stderr::StderrDiag;
use crate::throttle::ThrottleSchedule;
use crate::timer::WakeTimer;

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
