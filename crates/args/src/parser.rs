//! pgbench's `main()` up to the point where it connects: reading each option in argv
//! order with its immediate effects (script parsing, seeding, range checks, the
//! open-files check), then the post-parse checks in pgbench's order. Every message and
//! exit code is pgbench 18's. The result is an [`Outcome`].

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use crate::diag::{strerror, Diag};
use crate::getopt::{Getopt, Item};
use crate::numeric::{atof, atoi, option_parse_int, parse_weight, IntOptionError, WeightError};
use crate::options::*;
use crate::scripts::{self, find_builtin};
use crate::seed::{self, RandomSeed};
use crate::table::{Opt, EXTENSIONS, LONGS, SHORTS};
use crate::{help, rlimit, Outcome};

/// pgbench's `MAX_SCRIPTS`.
const MAX_SCRIPTS: usize = 128;
/// pgbench's `ALL_INIT_STEPS`.
const ALL_INIT_STEPS: &str = "dtgGvpf";

/// An exit code after the message has been printed.
pub(crate) struct Exit(pub(crate) i32);

pub(crate) type Step<T> = Result<T, Exit>;

/// Everything read from the options, before the post-parse checks.
pub(crate) struct Raw {
    pub(crate) is_init_mode: bool,
    pub(crate) benchmarking_option_set: bool,
    pub(crate) initialization_option_set: bool,
    pub(crate) internal_script_used: bool,
    pub(crate) init_steps: Option<String>,
    pub(crate) foreign_keys: bool,
    pub(crate) no_vacuum: bool,
    pub(crate) vacuum_all: bool,
    pub(crate) scale: u32,
    pub(crate) scale_given: bool,
    pub(crate) clients: u32,
    pub(crate) threads: u32,
    pub(crate) transactions: u32,
    pub(crate) duration: u32,
    pub(crate) connect: bool,
    pub(crate) dbname: Option<String>,
    pub(crate) host: Option<String>,
    pub(crate) port: Option<String>,
    pub(crate) user: Option<String>,
    pub(crate) use_log: bool,
    pub(crate) log_prefix: Option<String>,
    pub(crate) latency_limit_us: i64,
    pub(crate) query_mode: QueryMode,
    pub(crate) progress: u32,
    pub(crate) progress_timestamp: bool,
    pub(crate) quiet: bool,
    pub(crate) report_per_command: bool,
    pub(crate) rate: Option<f64>,
    pub(crate) throttle_delay: f64,
    pub(crate) fillfactor: u32,
    pub(crate) unlogged_tables: bool,
    /// `--init-jobs` (pgsurge extension): connections for the heavy `-i` steps.
    pub(crate) init_jobs: u32,
    /// Whether `--hdr-log-unit` was given (it needs `--hdr-log`).
    pub(crate) hdr_log_unit_given: bool,
    pub(crate) tablespace: Option<String>,
    pub(crate) index_tablespace: Option<String>,
    pub(crate) sampling_rate: f64,
    pub(crate) aggregate_interval: u32,
    pub(crate) partitions: u32,
    pub(crate) partition_method: PartitionMethod,
    pub(crate) failures_detailed: bool,
    pub(crate) max_tries: u32,
    pub(crate) verbose_errors: bool,
    pub(crate) exit_on_abort: bool,
    pub(crate) debug_level: u32,
    pub(crate) variables: Vec<(String, String)>,
    pub(crate) scripts: Vec<ScriptEntry>,
    pub(crate) seed: RandomSeed,
    pub(crate) extensions: Extensions,
    pub(crate) options_given: Vec<&'static str>,
    /// Whether a benchmarking option other than `--random-seed` and `-D` was given
    /// (`-i --workload` takes those two: the loader's seed and parameters).
    pub(crate) benchmarking_besides_seed: bool,
}

