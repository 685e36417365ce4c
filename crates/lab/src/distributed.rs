//! A campaign test run by several generator processes (`[distributed]`): the test's
//! [`RunSpec`] becomes the generators' `pgsurge bench` options, `pgsurge dist`'s
//! launcher splits its clients, rate and seed and starts them together, and the exact
//! merge of their results is the test's result.

use std::ffi::OsString;

use pgsurge_dist::launch::GeneratorOptions;
use pgsurge_dist::local::{run_local, LocalArgs};
use pgsurge_dist::ssh::{run_ssh, SshArgs};
use pgsurge_engine::{RunResult, RunSpec};

use crate::error::{LabError, Result};
use crate::spec::DistributedSection;

/// Options the launcher sets per generator (or that make no sense for one).
const PER_GENERATOR: &[&str] = &[
    "--client=",
    "--jobs=",
    "--rate=",
    "--random-seed=",
    "--json=",
    "--progress",
    "--hdr-log=",
];

/// The generators' `pgsurge bench` options for `spec` against `conninfo`.
pub fn bench_options(spec: &RunSpec, generators: u32, conninfo: &str) -> Vec<OsString> {
    let per_generator = (spec.clients / generators).max(1);
    let jobs = (spec.threads / generators).clamp(1, per_generator);
    let mut args: Vec<OsString> = spec
        .pgbench_args()
        .into_iter()
        .filter(|a| !PER_GENERATOR.iter().any(|p| a.starts_with(p)))
        .map(OsString::from)
        .collect();
    args.push(format!("--jobs={jobs}").into());
    // A conninfo string is a valid database name argument (libpq expands it).
    args.push(conninfo.into());
    args
}

/// Runs the test's generators and returns the merged result.
pub fn run(
    spec: &RunSpec,
    d: &DistributedSection,
    conninfo: &str,
    pgsurge: Option<std::path::PathBuf>,
) -> Result<RunResult> {
    let dir = tempdir()?;
    if d.launcher == "ssh" {
        let args = SshArgs {
            hosts: d.hosts.clone(),
            gen: GeneratorOptions {
                clients: spec.clients,
                rate: spec.rate_tps,
                seed: Some(spec.random_seed),
                out_dir: Some(dir.clone()),
                json: None,
            },
            start_in: u64::from(d.start_in),
            start_at: None,
            ssh_options: d.ssh_options.clone(),
            ssh_config: d.ssh_config.clone(),
            remote_pgsurge: d.remote_pgsurge.clone().unwrap_or_else(|| "pgsurge".into()),
            bench: bench_options(spec, d.count(), conninfo),
        };
        let merged = run_ssh(&args)
            .and_then(pgsurge_dist::launch::merge_labelled)
            .map_err(|e| LabError::Other(format!("distributed run over ssh: {e}")));
        let _ = std::fs::remove_dir_all(&dir);
        return Ok(merged?.result);
    }
    let args = LocalArgs {
        generators: d.count(),
        gen: GeneratorOptions {
            clients: spec.clients,
            rate: spec.rate_tps,
            seed: Some(spec.random_seed),
            out_dir: Some(dir.clone()),
            json: None,
        },
        start_in: u64::from(d.start_in),
        pgsurge,
        bench: bench_options(spec, d.count(), conninfo),
    };
    let merged = run_local(&args)
        .and_then(|paths| pgsurge_dist::merge_cli::merge_files(&paths))
        .map_err(|e| LabError::Other(format!("distributed run: {e}")));
    let _ = std::fs::remove_dir_all(&dir);
    Ok(merged?.result)
}

fn tempdir() -> Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "pgsurge-campaign-dist-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    std::fs::create_dir_all(&dir)
        .map_err(|e| LabError::Other(format!("cannot create {}: {e}", dir.display())))?;
    Ok(dir)
}
