//! The client state machine: one pgbench client running transactions, with no I/O and no
//! clock of its own (pgbench's `advanceConnectionState`, §3.3, §3.4, §6, §8.2).
//!
//! A driver hands it the current time and a [`ClientIo`] (bytes received, bytes to send,
//! whether a connection exists) and calls [`Client::advance`] until it returns a
//! [`Wait`]: read more, sleep until a time, open or close a connection, or done. Script
//! evaluation goes through a [`ScriptHost`], statistics through a [`Recorder`], messages
//! through [`Diagnostics`], so the whole machine runs in tests against a fake clock and
//! scripted server bytes. It must not block, allocate per transaction in steady state, or
//! read a clock.
//!
//! | file | holds |
//! |---|---|
//! | `mod.rs` | the states and [`Client::advance`]: choosing scripts, meta commands, sending |
//! | `api.rs` | what the machine exchanges with its driver: [`ClientIo`], [`Wait`], the host, recorder and diagnostics traits |
//! | `read.rs` | reading the server's answers: prepare round trips, results, `\gset`/`\aset`, the ROLLBACK after an error |
//! | `reply.rs` | framing one command's answer into libpq-like results and pgbench's error classification |
//! | `reconnect.rs` | `--reconnect`: a lost transaction counted by class, a new connection, the run going on |
//! | `tests.rs` | the machine against a fake clock and scripted server bytes |

pub use self::api::*;
pub use self::pacing::Pacing;
use self::reply::{InFlight, ReplyState};
use crate::clock::Now;
use crate::plan::{CommandKind, MetaTag, Plan, QueryMode, SqlForm, SqlPlan};
use crate::throttle::{Slot, ThrottleSchedule};
use pgsurge_wire::codec::append;
use pgsurge_wire::TransactionStatus;

mod api;
mod pacing;
mod read;
mod reconnect;
mod reply;
#[cfg(test)]
mod tests;

use read::ReadOutcome;
pub use reconnect::RECONNECT_PAUSE_US;

/// Transactions one [`Client::advance`] call may end before it yields.
pub const MAX_IMMEDIATE_TXNS: u32 = 8;

/// pgbench's client states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientState {
    /// Pick the next script.
    ChooseScript,
    /// Draw the next `-R` slot.
    PrepareThrottle,
    /// Wait for the scheduled start.
    Throttle,
    /// Begin a transaction.
    StartTx,
    /// Run the current command.
    StartCommand,
    /// Prepared statements sent (Parse+Sync), waiting for their answers.
    WaitPrepare,
    /// Waiting for a SQL command's results.
    WaitResult,
    /// `\sleep`.
    Sleep,
    /// The keying time before a transaction (not part of its latency).
    Keying,
    /// The think time after a transaction (not part of its latency).
    Think,
    /// A command is done.
    EndCommand,
    /// Skipping commands in an inactive `\if` branch.
    SkipCommand,
    /// Transaction done.
    EndTx,
    /// A retryable error happened.
    Error,
    /// Waiting for the ROLLBACK after an error.
    WaitRollback,
    /// Discarding pipeline results after an error.
    DiscardPipeline,
    /// Retry the transaction.
    Retry,
    /// Count the transaction as failed.
    Failure,
    /// `--reconnect`: the transaction under way was lost (counted at the next step).
    Lost,
    /// `--reconnect`: dropping the connection and opening another.
    Reconnect,
    /// Stopped because of an error.
    Aborted,
    /// Stopped normally.
    Finished,
}

/// Conditional stack states (pgbench's `ifState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IfState {
    True,
    False,
    Ignored,
    ElseTrue,
    ElseFalse,
}

/// The per-thread context a client runs in.
pub struct ThreadCtx<'a> {
    /// Scripts and settings.
    pub plan: &'a Plan,
    /// The thread's `choose`/`throttle` streams.
    pub rng: &'a mut dyn ThreadRng,
    /// The thread's `-R` schedule.
    pub schedule: Option<&'a mut ThrottleSchedule>,
    /// `-T` end (µs), 0 if none; only the throttle uses it (as pgbench does).
    pub end_us: i64,
    /// The run must stop starting transactions (`-T` expired, or a stop request).
    pub timer_exceeded: bool,
    /// Statistics.
    pub rec: &'a mut dyn Recorder,
    /// Messages.
    pub diag: &'a mut dyn Diagnostics,
    /// `diag` wants debug messages (`-d`): asked once per thread, not per statement.
    pub debug: bool,
}

/// SQLSTATE classes pgbench distinguishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorStatus {
    None,
    Serialization,
    Deadlock,
    Other,
}

