//! Reading the server's answers for the client machine: prepare round trips, command
//! results (with `\gset`/`\aset`), the ROLLBACK after an error, discarding a failed
//! pipeline. A child module of `client` so it shares the machine's private state.

use super::{Client, ErrorStatus, ScriptHost, ThreadCtx};
use crate::client_api::ClientIo;
use crate::client_reply::Reply;
use crate::plan::CommandKind;

/// Result of consuming input in a waiting state.
pub(super) enum ReadOutcome {
    /// More bytes are needed.
    NeedMore,
    /// The awaited answer is complete.
    Done,
    /// The client aborted (state already set).
    Abort,
}

impl<H: ScriptHost> Client<H> {
    /// Reads answers to Parse+Sync pairs (prepare failures are printed, not fatal).
    pub(super) fn read_prepare(
        &mut self,
        ctx: &mut ThreadCtx<'_>,
        io: &mut ClientIo,
    ) -> ReadOutcome {
        loop {
            match self.next_reply(ctx, io) {
                Err(ReadOutcome::NeedMore) if io.lost => return self.backend_died(ctx),
                Err(o) => return o,
                Ok(Reply::Error { text, .. }) => ctx.diag.error(&text),
                Ok(Reply::Ready(st)) => {
                    self.tx_status = st;
                    self.syncs_pending = self.syncs_pending.saturating_sub(1);
                    if self.syncs_pending == 0 {
                        return ReadOutcome::Done;
                    }
                }
                Ok(_) => {}
            }
        }
    }

    /// Reads the ROLLBACK answer after an error.
    pub(super) fn read_rollback(
        &mut self,
        ctx: &mut ThreadCtx<'_>,
        io: &mut ClientIo,
    ) -> ReadOutcome {
        loop {
            match self.next_reply(ctx, io) {
                Err(ReadOutcome::Abort) => {
                    // next_reply printed the SQL-level message; pgbench words it this way.
                    return ReadOutcome::Abort;
                }
                Err(o) => {
                    if io.lost {
                        ctx.diag.error(&format!(
                            "client {} aborted while rolling back the transaction after an error; perhaps the backend died while processing",
                            self.id
                        ));
                        self.abort();
                        return ReadOutcome::Abort;
                    }
                    return o;
                }
                Ok(Reply::Error { text, .. }) => {
                    ctx.diag.error(&format!(
                        "client {} aborted while rolling back the transaction after an error; {text}",
                        self.id
                    ));
                    self.abort();
                    return ReadOutcome::Abort;
                }
                Ok(Reply::Ready(st)) => {
                    self.tx_status = st;
                    self.syncs_pending = self.syncs_pending.saturating_sub(1);
                    if self.syncs_pending == 0 {
                        return ReadOutcome::Done;
                    }
                }
                Ok(_) => {}
            }
        }
    }

    /// Discards pipeline results until every outstanding sync is answered.
    pub(super) fn read_discard(
        &mut self,
        ctx: &mut ThreadCtx<'_>,
        io: &mut ClientIo,
    ) -> ReadOutcome {
        loop {
            match self.next_reply(ctx, io) {
                Err(ReadOutcome::NeedMore) if io.lost => {
                    ctx.diag.error(&format!(
                        "client {} aborted while rolling back the transaction after an error; perhaps the backend died while processing",
                        self.id
                    ));
                    self.abort();
                    return ReadOutcome::Abort;
                }
                Err(o) => return o,
                Ok(Reply::Ready(st)) => {
                    self.tx_status = st;
                    self.syncs_pending = self.syncs_pending.saturating_sub(1);
                    if self.syncs_pending == 0 {
                        return ReadOutcome::Done;
                    }
                }
                Ok(_) => {}
            }
        }
    }

    /// Reads a SQL command's results (or a whole pipeline's at `\endpipeline`).
    pub(super) fn read_result(
        &mut self,
        ctx: &mut ThreadCtx<'_>,
        io: &mut ClientIo,
    ) -> ReadOutcome {
        let plan = ctx.plan;
        let capture = match plan.scripts[self.script]
            .commands
            .get(self.command)
            .map(|c| &c.kind)
        {
            Some(CommandKind::Sql(s)) => s.capture.as_ref(),
            _ => None,
        };
        loop {
            let reply = match self.next_reply(ctx, io) {
                Err(ReadOutcome::NeedMore) if io.lost => return self.backend_died(ctx),
                Err(o) => return o,
                Ok(r) => r,
            };
            match reply {
                Reply::ResultDone => {
                    if let Some(c) = capture {
                        if c.all {
                            let qrynum = self.reply.qrynum;
                            if let Err(()) = self.store_captured(ctx, c, qrynum) {
                                return ReadOutcome::Abort;
                            }
                        }
                    }
                    self.reply.end_result();
                }
                Reply::Error { status, text } => {
                    if self.estatus == ErrorStatus::None {
                        self.estatus = status;
                        let (id, cmd, script, q) =
                            (self.id, self.command, self.script, self.reply.qrynum);
                        match status {
                            ErrorStatus::Serialization | ErrorStatus::Deadlock => {
                                if plan.config.verbose_errors {
                                    ctx.diag.info(&format!(
                                        "client {id} got an error in command {cmd} (SQL) of script {script}; {text}"
                                    ));
                                }
                            }
                            _ => ctx.diag.error(&format!(
                                "client {id} script {script} aborted in command {cmd} query {q}: {text}"
                            )),
                        }
                    }
                    self.reply.end_result();
                }
                Reply::Copy => {
                    ctx.diag.error("COPY is not supported in pgbench, aborting");
                    self.abort();
                    return ReadOutcome::Abort;
                }
                Reply::Ready(st) => {
                    self.tx_status = st;
                    self.syncs_pending = self.syncs_pending.saturating_sub(1);
                    if self.in_pipeline {
                        if self.syncs_pending > 0 {
                            continue;
                        }
                        self.in_pipeline = false;
                        return ReadOutcome::Done;
                    }
                    if self.estatus == ErrorStatus::None {
                        if let Some(c) = capture.filter(|c| !c.all) {
                            if let Err(()) = self.check_gset(ctx, c) {
                                return ReadOutcome::Abort;
                            }
                        } else if !self.reply.any_result {
                            ctx.diag.error(&format!(
                                "client {} command {}: no results",
                                self.id, self.command
                            ));
                            self.estatus = ErrorStatus::Other;
                        }
                    }
                    return ReadOutcome::Done;
                }
                Reply::Other => {}
            }
        }
    }

    fn check_gset(&mut self, ctx: &mut ThreadCtx<'_>, c: &crate::plan::Capture) -> Result<(), ()> {
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
        c: &crate::plan::Capture,
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
        ctx.diag.error(&format!(
            "client {} aborted in command {} (SQL) of script {}; perhaps the backend died while processing",
            self.id, self.command, self.script
        ));
        self.abort();
        ReadOutcome::Abort
    }

    /// Frames and classifies the next backend message. `Err(NeedMore)` when the input is
    /// exhausted, `Err(Abort)` on a protocol violation (client aborted).
    fn next_reply(
        &mut self,
        ctx: &mut ThreadCtx<'_>,
        io: &mut ClientIo,
    ) -> Result<Reply, ReadOutcome> {
        match self.reply.next(&io.inbuf[io.in_pos..], ctx.diag) {
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
