//! What every `pgsurge dist LAUNCHER` shares, whatever starts the generators: the
//! options that describe the whole workload (total clients, rate, seed, merged JSON,
//! output directory), the refusal of bench options the launcher sets itself, the
//! `pgsurge bench` arguments of one generator, the common start instant, and
//! presenting the merge (report and/or JSON) or the failure. The launchers
//! ([`crate::local`], [`crate::ssh`]) only start processes and collect results.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pgsurge_results::RunResult;

use crate::merge::{merge, MergedRun};
use crate::merge_cli::{write_merged_json, write_merged_report};
use crate::split::{split, Share};
use crate::MergeError;

/// The workload options every launcher takes before `--`: totals that are split
/// across the generators, and where the results go.
#[derive(Debug, Clone, clap::Args)]
pub struct GeneratorOptions {
    /// Total clients, split across the generators (`-c` of each).
    #[arg(short = 'c', long = "clients", value_name = "NUM", default_value_t = 1)]
    pub clients: u32,
    /// Total target rate in tps, R/N per generator (`-R` of each).
    #[arg(short = 'R', long = "rate", value_name = "TPS")]
    pub rate: Option<f64>,
    /// Run seed; generator i uses the i-th SplitMix64 output of it (`--random-seed`).
    #[arg(long = "random-seed", value_name = "SEED")]
    pub seed: Option<u64>,
    /// Directory for each generator's JSON, stdout and stderr (default: a new one
    /// under the temporary directory).
    #[arg(long = "out-dir", value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Also write the merged result as JSON ("-" = stdout, instead of the report).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

impl GeneratorOptions {
    /// One share of the workload per generator.
    pub fn shares(&self, generators: u32) -> Result<Vec<Share>, MergeError> {
        split(self.clients, self.rate, self.seed, generators)
            .map_err(|e| MergeError::Launch(e.to_string()))
    }

    /// The output directory (`--out-dir`, else `pgsurge-dist-TAG-PID` under the
    /// temporary directory), created.
    pub fn out_dir(&self, tag: &str) -> Result<PathBuf, MergeError> {
        let dir = match &self.out_dir {
            Some(d) => d.clone(),
            None => std::env::temp_dir().join(format!("pgsurge-dist-{tag}{}", std::process::id())),
        };
        std::fs::create_dir_all(&dir)
            .map_err(|e| MergeError::Launch(format!("cannot create {}: {e}", dir.display())))?;
        Ok(dir)
    }
}

/// Options that launchers set per generator and so refuse among the bench options.
const OWNED: &[&str] = &[
    "--client",
    "--rate",
    "--random-seed",
    "--json",
    "--start-at",
    "--generator-",
];

/// Refuses bench options that the launcher sets itself (`-c`, `-R`, seeds, JSON,
/// start and identity), naming the launcher option to use instead.
pub fn check_bench_options(bench: &[OsString]) -> Result<(), MergeError> {
    for a in bench {
        let s = a.to_string_lossy();
        let short = !s.starts_with("--") && s.starts_with('-') && s.len() > 1;
        let owned = OWNED.iter().any(|o| s.starts_with(o))
            || (short && (s.starts_with("-c") || s.starts_with("-R")));
        if owned {
            return Err(MergeError::Launch(format!(
                "bench option \"{s}\" is set per generator: give clients as -c, the rate as -R, \
                 the seed as --random-seed and the merged JSON as --json to the launcher, before \"--\""
            )));
        }
    }
    Ok(())
}

/// The `pgsurge bench` arguments of the generator with `share`, one of `count`:
/// the bench options, then its clients, rate, seed, the common `--start-at`, its
/// identity and where its JSON goes (`-` = stdout).
pub fn generator_args(
    bench: &[OsString],
    share: &Share,
    count: u32,
    start_at: &str,
    name: &str,
    json: &OsStr,
) -> Vec<OsString> {
    let mut v: Vec<OsString> = vec!["bench".into()];
    v.extend(bench.iter().cloned());
    v.push(format!("--client={}", share.clients).into());
    if let Some(r) = share.rate_tps {
        v.push(format!("--rate={r}").into());
    }
    if let Some(s) = share.seed {
        v.push(format!("--random-seed={s}").into());
    }
    v.push(format!("--start-at={start_at}").into());
    v.push(format!("--generator-name={name}").into());
    v.push(format!("--generator-index={}", share.index).into());
    v.push(format!("--generator-count={count}").into());
    let mut j = OsString::from("--json=");
    j.push(json);
    v.push(j);
    v
}

/// A whole second at least `delay_s` from now (epoch seconds).
pub fn start_in(delay_s: u64) -> u64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    now.as_secs() + delay_s.max(1) + 1
}