/// One pgbench client.
///
/// Laid out in declaration order (`repr(C)`), what every statement touches first: with
/// hundreds of clients per thread a client's state is out of cache each time it runs, so
/// the fewer cache lines it spans, the fewer misses per statement.
#[repr(C)]
pub struct Client<H> {
    state: ClientState,
    estatus: ErrorStatus,
    /// Transaction status of the last ReadyForQuery.
    tx_status: TransactionStatus,
    in_pipeline: bool,
    /// The client stopped because of an error.
    aborted: bool,
    /// Coming back to StartCommand after the prepare round trip of this command.
    resuming_after_prepare: bool,
    /// State to enter once `WaitPrepare` is done.
    after_prepare: ClientState,
    /// Syncs sent whose ReadyForQuery has not arrived.
    syncs_pending: u32,
    tries: u32,
    script: usize,
    command: usize,
    cnt: i64,
    txn_scheduled: i64,
    txn_begin: i64,
    stmt_begin: i64,
    sleep_until: i64,
    /// Client id (0-based, global).
    pub id: usize,
    /// Statements prepared on this connection.
    prepared: PreparedSet,
    reply: ReplyState,
    /// Prepares and pipelined commands whose answers are still to come.
    in_flight: InFlight,
    conds: Vec<IfState>,
    /// Script variables and PRNG.
    pub host: H,
    /// The text sent for the current command when it has `\aset` (simple mode), whose
    /// results may change the variables before a later statement of it fails.
    aset_text: Vec<u8>,
    /// Its card deck and think-time draws, when the run has either.
    pacing: Option<Box<Pacing>>,
    /// `--reconnect`: how the transaction lost in [`ClientState::Lost`] failed.
    lost_as: TxnStatus,
}

/// Which statements a connection has prepared, by script and command. Up to 4 scripts
/// of up to 32 commands (nearly every run) are bits inside the client, checked per
/// statement without following a pointer; commands beyond use a table.
#[derive(Debug, Default)]
struct PreparedSet {
    /// Bit `script * 32 + command`, in two words (a `u128` would align the client's
    /// fields to 16 bytes and pad them).
    bits: [u64; 2],
    /// Flags of the statements beyond, by script and command; one pointer inside the
    /// client instead of a vector's three words.
    #[allow(clippy::box_collection)]
    more: Option<Box<Vec<Vec<bool>>>>,
}

impl PreparedSet {
    const SCRIPTS: usize = 4;
    const COMMANDS: usize = 32;

    /// Word and mask of a statement that has a bit.
    fn bit(script: usize, command: usize) -> Option<(usize, u64)> {
        (script < Self::SCRIPTS && command < Self::COMMANDS).then(|| {
            let n = script * Self::COMMANDS + command;
            (n / 64, 1u64 << (n % 64))
        })
    }

    fn contains(&self, script: usize, command: usize) -> bool {
        match Self::bit(script, command) {
            Some((w, b)) => self.bits[w] & b != 0,
            None => self
                .more
                .as_ref()
                .and_then(|m| m.get(script))
                .and_then(|s| s.get(command))
                .is_some_and(|&f| f),
        }
    }

    fn insert(&mut self, script: usize, command: usize) {
        match Self::bit(script, command) {
            Some((w, b)) => self.bits[w] |= b,
            None => {
                let more = self.more.get_or_insert_with(Box::default);
                if more.len() <= script {
                    more.resize_with(script + 1, Vec::new);
                }
                let flags = &mut more[script];
                if flags.len() <= command {
                    flags.resize(command + 1, false);
                }
                flags[command] = true;
            }
        }
    }

    fn clear(&mut self) {
        self.bits = [0; 2];
        if let Some(more) = &mut self.more {
            more.iter_mut().flatten().for_each(|f| *f = false);
        }
    }
}

impl<H: ScriptHost> Client<H> {
    /// A client about to choose its first script.
    pub fn new(id: usize, host: H) -> Self {
        Client {
            id,
            host,
            state: ClientState::ChooseScript,
            script: 0,
            command: 0,
            cnt: 0,
            tries: 1,
            estatus: ErrorStatus::None,
            txn_scheduled: 0,
            txn_begin: 0,
            stmt_begin: 0,
            sleep_until: 0,
            conds: Vec::with_capacity(8),
            prepared: PreparedSet::default(),
            in_pipeline: false,
            syncs_pending: 0,
            tx_status: TransactionStatus::Unknown,
            reply: ReplyState::default(),
            in_flight: InFlight::default(),
            aset_text: Vec::new(),
            after_prepare: ClientState::StartCommand,
            aborted: false,
            resuming_after_prepare: false,
            pacing: None,
            lost_as: TxnStatus::ConnectionLost,
        }
    }

    /// The client with its own deck and think-time stream (see [`Plan::paced`]).
    pub fn with_pacing(mut self, pacing: Pacing) -> Self {
        self.pacing = Some(Box::new(pacing));
        self
    }

    /// Current state.
    pub fn state(&self) -> ClientState {
        self.state
    }

    /// Transactions counted so far (successes, failures, skips).
    pub fn count(&self) -> i64 {
        self.cnt
    }

    /// Whether the client stopped because of an error.
    pub fn is_aborted(&self) -> bool {
        self.aborted
    }

