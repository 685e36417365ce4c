//! A replay's driver thread: owns the connections of its sessions, an epoll instance
//! (`mio`) and their timing, and plays each session's events as the log had them —
//! connect at its offset, each statement at its time (or at once under `--max`, or in
//! the log's order under `--strict-order`), disconnect — counting what the replay did
//! into a [`ReplayTally`]. The protocol is [`SessionMachine`]'s; this file does the I/O.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::io;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use pgsurge_replay::events::{Event, LoggedEnd, SessionNo, Statement};
use pgsurge_replay::fidelity::{ErrorExample, ReplayTally, ERROR_EXAMPLES};
use pgsurge_replay::machine::{Reply, SessionMachine};
use pgsurge_replay::sessions::describe;
use pgsurge_replay::{Order, Pacing, Target};
use pgsurge_wire::{ConnConfig, Connection};

use super::reader::Returns;
use crate::cancel::CancelRequests;
use crate::clock::RunClock;
use crate::stop::StopFlag;

/// Events a driver keeps queued for its sessions before it takes more from the reader.
pub(crate) const QUEUED_LIMIT: usize = 64 * 1024;

/// Longest poll while nothing is due.
const MAX_POLL_US: i64 = 50_000;

/// Poll while a session waits for events the reader has not handed over yet.
const STARVED_POLL_US: i64 = 1_000;

/// How many connection failures a driver prints.
const CONNECT_MESSAGES: u64 = 5;

/// The stop flags' token in the poll set.
const WAKE: Token = Token(usize::MAX);

/// What a driver thread needs.
pub(crate) struct DriverCtx {
    pub events: Receiver<Vec<Event>>,
    pub clock: RunClock,
    /// The schedule's start on the run clock.
    pub start_us: i64,
    pub pacing: Pacing,
    pub order: Order,
    pub target: Target,
    pub stop: StopFlag,
    /// The replay's own stop (an unreadable line, another driver's stall).
    pub halt: StopFlag,
    pub paths: Arc<[PathBuf]>,
    /// Batches and statements played, back to the reader.
    pub returns: Returns,
}

/// How a driver ended.
pub(crate) struct DriverEnd {
    pub tally: ReplayTally,
    /// Why it ended before the log did.
    pub ended_early: Option<String>,
}

/// A statement under way.
struct Busy {
    stmt: Statement,
    sent_us: i64,
    /// The log's end of it, once known.
    logged: Option<LoggedEnd>,
    cancel_at: Option<i64>,
}

/// A statement answered whose logged end is not known yet.
struct Unsettled {
    error: Option<(String, String)>,
    at: pgsurge_replay::log::Position,
}

/// One replayed session.
struct Sess {
    no: SessionNo,
    queue: VecDeque<Event>,
    conn: Option<Connection>,
    /// The socket of a plain connection, else -1.
    fd: i32,
    out: Vec<u8>,
    out_pos: usize,
    inbuf: BytesMut,
    machine: SessionMachine,
    busy: Option<Busy>,
    unsettled: Option<Unsettled>,
    /// Could not connect, or lost its connection: its statements are not sent.
    dead: bool,
    /// Listed to run in the next round.
    listed: bool,
    write_interest: bool,
}

impl Sess {
    fn new(no: SessionNo) -> Sess {
        Sess {
            no,
            queue: VecDeque::new(),
            conn: None,
            fd: -1,
            out: Vec::with_capacity(1024),
            out_pos: 0,
            inbuf: BytesMut::with_capacity(8192),
            machine: SessionMachine::new(),
            busy: None,
            unsettled: None,
            dead: false,
            listed: false,
            write_interest: false,
        }
    }
}

/// What a session's step left.
enum Step {
    /// Waits for an answer or for events.
    Waits,
    /// Due again at this time.
    At(i64),
    /// Its statement waits for its turn in the log's order.
    Gate(u64),
    /// Its connection is due, but this round made one already: the next round.
    NextRound,
    /// The session ended.
    Ended,
}

