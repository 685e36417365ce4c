//! Reading the server's answers for the client machine: prepare round trips, command
//! results (with `\gset`/`\aset`), the ROLLBACK after an error, discarding a failed
//! pipeline, and the query text libpq would show under an error. A child module of
//! `client` so it shares the machine's private state.

use super::reconnect::failure_class;
use super::{Client, ClientState, ErrorStatus, ScriptHost, ThreadCtx, TxnStatus};
use crate::client::api::ClientIo;
use crate::client::reply::Reply;
use crate::plan::{Capture, CommandKind, Plan, QueryMode, SqlForm};
use pgsurge_wire::TransactionStatus;

/// Result of consuming input in a waiting state.
pub(super) enum ReadOutcome {
    /// More bytes are needed.
    NeedMore,
    /// The awaited answer is complete.
    Done,
    /// The client aborted, or lost its transaction under `--reconnect` (state already set).
    Abort,
}

/// Which text libpq would have remembered for the command whose answer is being read:
/// the one given to `PQsendQuery`, `PQsendQueryParams` or `PQprepare`; none for
/// `PQsendQueryPrepared`. It shows as the `LINE n:` excerpt under an error with a
/// position; without it the position is printed as ` at character N`.
#[derive(Debug, Clone, Copy)]
enum QuerySource {
    /// Nothing known to be in flight.
    Unknown,
    /// The `ROLLBACK` sent after an error.
    Rollback,
    /// The Parse of command `k` (prepared mode).
    Prepare(usize),
    /// The execution of command `k`.
    Execute(usize),
}

impl<H: ScriptHost> Client<H> {
    /// Reads answers to Parse+Sync pairs (prepare failures are printed, not fatal).
    #[cold]
    #[inline(never)]
    pub(super) fn read_prepare(
        &mut self,
        ctx: &mut ThreadCtx<'_>,
        io: &mut ClientIo,
    ) -> ReadOutcome {
        self.read_replies(
            ctx,
            io,
            Self::backend_died,
            |this, ctx, reply| match reply {
                Reply::Error(_) => {
                    ctx.diag.error(this.reply.error_text());
                    None
                }
                Reply::Ready(st) => this.sync_answered(st),
                _ => None,
            },
        )
    }

    /// Reads the ROLLBACK answer after an error.
    #[cold]
    #[inline(never)]
    pub(super) fn read_rollback(
        &mut self,
        ctx: &mut ThreadCtx<'_>,
        io: &mut ClientIo,
    ) -> ReadOutcome {
        self.read_replies(
            ctx,
            io,
            Self::rollback_lost,
            |this, ctx, reply| match reply {
                Reply::Error(_) => {
                    let why = this.reply.error_text().to_owned();
                    Some(this.rollback_failed(ctx, &why))
                }
                Reply::Ready(st) => this.sync_answered(st),
                _ => None,
            },
        )
    }

    /// Discards pipeline results until every outstanding sync is answered.
    #[cold]
    #[inline(never)]
    pub(super) fn read_discard(
        &mut self,
        ctx: &mut ThreadCtx<'_>,
        io: &mut ClientIo,
    ) -> ReadOutcome {
        self.read_replies(ctx, io, Self::rollback_lost, |this, _, reply| match reply {
            Reply::Ready(st) => this.sync_answered(st),
            Reply::ResultDone | Reply::Error(_) => {
                this.in_flight.result_done();
                None
            }
            _ => None,
        })
    }

    /// Reads a SQL command's results (or a whole pipeline's at `\endpipeline`).
    pub(super) fn read_result(
        &mut self,
        ctx: &mut ThreadCtx<'_>,
        io: &mut ClientIo,
    ) -> ReadOutcome {
        // Only a command sent with `\gset`/`\aset` has its capture looked up.
        let capture = match self.reply.capture {
            true => match ctx.plan.scripts[self.script]
                .commands
                .get(self.command)
                .map(|c| &c.kind)
            {
                Some(CommandKind::Sql(s)) => s.capture.as_ref(),
                _ => None,
            },
            false => None,
        };
        self.read_replies(ctx, io, Self::backend_died, |this, ctx, reply| {
            this.on_result_reply(ctx, capture, reply)
        })
    }