    /// Whether the client finished its work and left its connection idle: nothing
    /// owed by the server, no transaction or pipeline open, no error.
    pub fn finished_idle(&self) -> bool {
        self.state == ClientState::Finished
            && !self.aborted
            && self.syncs_pending == 0
            && !self.in_pipeline
            && self.tx_status == TransactionStatus::Idle
    }

    /// Whether the client reached a final state.
    pub fn is_done(&self) -> bool {
        matches!(self.state, ClientState::Finished | ClientState::Aborted)
    }

    /// ReadyForQuery messages the server still owes this client: one for each Sync
    /// (or simple query) sent and not answered yet. Above zero, the server has work of
    /// this client under way or queued.
    pub fn unanswered_syncs(&self) -> u32 {
        self.syncs_pending
    }

    /// Whether the client is inside a pipeline (`\startpipeline` … `\endpipeline`),
    /// where the server runs statements before any Sync asks for their answers.
    pub fn in_pipeline(&self) -> bool {
        self.in_pipeline
    }

    /// A (new) connection is ready: called once per connection, before the first
    /// `advance` that uses it. Resets per-connection state (prepared statements).
    pub fn connected(&mut self, io: &mut ClientIo) {
        io.connected = true;
        io.lost = false;
        io.in_pos = 0;
        io.inbuf.clear();
        io.out.clear();
        self.tx_status = TransactionStatus::Idle;
        self.in_pipeline = false;
        self.in_flight.clear();
        self.syncs_pending = 0;
        self.prepared.clear();
        if self.state == ClientState::Reconnect {
            self.state = ClientState::ChooseScript;
        }
    }

    /// A `-C` connection attempt failed: the client aborts (the run goes on).
    pub fn connect_failed(&mut self, ctx: &mut ThreadCtx<'_>, message: &str) {
        ctx.diag.error(message);
        ctx.diag.error(&format!(
            "client {} aborted while establishing connection",
            self.id
        ));
        self.abort();
    }

    fn abort(&mut self) {
        self.state = ClientState::Aborted;
        self.aborted = true;
    }

    /// The connection is gone (driver saw EOF or an I/O error). Input already received
    /// stays in `io.inbuf` and is processed first.
    pub fn connection_lost(&mut self, io: &mut ClientIo) {
        io.lost = true;
    }

    /// One entry into the wait-for-result state. pgbench prints `receiving` on every
    /// such entry: once right after sending, and again on each wake-up.
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.pgsurge")]
    fn receive_result(&mut self, ctx: &mut ThreadCtx<'_>, io: &mut ClientIo) -> ReadOutcome {
        self.debug(ctx, || format!("client {} receiving", self.id));
        self.read_result(ctx, io)
    }

    /// A `-d` line, made only when asked for (and then out of the machine's way).
    #[inline]
    fn debug(&self, ctx: &mut ThreadCtx<'_>, f: impl FnOnce() -> String) {
        if ctx.debug {
            debug_line(ctx, f);
        }
    }

    fn cond_active(&self) -> bool {
        matches!(
            self.conds.last(),
            None | Some(IfState::True) | Some(IfState::ElseTrue)
        )
    }

