//! The benchmark engine: `pgsurge bench` (pgbench's run mode and the dispatch of `-i`),
//! the sans-I/O client state machine, the per-thread driver loops, throttling, latency
//! limit, retries, pipelines, `-C`, signals, and the library entry point campaigns use.
//!
//! It does not parse the command line (`pgsurge-args`), interpret scripts
//! (`pgsurge-script`), hold statistics or render reports (`pgsurge-results`), nor
//! establish connections or encode and decode protocol messages (`pgsurge-wire`).
//!
//! | module | owns |
//! |---|---|
//! | [`bench`] | `bench_main`: parse, init dispatch, setup, report, exit codes |
//! | [`run`] | one run in-process: plan, seeding, threads, progress, merge |
//! | [`client`] | the client state machine (no I/O) |
//! | [`driver`] | the per-thread epoll loop |
//! | [`throttle`] | `-R` schedule and `-L` skips |
//! | [`stop`] | stop flag and SIGINT/SIGTERM |

#![warn(missing_docs)]

pub mod bench;
pub mod client;
mod client_api;
mod client_reply;
pub mod clock;
pub mod distribute;
pub mod driver;
pub mod host;
pub mod plan;
pub mod recorder;
pub mod run;
pub mod sqltext;
pub mod start_at;
pub mod stderr;
pub mod stop;
pub mod throttle;
pub mod timer;

#[cfg(test)]
mod client_tests;

use std::ffi::OsString;

pub use bench::prepare;
pub use pgsurge_results::result::RunResult;
pub use pgsurge_results::shared::IntervalSample;
pub use run::{run, IntervalHook, RunHooks, RunSpec};
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
    /// when it was printed already).
    #[error("{0}")]
    ClientConnection(String),
}

/// Entry point of `pgsurge bench` and of the binary invoked as `pgbench`.
/// `args` excludes the program name. Returns the process exit code.
pub fn bench_main(args: &[OsString]) -> i32 {
    bench::main(args)
}