/// A logged user and database: the connections of its sessions share one configuration.
type UserDatabase = (Option<Arc<str>>, Option<Arc<str>>);

/// The driver's state.
struct Driver {
    ctx: DriverCtx,
    poll: Poll,
    slots: Vec<Option<Sess>>,
    free: Vec<usize>,
    by_no: HashMap<SessionNo, usize>,
    queued: usize,
    input_open: bool,
    timers: BinaryHeap<Reverse<(i64, usize)>>,
    runnable: Vec<usize>,
    configs: HashMap<UserDatabase, Result<ConnConfig, String>>,
    tally: ReplayTally,
    /// Strict order: the next statement allowed to start, and who waits for which.
    gate: u64,
    gated: HashMap<u64, usize>,
    last_progress_us: i64,
    starved: bool,
    /// This round opened a connection (see [`Driver::run_due`]).
    connected: bool,
    connect_messages: u64,
}

/// Runs the sessions the reader hands this thread until the log ends or the replay stops.
pub(crate) fn drive(ctx: DriverCtx) -> DriverEnd {
    let poll = match Poll::new() {
        Ok(p) => p,
        Err(e) => {
            return DriverEnd {
                tally: ReplayTally::default(),
                ended_early: Some(format!("epoll_create1() failed: {e}")),
            }
        }
    };
    if let Some(fd) = ctx.stop.wake_fd() {
        let _ = poll
            .registry()
            .register(&mut SourceFd(&fd), WAKE, Interest::READABLE);
    }
    let now = ctx.clock.now();
    let mut d = Driver {
        ctx,
        poll,
        slots: Vec::new(),
        free: Vec::new(),
        by_no: HashMap::new(),
        queued: 0,
        input_open: true,
        timers: BinaryHeap::new(),
        runnable: Vec::new(),
        configs: HashMap::new(),
        tally: ReplayTally::default(),
        gate: 0,
        gated: HashMap::new(),
        last_progress_us: now,
        starved: false,
        connected: false,
        connect_messages: 0,
    };
    let ended_early = d.run();
    d.close_all();
    DriverEnd {
        tally: d.tally,
        ended_early,
    }
}

impl Driver {
    fn run(&mut self) -> Option<String> {
        let mut events = Events::with_capacity(256);
        loop {
            if self.ctx.stop.is_raised() {
                return Some("stopped before the log's end".into());
            }
            if self.ctx.halt.is_raised() {
                return Some("the replay ended before the log's end".into());
            }
            self.take_events();
            if self.finished() {
                return None;
            }
            let now = self.ctx.clock.now();
            self.run_due(now);
            // When this round ended the final session, return without polling.
            if self.finished() {
                return None;
            }
            if let Some(stall) = self.stalled() {
                return Some(stall);
            }
            let timeout = self.timeout();
            match self
                .poll
                .poll(&mut events, Some(Duration::from_micros(timeout as u64)))
            {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Some(format!("epoll_wait() failed: {e}")),
            }
            for ev in events.iter() {
                if ev.token() == WAKE {
                    continue;
                }
                let i = ev.token().0;
                if ev.is_writable() {
                    self.write_pending(i);
                }
                let closed = ev.is_read_closed() || ev.is_error();
                if ev.is_readable() || closed {
                    self.readable(i, closed);
                }
            }
        }
    }

    /// The log is read to its end and every session has ended.
    fn finished(&self) -> bool {
        !self.input_open && self.by_no.is_empty()
    }

