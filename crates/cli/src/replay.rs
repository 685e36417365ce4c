//! `pgsurge replay LOG…`: the command line → a [`ReplaySpec`], the engine's replay, and
//! the fidelity report on stdout (text) and in `--json`. Connection options are
//! pgbench's letters; what `-U` and `-d` give replaces every session's logged user
//! and database.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Parser};
use pgsurge_command::{EXIT_FAILURE, EXIT_OK, EXIT_USAGE};
use pgsurge_engine::StopFlag;
use pgsurge_replay::log::{LogFormat, DEFAULT_PREFIX};
use pgsurge_replay::report::ReplayReport;
use pgsurge_replay::{Order, Pacing, ReplaySpec, Share, Target};
use pgsurge_results::output::OutputFile;

#[derive(Parser, Debug)]
#[command(
    name = "pgsurge replay",
    about = "Replay PostgreSQL logs (stderr, csvlog, jsonlog) against a server, with a fidelity report",
    disable_help_flag = true,
    after_help = "The logs must be written with log_statement = 'all', log_connections = on, \
log_disconnections = on, log_min_error_statement = 'error' (or lower), lc_messages in English, \
and for stderr logs a log_line_prefix with the time, user, database and session id \
(default '%m|%u|%d|%c|'); log_min_duration_statement = 0 adds the logged latencies to the report. \
`pgsurge replay capture` sets these for a while. See docs/replay.md."
)]
struct Cli {
    /// Log files, in time order.
    #[arg(required = true, value_name = "LOG")]
    logs: Vec<PathBuf>,
    /// Server host or socket directory.
    #[arg(short = 'h', long)]
    host: Option<String>,
    /// Server port.
    #[arg(short = 'p', long)]
    port: Option<String>,
    /// Every session connects as this user [default: each session's logged user].
    #[arg(short = 'U', long)]
    username: Option<String>,
    /// Every session connects to this database (or a conninfo string/URI whose
    /// settings apply) [default: each session's logged database].
    #[arg(short = 'd', long)]
    dbname: Option<String>,
    /// Format of every log [default: found per file].
    #[arg(long, value_parser = ["stderr", "csvlog", "jsonlog"])]
    format: Option<String>,
    /// The log_line_prefix of stderr logs.
    #[arg(long, default_value = DEFAULT_PREFIX)]
    log_line_prefix: String,
    /// Count and skip lines that cannot be read instead of stopping at the first.
    #[arg(long)]
    skip_unreadable: bool,
    /// Speed factor: 2 replays twice as fast as logged.
    #[arg(long, default_value_t = 1.0)]
    speed: f64,
    /// Send each session's next statement as soon as its previous answer came.
    #[arg(long)]
    max: bool,
    /// Start statements in the log's order across sessions (default: each session
    /// keeps its own timing).
    #[arg(long)]
    strict_order: bool,
    /// Under --strict-order, seconds without progress that end the replay as stalled.
    #[arg(long, default_value_t = 10.0, value_name = "SECONDS")]
    stall_timeout: f64,
    /// Driver threads (sessions are dealt to them), whatever the machine's cores: a
    /// second costs client CPU per statement and is not steadily faster (docs/replay.md).
    #[arg(short = 'j', long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    jobs: u32,
    /// Read the logs through and report what a replay would send, connecting nowhere.
    #[arg(long)]
    check: bool,
    /// Write the report as JSON (schema: `pgsurge schema replay`); `-` for stdout.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Keep the replay as a run in a results store (SQLite file or postgresql:// URL)
    /// [default location: $PGSURGE_STORE or ./pgsurge-results.db].
    #[arg(long, value_name = "LOCATION", num_args = 0..=1, default_missing_value = "")]
    store: Option<String>,
    /// The set of the store the run goes to.
    #[arg(long, value_name = "NAME", requires = "store")]
    set: Option<String>,
    /// Play generator I's share of N (sessions n with n % N = I-1), for `dist`.
    #[arg(long, value_name = "I/N")]
    generator: Option<String>,
    /// Start the schedule at this Unix time in seconds (generators of one replay).
    #[arg(long, value_name = "UNIX_SECONDS")]
    start_at: Option<f64>,
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    help: Option<bool>,
}

/// The clap definition (for the top-level command tree).
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
        .subcommand(crate::replay_capture::command())
        .args_conflicts_with_subcommands(true)
}

