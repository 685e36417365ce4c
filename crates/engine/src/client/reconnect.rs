//! `--reconnect`: a client whose connection is lost, or whose server refuses writes or
//! cancels a statement, counts the transaction under way as failed by that class,
//! drops the connection, opens a new one (a multi-host conninfo finds the server that
//! accepts it) and goes on with its next transaction. Cold paths only: the machine
//! comes here when a connection has already failed, and never without `--reconnect`.

use super::{Client, ClientState, ErrorStatus, ScriptHost, ThreadCtx, TxnStatus};

/// Pause between two failed connection attempts of a client, in µs.
pub const RECONNECT_PAUSE_US: i64 = 50_000;

/// The failure class of an error a client survives with `--reconnect`, by SQLSTATE:
/// read-only (25006), cancelled (57014), connection lost (what
/// [`pgsurge_wire::ErrorClass::of_sqlstate`] calls a connection error). Other errors
/// abort the client as they do without it.
pub(crate) fn failure_class(code: &[u8; 5]) -> Option<TxnStatus> {
    match code {
        b"25006" => Some(TxnStatus::ReadOnly),
        b"57014" => Some(TxnStatus::Cancelled),
        _ => {
            let code = std::str::from_utf8(code).ok()?;
            (pgsurge_wire::ErrorClass::of_sqlstate(code) == pgsurge_wire::ErrorClass::Connection)
                .then_some(TxnStatus::ConnectionLost)
        }
    }
}

impl<H: ScriptHost> Client<H> {
    /// The class of the failure that ends the transaction under way: the server's last
    /// error when it names one, else a lost connection.
    pub(super) fn lost_class(&self) -> TxnStatus {
        if self.estatus == ErrorStatus::Other {
            failure_class(self.reply.error_code()).unwrap_or(TxnStatus::ConnectionLost)
        } else {
            TxnStatus::ConnectionLost
        }
    }

    /// Marks the transaction under way as lost with `class`; the machine counts it at
    /// its next step ([`ClientState::Lost`]).
    #[cold]
    #[inline(never)]
    pub(super) fn lose(&mut self, class: TxnStatus) {
        self.lost_as = class;
        self.state = ClientState::Lost;
    }

    /// Counts the lost transaction as failed and goes to [`ClientState::Reconnect`] (or
    /// ends, when the run is over).
    #[cold]
    #[inline(never)]
    pub(super) fn fail_and_reconnect(&mut self, ctx: &mut ThreadCtx<'_>, now: i64) {
        let class = self.lost_as;
        ctx.rec.command_failure(self.script, self.command);
        if ctx.plan.config.verbose_errors {
            let why = match class {
                TxnStatus::ReadOnly => "the server is read-only",
                TxnStatus::Cancelled => "its statement was cancelled",
                _ => "its connection was lost",
            };
            ctx.diag.info(&format!(
                "client {} failed a transaction in command {} of script {}: {why}; reconnecting",
                self.id, self.command, self.script
            ));
        }
        self.process_xact(ctx, now, class);
        self.reconnect_between_txns(ctx);
    }

    /// Drops the connection and opens another before the next transaction (none is
    /// under way).
    pub(super) fn reconnect_between_txns(&mut self, ctx: &ThreadCtx<'_>) {
        self.conds.clear();
        self.estatus = ErrorStatus::None;
        self.sleep_until = 0;
        let cfg = &ctx.plan.config;
        let done = (!cfg.timed && self.cnt >= cfg.nxacts) || ctx.timer_exceeded;
        self.state = if done {
            ClientState::Finished
        } else {
            ClientState::Reconnect
        };
    }

    /// A connection attempt of `--reconnect` failed at `now`: the next one comes after
    /// [`RECONNECT_PAUSE_US`].
    #[cold]
    #[inline(never)]
    pub fn reconnect_failed(&mut self, now: i64) {
        self.sleep_until = now + RECONNECT_PAUSE_US;
        if self.state != ClientState::StartTx {
            self.state = ClientState::Reconnect;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_a_client_survives_are_classed_as_the_wire_classes_them() {
        for (code, class) in [
            (b"25006", Some(TxnStatus::ReadOnly)),
            (b"57014", Some(TxnStatus::Cancelled)),
            (b"57P01", Some(TxnStatus::ConnectionLost)),
            (b"57P02", Some(TxnStatus::ConnectionLost)),
            (b"57P03", Some(TxnStatus::ConnectionLost)),
            (b"08006", Some(TxnStatus::ConnectionLost)),
            (b"08P01", Some(TxnStatus::ConnectionLost)),
            (b"40001", None),
            (b"23505", None),
            (b"57P04", None),
        ] {
            assert_eq!(
                failure_class(code),
                class,
                "{}",
                String::from_utf8_lossy(code)
            );
        }
    }
}