    /// Takes batches from the reader while few events are queued.
    fn take_events(&mut self) {
        while self.input_open && self.queued < QUEUED_LIMIT {
            match self.ctx.events.try_recv() {
                Ok(mut batch) => {
                    for ev in batch.drain(..) {
                        self.queue(ev);
                    }
                    self.ctx.returns.emptied(batch);
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => self.input_open = false,
            }
        }
    }

    fn queue(&mut self, ev: Event) {
        let no = ev.session();
        let i = match (self.by_no.get(&no), &ev) {
            (Some(&i), _) => i,
            (None, Event::Connect(_)) => {
                let s = Sess::new(no);
                let i = match self.free.pop() {
                    Some(i) => {
                        self.slots[i] = Some(s);
                        i
                    }
                    None => {
                        self.slots.push(Some(s));
                        self.slots.len() - 1
                    }
                };
                self.by_no.insert(no, i);
                i
            }
            // A session this driver does not have (ended): nothing to do.
            (None, _) => {
                self.ctx.returns.played(ev);
                return;
            }
        };
        if let Some(s) = self.slots[i].as_mut() {
            s.queue.push_back(ev);
            self.queued += 1;
            self.list(i);
        }
    }

    fn list(&mut self, i: usize) {
        if let Some(s) = self.slots[i].as_mut() {
            if !s.listed {
                s.listed = true;
                self.runnable.push(i);
            }
        }
    }

    /// Runs the sessions listed and those whose time has come. A round opens at most one
    /// connection: a connection waits for the server's new backend, and while the due
    /// connections of a late replay were opened one after the other, the answers of the
    /// sessions already open would wait unread and their ends with them, so the replay
    /// would hold more connections than the log had sessions at once. Between two
    /// connections every open session takes its next step.
    fn run_due(&mut self, now: i64) {
        self.connected = false;
        while let Some(&Reverse((t, i))) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.pop();
            self.list(i);
        }
        self.starved = false;
        let mut round = std::mem::take(&mut self.runnable);
        for &i in &round {
            if let Some(s) = self.slots[i].as_mut() {
                s.listed = false;
            }
        }
        for i in round.drain(..) {
            self.step(i);
        }
        if self.runnable.is_empty() {
            self.runnable = round;
        }
    }

    /// µs the poll may wait.
    fn timeout(&self) -> i64 {
        if !self.runnable.is_empty() {
            return 0;
        }
        let now = self.ctx.clock.now();
        let mut t = MAX_POLL_US;
        if self.starved || (self.input_open && self.queued < QUEUED_LIMIT / 2) {
            t = STARVED_POLL_US;
        }
        if let Some(&Reverse((at, _))) = self.timers.peek() {
            t = t.min((at - now).max(0));
        }
        t
    }

    fn step(&mut self, i: usize) {
        match self.advance(i) {
            Step::Waits => {}
            Step::At(t) => self.timers.push(Reverse((t, i))),
            Step::Gate(seq) => {
                self.gated.insert(seq, i);
            }
            Step::NextRound => self.list(i),
            Step::Ended => self.remove(i),
        }
    }