impl Raw {
    fn new(seed: RandomSeed) -> Raw {
        Raw {
            is_init_mode: false,
            benchmarking_option_set: false,
            initialization_option_set: false,
            internal_script_used: false,
            init_steps: None,
            foreign_keys: false,
            no_vacuum: false,
            vacuum_all: false,
            scale: 1,
            scale_given: false,
            clients: 1,
            threads: 1,
            transactions: 0,
            duration: 0,
            connect: false,
            dbname: None,
            host: None,
            port: None,
            user: None,
            use_log: false,
            log_prefix: None,
            latency_limit_us: 0,
            query_mode: QueryMode::Simple,
            progress: 0,
            progress_timestamp: false,
            quiet: false,
            report_per_command: false,
            rate: None,
            throttle_delay: 0.0,
            fillfactor: 100,
            unlogged_tables: false,
            init_jobs: 1,
            hdr_log_unit_given: false,
            tablespace: None,
            index_tablespace: None,
            sampling_rate: 0.0,
            aggregate_interval: 0,
            partitions: 0,
            partition_method: PartitionMethod::None,
            failures_detailed: false,
            max_tries: 1,
            verbose_errors: false,
            exit_on_abort: false,
            debug_level: 0,
            variables: Vec::new(),
            scripts: Vec::new(),
            seed,
            extensions: Extensions::default(),
            options_given: Vec::new(),
            benchmarking_besides_seed: false,
        }
    }
}

/// The environment, stdin and output sinks `parse` works with.
pub struct Ctx<'a> {
    pub env: &'a dyn Fn(&str) -> Option<String>,
    pub stdin: &'a mut dyn Read,
    pub out: &'a mut dyn Write,
    pub diag: Diag<'a>,
}

pub(crate) fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The largest `--init-jobs`: each job is one more connection to the server.
const MAX_INIT_JOBS: i32 = 1000;

/// `--start-at` and `--generator-*` (pgsurge extensions, see `generator.rs`).
fn generator_option(ctx: &mut Ctx<'_>, raw: &mut Raw, opt: Opt, arg: &[u8]) -> Step<()> {
    let g = &mut raw.extensions.generator;
    match opt {
        Opt::StartAt => {
            let now = crate::generator::now_unix_us();
            g.start_at_unix_us = Some(
                crate::generator::parse_start_at(&lossy(arg), now)
                    .map_err(|e| fatal(ctx, e.to_string()))?,
            );
        }
        Opt::GeneratorName => {
            if arg.is_empty() {
                return Err(fatal(ctx, "--generator-name must not be empty"));
            }
            g.name = Some(lossy(arg));
        }
        Opt::GeneratorIndex => {
            g.index = Some(int_option(ctx, arg, "--generator-index", 0, i32::MAX)?);
        }
        Opt::GeneratorSplit => raw.extensions.generator_split = true,
        _ => g.count = Some(int_option(ctx, arg, "--generator-count", 1, i32::MAX)?),
    }
    Ok(())
}

/// Entry point behind [`crate::parse`].
pub fn parse_with(argv: &[OsString], ctx: &mut Ctx<'_>) -> Outcome {
    let args: Vec<Vec<u8>> = argv.iter().map(|a| a.as_bytes().to_vec()).collect();
    // Only the first argument is looked at for these, before getopt.
    if let Some(first) = args.first() {
        if first.as_slice() == b"--help" || first.as_slice() == b"-?" {
            let _ = ctx.out.write_all(help::help_text().as_bytes());
            return Outcome::Exit(0);
        }
        if first.as_slice() == b"--version" || first.as_slice() == b"-V" {
            let _ = ctx.out.write_all(help::version_line().as_bytes());
            return Outcome::Exit(0);
        }
    }
    match run(&args, ctx) {
        Ok(outcome) => outcome,
        Err(Exit(code)) => Outcome::Exit(code),
    }
}

/// pgbench's `set_random_seed`: `None` means the default (`time`, silently).
fn set_random_seed(value: Option<&[u8]>, ctx: &mut Ctx<'_>) -> Result<RandomSeed, ()> {
    match seed::resolve(value) {
        Ok(seed) => {
            if seed.explicit {
                ctx.diag
                    .info(format!("setting random seed to {}", seed.value));
            }
            Ok(seed)
        }
        Err(seed::SeedFailure::Unrecognized) => {
            let shown = lossy(value.unwrap_or_default());
            ctx.diag
                .error(format!("unrecognized random seed option \"{shown}\""));
            ctx.diag
                .detail("Expecting an unsigned integer, \"time\" or \"rand\".");
            Err(())
        }
        Err(seed::SeedFailure::NoRandom) => {
            ctx.diag.error("could not generate random seed");
            Err(())
        }
    }
}

