//! The benchmark engine: [`RunSpec`] → client state machines, per-thread driver loops,
//! throttling, latency limit, retries, pipelines, `-C`, signals → [`RunResult`]. Every
//! caller (the pgbench command line, campaigns, quickstart) describes its run as a
//! [`RunSpec`] and calls [`run`].
//!
//! It does not parse the command line (`pgsurge-args` does, and depends on this crate,
//! never the reverse), interpret scripts (`pgsurge-script`), hold statistics or render
//! reports (`pgsurge-results`), judge them (`pgsurge-analysis`), nor establish
//! connections or encode and decode protocol
//! messages (`pgsurge-wire`). It never ends the process: outcomes such as
//! `--exit-on-abort` are errors the binary maps to exit codes.
//!
//! | module | owns |
//! |---|---|
//! | [`spec`] | [`RunSpec`]: the typed, validated description of one run |
//! | [`layout`] | scale and partitioning of the pgbench tables, detected before a run |
//! | [`run`] | one run in-process, in phases: prepare threads, connect, drive, wind down, merge |
//! | [`plan`] | the scripts in the form the client executes, and [`QueryMode`] |
//! | [`client`] | the client state machine (no I/O) |
//! | [`driver`] | the per-thread epoll loop |
//! | [`throttle`] | `-R` schedule and `-L` skips |
//! | [`stop`] | stop flag and SIGINT/SIGTERM |
//! | `cancel` | the cancel requests for the statements under way when a run is stopped |
//! | [`clock`] | the run clock: monotonic microseconds and the epoch shift of logs |
//! | [`timer`] | the driver loop's microsecond wake-up (`timerfd`) |
//! | [`distribute`] | how clients are dealt to threads |
//! | [`recorder`] | a thread's statistics and `-l` log, fed by its clients |
//! | [`script_host`] | a client's variables, meta commands and `\shell` processes |
//! | [`sqltext`] | `:name` references in SQL, scanned once for the hot path |
//! | [`steady`] | the run's steady state put into its result: the series judged by `pgsurge-analysis`, the steady window's figures |
//! | [`start_at`] | `--start-at`: the common start of a distributed run's generators |
//! | [`stderr`] | pgbench's diagnostics on stderr, or to an in-process caller |
//! | [`replay`] | replaying PostgreSQL logs: the reader and driver threads of a replay |

#![warn(missing_docs)]

mod cancel;
pub mod client;
pub mod clock;
pub mod distribute;
pub mod driver;
pub mod layout;
pub mod plan;
pub mod recorder;
pub mod replay;
pub mod run;
pub mod script_host;
pub mod spec;
pub mod sqltext;
pub mod start_at;
pub mod stderr;
pub mod steady;
pub mod stop;
pub mod throttle;
pub mod timer;

pub use pgsurge_results::progress_counters::IntervalSample;
pub use pgsurge_results::result::RunResult;
pub use run::{run, IntervalHook, RunHooks};
pub use spec::{
    DatabaseInfo, EarlyRead, ErrorSpec, GeneratorOptions, Mix, OutputSpec, Pauses, ProgressSpec,
    QueryMode, RunLimit, RunScript, RunSpec, SpecError, TxnLogSpec, MAX_DECK_CARDS,
};
pub use stderr::{Diagnostic, DiagnosticLevel, DiagnosticSink};
pub use stop::StopFlag;

/// Why a run could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A script could not be prepared for the run.
    #[error("{0}")]
    Script(String),
    /// Setting the run up failed (log files, threads).
    #[error("{0}")]
    Setup(String),
    /// A client's initial connection failed (message already complete; may be empty
    /// when it was printed already); `class` tells a server out of reach from, say, a
    /// refused password.
    #[error("{message}")]
    ClientConnection {
        /// pgbench's text.
        message: String,
        /// `Connection` when the server could not be reached.
        class: pgsurge_wire::ErrorClass,
    },
    /// The [`RunSpec`] breaks a rule (see [`RunSpec::validate`]).
    #[error("invalid run: {0}")]
    InvalidSpec(String),
    /// `--exit-on-abort`: a client of driver thread `thread` aborted, and the whole run
    /// was stopped without a result. pgbench exits with status 2 here.
    #[error("Run was aborted due to an error in thread {thread}")]
    ExitOnAbort {
        /// The thread (0-based) whose client aborted first.
        thread: usize,
    },
}