    /// Plays session `i`'s next events as far as it can now.
    fn advance(&mut self, i: usize) -> Step {
        let now = self.ctx.clock.now();
        let max = matches!(self.ctx.pacing, Pacing::Max { .. });
        let (start, speed) = (self.ctx.start_us, self.ctx.pacing.speed());
        let due = |offset_us: i64| start + (offset_us as f64 / speed) as i64;
        loop {
            let s = self.slots[i].as_mut().expect("a listed session exists");
            if let Some(b) = s.busy.as_mut() {
                // The log's end of the statement under way may follow it.
                if let Some(Event::Outcome(o)) = s.queue.front() {
                    if o.seq == b.stmt.seq {
                        b.logged = Some(o.kind);
                        if let LoggedEnd::Cancelled { after_us } = o.kind {
                            let at = b.sent_us + (after_us as f64 / speed) as i64;
                            b.cancel_at = Some(at);
                            s.queue.pop_front();
                            self.queued -= 1;
                            self.timers.push(Reverse((at, i)));
                            continue;
                        }
                        s.queue.pop_front();
                        self.queued -= 1;
                        continue;
                    }
                }
                if let Some(at) = b.cancel_at {
                    if at <= now {
                        b.cancel_at = None;
                        if let Some(c) = &s.conn {
                            drop(CancelRequests::send(vec![c.cancel_token()]));
                            self.tally.cancels_sent += 1;
                        }
                    } else {
                        return Step::At(at);
                    }
                }
                return Step::Waits;
            }
            if s.unsettled.is_some() {
                let logged = match s.queue.front() {
                    None => {
                        self.starved |= self.input_open;
                        return Step::Waits;
                    }
                    Some(Event::Outcome(o)) => Some(o.kind),
                    Some(_) => None,
                };
                if logged.is_some() {
                    s.queue.pop_front();
                    self.queued -= 1;
                }
                let u = s.unsettled.take().expect("checked");
                self.settle(u, logged);
                continue;
            }
            let Some(front) = s.queue.front() else {
                self.starved |= self.input_open;
                return Step::Waits;
            };
            match front {
                Event::Outcome(_) => {
                    s.queue.pop_front();
                    self.queued -= 1;
                }
                Event::Connect(c) => {
                    let due = due(c.offset_us);
                    if due > now {
                        return Step::At(due);
                    }
                    if std::mem::replace(&mut self.connected, true) {
                        return Step::NextRound;
                    }
                    self.connect(i);
                }
                Event::Statement(st) => {
                    let seq = st.seq;
                    let due = if max { now } else { due(st.offset_us) };
                    if s.dead {
                        if let Some(ev) = s.queue.pop_front() {
                            self.ctx.returns.played(ev);
                        }
                        self.queued -= 1;
                        self.tally.not_sent += 1;
                        self.pass_gate(seq);
                        continue;
                    }
                    if due > now {
                        return Step::At(due);
                    }
                    if matches!(self.ctx.order, Order::Strict { .. }) && seq != self.gate {
                        return Step::Gate(seq);
                    }
                    self.send(i, now, due);
                    self.pass_gate(seq);
                    return Step::Waits;
                }
                Event::Disconnect { offset_us, .. } => {
                    let due = if max { now } else { due(*offset_us) };
                    if due > now {
                        return Step::At(due);
                    }
                    return Step::Ended;
                }
            }
        }
    }

    /// Strict order: statement `seq` went (or was dropped); the next may go.
    fn pass_gate(&mut self, seq: u64) {
        if !matches!(self.ctx.order, Order::Strict { .. }) || seq != self.gate {
            return;
        }
        self.gate += 1;
        if let Some(i) = self.gated.remove(&self.gate) {
            self.list(i);
        }
    }

    /// Connects session `i` (blocking, as pgbench connects).
    fn connect(&mut self, i: usize) {
        let s = self.slots[i].as_mut().expect("exists");
        let Some(Event::Connect(c)) = s.queue.pop_front() else {
            return;
        };
        self.queued -= 1;
        let key = (c.user.clone(), c.database.clone());
        let target = &self.ctx.target;
        let cfg = self.configs.entry(key).or_insert_with(|| {
            target
                .config_for(
                    c.user.as_deref(),
                    c.database.as_deref(),
                    &pgsurge_wire::process_env,
                )
                .map_err(|e| e.to_string())
        });
        let opened = match cfg {
            Ok(cfg) => Connection::connect(cfg)
                .map_err(|e| e.to_string())
                .and_then(|mut conn| {
                    conn.set_nonblocking(true)
                        .map(|()| conn)
                        .map_err(|e| e.to_string())
                }),
            Err(e) => Err(e.clone()),
        };
        let s = self.slots[i].as_mut().expect("exists");
        match opened {
            Ok(conn) => {
                let fd = std::os::fd::AsRawFd::as_raw_fd(&conn);
                let _ =
                    self.poll
                        .registry()
                        .register(&mut SourceFd(&fd), Token(i), Interest::READABLE);
                s.fd = conn.plain_fd().unwrap_or(-1);
                s.conn = Some(conn);
                self.tally.sessions += 1;
            }
            Err(msg) => {
                s.dead = true;
                self.tally.failed_connections += 1;
                self.connect_messages += 1;
                if self.connect_messages <= CONNECT_MESSAGES {
                    eprintln!(
                        "pgsurge replay: session {} (user {}, database {}) could not connect: {}",
                        s.no + 1,
                        c.user.as_deref().unwrap_or("-"),
                        c.database.as_deref().unwrap_or("-"),
                        msg.trim_end()
                    );
                }
            }
        }
    }

