//! What every `pgsurge dist LAUNCHER` shares, whatever starts the generators: the
//! whole workload ([`Workload`]: total clients, rate, seed, output directory, deadline;
//! the command line's [`GeneratorOptions`] add the merged JSON), the refusal of bench
//! options the launcher sets itself, the `pgsurge bench` arguments of one generator,
//! the common start instant, and presenting the merge (report and/or JSON) or the
//! failure. The launchers ([`crate::local`], [`crate::ssh`]) only start processes and
//! collect results.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pgsurge_results::RunResult;

use crate::merge::{merge, MergedRun};
use crate::merge_cli::{write_merged_report, MergedJson};
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
    /// Seconds after the common start by which every generator must have ended; one
    /// still running then is stopped (SIGTERM, then SIGKILL 5 s later) and counts as
    /// failed [default: the bench options' -T plus 120 s; none with -t]
    #[arg(long = "deadline", value_name = "SECS")]
    pub deadline: Option<u64>,
}

/// The whole workload of a launch, as plain values: the totals split across the
/// generators, where their outputs go, and by when they must have ended. What
/// [`crate::local::run_local`] and [`crate::ssh::run_ssh`] take, whoever built it (the
/// `dist` command line through [`GeneratorOptions::workload`], or a campaign).
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// Total clients, split across the generators.
    pub clients: u32,
    /// Total target rate in tps, split across the generators.
    pub rate: Option<f64>,
    /// The run's seed; each generator gets its own from it.
    pub seed: Option<u64>,
    /// Directory for each generator's outputs (none: a new one under the temporary
    /// directory).
    pub out_dir: Option<PathBuf>,
    /// Seconds after the common start by which every generator must have ended (none:
    /// the bench options' `-T` plus [`DEADLINE_MARGIN_S`], or no deadline with `-t`).
    pub deadline: Option<u64>,
}

impl GeneratorOptions {
    /// The workload these options describe (the merged JSON is the command's own).
    pub fn workload(&self) -> Workload {
        Workload {
            clients: self.clients,
            rate: self.rate,
            seed: self.seed,
            out_dir: self.out_dir.clone(),
            deadline: self.deadline,
        }
    }
}

/// What a generator may take beyond its `-T` before it counts as hung: connecting its
/// clients, finishing the transactions in flight, writing its result.
pub const DEADLINE_MARGIN_S: u64 = 120;

/// Time between SIGTERM and SIGKILL for a generator past its deadline (a prompt stop
/// reports in about a second).
const KILL_GRACE: Duration = Duration::from_secs(5);

/// The `-T` of pgbench options (`-T 60`, `-T60`, `--time=60`, `--time 60` and its
/// abbreviations down to `--ti`), if given; the last one counts, as for getopt.
pub fn bench_duration(bench: &[OsString]) -> Option<u64> {
    let mut found = None;
    let mut it = bench.iter().map(|a| a.to_string_lossy());
    while let Some(a) = it.next() {
        let value = if a == "-T" {
            it.next().map(|v| v.into_owned())
        } else if let Some(v) = a.strip_prefix("-T") {
            Some(v.to_string())
        } else if let Some(long) = a.strip_prefix("--") {
            let (name, v) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            if name.len() >= 2 && "time".starts_with(name) {
                v.or_else(|| it.next().map(|v| v.into_owned()))
            } else {
                None
            }
        } else {
            None
        };
        if let Some(v) = value {
            found = v.trim().parse::<u64>().ok();
        }
    }
    found
}

/// How a wait for a generator ended.
#[derive(Debug)]
pub enum Ended {
    /// It exited (or was killed by a signal) by itself.
    Exited(std::process::ExitStatus),
    /// It was still running at its deadline and was stopped.
    PastDeadline,
}

