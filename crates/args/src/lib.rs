//! pgbench's command line: getopt_long parsing, options, post-parse checks, help — and
//! `pgsurge bench` itself ([`bench_main`]), which turns the options into the engine's
//! `RunSpec` and runs it. This crate depends on the engine; the engine and campaigns
//! never depend on it.
//!
//! [`parse`] turns argv (without the program name) into an [`Outcome`], printing exactly
//! what pgbench 18 prints on the way (errors, `-b list`, `--show-script`, `--help`,
//! `--version`, `setting random seed to N`). It does no network I/O; it reads script
//! files (`-f`) and stdin (`-f -`) because pgbench parses scripts while reading options.
//! It may raise the soft `RLIMIT_NOFILE` limit for `-c`, as pgbench 18 does.
//!
//! Choices where pgbench leaves room:
//! * pgsurge's own long options (`--percentiles[=LIST]`, `--json=FILE`,
//!   `--hdr-log=FILE`) are matched only when no pgbench option matches the argument, so
//!   pgbench's abbreviations (`--j` = `--jobs`, `--h` = `--host`) and its ambiguity
//!   messages stay exactly pgbench's.
//! * `--version` prints `pgbench (PostgreSQL) 18.0 (pgsurge X.Y.Z)`: see
//!   [`version_line`] for why.
//! * Messages always name the program `pgbench`, whatever argv\[0\] was, including
//!   glibc's getopt complaints (which use the raw argv\[0\] in real pgbench).
//! * Module map: `getopt` (glibc model), `table` (the option tables), `parser` (each
//!   option's immediate effect), `checks` (post-parse checks, mode split), `numeric`
//!   (strtol/atoi/atof/sscanf), `scripts` (bridge to `pgsurge-script`), `seed`,
//!   `rlimit`, `user`, `diag` (log line format and colours), `help`, `options` (the
//!   parsed options), `bench` (the `bench` program), [`generator`] (the options of one
//!   generator of a distributed run).
#![warn(missing_docs)]

mod bench;
mod checks;
mod diag;
pub mod generator;
mod getopt;
mod help;
mod numeric;
mod options;
mod parser;
mod rlimit;
mod scripts;
mod seed;
mod table;
mod user;

use std::ffi::OsString;
use std::io::Write;

pub use bench::{
    bench_main, bench_main_with, prepare, StoreCheck, StoreHooks, StoreRequest, StoreRun,
    CLIENT_VERSION, CLIENT_VERSION_NUM,
};
pub use options::{
    BenchOptions, Connection, Extensions, InitOptions, PartitionMethod, QueryMode, RunLimit,
    Script, ScriptEntry, ScriptOrigin, WorkloadInit, DEFAULT_PERCENTILES,
};
pub use seed::{RandomSeed, SeedSource};

/// What the command line asks for.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // built once per process; boxing would only add noise
pub enum Outcome {
    /// Stop now with this exit code: `--help`, `--version`, `-b list`, `--show-script`
    /// (0), or an error that has already been printed to `err` (1).
    Exit(i32),
    /// `-i`: initialize.
    Init(InitOptions),
    /// Run a benchmark.
    Bench(BenchOptions),
}

/// Parses a pgbench command line.
///
/// * `argv`: the arguments without the program name.
/// * `env`: environment lookup (`PGBENCH_RANDOM_SEED`, `PGDATABASE`, `PGUSER`,
///   `POSIXLY_CORRECT`).
/// * `out`/`err`: where pgbench would print to stdout/stderr.
///
/// `-f -` reads the process's stdin.
pub fn parse(
    argv: &[OsString],
    env: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Outcome {
    let stdin = std::io::stdin();
    let mut stdin = stdin.lock();
    parse_with_stdin(argv, env, &mut stdin, out, err)
}

/// [`parse`] with an explicit stdin for `-f -` (for tests and embedding).
pub fn parse_with_stdin(
    argv: &[OsString],
    env: &dyn Fn(&str) -> Option<String>,
    stdin: &mut dyn std::io::Read,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Outcome {
    let mut ctx = parser::Ctx {
        env,
        stdin,
        out,
        diag: diag::Diag::new(
            err,
            diag::LogColors::from_env(env, std::io::IsTerminal::is_terminal(&std::io::stderr())),
        ),
    };
    parser::parse_with(argv, &mut ctx)
}

pub use diag::{Level, LogColors};
pub use help::{help_text, version_line};