    /// Sends session `i`'s next statement, due at `due`.
    fn send(&mut self, i: usize, now: i64, due: i64) {
        let s = self.slots[i].as_mut().expect("exists");
        let Some(Event::Statement(stmt)) = s.queue.pop_front() else {
            return;
        };
        self.queued -= 1;
        s.machine.encode(&stmt.request, &mut s.out);
        let mut cancel_at = None;
        let mut logged = None;
        // The log's end may already be queued right behind it.
        if let Some(Event::Outcome(o)) = s.queue.front() {
            if o.seq == stmt.seq {
                logged = Some(o.kind);
                if let LoggedEnd::Cancelled { after_us } = o.kind {
                    cancel_at = Some(now + (after_us as f64 / self.ctx.pacing.speed()) as i64);
                }
                s.queue.pop_front();
                self.queued -= 1;
            }
        }
        s.busy = Some(Busy {
            stmt,
            sent_us: now,
            logged,
            cancel_at,
        });
        if let Some(at) = cancel_at {
            self.timers.push(Reverse((at, i)));
        }
        if matches!(self.ctx.pacing, Pacing::Speed(_)) {
            let second = ((now - self.ctx.start_us).max(0) / 1_000_000) as usize;
            self.tally.note_lag(second, now - due);
        }
        self.last_progress_us = now;
        if !self.flush(i) {
            self.lost(i);
        }
    }

    /// Writes what session `i` has to send; false if the connection broke.
    fn flush(&mut self, i: usize) -> bool {
        let s = self.slots[i].as_mut().expect("exists");
        while s.out_pos < s.out.len() {
            let pending = &s.out[s.out_pos..];
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
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if !s.write_interest {
                        if let Some(c) = &s.conn {
                            let fd = std::os::fd::AsRawFd::as_raw_fd(c);
                            let _ = self.poll.registry().reregister(
                                &mut SourceFd(&fd),
                                Token(i),
                                Interest::READABLE | Interest::WRITABLE,
                            );
                            s.write_interest = true;
                        }
                    }
                    return true;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        if let Some(c) = s.conn.as_mut().filter(|c| c.wants_write()) {
            match c.flush() {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(_) => return false,
            }
        }
        s.out.clear();
        s.out_pos = 0;
        true
    }

    fn write_pending(&mut self, i: usize) {
        if self.slots.get(i).is_none_or(Option::is_none) {
            return;
        }
        if !self.flush(i) {
            self.lost(i);
            return;
        }
        let s = self.slots[i].as_mut().expect("exists");
        if s.out.is_empty() && s.write_interest {
            if let Some(c) = &s.conn {
                let fd = std::os::fd::AsRawFd::as_raw_fd(c);
                let _ = self.poll.registry().reregister(
                    &mut SourceFd(&fd),
                    Token(i),
                    Interest::READABLE,
                );
            }
            s.write_interest = false;
        }
    }

    /// Reads what session `i`'s server sent and completes its statement when answered.
    /// `closed`: the poller reported a hang-up, so the socket is read until its end.
    fn readable(&mut self, i: usize, closed: bool) {
        let Some(s) = self.slots.get_mut(i).and_then(Option::as_mut) else {
            return;
        };
        // A plain socket is drained by a read that leaves room in the buffer: the extra
        // read that would only return EAGAIN is skipped (the poller reports the next
        // bytes as a new edge). TLS may hold decrypted bytes, so it is read to EAGAIN.
        let shortcut = s.fd >= 0 && !closed;
        let mut eof = false;
        loop {
            let read = if s.fd >= 0 {
                pgsurge_wire::read_plain(s.fd, &mut s.inbuf)
            } else {
                match s.conn.as_mut() {
                    Some(c) => c.try_read(&mut s.inbuf),
                    None => return,
                }
            };
            match read {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(_) if shortcut && s.inbuf.len() < s.inbuf.capacity() => break,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    eof = true;
                    break;
                }
            }
        }
        if s.busy.is_some() && !s.inbuf.is_empty() {
            match s.machine.read(&s.inbuf, &mut s.out) {
                Ok((used, reply)) => {
                    s.inbuf.advance(used);
                    if !s.out.is_empty() && !self.flush(i) {
                        self.lost(i);
                        return;
                    }
                    if let Some(reply) = reply {
                        self.answered(i, reply);
                    }
                }
                Err(_) => eof = true,
            }
        } else if s.busy.is_none() {
            // Notices and parameter changes between statements.
            s.inbuf.clear();
        }
        if eof {
            self.lost(i);
        }
    }

