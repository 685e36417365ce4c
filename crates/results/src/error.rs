//! Errors of this crate.

use std::io;
use std::path::PathBuf;

/// Something went wrong while writing results.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    /// A per-thread log file could not be created (pgbench's message).
    #[error("could not open logfile \"{}\": {}", path.display(), strerror(source))]
    OpenLog {
        /// The output file (`--json`, `--hdr-log`, a log) that failed.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Writing an output file failed.
    #[error("could not write \"{}\": {}", path.display(), strerror(source))]
    Write {
        /// The output file (`--json`, `--hdr-log`, a log) that failed.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// An I/O error on an already open output.
    #[error("{}", strerror(.0))]
    Io(#[from] io::Error),
    /// JSON encoding failed.
    #[error("could not encode JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// An HDR histogram could not be serialized into the interval log.
    #[error("could not write HDR interval log: {0}")]
    HdrLog(String),
    /// Statistics of differently shaped runs (scripts/commands) were merged.
    #[error("cannot merge statistics of runs with different scripts or commands")]
    ShapeMismatch,
}

/// An I/O error as C's `%m` prints it: `No such file or directory`, without
/// Rust's ` (os error 2)` suffix.
pub fn strerror(e: &io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) if s.ends_with(')') => s[..i].to_string(),
        _ => s,
    }
}