    /// Runs the machine until it has to wait. `now` gives the current time in µs on the run
    /// clock, read when the machine first needs it in this call. It mirrors pgbench's
    /// `advanceConnectionState`: one arm per client state, on the hot path as one loop.
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.pgsurge")]
    pub fn advance(
        &mut self,
        ctx: &mut ThreadCtx<'_>,
        io: &mut ClientIo,
        now: &mut Now<'_>,
    ) -> Wait {
        let plan = ctx.plan;
        // Transactions ended in this call: the next one starts right away (at the same
        // `now`, as pgbench's lazily read clock does), up to a bound, so a script
        // without SQL cannot keep the thread from its other clients.
        let mut ended = 0;
        loop {
            match self.state {
                ClientState::ChooseScript => {
                    let dealt = match (plan.config.mix, self.pacing.as_deref_mut()) {
                        (crate::spec::Mix::Deck, Some(p)) => p.deal(),
                        _ => None,
                    };
                    self.script = if plan.scripts.len() == 1 {
                        0
                    } else if let Some(card) = dealt {
                        card
                    } else {
                        let mut w = ctx.rng.choose(plan.total_weight);
                        let mut i = 0;
                        loop {
                            w -= plan.scripts[i].weight;
                            if w < 0 || i + 1 == plan.scripts.len() {
                                break;
                            }
                            i += 1;
                        }
                        i
                    };
                    let (id, script) = (self.id, self.script);
                    self.debug(ctx, || {
                        format!(
                            "client {id} executing script \"{}\"",
                            plan.scripts[script].desc
                        )
                    });
                    self.estatus = ErrorStatus::None;
                    self.tries = 1;
                    let keying_us = plan.scripts[self.script].keying_us;
                    self.state = if ctx.timer_exceeded {
                        ClientState::Finished
                    } else if keying_us > 0 {
                        self.sleep_until = now.get() + keying_us;
                        ClientState::Keying
                    } else if plan.config.throttle {
                        ClientState::PrepareThrottle
                    } else {
                        ClientState::StartTx
                    };
                }
                // A pause between transactions ends at once when the run does, unlike
                // `\sleep`, which is part of its transaction.
                ClientState::Keying | ClientState::Think => {
                    if ctx.timer_exceeded {
                        self.state = ClientState::Finished;
                        continue;
                    }
                    if now.get() < self.sleep_until {
                        return Wait::Until(self.sleep_until);
                    }
                    self.state = if self.state == ClientState::Think {
                        ClientState::ChooseScript
                    } else if plan.config.throttle {
                        ClientState::PrepareThrottle
                    } else {
                        ClientState::StartTx
                    };
                }
                ClientState::PrepareThrottle => {
                    let u = ctx.rng.throttle_double();
                    let limit = plan.config.latency_limit_us;
                    let slot = match ctx.schedule.as_deref_mut() {
                        Some(s) => s.next_slot(u, now.get(), limit, ctx.end_us),
                        None => Slot::Run(now.get()),
                    };
                    match slot {
                        Slot::Skip(t) => {
                            self.txn_scheduled = t;
                            self.process_xact(ctx, now.get(), TxnStatus::Skipped);
                            if ctx.timer_exceeded
                                || (plan.config.nxacts > 0 && self.cnt >= plan.config.nxacts)
                            {
                                self.state = ClientState::Finished;
                            }
                        }
                        Slot::PastEnd => {
                            self.txn_scheduled = ctx.schedule.as_deref().map_or(0, |s| s.trigger);
                            self.state = ClientState::Finished;
                        }
                        Slot::Run(t) => {
                            self.txn_scheduled = t;
                            self.state = ClientState::Throttle;
                        }
                    }
                }
                ClientState::Throttle => {
                    if now.get() < self.txn_scheduled {
                        return Wait::Until(self.txn_scheduled);
                    }
                    self.state = if ctx.timer_exceeded {
                        ClientState::Finished
                    } else {
                        ClientState::StartTx
                    };
                }
                ClientState::StartTx => {
                    if plan.config.reconnect && (io.lost || !io.connected) {
                        if plan.config.connect_per_txn && !io.connected {
                            if now.get() < self.sleep_until {
                                return Wait::Until(self.sleep_until);
                            }
                            return Wait::Connect;
                        }
                        self.reconnect_between_txns(ctx);
                        continue;
                    }
                    if !io.connected {
                        if plan.config.connect_per_txn {
                            return Wait::Connect;
                        }
                        ctx.diag.error(&format!(
                            "client {} aborted in command {} (SQL) of script {}; perhaps the backend died while processing",
                            self.id, self.command, self.script
                        ));
                        self.abort();
                        continue;
                    }
                    self.host.save_random_state();
                    if plan.config.reconnect {
                        self.host.set_txn_seq(self.cnt + 1);
                    }
                    if plan.config.replica_scripts != 0 {
                        io.replica = plan.config.on_replica(self.script);
                        self.reply.empty_result = false;
                    }
                    self.txn_begin = now.get();
                    if !plan.config.throttle {
                        self.txn_scheduled = self.txn_begin;
                    }
                    self.command = 0;
                    self.state = ClientState::StartCommand;
                }
                ClientState::StartCommand => {
                    if let Some(w) = self.start_command(ctx, io, now) {
                        return w;
                    }
                }
                ClientState::WaitPrepare => match self.read_prepare(ctx, io) {
                    ReadOutcome::NeedMore => return Wait::Read,
                    ReadOutcome::Done => self.state = self.after_prepare,
                    ReadOutcome::Abort => {}
                },
                ClientState::WaitResult => match self.receive_result(ctx, io) {
                    ReadOutcome::NeedMore => return Wait::Read,
                    ReadOutcome::Done => {
                        self.state = match self.estatus {
                            ErrorStatus::None => ClientState::EndCommand,
                            ErrorStatus::Serialization | ErrorStatus::Deadlock => {
                                ClientState::Error
                            }
                            ErrorStatus::Other => {
                                match reconnect::failure_class(self.reply.error_code())
                                    .filter(|_| plan.config.reconnect)
                                {
                                    Some(class) => {
                                        self.lost_as = class;
                                        ClientState::Lost
                                    }
                                    None => {
                                        self.abort();
                                        ClientState::Aborted
                                    }
                                }
                            }
                        };
                    }
                    ReadOutcome::Abort => {}
                },
                ClientState::Sleep => {
                    if now.get() < self.sleep_until {
                        return Wait::Until(self.sleep_until);
                    }
                    self.state = ClientState::EndCommand;
                }
                ClientState::EndCommand => {
                    if plan.config.per_command {
                        ctx.rec.command_latency(
                            self.script,
                            self.command,
                            now.get() - self.stmt_begin,
                        );
                    }
                    self.command += 1;
                    self.state = if self.cond_active() {
                        ClientState::StartCommand
                    } else {
                        ClientState::SkipCommand
                    };
                }
                ClientState::SkipCommand => self.skip_commands(plan),
                ClientState::EndTx => {
                    let status = match self.estatus {
                        ErrorStatus::Serialization => TxnStatus::Serialization,
                        ErrorStatus::Deadlock => TxnStatus::Deadlock,
                        _ => TxnStatus::Success,
                    };
                    self.process_xact(ctx, now.get(), status);
                    if !io.connected || io.lost && io.in_pos >= io.inbuf.len() {
                        if plan.config.reconnect {
                            self.reconnect_between_txns(ctx);
                            continue;
                        }
                        ctx.diag.error("perhaps the backend died while processing");
                        ctx.diag.error(&format!(
                            "client {} aborted while receiving the transaction status",
                            self.id
                        ));
                        self.abort();
                        continue;
                    }
                    if self.tx_status != TransactionStatus::Idle {
                        ctx.diag.error(&format!(
                            "client {} aborted: end of script reached without completing the last transaction",
                            self.id
                        ));
                        self.abort();
                        continue;
                    }
                    let done = (!plan.config.timed && self.cnt >= plan.config.nxacts)
                        || ctx.timer_exceeded;
                    let think_mean_us = plan.scripts[self.script].think_mean_us;
                    self.state = if done {
                        ClientState::Finished
                    } else if let (true, Some(p)) = (think_mean_us > 0, self.pacing.as_deref_mut())
                    {
                        self.sleep_until = now.get() + p.think_us(think_mean_us);
                        ClientState::Think
                    } else {
                        ClientState::ChooseScript
                    };
                    if plan.config.connect_per_txn {
                        return Wait::Disconnect;
                    }
                    if !done {
                        ended += 1;
                        if ended >= MAX_IMMEDIATE_TXNS {
                            return Wait::Yield;
                        }
                    }
                }
                ClientState::Error => self.on_error(ctx, io, now.get()),
                ClientState::WaitRollback => match self.read_rollback(ctx, io) {
                    ReadOutcome::NeedMore => return Wait::Read,
                    ReadOutcome::Done => self.state = self.after_error(ctx, now.get()),
                    ReadOutcome::Abort => {}
                },
                ClientState::DiscardPipeline => match self.read_discard(ctx, io) {
                    ReadOutcome::NeedMore => return Wait::Read,
                    ReadOutcome::Done => {
                        self.in_pipeline = false;
                        self.in_flight.clear();
                        self.state = ClientState::Error;
                    }
                    ReadOutcome::Abort => {}
                },
                ClientState::Retry => {
                    if plan.config.verbose_errors {
                        self.verbose_try_message(ctx, now.get(), true);
                    }
                    self.tries += 1;
                    ctx.rec.command_retry(self.script, self.command);
                    self.host.restore_random_state();
                    self.command = 0;
                    self.estatus = ErrorStatus::None;
                    self.state = if self.cond_active() {
                        ClientState::StartCommand
                    } else {
                        ClientState::SkipCommand
                    };
                }
                ClientState::Failure => {
                    ctx.rec.command_failure(self.script, self.command);
                    if plan.config.verbose_errors {
                        self.verbose_try_message(ctx, now.get(), false);
                    }
                    self.state = ClientState::EndTx;
                }
                ClientState::Lost => self.fail_and_reconnect(ctx, now.get()),
                ClientState::Reconnect => {
                    if io.connected {
                        return Wait::Disconnect;
                    }
                    if ctx.timer_exceeded {
                        self.state = ClientState::Finished;
                        continue;
                    }
                    if now.get() < self.sleep_until {
                        return Wait::Until(self.sleep_until);
                    }
                    return Wait::Connect;
                }
                ClientState::Aborted | ClientState::Finished => return Wait::Done,
            }
        }
    }