    /// Session `i`'s statement was answered.
    fn answered(&mut self, i: usize, reply: Reply) {
        let now = self.ctx.clock.now();
        self.last_progress_us = now;
        let s = self.slots[i].as_mut().expect("exists");
        let Some(b) = s.busy.take() else { return };
        self.tally
            .counts
            .of(b.stmt.fingerprint)
            .record(reply.error.is_some(), Some(now - b.sent_us));
        let u = Unsettled {
            error: reply.error,
            at: b.stmt.at,
        };
        match b.logged {
            Some(kind) => self.settle(u, Some(kind)),
            None => s.unsettled = Some(u),
        }
        self.ctx.returns.played(Event::Statement(b.stmt));
        self.list(i);
    }

    /// Compares a statement's replayed end with its logged one.
    fn settle(&mut self, u: Unsettled, logged: Option<LoggedEnd>) {
        match (logged.is_some(), u.error) {
            (true, Some(_)) => self.tally.expected_errors += 1,
            (true, None) => self.tally.missing_errors += 1,
            (false, Some((sqlstate, message))) => {
                self.tally.unexpected_errors += 1;
                if self.tally.error_examples.len() < ERROR_EXAMPLES {
                    self.tally.error_examples.push(ErrorExample {
                        at: describe(u.at, &self.ctx.paths),
                        sqlstate,
                        message,
                    });
                }
            }
            (false, None) => {}
        }
    }

    /// Session `i`'s connection broke: what it had under way failed, the rest is not sent.
    fn lost(&mut self, i: usize) {
        let s = self.slots[i].as_mut().expect("exists");
        s.dead = true;
        if let Some(b) = s.busy.take() {
            self.tally.counts.of(b.stmt.fingerprint).record(true, None);
            let u = Unsettled {
                error: Some(("08006".into(), "connection lost".into())),
                at: b.stmt.at,
            };
            self.settle(u, b.logged);
            self.ctx.returns.played(Event::Statement(b.stmt));
        }
        let s = self.slots[i].as_mut().expect("exists");
        if let Some(c) = s.conn.take() {
            let fd = std::os::fd::AsRawFd::as_raw_fd(&c);
            let _ = self.poll.registry().deregister(&mut SourceFd(&fd));
        }
        s.fd = -1;
        self.list(i);
    }

    /// Ends session `i`: its connection closes as the log's did.
    fn remove(&mut self, i: usize) {
        let Some(mut s) = self.slots[i].take() else {
            return;
        };
        if let Some(Event::Disconnect { .. }) = s.queue.front() {
            s.queue.pop_front();
            self.queued -= 1;
        }
        self.queued -= s.queue.len();
        if let Some(c) = s.conn.take() {
            if s.machine.in_transaction() {
                self.tally.ended_in_transaction += 1;
            }
            let fd = std::os::fd::AsRawFd::as_raw_fd(&c);
            let _ = self.poll.registry().deregister(&mut SourceFd(&fd));
            c.close();
        }
        self.by_no.remove(&s.no);
        self.free.push(i);
    }

