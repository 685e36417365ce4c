//! Distributed runs: many load generators, one exact result.
//!
//! pgsurge has no daemon of its own: generators are ordinary `pgsurge bench`
//! processes started by whatever the user already runs — this machine ([`local`]),
//! other hosts over the system `ssh` ([`ssh`]), or a Kubernetes Indexed Job (the
//! `pgsurge-kube` crate, `pgsurge kube job`). Each gets its share of the workload
//! ([`split`]), waits for a common `--start-at` instant, and writes a `--json` result
//! that carries per-second histograms; results reach the merge as files, or through a
//! results store ([`group`]). [`merge`] adds
//! those results up exactly: counts summed, histograms merged bucket by bucket.
//!
//! | module | owns |
//! |---|---|
//! | [`histograms`] | decode/add/encode the HDR histograms of result documents |
//! | [`merge`] | the union of many results, and refusal of different workloads |
//! | [`merge_cli`] | `pgsurge merge`: reading files, printing the report |
//! | [`split`] | total clients / rate / seed → one share per generator |
//! | [`launch`] | what every launcher shares: workload options, generator arguments, the common start, presenting the merge |
//! | [`local`] | `pgsurge dist local`: N generator processes on this machine |
//! | [`group`] | `pgsurge dist wait`: generators' results from a store, merged |
//! | [`ssh`] | `pgsurge dist ssh`: one generator per host over `ssh` |
#![warn(missing_docs)]

use std::path::PathBuf;

pub mod group;
pub mod histograms;
pub mod launch;
pub mod local;
pub mod merge;
pub mod merge_cli;
pub mod split;
pub mod ssh;

pub use launch::dist_main;

pub use merge::{merge, GeneratorLine, MergedRun};
pub use merge_cli::{merge_main, write_merged_report};
pub use split::{generator_seed, share, split, Share, SplitError};

/// Why results could not be merged or generators not run.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// No result was given.
    #[error("no results to merge")]
    Nothing,
    /// Two inputs describe different workloads.
    #[error("cannot merge results of different workloads: {what} differs ({first}; {other})")]
    DifferentWorkloads {
        /// What differs.
        what: String,
        /// The first input's value and label.
        first: String,
        /// The other input's value and label.
        other: String,
    },
    /// A document of another layout version.
    #[error(
        "{label}: JSON schema version {found} is not the one this pgsurge reads ({})",
        pgsurge_results::SCHEMA_VERSION
    )]
    SchemaVersion {
        /// Which input failed: its file name, or `-` for stdin.
        label: String,
        /// Its `schema_version`.
        found: u32,
    },
    /// A histogram in a document could not be read or added.
    #[error("bad histogram: {0}")]
    Histogram(String),
    /// A file could not be read or parsed.
    #[error("{path}: {msg}")]
    File {
        /// The result file that could not be read.
        path: PathBuf,
        /// What went wrong.
        msg: String,
    },
    /// A generator process could not be run or failed.
    #[error("{0}")]
    Launch(String),
}

/// The clap definition of `pgsurge merge` (for the command tree: help, completions, man).
pub fn merge_cli() -> clap::Command {
    <merge_cli::MergeArgs as clap::CommandFactory>::command().name("merge")
}

/// The clap definition of `pgsurge dist` and its subcommands.
pub fn dist_cli() -> clap::Command {
    clap::Command::new("dist")
        .about("Run a distributed benchmark: several generators, one merged result")
        .subcommand_required(true)
        .subcommand(<local::LocalArgs as clap::CommandFactory>::command().name("local"))
        .subcommand(<group::WaitArgs as clap::CommandFactory>::command().name("wait"))
        .subcommand(<ssh::SshArgs as clap::CommandFactory>::command().name("ssh"))
}