/// Waits for `child` until it exits or `deadline` passes; past it, stops the child
/// (SIGTERM, then SIGKILL after a grace period) and reaps it.
pub fn wait_until(
    child: &mut std::process::Child,
    deadline: Option<SystemTime>,
) -> std::io::Result<Ended> {
    let Some(deadline) = deadline else {
        return child.wait().map(Ended::Exited);
    };
    loop {
        if let Some(st) = child.try_wait()? {
            return Ok(Ended::Exited(st));
        }
        if SystemTime::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: a signal to our own child, which has not been reaped yet (so the pid
        // is still its).
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    let grace = std::time::Instant::now() + KILL_GRACE;
    while std::time::Instant::now() < grace {
        if child.try_wait()?.is_some() {
            return Ok(Ended::PastDeadline);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    child.wait()?;
    Ok(Ended::PastDeadline)
}

/// The failure text of a generator stopped at its deadline.
pub fn past_deadline(name: &str, deadline: Option<SystemTime>, start_at: u64) -> String {
    let secs = deadline
        .and_then(|d| d.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs().saturating_sub(start_at));
    format!(
        "{name} was still running {secs} s after the common start (its deadline) and was stopped"
    )
}

impl Workload {
    /// When every generator started at `start_at` (Unix seconds) must have ended:
    /// `--deadline` after the start, else the bench options' `-T` plus
    /// [`DEADLINE_MARGIN_S`]; `None` for a run without either (`-t`).
    pub fn deadline(&self, start_at: u64, bench: &[OsString]) -> Option<SystemTime> {
        let after = self
            .deadline
            .or_else(|| bench_duration(bench).map(|t| t + DEADLINE_MARGIN_S))?;
        Some(UNIX_EPOCH + Duration::from_secs(start_at.saturating_add(after)))
    }

    /// One share of the workload per generator.
    pub fn shares(&self, generators: u32) -> Result<Vec<Share>, MergeError> {
        split(self.clients, self.rate, self.seed, generators)
            .map_err(|e| MergeError::Launch(e.to_string()))
    }

    /// The output directory (`--out-dir`, else `pgsurge-generators-TAG-PID` under the
    /// temporary directory), created.
    pub fn out_dir(&self, tag: &str) -> Result<PathBuf, MergeError> {
        let dir = match &self.out_dir {
            Some(d) => d.clone(),
            None => {
                std::env::temp_dir().join(format!("pgsurge-generators-{tag}{}", std::process::id()))
            }
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
pub fn present(
    command: &str,
    merged: Result<MergedRun, MergeError>,
    json: Option<(&Path, MergedJson)>,
) -> i32 {
    let m = match merged {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{command}: error: {e}");
            return 1;
        }
    };
    let to_stdout = matches!(json, Some((_, MergedJson::Stdout)));
    if !to_stdout && write_merged_report(&m, &mut std::io::stdout().lock()).is_err() {
        return 1;
    }
    if let Some((p, out)) = json {
        if let Err(e) = out.write(&m) {
            eprintln!("{command}: error: could not write {}: {e}", p.display());
            return 1;
        }
    }
    0
}

/// Opens a launcher's `--json` before any generator starts: `Err` is the exit code
/// after the message.
pub fn open_merged_json<'p>(
    command: &str,
    json: Option<&'p Path>,
) -> Result<Option<(&'p Path, MergedJson)>, i32> {
    match json {
        None => Ok(None),
        Some(p) => match MergedJson::open(p) {
            Ok(out) => Ok(Some((p, out))),
            Err(e) => {
                eprintln!("{command}: error: {e}");
                Err(1)
            }
        },
    }
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
                 pgsurge dist local -n N [--json FILE] -- replay [REPLAY OPTIONS] LOG…\n       \
                 pgsurge dist ssh --hosts H1,H2,… [-c CLIENTS] [-R RATE] [--random-seed SEED] [--json FILE] -- BENCH OPTIONS\n       \
                 pgsurge dist wait --store LOCATION --group NAME -n N [--timeout D] [--server CONNINFO] [--json FILE]"
            );
            pgsurge_command::EXIT_USAGE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os_args(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_duration_is_read_in_every_getopt_form() {
        for (v, want) in [
            (&["-T", "60"][..], Some(60)),
            (&["-T60"][..], Some(60)),
            (&["--time=45"][..], Some(45)),
            (&["--time", "45"][..], Some(45)),
            (&["--ti=7", "-S"][..], Some(7)),
            (&["-T", "5", "-T", "9"][..], Some(9)),
            (&["-t", "1000"][..], None),
            (&["--transactions=5"][..], None),
        ] {
            assert_eq!(bench_duration(&os_args(v)), want, "{v:?}");
        }
    }

    #[test]
    fn the_deadline_counts_from_the_common_start() {
        let mut g = Workload {
            clients: 1,
            rate: None,
            seed: None,
            out_dir: None,
            deadline: None,
        };
        let at = |s: u64| Some(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(
            g.deadline(1000, &os_args(&["-T", "60"])),
            at(1000 + 60 + DEADLINE_MARGIN_S)
        );
        assert_eq!(g.deadline(1000, &os_args(&["-t", "5"])), None);
        g.deadline = Some(30);
        assert_eq!(g.deadline(1000, &os_args(&["-t", "5"])), at(1030));
    }

    #[test]
    fn a_child_past_its_deadline_is_stopped() {
        let mut child = std::process::Command::new("sleep")
            .arg("600")
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        let ended = wait_until(
            &mut child,
            Some(SystemTime::now() + Duration::from_millis(200)),
        );
        assert!(matches!(ended, Ok(Ended::PastDeadline)), "{ended:?}");
        assert!(started.elapsed() < Duration::from_secs(10));
        let mut quick = std::process::Command::new("true").spawn().unwrap();
        let ended = wait_until(
            &mut quick,
            Some(SystemTime::now() + Duration::from_secs(60)),
        );
        assert!(
            matches!(ended, Ok(Ended::Exited(st)) if st.success()),
            "{ended:?}"
        );
    }

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