    /// Strict order: the statement whose turn it is cannot start, and nothing moved for
    /// the stall time: which statements wait, and for what.
    fn stalled(&self) -> Option<String> {
        let Order::Strict { stall_after } = self.ctx.order else {
            return None;
        };
        let now = self.ctx.clock.now();
        if self.gated.is_empty() || now - self.last_progress_us < stall_after.as_micros() as i64 {
            return None;
        }
        let paths = &self.ctx.paths;
        let running = |b: &Busy| {
            let sql: String = b
                .stmt
                .request
                .sql()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            format!(
                "statement #{} ({}) for {:.1} s: {}",
                b.stmt.seq + 1,
                describe(b.stmt.at, paths),
                (now - b.sent_us) as f64 / 1e6,
                sql.chars().take(120).collect::<String>()
            )
        };
        let mut text = format!(
            "no statement could go on for {:.1} s in the log's order: statement #{}",
            (now - self.last_progress_us) as f64 / 1e6,
            self.gate + 1
        );
        let next =
            self.slots.iter().flatten().find(
                |s| matches!(s.queue.front(), Some(Event::Statement(st)) if st.seq == self.gate),
            );
        match next {
            Some(s) => {
                if let Some(Event::Statement(st)) = s.queue.front() {
                    text += &format!(" ({}) is next", describe(st.at, paths));
                }
                if let Some(b) = &s.busy {
                    text += &format!(
                        ", but its session {} is still running {}",
                        s.no + 1,
                        running(b)
                    );
                }
            }
            None => text += " is next",
        }
        let mut waiting: Vec<(u64, String)> = self
            .gated
            .iter()
            .filter_map(|(&seq, &i)| match self.slots[i].as_ref()?.queue.front() {
                Some(Event::Statement(st)) => Some((seq, describe(st.at, paths))),
                _ => None,
            })
            .collect();
        waiting.sort();
        let listed: Vec<String> = waiting
            .iter()
            .take(5)
            .map(|(seq, at)| format!("#{} ({at})", seq + 1))
            .collect();
        text += &format!(
            "; {} statement{} of other sessions wait for their turn: {}",
            waiting.len(),
            if waiting.len() == 1 { "" } else { "s" },
            listed.join(", ")
        );
        let mut others: Vec<(&Sess, &Busy)> = self
            .slots
            .iter()
            .flatten()
            .filter_map(|s| Some((s, s.busy.as_ref()?)))
            .filter(|(s, _)| next.is_none_or(|n| n.no != s.no))
            .collect();
        others.sort_by_key(|(_, b)| b.sent_us);
        for (s, b) in others.iter().take(5) {
            text += &format!("; session {} is running {}", s.no + 1, running(b));
        }
        Some(text)
    }

    /// Closes every session: statements under way are cancelled, those queued not sent.
    fn close_all(&mut self) {
        let mut tokens = Vec::new();
        for s in self.slots.iter_mut().flatten() {
            self.tally.not_sent += s
                .queue
                .iter()
                .filter(|e| matches!(e, Event::Statement(_)))
                .count() as u64;
            if let (Some(c), Some(_)) = (&s.conn, &s.busy) {
                tokens.push(c.cancel_token());
            }
        }
        // What the reader still holds for this thread is not sent either.
        while let Ok(batch) = self.ctx.events.try_recv() {
            self.tally.not_sent += batch
                .iter()
                .filter(|e| matches!(e, Event::Statement(_)))
                .count() as u64;
        }
        drop(CancelRequests::send(tokens));
        for s in self.slots.iter_mut().flatten() {
            if let Some(c) = s.conn.take() {
                c.close();
            }
        }
    }
}