/// The error for generators that failed: each failure named, and where their
/// outputs are.
pub fn failed(dir: &Path, failures: &[String]) -> MergeError {
    MergeError::Launch(format!(
        "generators failed (outputs in {}): {}",
        dir.display(),
        failures.join("; ")
    ))
}

/// Merges the generators' results, each labelled (a file, a host) for messages.
pub fn merge_labelled(results: Vec<(String, RunResult)>) -> Result<MergedRun, MergeError> {
    let (labels, results): (Vec<String>, Vec<RunResult>) = results.into_iter().unzip();
    merge(&results, &labels)
}

/// Presents the outcome of `command` (e.g. `pgsurge dist ssh`): the error, or the
/// merged report on stdout and the merged JSON where `--json` says (`-` = stdout,
/// instead of the report). Returns the exit code.
pub fn present(command: &str, merged: Result<MergedRun, MergeError>, json: Option<&Path>) -> i32 {
    let m = match merged {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{command}: error: {e}");
            return 1;
        }
    };
    let to_stdout = json.is_some_and(|p| p.as_os_str() == "-");
    if !to_stdout && write_merged_report(&m, &mut std::io::stdout().lock()).is_err() {
        return 1;
    }
    if let Some(p) = json {
        if let Err(e) = write_merged_json(&m, p) {
            eprintln!("{command}: error: could not write {}: {e}", p.display());
            return 1;
        }
    }
    0
}

/// Entry point of `pgsurge dist SUBCOMMAND …`.
pub fn dist_main(args: &[OsString]) -> i32 {
    match args
        .first()
        .map(|a| a.to_string_lossy().into_owned())
        .as_deref()
    {
        Some("local") => crate::local::local_main(&args[1..]),
        Some("ssh") => crate::ssh::ssh_main(&args[1..]),
        Some("wait") => crate::group::wait_main(&args[1..]),
        _ => {
            eprintln!(
                "usage: pgsurge dist local -n N [-c CLIENTS] [-R RATE] [--random-seed SEED] [--json FILE] -- BENCH OPTIONS\n       \
                 pgsurge dist ssh --hosts H1,H2,… [-c CLIENTS] [-R RATE] [--random-seed SEED] [--json FILE] -- BENCH OPTIONS\n       \
                 pgsurge dist wait --store LOCATION --group NAME -n N [--timeout D] [--server CONNINFO] [--json FILE]"
            );
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owned_bench_options_are_refused() {
        for bad in [
            "-c8",
            "-c",
            "-R100",
            "--client=3",
            "--json=x",
            "--start-at=1",
            "--generator-name=a",
        ] {
            let e = check_bench_options(&[OsString::from(bad)]).unwrap_err();
            assert!(e.to_string().contains(bad), "{e}");
        }
        check_bench_options(&["-S".into(), "-T".into(), "5".into(), "db".into()]).unwrap();
    }

    #[test]
    fn generator_args_carry_the_share_and_the_start() {
        let share = Share {
            index: 2,
            clients: 8,
            rate_tps: Some(250.0),
            seed: Some(9),
        };
        let v = generator_args(
            &["-S".into()],
            &share,
            4,
            "1795473000",
            "h",
            OsStr::new("-"),
        );
        let v: Vec<String> = v.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(
            v,
            [
                "bench",
                "-S",
                "--client=8",
                "--rate=250",
                "--random-seed=9",
                "--start-at=1795473000",
                "--generator-name=h",
                "--generator-index=2",
                "--generator-count=4",
                "--json=-"
            ]
        );
    }
}
