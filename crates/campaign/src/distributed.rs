//! A campaign test run by several generator processes (`[distributed]`): the test's
//! [`RunSpec`] becomes the generators' `pgsurge bench` options, `pgsurge dist`'s
//! launcher splits its clients, rate and seed and starts them together, and the exact
//! merge of their results is the test's result. The launchers: `local` and `ssh` (the
//! code of `pgsurge dist local` / `dist ssh`, given the typed launch the campaign
//! builds, `LocalPlan` or `SshPlan`), `kube` ([`kube`]: a Kubernetes Job whose pods
//! store their results in a PostgreSQL store).

pub mod kube;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use pgsurge_engine::{RunResult, RunSpec, StopFlag};
use pgsurge_generators::launch::Workload;
use pgsurge_generators::local::{run_local, LocalPlan};
use pgsurge_generators::ssh::{run_ssh, SshPlan, SshStart};

use crate::error::{CampaignError, Result};
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

/// The generators' `pgsurge bench` options for `spec`, but the connection: the test's
/// options less those the launcher sets per generator, and each generator's threads.
pub fn generator_options(spec: &RunSpec, generators: u32) -> Vec<String> {
    let per_generator = (spec.clients / generators).max(1);
    let jobs = (spec.threads / generators).clamp(1, per_generator);
    let mut args: Vec<String> = spec
        .pgbench_args()
        .into_iter()
        .filter(|a| !PER_GENERATOR.iter().any(|p| a.starts_with(p)))
        .collect();
    args.push(format!("--jobs={jobs}"));
    args
}

/// The generators' `pgsurge bench` options for `spec` against `conninfo`.
pub fn bench_options(spec: &RunSpec, generators: u32, conninfo: &str) -> Vec<OsString> {
    let mut args: Vec<OsString> = generator_options(spec, generators)
        .into_iter()
        .map(OsString::from)
        .collect();
    // A conninfo string is a valid database name argument (libpq expands it).
    args.push(conninfo.into());
    args
}

/// The test the generators are for, and what the campaign knows around it (the
/// `kube` launcher names its Job and group after it).
#[derive(Debug, Clone, Copy)]
pub struct TestContext<'a> {
    /// The campaign's name.
    pub campaign: &'a str,
    /// The campaign's set in its store.
    pub set_id: i64,
    /// The test's position in the campaign (unique in the set).
    pub seq: usize,
    /// The test's key.
    pub key: &'a str,
    /// The campaign's own results store.
    pub store: &'a str,
    /// Raised when the user stops the campaign.
    pub stop: &'a StopFlag,
}

/// A distributed test's merged result, and problems that did not spoil it.
#[derive(Debug)]
pub struct Outcome {
    /// The merge of the generators' results.
    pub result: RunResult,
    /// Warnings to store with the test (a Job that could not be deleted).
    pub warnings: Vec<String>,
}

/// Runs the test's generators and returns the merged result.
pub fn run(
    spec: &RunSpec,
    d: &DistributedSection,
    conninfo: &str,
    pgsurge: Option<PathBuf>,
    test: &TestContext<'_>,
) -> Result<Outcome> {
    if d.launcher == "kube" {
        let k = d.kube.as_ref().ok_or_else(|| {
            CampaignError::Other("launcher = \"kube\" needs [distributed.kube]".into())
        })?;
        return kube::run(spec, d, k, conninfo, test);
    }
    let plain = |result| Outcome {
        result,
        warnings: Vec::new(),
    };
    let dir = tempdir()?;
    if d.launcher == "ssh" {
        let merged = run_ssh(&ssh_plan(spec, d, conninfo, &dir))
            .and_then(pgsurge_generators::launch::merge_labelled)
            .map_err(|e| CampaignError::Other(format!("distributed run over ssh: {e}")));
        // A failure's message points at the generators' outputs: they are kept.
        if merged.is_ok() {
            let _ = std::fs::remove_dir_all(&dir);
        }
        return Ok(plain(merged?.result));
    }
    let merged = run_local(&local_plan(spec, d, conninfo, &dir, pgsurge))
        .and_then(|paths| pgsurge_generators::merge_cli::merge_files(&paths))
        .map_err(|e| CampaignError::Other(format!("distributed run: {e}")));
    if merged.is_ok() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(plain(merged?.result))
}