    /// processXactStats: counts the transaction and reports it.
    fn process_xact(&mut self, ctx: &mut ThreadCtx<'_>, now: i64, status: TxnStatus) {
        let (latency_us, lag_us) = if status == TxnStatus::Success {
            (
                now - self.txn_scheduled,
                self.txn_begin - self.txn_scheduled,
            )
        } else {
            (0, 0)
        };
        self.cnt += 1;
        if status == TxnStatus::Success && ctx.plan.config.on_replica(self.script) {
            ctx.rec.replica_read(self.reply.empty_result, now);
        }
        ctx.rec.txn(&TxnEnd {
            client: self.id,
            script: self.script,
            txn_no: self.cnt,
            status,
            latency_us,
            lag_us,
            tries: self.tries,
            now,
        });
    }

    #[cold]
    #[inline(never)]
    fn verbose_try_message(&self, ctx: &mut ThreadCtx<'_>, now: i64, retry: bool) {
        use std::fmt::Write as _;
        let mut m = format!(
            "client {} {} (try {}",
            self.id,
            if retry {
                "repeats the transaction after the error"
            } else {
                "ends the failed transaction"
            },
            self.tries
        );
        let cfg = &ctx.plan.config;
        if cfg.max_tries != 0 {
            let _ = write!(m, "/{}", cfg.max_tries);
        }
        if cfg.latency_limit_us > 0 {
            let pct = 100.0 * (now - self.txn_scheduled) as f64 / cfg.latency_limit_us as f64;
            let _ = write!(m, ", {pct:.3}% of the maximum time of tries was used");
        }
        m.push(')');
        ctx.diag.info(&m);
    }

