//! Replaying PostgreSQL logs: the logs (stderr, csvlog, jsonlog) read into sessions and
//! their statements, fingerprints from PostgreSQL's own parser, the description of a
//! replay ([`ReplaySpec`]: pacing, order, target, share of the sessions), one session's
//! protocol without I/O, and the fidelity report (logged against replayed, per
//! fingerprint, and the lag behind the schedule).
//!
//! The engine's replay driver (`pgsurge_engine::replay`) owns sockets, threads and
//! time and runs what this crate describes; this crate does no network I/O. It reads
//! files (the logs) and nothing else.
//!
//! | module | owns |
//! |---|---|
//! | [`limits`] | the bounds on what a log can make a replay hold: an entry's length, fingerprints and shapes |
//! | [`sqlscan`] | one lexical pass over SQL: shape hash and highest `$n`, and whether a point of it is inside a quoted token |
//! | [`log`] | bytes of the three formats → log entries, with file and line |
//! | [`fingerprint`] | fingerprints (pg_query), once per shape |
//! | [`events`] | what a log becomes: connect, statement, outcome, disconnect |
//! | [`sessions`] | entries → events and the logged side of fidelity |
//! | [`spec`] | [`ReplaySpec`]: pacing, order, target, share |
//! | [`machine`] | one session's protocol (encode a statement, read its answer) |
//! | [`fidelity`] | counts and latencies per fingerprint, lag per second |
//! | [`report`] | the fidelity report: its document (`--json`, schema `replay`) and table |
//! | [`check`] | reading logs through without replaying them (`--check`) |
//! | [`merge`] | the reports of generators that each played a share, as one report |
//! | `fuzzing` | the bodies of the fuzz targets over logs, statements and sessions |
//!
//! Modules use only those above them in this table.

#![warn(missing_docs)]

pub mod check;
pub mod events;
pub mod fidelity;
pub mod fingerprint;
pub mod fuzzing;
pub mod limits;
pub mod log;
pub mod machine;
pub mod merge;
pub mod report;
pub mod sessions;
pub mod spec;
pub mod sqlscan;

pub use spec::{Order, Pacing, ReplaySpec, Share, Target};
