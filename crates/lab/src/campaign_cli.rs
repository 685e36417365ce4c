//! `pgsurge campaign run FILE.toml [--store S] [--new] [--retry-failed] [--quiet]`
//! and `pgsurge campaign plan FILE.toml` (print the tests in order without running).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use pgsurge_engine::StopFlag;
use pgsurge_store::Store;

use crate::runner::{run_campaign, terminal_safe, RunOptions};
use crate::spec::Campaign;
use pgsurge_wire::redact::redact;

#[derive(Parser, Debug)]
#[command(
    name = "pgsurge campaign",
    about = "Run a benchmark campaign (a matrix of tests) into the results store"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run a campaign, or resume it: tests already stored are skipped.
    Run {
        /// The campaign file (TOML; see examples/ in the repository).
        file: PathBuf,
        /// Results store: a SQLite file or a postgresql:// URL
        /// [default: $PGSURGE_STORE or ./pgsurge-results.db].
        #[arg(long)]
        store: Option<String>,
        /// Start a new set even if this campaign already has one.
        #[arg(long)]
        new: bool,
        /// Run again the tests stored as failed.
        #[arg(long)]
        retry_failed: bool,
        /// No progress bar, no per-test lines.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Print the tests of a campaign in the order they would run.
    Plan {
        /// The campaign file.
        file: PathBuf,
    },
}

/// Entry point of `pgsurge campaign`.
pub fn main(args: &[OsString]) -> i32 {
    let argv = std::iter::once(OsString::from("pgsurge campaign")).chain(args.iter().cloned());
    let cli = match Cli::try_parse_from(argv) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match cli.cmd {
        Cmd::Plan { file } => match Campaign::load(&file)
            .map_err(|e| e.to_string())
            .and_then(|c| crate::matrix::expand(&c))
        {
            Ok(m) => {
                for t in &m.tests {
                    println!("{:>4} {}", t.seq, terminal_safe(&t.key));
                }
                println!("{} tests", m.tests.len());
                0
            }
            Err(e) => {
                eprintln!("pgsurge: error: {}", terminal_safe(&redact(&e)));
                1
            }
        },
        Cmd::Run {
            file,
            store,
            new,
            retry_failed,
            quiet,
        } => {
            let campaign = match Campaign::load(&file) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("pgsurge: error: {}", terminal_safe(&redact(&e.to_string())));
                    return 1;
                }
            };
            let location = store.unwrap_or_else(pgsurge_store::default_location);
            let mut store = match Store::open(&location) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("pgsurge: error: {}", redact(&e.to_string()));
                    return 1;
                }
            };
            let stop = StopFlag::new();
            let _watcher = pgsurge_engine::stop::SignalWatcher::install(stop.clone()).ok();
            let opts = RunOptions {
                new_set: new,
                retry_failed,
                quiet,
                kind: None,
            };
            match run_campaign(&campaign, &mut store, &opts, &stop) {
                Ok(o) => {
                    if !quiet {
                        eprintln!(
                            "set {}: {} tests planned, {} already stored, {} run now ({} failed), {} remaining; store {}",
                            o.set_id, o.planned, o.already_stored, o.ok + o.failed, o.failed, o.remaining, store.location()
                        );
                        for w in &o.warnings {
                            eprintln!("warning: {}", terminal_safe(&redact(w)));
                        }
                    }
                    if o.remaining > 0 {
                        eprintln!("campaign interrupted: run the same command again to resume");
                        130
                    } else if o.failed > 0 {
                        3
                    } else {
                        0
                    }
                }
                Err(e) => {
                    eprintln!("pgsurge: error: {}", terminal_safe(&redact(&e.to_string())));
                    1
                }
            }
        }
    }
}
