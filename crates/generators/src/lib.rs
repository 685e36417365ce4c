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
//! | [`checks`] | what makes many documents one run: each consistent, none twice, one set of generator indexes, overlapping in time |
//! | [`merge`] | the union of many results (checked sums), and refusal of different workloads |
//! | [`merge_cli`] | `pgsurge merge`: reading files, printing the report |
//! | [`split`] | total clients / rate / seed → one share per generator |
//! | [`start`] | `--start-at` and `--start-in`: when the generators start, read one way by every command |
//! | [`launch`] | what every launcher shares: the workload (`Workload`, and the command line's options that give it), generator arguments, the common start, presenting the merge |
//! | [`local`] | `pgsurge dist local`: N generator processes on this machine (`LocalPlan`, what `run_local` runs; the command line converts into it) |
//! | [`replay`] | a log replayed by many generators: each its share of the sessions, the reports merged |
//! | [`group`] | `pgsurge dist wait`: generators' results from a store, merged |
//! | [`ssh`] | `pgsurge dist ssh`: one generator per host over `ssh` (`SshPlan`, what `run_ssh` runs; the command line converts into it) |
//! | `fuzzing` | the body of the fuzz target over result documents (`fuzz/fuzz_targets/merge_documents.rs`) |
#![warn(missing_docs)]

use std::path::PathBuf;

pub mod checks;
#[doc(hidden)]
pub mod fuzzing;
pub mod group;
pub mod histograms;
pub mod launch;
pub mod local;
pub mod merge;
pub mod merge_cli;
pub mod replay;
pub mod split;
pub mod ssh;
pub mod start;

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
    /// One file named twice.
    #[error("{} is given twice: each generator's result is merged once", path.display())]
    GivenTwice {
        /// The file.
        path: PathBuf,
    },
    /// Two inputs hold the same run.
    #[error(
        "{first} and {other} are the same run ({why}): each generator's result is merged once"
    )]
    SameRun {
        /// The first input.
        first: String,
        /// The input that repeats it.
        other: String,
        /// How they are the same.
        why: String,
    },
    /// A document contradicts itself.
    #[error("{label}: not a consistent result document: {what}")]
    Inconsistent {
        /// The input.
        label: String,
        /// What disagrees with what.
        what: String,
    },
    /// A generator index not below its generator count, or a count of 0.
    #[error(
        "{label}: generator index {} is not below its generator count {count}",
        index.map_or("(none)".to_string(), |i| i.to_string())
    )]
    IndexOutOfRange {
        /// The input.
        label: String,
        /// Its `--generator-index`.
        index: Option<u32>,
        /// Its `--generator-count`.
        count: u32,
    },
    /// Inputs that claim different generator counts.
    #[error("{first} but {other}: the generators of one run share one --generator-count")]
    DifferentCounts {
        /// `LABEL is generator I of N`.
        first: String,
        /// `LABEL is generator J of M`.
        other: String,
    },
    /// Some inputs carry a generator index and others none.
    #[error(
        "{with} carries a generator index but {without} does not: the inputs are all \
         numbered generators of one run, or none is numbered"
    )]
    MixedIndexes {
        /// An input with an index.
        with: String,
        /// An input without one.
        without: String,
    },
    /// One generator index twice.
    #[error("generator index {index} is given twice: {first} and {other}")]
    DuplicateIndex {
        /// The index.
        index: u32,
        /// The first input with it.
        first: String,
        /// The other.
        other: String,
    },
    /// Fewer (or more) inputs than the generator count.
    #[error(
        "a run of {count} generators, but {} given ({}){}",
        given.len(),
        given.join(", "),
        if missing.is_empty() {
            String::new()
        } else {
            format!(
                "; missing generator index(es): {}",
                missing.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
            )
        }
    )]
    Incomplete {
        /// `--generator-count`.
        count: u32,
        /// The inputs given.
        given: Vec<String>,
        /// The indexes not given (empty when the inputs carry no index).
        missing: Vec<u32>,
    },
    /// The runs did not overlap in time.
    #[error(
        "{late} started {:.3} s after {early}, but {short} ran only {:.3} s: these results \
         did not run at the same time (the start skew may exceed the shortest run by at most {} ms)",
        *skew_us as f64 / 1e6,
        *shortest_us as f64 / 1e6,
        checks::START_SKEW_TOLERANCE_US / 1000
    )]
    NotConcurrent {
        /// The input that started first.
        early: String,
        /// The input that started last.
        late: String,
        /// Latest start minus earliest (µs).
        skew_us: i128,
        /// The input with the shortest run.
        short: String,
        /// Its duration (µs).
        shortest_us: i128,
    },
    /// Counts that together do not fit their type.
    #[error("the {what} of {inputs} add up to more than {limit}: no counter holds their sum")]
    Overflow {
        /// What was added.
        what: String,
        /// The inputs.
        inputs: String,
        /// The largest value the sum may have.
        limit: String,
    },
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
