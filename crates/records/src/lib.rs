//! Results as records: reading the store from the command line (`pgsurge results
//! list|show|export|import|trend`), existing pgbench outputs imported into it, and one ad-hoc
//! run stored by `pgsurge bench --store`. Campaigns write their tests themselves
//! (`pgsurge-campaign`); this crate stores what is not a campaign and reads everything.
//!
//! | module | owns |
//! |---|---|
//! | [`import`] | pgbench text reports and `-l` / aggregate logs → store records |
//! | [`pgbench_tools`] | a pgbench-tools results database → sets, runs, metrics and facts |
//! | [`adhoc`] | `bench --store` and `bench --store --group`: one run into a set |
//! | [`replay_store`] | `replay --store`: a replay's report as a run into a set |
//! | [`trend`] | a campaign's cells over its sets: each cell's levels and where they changed |
//! | `results_cli` | `pgsurge results`: list, show (with where the time went), export, import, trend |
//! | `fuzzing` | the body of the `results import` fuzz target |

#![warn(missing_docs)]

pub mod adhoc;
#[doc(hidden)]
pub mod fuzzing;
pub mod import;
pub mod pgbench_tools;
pub mod replay_store;
mod results_cli;
pub mod trend;

use std::ffi::OsString;

pub use results_cli::{runs_table, where_time_goes, EXPORT_SCHEMA, EXPORT_VERSION};

/// Entry point of `pgsurge results ...`.
pub fn results_main(args: &[OsString]) -> i32 {
    results_cli::main(args)
}

/// The clap definition of `pgsurge results`.
pub fn results_cli() -> clap::Command {
    results_cli::command()
}