/// The test's workload for its generators, their outputs in `dir`.
fn workload(spec: &RunSpec, d: &DistributedSection, dir: &Path) -> Workload {
    Workload {
        clients: spec.clients,
        rate: spec.rate_tps,
        seed: Some(spec.random_seed),
        out_dir: Some(dir.to_path_buf()),
        deadline: deadline(spec, d),
    }
}

/// The launch over ssh of the test's generators against `conninfo`.
fn ssh_plan(spec: &RunSpec, d: &DistributedSection, conninfo: &str, dir: &Path) -> SshPlan {
    SshPlan {
        hosts: d.hosts.clone(),
        workload: workload(spec, d, dir),
        start: SshStart::In(u64::from(d.start_in.max(1))),
        ssh_options: d.ssh_options.clone(),
        ssh_config: d.ssh_config.clone(),
        remote_pgsurge: d.remote_pgsurge.clone().unwrap_or_else(|| "pgsurge".into()),
        bench: bench_options(spec, d.count(), conninfo),
    }
}

/// The launch on this machine of the test's generators against `conninfo`, running
/// `pgsurge` (none: this binary).
fn local_plan(
    spec: &RunSpec,
    d: &DistributedSection,
    conninfo: &str,
    dir: &Path,
    pgsurge: Option<PathBuf>,
) -> LocalPlan {
    LocalPlan {
        generators: d.count(),
        workload: workload(spec, d, dir),
        start_in_s: u64::from(d.start_in.max(1)),
        pgsurge,
        bench: bench_options(spec, d.count(), conninfo),
    }
}

/// Seconds after the common start by which every generator of the test must have
/// ended: the test's duration plus `deadline_margin` (a run without a duration gets
/// the launcher's default, none).
fn deadline(spec: &RunSpec, d: &DistributedSection) -> Option<u64> {
    let margin = u64::from(
        d.deadline_margin
            .unwrap_or(pgsurge_generators::launch::DEADLINE_MARGIN_S as u32),
    );
    match spec.limit {
        pgsurge_engine::RunLimit::Duration(s) => Some(u64::from(s) + margin),
        pgsurge_engine::RunLimit::Transactions(_) => d.deadline_margin.map(u64::from),
    }
}

fn tempdir() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "pgsurge-campaign-dist-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    std::fs::create_dir_all(&dir)
        .map_err(|e| CampaignError::Other(format!("cannot create {}: {e}", dir.display())))?;
    Ok(dir)
}

/// One line for `campaign plan`: how each test's generators run.
pub fn describe(campaign_name: &str, d: &DistributedSection) -> String {
    let n = d.count();
    let start = format!("starting together {} s after launch", d.start_in);
    match (d.launcher.as_str(), &d.kube) {
        ("ssh", _) => format!(
            "distributed: each test as {n} generators over ssh on {}, {start}",
            d.hosts.join(", ")
        ),
        ("kube", Some(k)) => {
            let mut place = vec![format!("image {}", k.image)];
            place.push(match &k.namespace {
                Some(ns) => format!("namespace {ns}"),
                None => "kubectl's current namespace".into(),
            });
            if let Some(c) = &k.context {
                place.push(format!("context {c}"));
            }
            let store = match &k.store {
                Some(s) => format!("the store {}", pgsurge_store::redact_location(s)),
                None => "the campaign's store (it must be PostgreSQL)".into(),
            };
            let wait = match k.wait_timeout {
                Some(t) => format!("up to {t} s from kubectl apply"),
                None => format!(
                    "up to start_in + the run + {} s",
                    k.wait_margin.unwrap_or(spec_default_margin())
                ),
            };
            format!(
                "distributed: each test as a Kubernetes Indexed Job of {n} pod{} ({}), {start}; \
                 the pods store their results in {store} as a group, waited for {wait}; Jobs \
                 named {}-SET-TEST-ATTEMPT, {}",
                if n == 1 { "" } else { "s" },
                place.join(", "),
                pgsurge_kube::job::dns_label_from(&format!("pgsurge-{campaign_name}"), 40)
                    .unwrap_or_else(|| "pgsurge".into()),
                if k.keep_job {
                    "kept after each test"
                } else {
                    "deleted after each test"
                }
            )
        }
        _ => format!("distributed: each test as {n} generator processes on this machine, {start}"),
    }
}

