//! Campaigns (what pgbench-tools does with bash and psql, done in-process), the OS and
//! PostgreSQL metric samplers, the environment manifest, `pgsurge results` and
//! `pgsurge quickstart`. Results go to `pgsurge-store`.
//!
//! | module | owns |
//! |---|---|
//! | [`spec`] | the campaign file (TOML) and its validation |
//! | [`matrix`] | expansion into ordered tests, test identity, seeded shuffle |
//! | [`target`] | throwaway or existing servers for a campaign |
//! | [`execute`] | one test: init, hygiene, snapshots, engine run, samplers |
//! | [`runner`] | a campaign: resume, progress, storing each test atomically |
//! | [`sampler`] | per-second server-host OS, client and PostgreSQL samples |
//! | [`waits`] | active sessions by wait event, sampled several times a second |
//! | [`statements`] | the top statements of a test from `pg_stat_statements` |
//! | [`hostmetrics`] | server-host metrics: local /proc, node_exporter, pg_read_file |
//! | [`facts`] | names of the per-test facts (`run_facts`) |
//! | [`pgstats`] | version-dependent statistics views, in one place |
//! | [`sql_session`] | the blocking SQL session of the lab's own queries (hygiene, counters, settings) |
//! | [`manifest`] | the environment manifest |
//! | [`convert`] | engine results → store records |
//! | [`import`] | pgbench text reports and `-l` / aggregate logs → store |
//! | [`thresholds`] | campaign `[thresholds]`: CI gates per test |
//! | `results_cli`, `campaign_cli`, [`quickstart`] | the subcommands |

#![warn(missing_docs)]

pub mod adhoc;
mod campaign_cli;
pub mod capacity;
pub mod convert;
pub mod distributed;
pub mod error;
pub mod execute;
pub mod facts;
#[doc(hidden)]
pub mod fuzzing;
pub mod hooks;
pub mod hostmetrics;
pub mod import;
pub mod manifest;
pub mod matrix;
pub mod pgstats;
pub mod quickstart;
mod results_cli;
pub mod runner;
pub mod sampler;
pub mod spec;
pub mod sql_session;
pub mod statements;
pub mod target;
pub mod target_lock;
pub mod thresholds;
pub mod waits;

use std::ffi::OsString;

pub use error::{LabError, Result};
pub use runner::{run_campaign, Outcome, RunOptions};
pub use spec::Campaign;

/// Entry point of `pgsurge campaign ...`.
pub fn campaign_main(args: &[OsString]) -> i32 {
    campaign_cli::main(args)
}

/// Entry point of `pgsurge results ...`.
pub fn results_main(args: &[OsString]) -> i32 {
    results_cli::main(args)
}

pub use campaign_cli::{PLAN_SCHEMA, PLAN_VERSION, TEMPLATE as CAMPAIGN_TEMPLATE};
pub use results_cli::{where_time_goes, EXPORT_SCHEMA, EXPORT_VERSION};

/// The clap definition of `pgsurge campaign` (for the top-level command tree: help,
/// completions, man page; parsing uses the same definition).
pub fn campaign_cli() -> clap::Command {
    campaign_cli::command()
}

/// The clap definition of `pgsurge results`.
pub fn results_cli() -> clap::Command {
    results_cli::command()
}

/// The clap definition of `pgsurge quickstart`.
pub fn quickstart_cli() -> clap::Command {
    quickstart::command()
}

/// Entry point of `pgsurge quickstart`; the binary passes the HTML report writer (this
/// crate does not depend on the report crate).
pub fn quickstart_main(args: &[OsString], write_report: &quickstart::ReportWriter<'_>) -> i32 {
    quickstart::main(args, write_report)
}
