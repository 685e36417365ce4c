//! One client's turn: its machine advanced, its connection opened or closed when it
//! asks, what it appended written, and an answer that came during the send gone on
//! with at once; and the thread's buffers lent to the client being run.

use mio::unix::SourceFd;
use mio::{Interest, Poll, Token};
use pgsurge_wire::ErrorClass;

use super::{close, fill, flush, open_pair, quiet, register_spare, DriverCtx, Slot, ThreadStreams};
use crate::client::{ClientIo, ScriptHost, ThreadCtx, Wait};
use crate::clock::{monotonic_ns, Now};
use crate::recorder::ThreadRecorder;
use crate::stderr::StderrDiag;
use crate::throttle::ThrottleSchedule;

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
/// [`super::CROWDED`] clients per thread: with fewer, their own buffers stay in cache anyway.
#[derive(Default)]
pub(super) struct Lent {
    inbuf: bytes::BytesMut,
    out: Vec<u8>,
}

impl Lent {
    /// Lends the input buffer to a client with no pending input.
    #[inline]
    pub(super) fn lend_in(&mut self, io: &mut ClientIo) {
        if io.in_pos == 0 && io.inbuf.is_empty() {
            std::mem::swap(&mut io.inbuf, &mut self.inbuf);
        }
    }

    /// Takes the input buffer back once everything in it is consumed.
    #[inline]
    pub(super) fn take_in(&mut self, io: &mut ClientIo) {
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

/// What [`step`] borrows from its thread.
pub(super) struct StepEnv<'e, 'a> {
    pub(super) dctx: &'e DriverCtx<'a>,
    pub(super) streams: &'e mut ThreadStreams,
    pub(super) schedule: &'e mut Option<ThrottleSchedule>,
    pub(super) rec: &'e mut ThreadRecorder,
    pub(super) diag: &'e mut StderrDiag,
    /// `diag` wants debug messages.
    pub(super) debug: bool,
    /// The buffers lent to the client being run.
    pub(super) lent: Lent,
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
pub(super) enum Stepped {
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
pub(super) fn step<H: ScriptHost>(
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
pub(super) fn step_lent<H: ScriptHost>(
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