    /// The loop the readers share: decode replies until one of them ends the wait
    /// (`on_reply` returns an outcome), the input runs out (`NeedMore`, or `on_lost` when
    /// the connection is gone), or the input is malformed (`Abort`).
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.pgsurge")]
    fn read_replies(
        &mut self,
        ctx: &mut ThreadCtx<'_>,
        io: &mut ClientIo,
        on_lost: fn(&mut Self, &mut ThreadCtx<'_>) -> ReadOutcome,
        mut on_reply: impl FnMut(&mut Self, &mut ThreadCtx<'_>, Reply) -> Option<ReadOutcome>,
    ) -> ReadOutcome {
        loop {
            // The messages of a plain answer are classified here from their header,
            // the rest goes through the full decoder.
            let (plain, used) = self.reply.next_plain_significant(&io.inbuf[io.in_pos..]);
            io.in_pos += used;
            let next = match plain {
                Some(reply) => Ok(reply),
                // Everything read so far is consumed (the usual end of a round).
                None if io.reset_if_drained() => Err(ReadOutcome::NeedMore),
                None => self.next_reply(ctx, io),
            };
            match next {
                Err(ReadOutcome::NeedMore) if io.lost => return on_lost(self, ctx),
                Err(o) => return o,
                Ok(reply) => {
                    if let Some(o) = on_reply(self, ctx, reply) {
                        return o;
                    }
                }
            }
        }
    }

    /// A ReadyForQuery arrived: records the transaction status and returns `Done` once
    /// every Sync sent has been answered.
    fn sync_answered(&mut self, status: TransactionStatus) -> Option<ReadOutcome> {
        self.tx_status = status;
        self.syncs_pending = self.syncs_pending.saturating_sub(1);
        self.in_flight.synced();
        (self.syncs_pending == 0).then_some(ReadOutcome::Done)
    }

    /// One reply to a SQL command (or to a pipeline being ended).
    fn on_result_reply(
        &mut self,
        ctx: &mut ThreadCtx<'_>,
        capture: Option<&Capture>,
        reply: Reply,
    ) -> Option<ReadOutcome> {
        match reply {
            Reply::ResultDone => {
                if let Some(c) = capture.filter(|c| c.all) {
                    let qrynum = self.reply.qrynum;
                    if let Err(()) = self.store_captured(ctx, c, qrynum) {
                        return Some(ReadOutcome::Abort);
                    }
                }
                self.end_result();
            }
            Reply::Error(status) => {
                if self.estatus == ErrorStatus::None {
                    self.estatus = status;
                    let (id, cmd, script, q) =
                        (self.id, self.command, self.script, self.reply.qrynum);
                    let text = self.reply.error_text();
                    match status {
                        ErrorStatus::Serialization | ErrorStatus::Deadlock => {
                            if ctx.plan.config.verbose_errors {
                                ctx.diag.info(&format!(
                                    "client {id} got an error in command {cmd} (SQL) of script {script}; {text}"
                                ));
                            }
                        }
                        // With --reconnect an error it survives is counted, not printed.
                        _ if ctx.plan.config.reconnect
                            && failure_class(self.reply.error_code()).is_some() => {}
                        _ => ctx.diag.error(&format!(
                            "client {id} script {script} aborted in command {cmd} query {q}: {text}"
                        )),
                    }
                }
                self.end_result();
            }
            Reply::Copy => {
                ctx.diag.error("COPY is not supported in pgbench, aborting");
                self.abort();
                return Some(ReadOutcome::Abort);
            }
            Reply::Ready(st) => {
                let all_answered = self.sync_answered(st);
                if self.in_pipeline {
                    // libpq returns the sync result without a NULL after it, so pgbench
                    // counts it as a query of the next command's results.
                    self.reply.qrynum += 1;
                    // The pipeline ends with the answer to its last Sync.
                    if all_answered.is_some() {
                        self.in_pipeline = false;
                    }
                    return all_answered;
                }
                if self.estatus == ErrorStatus::None {
                    if let Some(c) = capture.filter(|c| !c.all) {
                        if let Err(()) = self.check_gset(ctx, c) {
                            return Some(ReadOutcome::Abort);
                        }
                    } else if !self.reply.any_result {
                        ctx.diag.error(&format!(
                            "client {} command {}: no results",
                            self.id, self.command
                        ));
                        self.estatus = ErrorStatus::Other;
                    }
                }
                return Some(ReadOutcome::Done);
            }
            Reply::Other => {}
        }
        None
    }

    /// A result ended. In a pipeline libpq ends each command's results with a NULL, so
    /// pgbench's `readCommandResponse` (and its query counter) starts again at the next
    /// command.
    fn end_result(&mut self) {
        self.reply.end_result();
        self.in_flight.result_done();
        if self.in_pipeline {
            self.reply.qrynum = 0;
        }
    }

    fn check_gset(&mut self, ctx: &mut ThreadCtx<'_>, c: &Capture) -> Result<(), ()> {
        let ntuples = if self.reply.last_had_tuples {
            self.reply.last_ntuples
        } else {
            0
        };
        if ntuples != 1 {
            ctx.diag.error(&format!(
                "client {} script {} command {} query {}: expected one row, got {ntuples}",
                self.id,
                self.script,
                self.command,
                self.reply.qrynum.saturating_sub(1)
            ));
            self.abort();
            return Err(());
        }
        // The result has ended, so the reader's counter is already past it.
        let qrynum = self.reply.qrynum.saturating_sub(1);
        self.store_captured(ctx, c, qrynum)
    }

    /// Stores the captured last row of the current/last result into variables;
    /// `qrynum` is that result's index, as pgbench names it in the error.
    fn store_captured(
        &mut self,
        ctx: &mut ThreadCtx<'_>,
        c: &Capture,
        qrynum: u32,
    ) -> Result<(), ()> {
        if !self.reply.cur_had_tuples_or_last() || self.reply.captured_rows() == 0 {
            return Ok(());
        }
        let mut name = String::with_capacity(c.prefix.len() + 16);
        let mut failed = None;
        let (reply, host) = (&self.reply, &mut self.host);
        for (col, val) in reply.captured() {
            name.clear();
            name.push_str(&c.prefix);
            name.push_str(&String::from_utf8_lossy(col));
            if let Err(msg) = host.store_var(&name, val.unwrap_or(b""), c.all) {
                failed = Some(msg);
                break;
            }
        }
        if let Some(msg) = failed {
            ctx.diag.error(&msg);
            ctx.diag.error(&format!(
                "client {} script {} command {} query {}: error storing into variable {name}",
                self.id, self.script, self.command, qrynum
            ));
            self.abort();
            return Err(());
        }
        Ok(())
    }

    /// The connection ended while an answer was awaited: the client aborts.
    fn backend_died(&mut self, ctx: &mut ThreadCtx<'_>) -> ReadOutcome {
        if ctx.plan.config.reconnect {
            self.lose(self.lost_class());
            return ReadOutcome::Abort;
        }
        if self.estatus == ErrorStatus::Other {
            // The error already reported was the server's last word (a FATAL such as
            // pg_terminate_backend's): pgbench aborts without a second line.
            self.abort();
            return ReadOutcome::Abort;
        }
        ctx.diag.error(&format!(
            "client {} aborted in command {} (SQL) of script {}; perhaps the backend died while processing",
            self.id, self.command, self.script
        ));
        self.abort();
        ReadOutcome::Abort
    }

    /// The connection ended while a rollback or a pipeline discard was awaited.
    fn rollback_lost(&mut self, ctx: &mut ThreadCtx<'_>) -> ReadOutcome {
        if ctx.plan.config.reconnect {
            self.lose(TxnStatus::ConnectionLost);
            return ReadOutcome::Abort;
        }
        self.rollback_failed(ctx, "perhaps the backend died while processing")
    }

    /// Rolling back after an error failed: the client aborts.
    fn rollback_failed(&mut self, ctx: &mut ThreadCtx<'_>, why: &str) -> ReadOutcome {
        ctx.diag.error(&format!(
            "client {} aborted while rolling back the transaction after an error; {why}",
            self.id
        ));
        self.abort();
        ReadOutcome::Abort
    }

    /// What is being answered, for the query text under an error.
    fn query_source(&self) -> QuerySource {
        let front = self.in_flight.front();
        match self.state {
            ClientState::WaitRollback => QuerySource::Rollback,
            ClientState::WaitPrepare => front.map_or(QuerySource::Unknown, QuerySource::Prepare),
            _ if self.in_pipeline => front.map_or(QuerySource::Unknown, QuerySource::Execute),
            _ => QuerySource::Execute(self.command),
        }
    }

    /// Decodes and classifies the next backend message. `Err(NeedMore)` when the input is
    /// exhausted, `Err(Abort)` on a protocol violation (client aborted).
    fn next_reply(
        &mut self,
        ctx: &mut ThreadCtx<'_>,
        io: &mut ClientIo,
    ) -> Result<Reply, ReadOutcome> {
        let (plan, script, source) = (ctx.plan, self.script, self.query_source());
        let (host, aset_text) = (&mut self.host, &self.aset_text);
        let mut query =
            |out: &mut Vec<u8>| write_query_text(plan, script, source, host, aset_text, out);
        match self
            .reply
            .next(&io.inbuf[io.in_pos..], ctx.diag, &mut query)
        {
            Ok(Some((reply, used))) => {
                io.in_pos += used;
                Ok(reply)
            }
            Ok(None) => {
                io.compact();
                Err(ReadOutcome::NeedMore)
            }
            Err(e) => {
                ctx.diag.error(&format!(
                    "client {} aborted in command {} (SQL) of script {}; {e}",
                    self.id, self.command, self.script
                ));
                self.abort();
                Err(ReadOutcome::Abort)
            }
        }
    }
}

/// Writes the text libpq remembered for `source` into `out`; false when there is none.
/// Simple mode renders the command again: the variables cannot have changed since it
/// was sent, except through the `\aset` of that same command, whose sent text is kept
/// in `aset_text`.
fn write_query_text<H: ScriptHost>(
    plan: &Plan,
    script: usize,
    source: QuerySource,
    host: &mut H,
    aset_text: &[u8],
    out: &mut Vec<u8>,
) -> bool {
    let k = match source {
        QuerySource::Unknown => return false,
        QuerySource::Rollback => {
            out.extend_from_slice(b"ROLLBACK");
            return true;
        }
        QuerySource::Prepare(k) | QuerySource::Execute(k) => k,
    };
    let Some(CommandKind::Sql(sql)) = plan.scripts[script].commands.get(k).map(|c| &c.kind) else {
        return false;
    };
    match &sql.form {
        SqlForm::Simple(_) if sql.capture.as_ref().is_some_and(|c| c.all) => {
            out.extend_from_slice(aset_text)
        }
        SqlForm::Simple(t) => t.render(out, |name, o| host.write_var(name, o)),
        SqlForm::Params(p) => {
            let executes_prepared = matches!(source, QuerySource::Execute(_))
                && plan.config.mode == QueryMode::Prepared
                && sql.stmt_name.is_some();
            if executes_prepared {
                return false;
            }
            out.extend_from_slice(&p.wire);
        }
    }
    true
}
