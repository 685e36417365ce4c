//! Watching a PostgreSQL server and the hosts while a test runs: what the server did
//! (statistics views, wait events, statements), what the server's host and the client's
//! did (`/proc`, node_exporter, `pg_read_file`), and what the environment is (the
//! manifest). Samples, facts and manifests are store records (`pgsurge-store`); which
//! test they belong to is the campaign's business, not this crate's.
//!
//! Connections are given as a parsed [`pgsurge_wire::ConnConfig`]; nothing here reads
//! a connection string.
//!
//! | module | owns |
//! |---|---|
//! | [`sql_session`] | the blocking SQL session of the observers' own queries (and the campaign's hygiene, counters, settings) |
//! | [`latest`] | the newest waits and host figures of a running test, for a live view |
//! | [`pgstats`] | version-dependent statistics views, in one place |
//! | [`manifest`] | the environment manifest: this host's and the server's |
//! | [`hostmetrics`] | server-host metrics: local /proc, node_exporter, pg_read_file |
//! | [`waits`] | active sessions by wait event, sampled several times a second |
//! | [`statements`] | the top statements of a test from `pg_stat_statements` |
//! | [`costs`] | what a measured window cost: server and client CPU, context switches, WAL, buffers, temporary bytes |
//! | [`profile`] | profiles of a measured window with `perf`: on-CPU stacks of the server and the client, the server's off-CPU time, folded |
//! | [`profile_notes`] | what a profile says about itself: stacks cut short, frames without symbols, and what mends them |
//! | [`lag`] | the standbys' replication lag per second, in bytes and in time, read on the primary |
//! | [`sampler`] | per-second server-host OS, client and PostgreSQL samples beside a test |
//! | [`error`] | [`ObserveError`] |
//!
//! Inside the crate the arrows point down the table, from `sampler` to `sql_session`.

#![warn(missing_docs)]

pub mod costs;
pub mod error;
pub mod hostmetrics;
pub mod lag;
pub mod latest;
pub mod manifest;
pub mod pgstats;
pub mod profile;
pub mod profile_notes;
pub mod sampler;
pub mod sql_session;
pub mod statements;
pub mod waits;

pub use error::{ObserveError, Result};
pub use sql_session::Pg;
