//! `InitSession`: the few things `-i` needs from a database connection.
//!
//! The step runner talks to this trait only, so it can be exercised against a
//! scripted fake in unit tests; `wire_session.rs` implements it for
//! `pgsurge_wire::Connection`. Implementations must not print anything: server
//! notices are handed back through [`InitSession::take_notices`] so the runner
//! can interleave them with its own messages the way libpq's default notice
//! processor does.

/// A failed statement or lost connection, as libpq would describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionError {
    /// libpq-style text, e.g. `ERROR:  relation "x" does not exist\n`.
    pub message: String,
}

/// How a `COPY … FROM STDIN` went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CopyFailure {
    /// The COPY statement itself failed (no copy-in mode was entered).
    Start(SessionError),
    /// Sending copy data failed at the transport level.
    Send(SessionError),
    /// The server reported an error when (or before) the copy ended.
    End(SessionError),
}

/// What a copy-data producer says after filling a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// More data follows; call again after sending this chunk.
    More,
    /// This chunk (possibly empty) is the last one; finish the copy.
    Done,
}

/// Asks the server to cancel whatever a session is running (a cancel request
/// on a separate connection, as libpq's `PQcancel`); harmless when it is idle.
pub type Canceller = Box<dyn Fn() + Send + Sync>;

/// The database operations `-i` uses.
pub trait InitSession {
    /// The server version as `server_version_num` (e.g. 180001).
    fn server_version_num(&self) -> i32;

    /// Runs one statement with the simple query protocol and expects a
    /// command-complete result (pgbench's `executeStatement`).
    fn execute(&mut self, sql: &str) -> Result<(), SessionError>;

    /// Runs `sql` with one text parameter (extended protocol, like
    /// `PQexecParams`) and returns the first column of the first row, `None`
    /// when there is no row or the value is NULL.
    fn query_value(&mut self, sql: &str, param: &str) -> Result<Option<String>, SessionError>;

    /// Runs `sql` (a `COPY … FROM STDIN`), then calls `fill` repeatedly with an
    /// empty buffer to append copy data to, sending each chunk, until `fill`
    /// returns [`Fill::Done`]; then ends the copy and waits for completion.
    fn copy_in(
        &mut self,
        sql: &str,
        fill: &mut dyn FnMut(&mut Vec<u8>) -> Fill,
    ) -> Result<(), CopyFailure>;

    /// Notices/warnings received since the last call, each as libpq's default
    /// notice processor would print it (`NOTICE:  …\n`).
    fn take_notices(&mut self) -> Vec<String>;

    /// A way to cancel this connection's running statement from another thread;
    /// `None` when it cannot be cancelled (fakes in tests).
    fn canceller(&self) -> Option<Canceller> {
        None
    }
}
