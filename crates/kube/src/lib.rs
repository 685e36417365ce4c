//! Kubernetes launcher for distributed runs.
//!
//! `pgsurge kube job` prints — it never talks to a cluster — a `batch/v1` Job in
//! Indexed completion mode whose N pods are the N generators of one distributed
//! `pgsurge bench` run: the same arguments for every pod but its completion index,
//! `bench --generator-split` turning the run's total clients, rate and seed into the
//! pod's share (the rule of `pgsurge_generators::split`, which `dist local` uses too). The
//! manifest is built from the Kubernetes API types of `k8s-openapi`, so every field
//! has the type and name the API server expects; `kubectl apply -f -` takes it.
//!
//! | module | owns |
//! |---|---|
//! | [`job`] | the options of `pgsurge kube job`, the plan they convert into, its checks, the Job, YAML/JSON |
#![warn(missing_docs)]

use std::ffi::OsString;

pub mod job;

pub use job::{build_job, render, Format, JobArgs, JobPlan, KubeError, KubePlan, Spread, Start};

/// The clap definition of `pgsurge kube` and its subcommands (for the command tree:
/// help, completions, man pages — and for parsing, so they cannot disagree).
pub fn kube_cli() -> clap::Command {
    clap::Command::new("kube")
        .about("Kubernetes launcher: print the manifest of a distributed run (kubectl applies it)")
        .subcommand_required(true)
        .arg_required_else_help(true)
        .subcommand(<job::JobArgs as clap::CommandFactory>::command().name("job"))
}

/// Entry point of `pgsurge kube SUBCOMMAND …` (the arguments after `kube`); returns
/// the exit code.
pub fn kube_main(args: &[OsString]) -> i32 {
    let matches = match pgsurge_command::parse_command(kube_cli(), "pgsurge kube", args) {
        Ok(m) => m,
        Err(status) => return status,
    };
    match matches.subcommand() {
        Some(("job", m)) => match <JobArgs as clap::FromArgMatches>::from_arg_matches(m) {
            Ok(a) => {
                let format = a.format;
                job::job_main(
                    &KubePlan::from(a),
                    format,
                    job::now_unix_us(),
                    &mut std::io::stdout().lock(),
                    &mut std::io::stderr().lock(),
                )
            }
            Err(e) => {
                let _ = e.print();
                pgsurge_command::EXIT_USAGE
            }
        },
        _ => pgsurge_command::usage_error(
            "pgsurge kube",
            "unknown subcommand; `pgsurge help kube` lists them",
        ),
    }
}
