//! `pgsurge dist local -n N [options] -- BENCH OPTIONS…`: runs N `pgsurge bench`
//! generator processes on this machine with one `--start-at`, each with its share
//! of the clients, rate and seed ([`crate::split`]), then merges their `--json`
//! results. For tests, and for single-host multi-process runs (one process per
//! core group). Clients, rate, seed and JSON output belong to this command, not to
//! the bench options, because they are split or set per generator.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::Parser;

use crate::merge_cli::{merge_files, write_merged_json, write_merged_report};
use crate::split::split;
use crate::MergeError;

/// `pgsurge dist local` options.
#[derive(Debug, Parser)]
#[command(
    name = "pgsurge dist local",
    about = "Run N pgsurge bench generators on this machine with a common start, then merge"
)]
pub struct LocalArgs {
    /// Number of generator processes.
    #[arg(short = 'n', long = "generators", value_name = "N")]
    pub generators: u32,
    /// Total clients, split across the generators (`-c` of each).
    #[arg(short = 'c', long = "clients", value_name = "NUM", default_value_t = 1)]
    pub clients: u32,
    /// Total target rate in tps, R/N per generator (`-R` of each).
    #[arg(short = 'R', long = "rate", value_name = "TPS")]
    pub rate: Option<f64>,
    /// Run seed; generator i uses the i-th SplitMix64 output of it (`--random-seed`).
    #[arg(long = "random-seed", value_name = "SEED")]
    pub seed: Option<u64>,
    /// Seconds between now and the common start (time to connect).
    #[arg(long = "start-in", value_name = "SECS", default_value_t = 3)]
    pub start_in: u64,
    /// Directory for each generator's JSON, stdout and stderr (default: a new one
    /// under the temporary directory).
    #[arg(long = "out-dir", value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Also write the merged result as JSON ("-" = stdout, instead of the report).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// The pgsurge binary generators run (default: this one).
    #[arg(long = "pgsurge", value_name = "PATH")]
    pub pgsurge: Option<PathBuf>,
    /// Options for each `pgsurge bench` (after `--`).
    #[arg(last = true, value_name = "BENCH OPTIONS")]
    pub bench: Vec<OsString>,
}

/// Options that `dist local` sets per generator and so refuses among the bench options.
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

/// The `pgsurge bench` arguments of generator `index` of `count`.
pub fn generator_args(
    bench: &[OsString],
    share: &crate::Share,
    count: u32,
    start_at_unix_s: u64,
    name: &str,
    json: &Path,
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
    v.push(format!("--start-at={start_at_unix_s}").into());
    v.push(format!("--generator-name={name}").into());
    v.push(format!("--generator-index={}", share.index).into());
    v.push(format!("--generator-count={count}").into());
    let mut j = OsString::from("--json=");
    j.push(json.as_os_str());
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

/// Runs the generators, waits for all, and returns their JSON result paths.
pub fn run_local(a: &LocalArgs) -> Result<Vec<PathBuf>, MergeError> {
    check_bench_options(&a.bench)?;
    let shares = split(a.clients, a.rate, a.seed, a.generators)
        .map_err(|e| MergeError::Launch(e.to_string()))?;
    let dir = match &a.out_dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("pgsurge-dist-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| MergeError::Launch(format!("cannot create {}: {e}", dir.display())))?;
    let exe = match &a.pgsurge {
        Some(p) => p.clone(),
        None => std::env::current_exe()
            .map_err(|e| MergeError::Launch(format!("cannot find the pgsurge binary: {e}")))?,
    };
    let at = start_in(a.start_in);
    let mut children = Vec::new();
    for s in &shares {
        let name = format!("local-{}", s.index);
        let json = dir.join(format!("{name}.json"));
        let _ = std::fs::remove_file(&json);
        let open = |ext: &str| {
            let p = dir.join(format!("{name}.{ext}"));
            std::fs::File::create(&p)
                .map_err(|e| MergeError::Launch(format!("cannot create {}: {e}", p.display())))
        };
        let child = Command::new(&exe)
            .args(generator_args(&a.bench, s, a.generators, at, &name, &json))
            .stdin(Stdio::null())
            .stdout(open("out")?)
            .stderr(open("err")?)
            .spawn()
            .map_err(|e| MergeError::Launch(format!("cannot run {}: {e}", exe.display())))?;
        children.push((name, json, child));
    }
    let mut failed = Vec::new();
    let mut paths = Vec::new();
    for (name, json, mut child) in children {
        match child.wait() {
            Ok(st) if st.success() => paths.push(json),
            Ok(st) => {
                let err =
                    std::fs::read_to_string(dir.join(format!("{name}.err"))).unwrap_or_default();
                let last = err
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("");
                failed.push(format!("{name} exited with {st}: {last}"));
            }
            Err(e) => failed.push(format!("{name}: {e}")),
        }
    }
    if !failed.is_empty() {
        return Err(MergeError::Launch(format!(
            "generators failed (outputs in {}): {}",
            dir.display(),
            failed.join("; ")
        )));
    }
    Ok(paths)
}

/// Entry point of `pgsurge dist local ARGS`.
pub fn local_main(args: &[OsString]) -> i32 {
    let argv = std::iter::once(OsString::from("pgsurge dist local")).chain(args.iter().cloned());
    let a = match LocalArgs::try_parse_from(argv) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 1 } else { 0 };
        }
    };
    let merged = run_local(&a).and_then(|paths| merge_files(&paths));
    let m = match merged {
        Ok(m) => m,
        Err(e) => {
            eprintln!("pgsurge dist local: error: {e}");
            return 1;
        }
    };
    let to_stdout = a.json.as_deref().is_some_and(|p| p.as_os_str() == "-");
    if !to_stdout && write_merged_report(&m, &mut std::io::stdout().lock()).is_err() {
        return 1;
    }
    if let Some(p) = &a.json {
        if let Err(e) = write_merged_json(&m, p) {
            eprintln!(
                "pgsurge dist local: error: could not write {}: {e}",
                p.display()
            );
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
        Some("local") => local_main(&args[1..]),
        Some("wait") => crate::group::wait_main(&args[1..]),
        _ => {
            eprintln!("usage: pgsurge dist local -n N [-c CLIENTS] [-R RATE] [--random-seed SEED] [--json FILE] -- BENCH OPTIONS");
            eprintln!("       pgsurge dist wait --store LOCATION --group NAME -n N [--timeout D] [--server CONNINFO] [--json FILE]");
            1
        }
    }
}