    fn can_retry(&self, ctx: &ThreadCtx<'_>, now: i64) -> bool {
        let cfg = &ctx.plan.config;
        if !matches!(
            self.estatus,
            ErrorStatus::Serialization | ErrorStatus::Deadlock
        ) {
            return false;
        }
        if cfg.max_tries != 0 && self.tries >= cfg.max_tries {
            return false;
        }
        if cfg.latency_limit_us > 0 && now - self.txn_scheduled > cfg.latency_limit_us {
            return false;
        }
        !ctx.timer_exceeded
    }

    #[cold]
    #[inline(never)]
    fn after_error(&self, ctx: &ThreadCtx<'_>, now: i64) -> ClientState {
        if ctx.timer_exceeded {
            ClientState::Finished
        } else if self.can_retry(ctx, now) {
            ClientState::Retry
        } else {
            ClientState::Failure
        }
    }

    #[cold]
    #[inline(never)]
    fn on_error(&mut self, ctx: &mut ThreadCtx<'_>, io: &mut ClientIo, now: i64) {
        self.conds.clear();
        if self.in_pipeline {
            // discardUntilSync: one more Sync, then read up to the last sync point.
            append::sync(&mut io.out);
            self.syncs_pending += 1;
            self.in_flight.sync();
            self.state = ClientState::DiscardPipeline;
            return;
        }
        if io.lost && io.in_pos >= io.inbuf.len() || !io.connected {
            if ctx.plan.config.reconnect {
                self.lose(TxnStatus::ConnectionLost);
                return;
            }
            ctx.diag.error("perhaps the backend died while processing");
            ctx.diag.error(&format!(
                "client {} aborted while receiving the transaction status",
                self.id
            ));
            self.abort();
            return;
        }
        match self.tx_status {
            TransactionStatus::InTransaction | TransactionStatus::InError => {
                append::query(&mut io.out, b"ROLLBACK");
                self.syncs_pending += 1;
                self.reply.reset();
                self.state = ClientState::WaitRollback;
            }
            TransactionStatus::Idle => self.state = self.after_error(ctx, now),
            _ => {
                ctx.diag.error(&format!(
                    "client {} aborted while receiving the transaction status",
                    self.id
                ));
                self.abort();
            }
        }
    }

    #[inline(never)]
    fn skip_commands(&mut self, plan: &Plan) {
        let commands = &plan.scripts[self.script].commands;
        loop {
            let Some(cmd) = commands.get(self.command) else {
                // Cannot happen for a script that passed the static conditional check.
                self.state = ClientState::StartCommand;
                return;
            };
            let tag = match &cmd.kind {
                CommandKind::Meta { tag, .. } => Some(*tag),
                CommandKind::Sql(_) => None,
            };
            match (self.conds.last().copied(), tag) {
                (Some(IfState::False), Some(MetaTag::If)) => {
                    self.conds.push(IfState::Ignored);
                    self.command += 1;
                }
                (Some(IfState::False), Some(MetaTag::Elif)) => {
                    self.state = ClientState::StartCommand;
                }
                (Some(IfState::False), Some(MetaTag::Else)) => {
                    if let Some(top) = self.conds.last_mut() {
                        *top = IfState::ElseTrue;
                    }
                    self.state = ClientState::StartCommand;
                    self.command += 1;
                }
                (Some(IfState::False), Some(MetaTag::Endif)) => {
                    self.conds.pop();
                    if self.cond_active() {
                        self.state = ClientState::StartCommand;
                    }
                    self.command += 1;
                }
                (Some(IfState::Ignored | IfState::ElseFalse), Some(MetaTag::If)) => {
                    self.conds.push(IfState::Ignored);
                    self.command += 1;
                }
                (Some(IfState::Ignored | IfState::ElseFalse), Some(MetaTag::Endif)) => {
                    self.conds.pop();
                    if self.cond_active() {
                        self.state = ClientState::StartCommand;
                    }
                    self.command += 1;
                }
                _ => self.command += 1,
            }
            if self.state != ClientState::SkipCommand {
                return;
            }
        }
    }

