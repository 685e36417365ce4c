//! `pgsurge dist local -n N [options] -- BENCH OPTIONS…`: runs N `pgsurge bench`
//! generator processes on this machine with one `--start-at`, each with its share
//! of the clients, rate and seed ([`crate::split`]), then merges their `--json`
//! results. With `-- replay [REPLAY OPTIONS] LOG…` the generators replay a log, each
//! its share of the sessions ([`crate::replay`]). For tests, and for single-host multi-process runs (one process per
//! core group). Clients, rate, seed and JSON output belong to this command, not to
//! the bench options, because they are split or set per generator; what is not
//! specific to local processes lives in [`crate::launch`].

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use clap::Parser;

use crate::launch::{
    check_bench_options, failed, generator_args, open_merged_json, past_deadline, present,
    start_in, wait_until, Ended, GeneratorOptions, Workload,
};
use crate::merge_cli::merge_files;
use crate::MergeError;

/// `pgsurge dist local` options.
#[derive(Debug, Parser)]
#[command(
    name = "pgsurge dist local",
    about = "Run N pgsurge bench generators (or replays of a log's sessions, after `-- replay`) on this machine with a common start, then merge"
)]
pub struct LocalArgs {
    /// Number of generator processes.
    #[arg(short = 'n', long = "generators", value_name = "N")]
    pub generators: u32,
    /// Clients, rate, seed, output directory and merged JSON.
    #[command(flatten)]
    pub gen: GeneratorOptions,
    /// Time between now and the common start, for the generators to connect (`90s`,
    /// `2m`, or seconds).
    #[arg(long = "start-in", value_name = "DELAY", default_value = "3s")]
    pub start_in: crate::start::StartIn,
    /// The pgsurge binary generators run (default: this one).
    #[arg(long = "pgsurge", value_name = "PATH")]
    pub pgsurge: Option<PathBuf>,
    /// Options for each `pgsurge bench` (after `--`); or `replay`, the replay options
    /// and the logs, for generators that each replay a share of the log's sessions.
    #[arg(last = true, value_name = "BENCH OPTIONS")]
    pub bench: Vec<OsString>,
}

/// A launch of generator processes on this machine, as plain values: what
/// [`run_local`] runs, built from the command line ([`LocalArgs`]) or by a campaign.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalPlan {
    /// Number of generator processes.
    pub generators: u32,
    /// Clients, rate, seed, output directory and deadline.
    pub workload: Workload,
    /// Seconds between now and the common start, for the generators to connect.
    pub start_in_s: u64,
    /// The pgsurge binary generators run (none: this one).
    pub pgsurge: Option<PathBuf>,
    /// Options for each `pgsurge bench`; or `replay`, the replay options and the logs.
    pub bench: Vec<OsString>,
}

impl From<LocalArgs> for LocalPlan {
    fn from(a: LocalArgs) -> LocalPlan {
        LocalPlan {
            generators: a.generators,
            workload: a.gen.workload(),
            start_in_s: a.start_in.seconds(),
            pgsurge: a.pgsurge,
            bench: a.bench,
        }
    }
}

/// Runs the generators, waits for all, and returns their JSON result paths (bench
/// results, or replay reports when the options after `--` are a replay's).
pub fn run_local(a: &LocalPlan) -> Result<Vec<PathBuf>, MergeError> {
    let replay = crate::replay::replay_options(&a.bench);
    // The checks first: nothing is created for options that are refused.
    let shares = match replay {
        Some(opts) => {
            crate::replay::check_options(opts, &a.workload)?;
            if a.generators == 0 {
                return Err(MergeError::Launch("-n: at least one generator".to_string()));
            }
            Vec::new()
        }
        None => {
            check_bench_options(&a.bench)?;
            a.workload.shares(a.generators)?
        }
    };
    let dir = a.workload.out_dir("")?;
    let exe = match &a.pgsurge {
        Some(p) => p.clone(),
        None => std::env::current_exe()
            .map_err(|e| MergeError::Launch(format!("cannot find the pgsurge binary: {e}")))?,
    };
    let start_at = start_in(a.start_in_s);
    let deadline = a.workload.deadline(start_at, &a.bench);
    let at = start_at.to_string();
    let mut children = Vec::new();
    for index in 0..a.generators {
        let name = format!("local-{index}");
        let json = dir.join(format!("{name}.json"));
        let _ = std::fs::remove_file(&json);
        let args = match replay {
            Some(opts) => {
                crate::replay::generator_args(opts, index, a.generators, &at, json.as_os_str())
            }
            None => generator_args(
                &a.bench,
                &shares[index as usize],
                a.generators,
                &at,
                &name,
                json.as_os_str(),
            ),
        };
        let open = |ext: &str| {
            let p = dir.join(format!("{name}.{ext}"));
            std::fs::File::create(&p)
                .map_err(|e| MergeError::Launch(format!("cannot create {}: {e}", p.display())))
        };
        let child = Command::new(&exe)
            .args(args)
            .stdin(Stdio::null())
            .stdout(open("out")?)
            .stderr(open("err")?)
            .spawn()
            .map_err(|e| MergeError::Launch(format!("cannot run {}: {e}", exe.display())))?;
        children.push((name, json, child));
    }
    let mut failures = Vec::new();
    let mut paths = Vec::new();
    for (name, json, mut child) in children {
        match wait_until(&mut child, deadline) {
            Ok(Ended::Exited(st)) if st.success() && json.exists() => paths.push(json),
            Ok(Ended::Exited(st)) if st.success() => {
                failures.push(format!("{name} exited with {st} but left no result"));
            }
            Ok(Ended::PastDeadline) => failures.push(past_deadline(&name, deadline, start_at)),
            Ok(Ended::Exited(st)) => {
                let err =
                    std::fs::read_to_string(dir.join(format!("{name}.err"))).unwrap_or_default();
                let last = err
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("");
                failures.push(format!("{name} exited with {st}: {last}"));
            }
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    if !failures.is_empty() {
        return Err(failed(&dir, &failures));
    }
    Ok(paths)
}

/// Entry point of `pgsurge dist local ARGS`.
pub fn local_main(args: &[OsString]) -> i32 {
    let a = match pgsurge_command::parse::<LocalArgs>("pgsurge dist local", args) {
        Ok(a) => a,
        Err(status) => return status,
    };
    // The merged document's path is opened before any generator starts (the output
    // directory first: the document may be asked for inside it).
    if let Some(d) = &a.gen.out_dir {
        let _ = std::fs::create_dir_all(d);
    }
    let json_path = a.gen.json.clone();
    let json = match open_merged_json("pgsurge dist local", json_path.as_deref()) {
        Ok(j) => j,
        Err(code) => return code,
    };
    let plan = LocalPlan::from(a);
    if crate::replay::replay_options(&plan.bench).is_some() {
        let merged = run_local(&plan).and_then(|paths| crate::replay::merge_files(&paths));
        return crate::replay::present("pgsurge dist local", merged, json);
    }
    let merged = run_local(&plan).and_then(|paths| merge_files(&paths));
    present("pgsurge dist local", merged, json)
}