pub(crate) fn fatal(ctx: &mut Ctx<'_>, msg: impl AsRef<[u8]>) -> Exit {
    ctx.diag.error(msg);
    Exit(1)
}

fn int_option(ctx: &mut Ctx<'_>, arg: &[u8], name: &str, min: i32, max: i32) -> Step<u32> {
    match option_parse_int(arg, min, max) {
        // min is never negative for pgbench's integer options
        Ok(v) => Ok(v.unsigned_abs()),
        Err(IntOptionError::Invalid) => Err(fatal(
            ctx,
            [
                b"invalid value \"".as_slice(),
                arg,
                format!("\" for option {name}").as_bytes(),
            ]
            .concat(),
        )),
        Err(IntOptionError::Range) => {
            Err(fatal(ctx, format!("{name} must be in range {min}..{max}")))
        }
    }
}

/// pgbench's open-files check for `clients` clients, with its messages.
pub(crate) fn ensure_open_files(ctx: &mut Ctx<'_>, clients: u32) -> Step<()> {
    let n = i32::try_from(clients).unwrap_or(i32::MAX);
    if let Err(e) = rlimit::ensure_open_files(n) {
        ctx.diag.error(e.message);
        if let Some(h) = e.hint {
            ctx.diag.hint(h);
        }
        return Err(Exit(1));
    }
    Ok(())
}

/// pgbench's `parseScriptWeight`: split at the last `@`.
fn split_weight<'a>(ctx: &mut Ctx<'_>, arg: &'a [u8]) -> Step<(&'a [u8], u32)> {
    let Some(at) = arg.iter().rposition(|&b| b == b'@') else {
        return Ok((arg, 1));
    };
    match parse_weight(&arg[at + 1..]) {
        Ok(w) => Ok((&arg[..at], w)),
        Err(WeightError::Invalid) => Err(fatal(
            ctx,
            [b"invalid weight specification: ".as_slice(), &arg[at..]].concat(),
        )),
        Err(WeightError::Range(v)) => Err(fatal(
            ctx,
            format!("weight specification out of range (0 .. {}): {v}", i32::MAX),
        )),
    }
}