    /// CSTATE_START_COMMAND; returns a wait when the machine must yield.
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.pgsurge")]
    fn start_command(
        &mut self,
        ctx: &mut ThreadCtx<'_>,
        io: &mut ClientIo,
        now: &mut Now<'_>,
    ) -> Option<Wait> {
        let plan = ctx.plan;
        let Some(cmd) = plan.scripts[self.script].commands.get(self.command) else {
            if self.in_pipeline {
                ctx.diag.error(&format!(
                    "client {} aborted: end of script reached with pipeline open",
                    self.id
                ));
                self.abort();
            } else {
                self.state = ClientState::EndTx;
            }
            return None;
        };
        if plan.config.per_command && !self.resuming_after_prepare {
            self.stmt_begin = now.get();
        }
        self.resuming_after_prepare = false;
        match &cmd.kind {
            CommandKind::Sql(sql) => {
                if self.in_pipeline {
                    if let Some(c) = &sql.capture {
                        let name = if c.all { "aset" } else { "gset" };
                        ctx.diag.error(&format!(
                            "client {} aborted in command {} ({name}) of script {}; \\{name} is not allowed in pipeline mode",
                            self.id, self.command, self.script
                        ));
                        self.abort();
                        return None;
                    }
                }
                if io.lost || !io.connected {
                    if plan.config.reconnect {
                        self.lose(TxnStatus::ConnectionLost);
                        return None;
                    }
                    ctx.diag.error(&format!(
                        "client {} aborted in command {} (SQL) of script {}; SQL command send failed",
                        self.id, self.command, self.script
                    ));
                    self.abort();
                    return None;
                }
                if plan.config.mode == QueryMode::Prepared
                    && !self.prepared.contains(self.script, self.command)
                {
                    self.send_prepare(ctx, io, self.command);
                    self.after_prepare = ClientState::StartCommand;
                    self.resuming_after_prepare = true;
                    self.state = ClientState::WaitPrepare;
                    // The prepare round trip comes first; the statement itself is
                    // sent when we come back to this state (prepared flag now set).
                    return None;
                }
                self.send_sql(ctx, io, sql);
                if self.in_pipeline {
                    self.state = ClientState::EndCommand;
                    return None;
                }
                self.reply.reset();
                self.reply.capture = sql.capture.is_some();
                self.state = ClientState::WaitResult;
                // No answer can come before the command is sent: wait for it right away
                // (dropping the consumed input, as the reader does), unless input that
                // came earlier (a notice, say) is still to be read.
                io.reset_if_drained().then_some(Wait::Read)
            }
            CommandKind::Meta { tag, name, trace } => {
                self.debug(ctx, || format!("client {} executing {trace}", self.id));
                self.exec_meta(ctx, io, now, *tag, name);
                None
            }
        }
    }

    fn send_prepare(&mut self, ctx: &mut ThreadCtx<'_>, io: &mut ClientIo, cmd: usize) {
        let script = &ctx.plan.scripts[self.script];
        if let Some(CommandKind::Sql(SqlPlan {
            form: SqlForm::Params(p),
            stmt_name: Some(name),
            ..
        })) = script.commands.get(cmd).map(|c| &c.kind)
        {
            let id = self.id;
            self.debug(ctx, || format!("client {id} preparing {name}"));
            append::parse(&mut io.out, name.as_bytes(), &p.wire);
            append::sync(&mut io.out);
            self.syncs_pending += 1;
            self.in_flight.command(cmd);
            self.in_flight.sync();
        }
        self.prepared.insert(self.script, cmd);
    }

    #[cfg_attr(target_os = "linux", link_section = ".text.hot.pgsurge")]
    fn send_sql(&mut self, ctx: &mut ThreadCtx<'_>, io: &mut ClientIo, sql: &SqlPlan) {
        let host = &mut self.host;
        match &sql.form {
            SqlForm::Simple(t) => {
                let mut w = append::MessageWriter::new(&mut io.out, b'Q');
                let start = w.body().len();
                t.render(w.body(), |name, out| host.write_var(name, out));
                if sql.capture.as_ref().is_some_and(|c| c.all) {
                    self.aset_text.clear();
                    self.aset_text.extend_from_slice(&w.body()[start..]);
                }
                if ctx.debug {
                    let text = String::from_utf8_lossy(&w.body()[start..]).into_owned();
                    ctx.diag
                        .debug(&format!("client {} sending {text}", self.id));
                }
                w.body().push(0);
                w.finish();
            }
            SqlForm::Params(p) => {
                let stmt: &[u8] = match (&sql.stmt_name, ctx.plan.config.mode) {
                    (Some(n), QueryMode::Prepared) => n.as_bytes(),
                    _ => b"",
                };
                if ctx.debug {
                    let what = if stmt.is_empty() {
                        pgsurge_script::script_display(&p.sql)
                    } else {
                        sql.stmt_name.as_deref().unwrap_or("").into()
                    };
                    ctx.diag
                        .debug(&format!("client {} sending {what}", self.id));
                }
                if stmt.is_empty() {
                    append::parse(&mut io.out, b"", &p.wire);
                }
                let mut b = append::BindWriter::from_head(&mut io.out, &sql.bind_head);
                for name in &p.params {
                    let mut defined = true;
                    // An undefined variable goes as SQL NULL; write then patch.
                    b.param_with(|out| defined = host.write_var(name, out));
                    if !defined {
                        b.retract_last_as_null();
                    }
                }
                b.finish();
                if self.in_pipeline {
                    append::describe_execute(&mut io.out);
                    self.in_flight.command(self.command);
                } else {
                    append::describe_execute_sync(&mut io.out);
                    self.syncs_pending += 1;
                }
            }
        }
        if matches!(sql.form, SqlForm::Simple(_)) {
            self.syncs_pending += 1;
        }
    }

