//! The crate's error type: every failure to find binaries, initialize, start, stop
//! or fetch a server, with enough context (paths, commands, log tails) to act on.

use std::path::PathBuf;

/// Errors from finding binaries, creating, starting and stopping clusters.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// No PostgreSQL server binaries were found where we looked.
    #[error(
        "no PostgreSQL server binaries found (looked in: {searched}); install PostgreSQL, \
         pass --pg-bin DIR, or set PGSURGE_PG_BIN"
    )]
    BinariesNotFound {
        /// The places that were searched, for the message.
        searched: String,
    },
    /// A directory given as binaries directory lacks a required program.
    #[error(
        "{dir}: no `{program}` program in this directory (expected PostgreSQL server binaries)"
    )]
    MissingProgram {
        /// The directory that was inspected.
        dir: PathBuf,
        /// The program that is missing.
        program: String,
    },
    /// `postgres --version` printed something we could not understand.
    #[error("could not determine the PostgreSQL version from `{output}`")]
    UnknownVersion {
        /// What the program printed.
        output: String,
    },
    /// A command could not be run or failed.
    #[error("{what} failed: {detail}")]
    CommandFailed {
        /// Which step failed (e.g. "initdb").
        what: String,
        /// Exit status and captured output.
        detail: String,
    },
    /// An I/O error on a named path.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory the failed operation was on.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The run-as user does not exist or cannot be used.
    #[error("{0}")]
    RunAs(String),
    /// The server did not start.
    #[error("the server did not start: {reason}\n--- last lines of {log} ---\n{log_tail}")]
    StartFailed {
        /// Why we gave up.
        reason: String,
        /// The server log file.
        log: PathBuf,
        /// Its last lines.
        log_tail: String,
    },
    /// A live server already uses the data directory.
    #[error(
        "a PostgreSQL server (pid {pid}) is already running on {data_dir}; stop it first \
         (`pgsurge server stop --data {data_dir}`)"
    )]
    AlreadyRunning {
        /// The postmaster's pid.
        pid: i32,
        /// The cluster's data directory (`PGDATA`).
        data_dir: PathBuf,
    },
    /// The data directory exists but cannot be used.
    #[error("{data_dir}: {reason}")]
    BadDataDir {
        /// The cluster's data directory (`PGDATA`).
        data_dir: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// An invalid setting, option or argument.
    #[error("{0}")]
    Invalid(String),
    /// Fetching binaries of a requested version failed or is not available.
    #[error("could not fetch PostgreSQL {version}: {reason}")]
    Fetch {
        /// The major version asked for (`--pg-version`, a target's `pg_version`).
        version: String,
        /// What went wrong.
        reason: String,
    },
    /// A patch does not apply to the source it was given for.
    #[error("patch {patch} does not apply (at {file}); nothing was built\n{detail}")]
    PatchFailed {
        /// The patch file.
        patch: PathBuf,
        /// The file of the source it fails on (`?` when the tool did not say).
        file: String,
        /// What `git apply` (or `patch`) said.
        detail: String,
    },
    /// A step of building PostgreSQL from source failed.
    #[error(
        "building PostgreSQL failed at {step}; the full log is {log}\n--- last lines ---\n{tail}"
    )]
    BuildFailed {
        /// The step (`configure`, `make`, …).
        step: String,
        /// The build log.
        log: PathBuf,
        /// Its last lines.
        tail: String,
    },
}

impl ServerError {
    /// Wraps an I/O error with the path it concerns.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        ServerError::Io {
            path: path.into(),
            source,
        }
    }
}

/// Result alias for this crate.
pub type Result<T, E = ServerError> = std::result::Result<T, E>;
