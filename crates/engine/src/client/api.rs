//! The client state machine's boundary: what it asks of the script runtime
//! ([`ScriptHost`]), the thread ([`ThreadRng`]), statistics ([`Recorder`]) and message
//! output ([`Diagnostics`]), the bytes it shares with its driver ([`ClientIo`]) and what it
//! waits for ([`Wait`]). Types only; the machine itself is in `client`.

use pgsurge_script::VarName;

/// Per-client script state: variables, the function PRNG, meta-command evaluation.
pub trait ScriptHost {
    /// Appends the text form of variable `name`; false when it is undefined.
    fn write_var(&mut self, name: &VarName, out: &mut Vec<u8>) -> bool;
    /// Runs meta command `cmd` of script `script` (`\set`, `\setshell`, `\shell`,
    /// `\sleep`, `\if`, `\elif`). Cause lines go into the failure.
    fn exec_meta(&mut self, script: usize, cmd: usize) -> Result<MetaValue, MetaFailure>;
    /// Stores one `\gset`/`\aset` value; `Err` carries pgbench's message
    /// (`gset: invalid variable name: "?column?"`).
    fn store_var(&mut self, name: &str, value: &[u8], aset: bool) -> Result<(), String>;
    /// Remembers the function PRNG state at transaction start (for retries).
    fn save_random_state(&mut self);
    /// Restores the state saved by [`ScriptHost::save_random_state`].
    fn restore_random_state(&mut self);
    /// `--reconnect`: sets `:txn_seq`, the number of the transaction starting (the
    /// client's transactions counted, this one included), which a script writes to make
    /// its rows identifiable and the run records when the commit is acknowledged.
    fn set_txn_seq(&mut self, _seq: i64) {}
    /// Where the state a transaction reads lies outside the client, if anywhere: the
    /// driver asks for it to be brought into cache before the client runs.
    fn heap_hint(&self) -> *const u8 {
        std::ptr::null()
    }
}

/// Result of a meta command that succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaValue {
    /// Nothing more to do.
    Done,
    /// `\sleep` for this many µs (≤ 0 = no sleep).
    SleepUs(i64),
    /// `\if`/`\elif` condition.
    Truth(bool),
}

/// A meta command that failed: the cause line(s) and pgbench's summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaFailure {
    /// Lines printed (as errors) before the abort line, e.g. `division by zero`.
    pub causes: Vec<String>,
    /// `evaluation of meta-command failed` / `assignment of meta-command failed` /
    /// `execution of meta-command failed`.
    pub summary: &'static str,
}

/// Per-thread random streams used by the machine.
pub trait ThreadRng {
    /// `random(0, total_weight - 1)` on the thread's `choose` stream.
    fn choose(&mut self, total_weight: i64) -> i64;
    /// Next uniform double of the thread's `throttle` stream.
    fn throttle_double(&mut self) -> f64;
}

/// How a transaction ended, for statistics and logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnStatus {
    /// Completed.
    Success,
    /// Skipped under `-R -L`.
    Skipped,
    /// Failed with a serialization error after its last try.
    Serialization,
    /// Failed with a deadlock after its last try.
    Deadlock,
    /// `--reconnect`: its connection was lost while it was under way.
    ConnectionLost,
    /// `--reconnect`: a write was refused as read-only (the server is a standby).
    ReadOnly,
    /// `--reconnect`: a statement was cancelled.
    Cancelled,
}

/// One finished (or skipped, or failed) transaction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TxnEnd {
    /// Client id.
    pub client: usize,
    /// Script index.
    pub script: usize,
    /// The client's transaction counter after this one (starts at 1).
    pub txn_no: i64,
    /// Outcome.
    pub status: TxnStatus,
    /// µs from the scheduled start to the end (0 unless `Success`).
    pub latency_us: i64,
    /// µs from the scheduled start to the actual start (0 unless `Success`).
    pub lag_us: i64,
    /// Tries used (1 = no retry).
    pub tries: u32,
    /// Time of the event (µs, run clock).
    pub now: i64,
}

/// Receives what the machine measures.
pub trait Recorder {
    /// A transaction ended (processXactStats).
    fn txn(&mut self, t: &TxnEnd);
    /// A command finished (`-r`), latency in µs.
    fn command_latency(&mut self, script: usize, cmd: usize, us: i64);
    /// The last try of a transaction failed in this command.
    fn command_failure(&mut self, script: usize, cmd: usize);
    /// A retry was caused by an error in this command.
    fn command_retry(&mut self, script: usize, cmd: usize);
    /// A transaction of a script run on a standby committed at `now` (µs, run clock);
    /// `stale`: a query of it that returns rows returned none.
    fn replica_read(&mut self, stale: bool, now: i64) {
        let _ = (stale, now);
    }
}

/// Where the machine's messages go (stderr in the real driver).
pub trait Diagnostics {
    /// `pgbench: error: …`
    fn error(&mut self, msg: &str);
    /// `pgbench: …` (info level).
    fn info(&mut self, msg: &str);
    /// Whether `--debug` lines are wanted.
    fn debug_enabled(&self) -> bool;
    /// `pgbench: …` debug line.
    fn debug(&mut self, msg: &str);
    /// A server notice, printed raw as libpq's notice processor prints it.
    fn notice(&mut self, text: &str);
}

/// The bytes between a client and its connection, owned by the driver.
#[derive(Debug, Default)]
pub struct ClientIo {
    /// Bytes to send, appended by the machine, drained by the driver.
    pub out: Vec<u8>,
    /// Bytes received; `in_pos` marks what the machine consumed.
    pub inbuf: bytes::BytesMut,
    /// Consumed prefix of `inbuf`.
    pub in_pos: usize,
    /// A connection is open.
    pub connected: bool,
    /// The connection broke (EOF or I/O error) and only `inbuf` remains.
    pub lost: bool,
    /// Backend process id of the connection (for messages), 0 if unknown.
    pub backend_pid: i32,
    /// The transaction under way runs on the client's standby connection (set when it
    /// starts; the driver sends on the connection this names).
    pub replica: bool,
}

impl ClientIo {
    /// Drops the input when all of it is consumed, keeping the allocation so the next
    /// read lands in the same cache lines; `false` when some is still to be read.
    #[inline]
    pub fn reset_if_drained(&mut self) -> bool {
        if self.in_pos < self.inbuf.len() {
            return false;
        }
        self.inbuf.clear();
        self.in_pos = 0;
        true
    }

    /// Drops consumed input (keeps the allocation).
    pub fn compact(&mut self) {
        if self.in_pos > 0 {
            bytes::Buf::advance(&mut self.inbuf, self.in_pos);
            self.in_pos = 0;
        }
    }
}

/// What the machine waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Send `out`, then wait for input.
    Read,
    /// Sleep until this time (µs); `out` may still need sending.
    Until(i64),
    /// Runnable again: it ended [`MAX_IMMEDIATE_TXNS`](super::MAX_IMMEDIATE_TXNS)
    /// transactions in one call without waiting (a script without SQL).
    Yield,
    /// Open a connection (`-C`, or `--reconnect` after a lost one), then call
    /// [`Client::connected`] or [`Client::connect_failed`] (with `--reconnect`,
    /// [`Client::reconnect_failed`]).
    Connect,
    /// Close the connection (`-C` end of transaction), then call `advance` again.
    Disconnect,
    /// Finished or aborted: close the connection and stop.
    Done,
}