    fn exec_meta(
        &mut self,
        ctx: &mut ThreadCtx<'_>,
        io: &mut ClientIo,
        now: &mut Now<'_>,
        tag: MetaTag,
        name: &str,
    ) {
        let (id, command, script) = (self.id, self.command, self.script);
        let abort = |this: &mut Self, ctx: &mut ThreadCtx<'_>, what: &str| {
            ctx.diag.error(&format!(
                "client {id} aborted in command {command} ({name}) of script {script}; {what}"
            ));
            this.abort();
        };
        match tag {
            MetaTag::Set
            | MetaTag::SetShell
            | MetaTag::Shell
            | MetaTag::Sleep
            | MetaTag::If
            | MetaTag::Elif => {
                if tag == MetaTag::Elif {
                    // An \elif after a taken branch is not evaluated.
                    if let Some(top) = self.conds.last_mut() {
                        if *top == IfState::True {
                            *top = IfState::Ignored;
                            self.state = ClientState::EndCommand;
                            return;
                        }
                    }
                }
                match self.host.exec_meta(script, command) {
                    Err(f) => {
                        for c in &f.causes {
                            ctx.diag.error(c);
                        }
                        abort(self, ctx, f.summary);
                    }
                    Ok(MetaValue::SleepUs(us)) => {
                        self.sleep_until = now.get() + us.max(0);
                        self.state = ClientState::Sleep;
                    }
                    Ok(MetaValue::Truth(t)) => {
                        now.reset();
                        let st = if t { IfState::True } else { IfState::False };
                        if tag == MetaTag::If {
                            self.conds.push(st);
                        } else if let Some(top) = self.conds.last_mut() {
                            *top = st;
                        }
                        self.state = ClientState::EndCommand;
                    }
                    Ok(MetaValue::Done) => {
                        // As pgbench: the expression or shell command may have taken a
                        // while, so the time is read again when next needed.
                        now.reset();
                        self.state = ClientState::EndCommand;
                    }
                }
            }
            MetaTag::Else => {
                if let Some(top) = self.conds.last_mut() {
                    *top = match *top {
                        IfState::True => IfState::ElseFalse,
                        _ => IfState::ElseTrue,
                    };
                }
                self.state = ClientState::EndCommand;
            }
            MetaTag::Endif => {
                self.conds.pop();
                self.state = ClientState::EndCommand;
            }
            MetaTag::StartPipeline => {
                if ctx.plan.config.mode == QueryMode::Simple {
                    abort(
                        self,
                        ctx,
                        "cannot use pipeline mode with the simple query protocol",
                    );
                    return;
                }
                if self.in_pipeline {
                    abort(self, ctx, "already in pipeline mode");
                    return;
                }
                if io.lost || !io.connected {
                    abort(self, ctx, "failed to enter pipeline mode");
                    return;
                }
                self.state = ClientState::EndCommand;
                // Nothing is in flight between transactions; start the pipeline's queue
                // clean whatever an earlier failure left.
                self.in_flight.clear();
                if ctx.plan.config.mode == QueryMode::Prepared {
                    // Prepare every statement up to the next \endpipeline first.
                    let cmds = &ctx.plan.scripts[script].commands;
                    let mut any = false;
                    for (k, c) in cmds.iter().enumerate().skip(command + 1) {
                        match &c.kind {
                            CommandKind::Meta {
                                tag: MetaTag::EndPipeline,
                                ..
                            } => break,
                            CommandKind::Sql(_) if !self.prepared.contains(script, k) => {
                                self.send_prepare(ctx, io, k);
                                any = true;
                            }
                            _ => {}
                        }
                    }
                    if any {
                        self.after_prepare = ClientState::EndCommand;
                        self.state = ClientState::WaitPrepare;
                    }
                }
                self.in_pipeline = true;
            }
            MetaTag::SyncPipeline => {
                if !self.in_pipeline {
                    abort(self, ctx, "not in pipeline mode");
                    return;
                }
                append::sync(&mut io.out);
                self.syncs_pending += 1;
                self.in_flight.sync();
                self.state = ClientState::EndCommand;
            }
            MetaTag::EndPipeline => {
                if !self.in_pipeline {
                    abort(self, ctx, "not in pipeline mode");
                    return;
                }
                append::sync(&mut io.out);
                self.syncs_pending += 1;
                self.in_flight.sync();
                self.debug(ctx, || {
                    format!("client {id} pipeline ending, ongoing syncs: {}", 0)
                });
                self.reply.reset();
                self.state = ClientState::WaitResult;
            }
        }
    }
}

#[cold]
#[inline(never)]
fn debug_line(ctx: &mut ThreadCtx<'_>, f: impl FnOnce() -> String) {
    ctx.diag.debug(&f());
}
