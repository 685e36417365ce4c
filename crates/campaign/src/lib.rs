//! Campaigns (what pgbench-tools does with bash and psql, done in-process): a campaign
//! file (read and planned by `pgsurge-plan`, whose modules `spec`, `load`, `matrix`,
//! `capacity`, `thresholds` and `convert` this crate re-exports) describes targets and a matrix of
//! tests; this crate runs each test with the engine while `pgsurge-observe` watches the
//! server and the hosts, and stores every test in `pgsurge-store`. `pgsurge campaign`
//! is its command.
//!
//! Modules, ground floor first: each uses only modules listed before it (`distributed`
//! and its submodule `kube` use each other).
//!
//! | module | owns |
//! |---|---|
//! | [`error`] | [`CampaignError`] |
//! | [`replay_run`] | a replay of PostgreSQL logs as a test of the matrix |
//! | [`distributed`] | `[distributed]`: a test run by several generators (`local`, `ssh`, and [`distributed::kube`]) |
//! | [`hooks`] | campaign `[hooks]`: shell commands around tests |
//! | [`pinning`] | `[pinning]`: CPUs of throwaway servers and of the load generator |
//! | [`sources`] | targets built from PostgreSQL source, before the first test |
//! | [`target`] | throwaway or existing servers for a campaign, and building their pgbench tables |
//! | [`target_lock`] | one campaign per server at a time |
//! | [`inputs`] | the inputs a campaign names (scripts, packs, commits, patches), their digests, and the set a run resumes by them |
//! | [`hygiene`] | `[hygiene]` before a test: vacuum, checkpoint, statistics reset, page cache |
//! | [`profiling`] | `[profile]`: the profiles of a test's measured run |
//! | [`execute`] | one test: hygiene, snapshots, engine run, samplers |
//! | [`capacity`] | `[capacity]`: the highest rate meeting a latency objective |
//! | [`runner`] | a campaign: resume, each test in steps, each step told as an event (stored and shown by the consumers of `pgsurge_events`) |
//! | `campaign_cli` | `pgsurge campaign run|plan|new|convert` |

#![warn(missing_docs)]

mod campaign_cli;
pub mod distributed;
pub mod error;
pub mod execute;
pub mod hooks;
pub mod hygiene;
pub mod inputs;
pub mod pinning;
pub mod profiling;
pub mod replay_run;
pub mod runner;
pub mod sources;
pub mod target;
pub mod target_lock;

use std::ffi::OsString;

pub use pgsurge_plan::{capacity, convert, load, matrix, spec, stored, thresholds};

pub use error::{CampaignError, Result};
pub use runner::{run_campaign, run_campaign_telling, Outcome, RunOptions, SetIdentity};
pub use spec::Campaign;
pub use spec::SpecError;

/// Entry point of `pgsurge campaign ...`.
pub fn campaign_main(args: &[OsString]) -> i32 {
    campaign_cli::main(args)
}

pub use campaign_cli::{PLAN_SCHEMA, PLAN_VERSION, TEMPLATE as CAMPAIGN_TEMPLATE};

/// The clap definition of `pgsurge campaign` (for the top-level command tree: help,
/// completions, man page; parsing uses the same definition).
pub fn campaign_cli() -> clap::Command {
    campaign_cli::command()
}