pub(crate) fn builtin_or_exit(ctx: &mut Ctx<'_>, name: &[u8]) -> Step<&'static scripts::Builtin> {
    find_builtin(name).map_err(|msg| {
        ctx.diag.error(msg);
        ctx.diag.raw(scripts::list_text());
        Exit(1)
    })
}

/// pgbench's `ParseScript` + `addScript`.
pub(crate) fn add_script(
    ctx: &mut Ctx<'_>,
    raw: &mut Raw,
    desc: String,
    text: String,
    origin: ScriptOrigin,
    weight: u32,
) -> Step<()> {
    let too_many = raw.scripts.len() >= MAX_SCRIPTS;
    let script = match scripts::compile(&desc, &text) {
        Ok(script) => script,
        // pgbench checks the \if structure after the number of scripts
        Err(e) if !(e.conditional && too_many) => {
            ctx.diag.error(e.message);
            for line in e.context {
                ctx.diag.raw(format!("{line}\n"));
            }
            return Err(Exit(1));
        }
        Err(_) => {
            return Err(fatal(
                ctx,
                format!("at most {MAX_SCRIPTS} SQL scripts are allowed"),
            ))
        }
    };
    if too_many {
        return Err(fatal(
            ctx,
            format!("at most {MAX_SCRIPTS} SQL scripts are allowed"),
        ));
    }
    raw.scripts.push(ScriptEntry {
        desc,
        weight,
        text,
        origin,
        script,
    });
    Ok(())
}

pub(crate) fn add_builtin(
    ctx: &mut Ctx<'_>,
    raw: &mut Raw,
    b: &'static scripts::Builtin,
    weight: u32,
) -> Step<()> {
    add_script(
        ctx,
        raw,
        b.desc.to_string(),
        b.script.to_string(),
        ScriptOrigin::Builtin(b.name),
        weight,
    )
}

/// pgbench's `process_file`.
fn add_file(ctx: &mut Ctx<'_>, raw: &mut Raw, name: &[u8], weight: u32) -> Step<()> {
    let mut buf = Vec::new();
    let (origin, read) = if name == b"-" {
        (ScriptOrigin::Stdin, ctx.stdin.read_to_end(&mut buf))
    } else {
        let path = PathBuf::from(std::ffi::OsStr::from_bytes(name));
        match std::fs::File::open(&path) {
            Ok(mut f) => (ScriptOrigin::File(path), f.read_to_end(&mut buf)),
            Err(e) => {
                return Err(fatal(
                    ctx,
                    [
                        b"could not open file \"".as_slice(),
                        name,
                        format!("\": {}", strerror(&e)).as_bytes(),
                    ]
                    .concat(),
                ))
            }
        }
    };
    if let Err(e) = read {
        return Err(fatal(
            ctx,
            [
                b"could not read file \"".as_slice(),
                name,
                format!("\": {}", strerror(&e)).as_bytes(),
            ]
            .concat(),
        ));
    }
    let text = pgsurge_script::script_text(&buf).into_owned();
    add_script(ctx, raw, lossy(name), text, origin, weight)
}

/// pgbench's `valid_variable_name`: a letter, `_` or non-ASCII byte first, then also
/// digits.
fn valid_variable_name(name: &[u8]) -> bool {
    let Some((&first, rest)) = name.split_first() else {
        return false;
    };
    let ok_first = |b: u8| b >= 0x80 || b.is_ascii_alphabetic() || b == b'_';
    ok_first(first) && rest.iter().all(|&b| ok_first(b) || b.is_ascii_digit())
}

fn define(ctx: &mut Ctx<'_>, raw: &mut Raw, arg: &[u8]) -> Step<()> {
    let eq = arg.iter().position(|&b| b == b'=');
    let (name, value) = match eq {
        Some(i) if i > 0 && i + 1 < arg.len() => (&arg[..i], &arg[i + 1..]),
        _ => {
            return Err(fatal(
                ctx,
                [b"invalid variable definition: \"".as_slice(), arg, b"\""].concat(),
            ))
        }
    };
    if !valid_variable_name(name) {
        return Err(fatal(
            ctx,
            [b"option: invalid variable name: \"".as_slice(), name, b"\""].concat(),
        ));
    }
    let (name, value) = (lossy(name), lossy(value));
    match raw.variables.iter_mut().find(|(n, _)| *n == name) {
        Some(slot) => slot.1 = value,
        None => raw.variables.push((name, value)),
    }
    Ok(())
}

/// pgbench's `checkInitSteps`.
fn check_init_steps(ctx: &mut Ctx<'_>, steps: &[u8]) -> Step<()> {
    if steps.is_empty() {
        return Err(fatal(ctx, "no initialization steps specified"));
    }
    if let Some(&bad) = steps
        .iter()
        .find(|&&b| b != b' ' && !ALL_INIT_STEPS.as_bytes().contains(&b))
    {
        ctx.diag.error(
            [
                b"unrecognized initialization step \"".as_slice(),
                &[bad],
                b"\"",
            ]
            .concat(),
        );
        ctx.diag.detail(format!(
            "Allowed step characters are: \"{ALL_INIT_STEPS}\"."
        ));
        return Err(Exit(1));
    }
    Ok(())
}

/// `--percentiles=LIST`: comma-separated numbers in (0, 100].
fn parse_percentiles(ctx: &mut Ctx<'_>, arg: &[u8]) -> Step<Vec<f64>> {
    let text = lossy(arg);
    let mut list = Vec::new();
    for part in text.split(',') {
        match part.trim().parse::<f64>() {
            Ok(p) if p > 0.0 && p <= 100.0 => list.push(p),
            _ => {
                return Err(fatal(
                    ctx,
                    format!(
                        "invalid percentile list: \"{text}\" (expected comma-separated numbers above 0 and at most 100, e.g. 50,90,99,99.9)"
                    ),
                ))
            }
        }
    }
    Ok(list)
}

fn run(args: &[Vec<u8>], ctx: &mut Ctx<'_>) -> Step<Outcome> {
    // The seed is set before the options, from the environment.
    let env_seed = (ctx.env)("PGBENCH_RANDOM_SEED");
    let seed = set_random_seed(env_seed.as_deref().map(str::as_bytes), ctx).map_err(|()| {
        fatal(
            ctx,
            "error while setting random seed from PGBENCH_RANDOM_SEED environment variable",
        )
    })?;
    let mut raw = Raw::new(seed);
    let require_order = (ctx.env)("POSIXLY_CORRECT").is_some();
    let mut getopt = Getopt::new(args, SHORTS, LONGS, EXTENSIONS, require_order);
    for item in getopt.by_ref() {
        let (opt, arg) = match item {
            Item::Opt(o, a) => (o, a),
            Item::Error(msg) => {
                ctx.diag.usage_error(&msg);
                return Err(Exit(1));
            }
        };
        let was_set = std::mem::replace(&mut raw.benchmarking_option_set, false);
        read_option(ctx, &mut raw, opt, arg.as_deref())?;
        if raw.benchmarking_option_set && !matches!(opt, Opt::RandomSeed | Opt::Define) {
            raw.benchmarking_besides_seed = true;
        }
        raw.benchmarking_option_set |= was_set;
        if let Some(o) = LONGS.iter().chain(EXTENSIONS).find(|o| o.id == opt) {
            if !raw.options_given.contains(&o.name) {
                raw.options_given.push(o.name);
            }
        }
    }
    let operands: Vec<&[u8]> = getopt.operands();
    crate::checks::post_parse(ctx, raw, &operands)
}

/// One option's immediate effect. It mirrors pgbench's `switch` over getopt's result:
/// one arm per option, with pgbench's checks and messages.
fn read_option(ctx: &mut Ctx<'_>, raw: &mut Raw, opt: Opt, value: Option<&[u8]>) -> Step<()> {
    let arg = value.unwrap_or_default();
    match opt {
        Opt::Builtin => {
            if arg == b"list" {
                ctx.diag.raw(scripts::list_text());
                return Err(Exit(0));
            }
            let (name, weight) = split_weight(ctx, arg)?;
            let b = builtin_or_exit(ctx, name)?;
            add_builtin(ctx, raw, b, weight)?;
            raw.benchmarking_option_set = true;
            raw.internal_script_used = true;
        }
        Opt::Client => {
            raw.benchmarking_option_set = true;
            raw.clients = int_option(ctx, arg, "-c/--client", 1, i32::MAX)?;
            // Under --generator-split (given before -c) this is the total of all
            // generators: the share is checked after the options instead.
            if !raw.extensions.generator_split {
                ensure_open_files(ctx, raw.clients)?;
            }
        }
        Opt::Connect => {
            raw.benchmarking_option_set = true;
            raw.connect = true;
        }
        Opt::Dbname => raw.dbname = Some(lossy(arg)),
        Opt::Define => {
            raw.benchmarking_option_set = true;
            define(ctx, raw, arg)?;
        }
        Opt::File => {
            let (name, weight) = split_weight(ctx, arg)?;
            add_file(ctx, raw, name, weight)?;
            raw.benchmarking_option_set = true;
        }
        Opt::Fillfactor => {
            raw.initialization_option_set = true;
            raw.fillfactor = int_option(ctx, arg, "-F/--fillfactor", 10, 100)?;
        }
        Opt::Host => raw.host = Some(lossy(arg)),
        Opt::Initialize => raw.is_init_mode = true,
        Opt::InitSteps => {
            check_init_steps(ctx, arg)?;
            raw.init_steps = Some(lossy(arg));
            raw.initialization_option_set = true;
        }
        Opt::Jobs => {
            raw.benchmarking_option_set = true;
            raw.threads = int_option(ctx, arg, "-j/--jobs", 1, i32::MAX)?;
        }
        Opt::Log => {
            raw.benchmarking_option_set = true;
            raw.use_log = true;
        }
        Opt::LatencyLimit => {
            let ms = atof(arg);
            // `!(ms > 0)` also rejects NaN, as C's `limit_ms <= 0.0` would not; a NaN
            // limit would make (int64) conversion undefined in C.
            if ms <= 0.0 || ms.is_nan() {
                return Err(fatal(
                    ctx,
                    [b"invalid latency limit: \"".as_slice(), arg, b"\""].concat(),
                ));
            }
            raw.benchmarking_option_set = true;
            // C's (int64) cast truncates toward zero; `as` also saturates at the ends.
            raw.latency_limit_us = (ms * 1000.0) as i64;
        }
        Opt::Protocol => {
            raw.benchmarking_option_set = true;
            raw.query_mode = match arg {
                b"simple" => QueryMode::Simple,
                b"extended" => QueryMode::Extended,
                b"prepared" => QueryMode::Prepared,
                _ => {
                    return Err(fatal(
                        ctx,
                        [b"invalid query mode (-M): \"".as_slice(), arg, b"\""].concat(),
                    ))
                }
            };
        }
        Opt::NoVacuum => raw.no_vacuum = true,
        Opt::SkipSomeUpdates | Opt::SelectOnly => {
            let name: &[u8] = if opt == Opt::SelectOnly {
                b"select-only"
            } else {
                b"simple-update"
            };
            let b = builtin_or_exit(ctx, name)?;
            add_builtin(ctx, raw, b, 1)?;
            raw.benchmarking_option_set = true;
            raw.internal_script_used = true;
        }
        Opt::Port => raw.port = Some(lossy(arg)),
        Opt::Progress => {
            raw.benchmarking_option_set = true;
            raw.progress = int_option(ctx, arg, "-P/--progress", 1, i32::MAX)?;
        }
        Opt::Quiet => {
            raw.initialization_option_set = true;
            raw.quiet = true;
        }
        Opt::ReportPerCommand => {
            raw.benchmarking_option_set = true;
            raw.report_per_command = true;
        }
        Opt::Rate => {
            let tps = atof(arg);
            raw.benchmarking_option_set = true;
            if tps <= 0.0 || tps.is_nan() {
                return Err(fatal(
                    ctx,
                    [b"invalid rate limit: \"".as_slice(), arg, b"\""].concat(),
                ));
            }
            raw.rate = Some(tps);
            raw.throttle_delay = 1_000_000.0 / tps;
        }
        Opt::Scale => {
            raw.scale_given = true;
            raw.scale = int_option(ctx, arg, "-s/--scale", 1, i32::MAX)?;
        }
        Opt::Transactions => {
            raw.benchmarking_option_set = true;
            raw.transactions = int_option(ctx, arg, "-t/--transactions", 1, i32::MAX)?;
        }
        Opt::Time => {
            raw.benchmarking_option_set = true;
            raw.duration = int_option(ctx, arg, "-T/--time", 1, i32::MAX)?;
        }
        Opt::Username => raw.user = Some(lossy(arg)),
        Opt::VacuumAll => {
            raw.benchmarking_option_set = true;
            raw.vacuum_all = true;
        }
        Opt::UnloggedTables => {
            raw.initialization_option_set = true;
            raw.unlogged_tables = true;
        }
        Opt::Tablespace => {
            raw.initialization_option_set = true;
            raw.tablespace = Some(lossy(arg));
        }
        Opt::IndexTablespace => {
            raw.initialization_option_set = true;
            raw.index_tablespace = Some(lossy(arg));
        }
        Opt::SamplingRate => {
            raw.benchmarking_option_set = true;
            let rate = atof(arg);
            if rate <= 0.0 || rate > 1.0 || rate.is_nan() {
                return Err(fatal(
                    ctx,
                    [b"invalid sampling rate: \"".as_slice(), arg, b"\""].concat(),
                ));
            }
            raw.sampling_rate = rate;
        }
        Opt::AggregateInterval => {
            raw.benchmarking_option_set = true;
            raw.aggregate_interval = int_option(ctx, arg, "--aggregate-interval", 1, i32::MAX)?;
        }
        Opt::ProgressTimestamp => {
            raw.progress_timestamp = true;
            raw.benchmarking_option_set = true;
        }
        Opt::LogPrefix => {
            raw.benchmarking_option_set = true;
            raw.log_prefix = Some(lossy(arg));
        }
        Opt::ForeignKeys => {
            raw.initialization_option_set = true;
            raw.foreign_keys = true;
        }
        Opt::RandomSeed => {
            raw.benchmarking_option_set = true;
            raw.seed = set_random_seed(Some(arg), ctx).map_err(|()| {
                fatal(
                    ctx,
                    "error while setting random seed from --random-seed option",
                )
            })?;
        }
        Opt::ShowScript => {
            let b = builtin_or_exit(ctx, arg)?;
            ctx.diag.raw(scripts::show_text(b));
            return Err(Exit(0));
        }
        Opt::Partitions => {
            raw.initialization_option_set = true;
            raw.partitions = int_option(ctx, arg, "--partitions", 0, i32::MAX)?;
        }
        Opt::PartitionMethod => {
            raw.initialization_option_set = true;
            raw.partition_method = if arg.eq_ignore_ascii_case(b"range") {
                PartitionMethod::Range
            } else if arg.eq_ignore_ascii_case(b"hash") {
                PartitionMethod::Hash
            } else {
                return Err(fatal(
                    ctx,
                    [
                        b"invalid partition method, expecting \"range\" or \"hash\", got: \""
                            .as_slice(),
                        arg,
                        b"\"",
                    ]
                    .concat(),
                ));
            };
        }
        Opt::FailuresDetailed => {
            raw.benchmarking_option_set = true;
            raw.failures_detailed = true;
        }
        Opt::MaxTries => {
            let n = atoi(arg);
            if n < 0 {
                return Err(fatal(
                    ctx,
                    [
                        b"invalid number of maximum tries: \"".as_slice(),
                        arg,
                        b"\"",
                    ]
                    .concat(),
                ));
            }
            raw.benchmarking_option_set = true;
            raw.max_tries = n.unsigned_abs();
        }
        Opt::VerboseErrors => {
            raw.benchmarking_option_set = true;
            raw.verbose_errors = true;
        }
        Opt::ExitOnAbort => {
            raw.benchmarking_option_set = true;
            raw.exit_on_abort = true;
        }
        Opt::Debug => raw.debug_level += 1,
        // pgsurge extensions: benchmarking options.
        Opt::Percentiles => {
            raw.benchmarking_option_set = true;
            // getopt gives no value for a bare `--percentiles`; `--percentiles=` is an
            // empty (invalid) list.
            raw.extensions.percentiles = Some(match value {
                None => DEFAULT_PERCENTILES.to_vec(),
                Some(list) => parse_percentiles(ctx, list)?,
            });
        }
        Opt::Json => {
            raw.benchmarking_option_set = true;
            raw.extensions.json = Some(PathBuf::from(std::ffi::OsStr::from_bytes(arg)));
        }
        Opt::HdrLog => {
            raw.benchmarking_option_set = true;
            raw.extensions.hdr_log = Some(PathBuf::from(std::ffi::OsStr::from_bytes(arg)));
        }
        Opt::Store => {
            raw.benchmarking_option_set = true;
            raw.extensions.store = Some(match value {
                None => None,
                Some([]) => {
                    return Err(fatal(ctx, "--store= needs a location (or no '=')"));
                }
                Some(v) => Some(lossy(v)),
            });
        }
        Opt::Live => {
            raw.benchmarking_option_set = true;
            raw.extensions.live = Some(match value {
                None => pgsurge_live::DEFAULT_ADDR.to_string(),
                Some([]) => {
                    return Err(fatal(ctx, "--live= needs an address (or no '=')"));
                }
                Some(v) => lossy(v),
            });
        }
        Opt::Costs => {
            raw.benchmarking_option_set = true;
            raw.extensions.costs = true;
        }
        Opt::Reconnect => {
            raw.benchmarking_option_set = true;
            raw.extensions.reconnect = true;
        }
        Opt::CheckCommits => {
            raw.benchmarking_option_set = true;
            let table = lossy(value.unwrap_or_default());
            let part = |p: &str| {
                p.chars()
                    .next()
                    .is_some_and(|c| c.is_alphabetic() || c == '_')
                    && p.chars()
                        .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
            };
            if table.split('.').count() > 2 || !table.split('.').all(part) {
                return Err(fatal(
                    ctx,
                    format!("invalid --check-commits table: \"{table}\" (a name, or schema.name)"),
                ));
            }
            raw.extensions.check_commits = Some(table);
        }
        Opt::ReplicaFile => {
            let (name, weight) = split_weight(ctx, arg)?;
            raw.extensions.replica_scripts.push(raw.scripts.len());
            add_file(ctx, raw, name, weight)?;
            raw.benchmarking_option_set = true;
        }
        Opt::Profile => {
            raw.benchmarking_option_set = true;
            let hz = match value {
                None => pgsurge_observe::profile::DEFAULT_FREQUENCY_HZ,
                Some(v) => match lossy(v).parse::<u32>() {
                    Ok(hz) if (1..=20_000).contains(&hz) => hz,
                    _ => {
                        return Err(fatal(
                            ctx,
                            format!(
                                "invalid --profile frequency: \"{}\" (a number of Hz from 1 to 20000)",
                                lossy(v)
                            ),
                        ));
                    }
                },
            };
            raw.extensions.profile_hz = Some(hz);
        }
        Opt::Cpus => {
            raw.benchmarking_option_set = true;
            let list = pgsurge_affinity::CpuList::parse(&lossy(arg))
                .and_then(|l| l.check_online().map(|()| l))
                .map_err(|e| fatal(ctx, e.to_string()))?;
            raw.extensions.cpus = Some(list);
        }
        Opt::Set => {
            raw.benchmarking_option_set = true;
            if arg.is_empty() {
                return Err(fatal(ctx, "--set must not be empty"));
            }
            raw.extensions.set = Some(lossy(arg));
        }
        Opt::Group => {
            raw.benchmarking_option_set = true;
            if arg.is_empty() {
                return Err(fatal(ctx, "--group must not be empty"));
            }
            raw.extensions.group = Some(lossy(arg));
        }
        Opt::HdrLogUnit => {
            raw.benchmarking_option_set = true;
            raw.hdr_log_unit_given = true;
            raw.extensions.hdr_log_unit = pgsurge_results::HdrLogUnit::parse(&lossy(arg))
                .ok_or_else(|| {
                    fatal(
                        ctx,
                        [
                            b"invalid --hdr-log-unit \"".as_slice(),
                            arg,
                            b"\": expected \"us\" or \"ns\"",
                        ]
                        .concat(),
                    )
                })?;
        }
        Opt::StartAt
        | Opt::GeneratorName
        | Opt::GeneratorIndex
        | Opt::GeneratorCount
        | Opt::GeneratorSplit => {
            raw.benchmarking_option_set = true;
            generator_option(ctx, raw, opt, arg)?;
        }
        Opt::Mix => {
            raw.benchmarking_option_set = true;
            raw.extensions.mix =
                Some(pgsurge_engine::Mix::parse(&lossy(arg)).ok_or_else(|| {
                    fatal(
                        ctx,
                        [
                            b"invalid --mix \"".as_slice(),
                            arg,
                            b"\": expected \"random\" or \"deck\"",
                        ]
                        .concat(),
                    )
                })?);
        }
        // pgsurge extensions: both modes.
        Opt::Workload => {
            if arg.is_empty() {
                return Err(fatal(ctx, "--workload must not be empty"));
            }
            raw.extensions.workload = Some(lossy(arg));
        }
        // pgsurge extensions: initialization options.
        Opt::InitJobs => {
            raw.initialization_option_set = true;
            raw.init_jobs = int_option(ctx, arg, "--init-jobs", 1, MAX_INIT_JOBS)?;
        }
    }
    Ok(())
}