/// `I/N` → the generator's share.
fn parse_share(text: &str) -> Result<Share, String> {
    let bad = || format!("--generator {text}: expected I/N with 1 ≤ I ≤ N");
    let (i, n) = text.split_once('/').ok_or_else(bad)?;
    let (i, n): (u32, u32) = (i.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
    if i == 0 || i > n {
        return Err(bad());
    }
    Ok(Share {
        index: i - 1,
        count: n,
    })
}

fn spec_of(cli: &Cli) -> Result<ReplaySpec, String> {
    let mut spec = ReplaySpec::new(cli.logs.clone());
    spec.format = match &cli.format {
        Some(f) => Some(f.parse::<LogFormat>()?),
        None => None,
    };
    spec.log_line_prefix = cli.log_line_prefix.clone();
    spec.skip_unreadable = cli.skip_unreadable;
    spec.pacing = if cli.max {
        Pacing::Max { speed: cli.speed }
    } else {
        Pacing::Speed(cli.speed)
    };
    if cli.strict_order {
        if !(cli.stall_timeout.is_finite() && cli.stall_timeout > 0.0) {
            return Err("--stall-timeout must be a number of seconds above 0".into());
        }
        spec.order = Order::Strict {
            stall_after: Duration::from_secs_f64(cli.stall_timeout),
        };
    }
    spec.threads = cli.jobs as usize;
    spec.target = Target {
        fixed: None,
        host: cli.host.clone(),
        port: cli.port.clone(),
        user: cli.username.clone(),
        dbname: cli.dbname.clone(),
    };
    spec.share = cli.generator.as_deref().map(parse_share).transpose()?;
    spec.start_at_epoch_us = cli.start_at.map(|s| (s * 1e6) as i64);
    spec.validate()?;
    Ok(spec)
}

/// Runs `pgsurge replay` with the arguments after `replay`.
pub fn main(args: &[OsString]) -> i32 {
    if args.first().is_some_and(|a| a == "capture") {
        return crate::replay_capture::main(&args[1..]);
    }
    let cli: Cli = match pgsurge_command::parse("pgsurge replay", args) {
        Ok(c) => c,
        Err(status) => return status,
    };
    let spec = match spec_of(&cli) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("pgsurge replay: error: {e}");
            return EXIT_USAGE;
        }
    };
    // The JSON output is opened first: a path that cannot be written fails before the
    // replay, not after it.
    let to_stdout = cli.json.as_deref() == Some(std::path::Path::new("-"));
    let json_out = match cli.json.as_deref().filter(|_| !to_stdout) {
        Some(p) => match OutputFile::create(p, 64 * 1024) {
            Ok(o) => Some(o),
            Err(e) => {
                eprintln!("pgsurge replay: error: {}: {e}", p.display());
                return EXIT_FAILURE;
            }
        },
        None => None,
    };
    let store = cli.store.as_deref().map(|l| (!l.is_empty()).then_some(l));
    if let (Some(location), false) = (store, cli.check) {
        if let Err(e) = pgsurge_records::adhoc::check_store(location) {
            eprintln!("pgsurge replay: error: --store: {e}");
            return EXIT_FAILURE;
        }
    }
    let replayed = if cli.check {
        pgsurge_replay::check::check(&spec)
            .map_err(|e| format!("{e} (--skip-unreadable skips such lines and counts them)"))
    } else {
        let stop = StopFlag::new();
        let _watcher = pgsurge_engine::stop::SignalWatcher::install(stop.clone()).ok();
        pgsurge_engine::replay::replay(&spec, &stop).map_err(|e| e.to_string())
    };
    let report = match replayed {
        Ok(r) => r,
        Err(e) => {
            eprintln!("pgsurge replay: error: {e}");
            return EXIT_FAILURE;
        }
    };
    let status = write_outputs(&report, json_out, to_stdout);
    if cli.check || status != EXIT_OK {
        return status;
    }
    if let Some(location) = store {
        let target = cli.dbname.as_deref().unwrap_or("the logged databases");
        let line = command_line(args);
        match pgsurge_records::replay_store::store_replay(
            location,
            cli.set.as_deref(),
            target,
            &line,
            &report,
        ) {
            Ok(msg) => eprintln!("{msg}"),
            Err(e) => {
                eprintln!("pgsurge replay: error: --store: {e}");
                return EXIT_FAILURE;
            }
        }
    }
    let r = &report.replay;
    if r.sessions == 0 && r.failed_connections > 0 {
        eprintln!("pgsurge replay: error: no session could connect");
        return EXIT_FAILURE;
    }
    if let Some(why) = &report.ended_early {
        eprintln!("pgsurge replay: error: {why}");
        return EXIT_FAILURE;
    }
    status
}

/// The command as given, for the store (passwords are masked there).
fn command_line(args: &[OsString]) -> String {
    let words: Vec<String> = std::iter::once("pgsurge replay".to_string())
        .chain(
            args.iter()
                .map(|a| pgsurge_command::shell_word(&a.to_string_lossy())),
        )
        .collect();
    words.join(" ")
}

/// Prints the table (unless the JSON goes to stdout) and writes the JSON.
fn write_outputs(report: &ReplayReport, json_out: Option<OutputFile>, to_stdout: bool) -> i32 {
    let text = if to_stdout {
        report.to_json()
    } else {
        report.to_text()
    };
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(text.as_bytes()).and_then(|()| o.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("pgsurge replay: error: writing to stdout: {e}");
            return EXIT_FAILURE;
        }
    }
    if let Some(mut out) = json_out {
        let path = out.path().display().to_string();
        let written = out
            .write_all(report.to_json().as_bytes())
            .and_then(|()| out.commit());
        if let Err(e) = written {
            eprintln!("pgsurge replay: error: {path}: {e}");
            return EXIT_FAILURE;
        }
    }
    EXIT_OK
}