fn spec_default_margin() -> u32 {
    crate::spec::KubeSection::DEFAULT_WAIT_MARGIN
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use pgsurge_engine::{RunLimit, RunScript};
    use pgsurge_generators::local::LocalArgs;
    use pgsurge_generators::ssh::SshArgs;

    fn spec(limit: RunLimit) -> RunSpec {
        let conn = pgsurge_wire::ConnConfig::parse("host=db dbname=bench").unwrap();
        let mut s = RunSpec::new(conn, vec![RunScript::builtin("select-only", 1).unwrap()]);
        s.clients = 8;
        s.threads = 4;
        s.rate_tps = Some(400.0);
        s.random_seed = 17;
        s.limit = limit;
        s
    }

    fn section(text: &str) -> DistributedSection {
        toml::from_str(text).unwrap()
    }

    /// The command line `pgsurge dist LAUNCHER` would get: `options`, then `--` and the
    /// generators' bench options.
    fn argv(options: &[&str], bench: Vec<OsString>) -> Vec<OsString> {
        let mut v: Vec<OsString> = std::iter::once("pgsurge")
            .chain(options.iter().copied())
            .map(OsString::from)
            .collect();
        v.push("--".into());
        v.extend(bench);
        v
    }

    #[test]
    fn the_ssh_launch_is_the_one_its_command_line_gives() {
        let dir = Path::new("/tmp/out");
        let conninfo = "host=db dbname=bench";
        let d = section(
            "launcher = \"ssh\"\nhosts = [\"g1\", \"u@g2\"]\nstart_in = 5\n\
             ssh_options = [\"Port=2222\"]\nssh_config = \"/etc/bench-ssh\"\n\
             remote_pgsurge = \"~/bin/pgsurge\"",
        );
        let s = spec(RunLimit::Duration(30));
        let bench = bench_options(&s, d.count(), conninfo);
        let cli = SshArgs::try_parse_from(argv(
            &[
                "--hosts=g1,u@g2",
                "-c",
                "8",
                "-R",
                "400",
                "--random-seed=17",
                "--out-dir=/tmp/out",
                "--deadline=150",
                "--start-in=5s",
                "--ssh-option=Port=2222",
                "--ssh-config=/etc/bench-ssh",
                "--remote-pgsurge=~/bin/pgsurge",
            ],
            bench,
        ))
        .unwrap();
        assert_eq!(SshPlan::from(cli), ssh_plan(&s, &d, conninfo, dir));

        // The defaults agree too: the remote binary, and no deadline for a number of
        // transactions without a margin.
        let d = section("launcher = \"ssh\"\nhosts = [\"g1\"]");
        let s = spec(RunLimit::Transactions(1000));
        let bench = bench_options(&s, d.count(), conninfo);
        let cli = SshArgs::try_parse_from(argv(
            &[
                "--hosts=g1",
                "--clients=8",
                "--rate=400",
                "--random-seed=17",
                "--out-dir=/tmp/out",
            ],
            bench,
        ))
        .unwrap();
        assert_eq!(SshPlan::from(cli), ssh_plan(&s, &d, conninfo, dir));
    }

    #[test]
    fn the_local_launch_is_the_one_its_command_line_gives() {
        let dir = Path::new("/tmp/out");
        let conninfo = "host=db dbname=bench";
        let d = section("generators = 2\nstart_in = 4\ndeadline_margin = 10");
        let s = spec(RunLimit::Duration(30));
        let bench = bench_options(&s, d.count(), conninfo);
        let cli = LocalArgs::try_parse_from(argv(
            &[
                "-n",
                "2",
                "-c",
                "8",
                "-R",
                "400",
                "--random-seed=17",
                "--out-dir=/tmp/out",
                "--deadline=40",
                "--start-in=4",
                "--pgsurge=/opt/pgsurge",
            ],
            bench,
        ))
        .unwrap();
        let plan = local_plan(&s, &d, conninfo, dir, Some("/opt/pgsurge".into()));
        assert_eq!(LocalPlan::from(cli), plan);
        assert_eq!(plan.workload.deadline, Some(40));
    }
}
