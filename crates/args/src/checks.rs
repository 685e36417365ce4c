//! What pgbench does between reading the last option and connecting: the default
//! script, query-mode preparation, total weight, thread clamping, the database name,
//! extra operands, the mode split and the post-parse checks (spec §1.6), in pgbench's
//! order with its messages. Produces the final [`Outcome`].

use crate::options::*;
use crate::parser::{
    add_builtin, builtin_or_exit, ensure_open_files, fatal, lossy, Ctx, Exit, Raw, Step,
};
use crate::scripts;
use crate::seed::SeedSource;
use crate::Outcome;

/// pgbench's `DEFAULT_INIT_STEPS`.
const DEFAULT_INIT_STEPS: &str = "dtgvp";

/// After the options: defaults, the checks in pgbench's order, and the mode split.
pub(crate) fn post_parse(ctx: &mut Ctx<'_>, mut raw: Raw, operands: &[&[u8]]) -> Step<Outcome> {
    let workload = match raw.extensions.workload.clone() {
        Some(name) => Some(workload_scripts(ctx, &mut raw, &name)?),
        None => None,
    };
    // A pack's scripts join the run in `into_run_spec`.
    if raw.scripts.is_empty() && !raw.is_init_mode && workload.is_none() {
        let b = builtin_or_exit(ctx, b"tpcb-like")?;
        add_builtin(ctx, &mut raw, b, 1)?;
        raw.benchmarking_option_set = true;
        raw.internal_script_used = true;
    }
    let mode = raw.query_mode;
    for entry in &mut raw.scripts {
        if let Err(msg) = scripts::prepare(&mut entry.script, mode) {
            return Err(fatal(ctx, msg));
        }
    }
    let total_weight: u64 = raw.scripts.iter().map(|s| u64::from(s.weight)).sum();
    if total_weight == 0 && !raw.is_init_mode && workload.is_none() {
        return Err(fatal(ctx, "total script weight must not be zero"));
    }
    if raw.extensions.generator_split && !raw.is_init_mode {
        generator_split(ctx, &mut raw)?;
    }
    raw.threads = raw.threads.min(raw.clients);
    raw.throttle_delay *= f64::from(raw.threads);

    let mut operands = operands.iter();
    let dbname = match raw.dbname.take() {
        Some(d) => d,
        None => match operands.next() {
            Some(op) => lossy(op),
            None => default_dbname(ctx)?,
        },
    };
    if let Some(extra) = operands.next() {
        ctx.diag.error(
            [
                b"too many command-line arguments (first is \"".as_slice(),
                extra,
                b"\")",
            ]
            .concat(),
        );
        ctx.diag.try_help();
        return Err(Exit(1));
    }
    let connection = Connection {
        host: raw.host.take(),
        port: raw.port.take(),
        user: raw.user.take(),
        dbname,
    };

    if raw.is_init_mode {
        return init_outcome(ctx, raw, connection);
    }
    if raw.initialization_option_set {
        return Err(fatal(
            ctx,
            "some of the specified options cannot be used in benchmarking mode",
        ));
    }
    bench_checks(ctx, &raw)?;
    deck_size(ctx, &raw)?;
    let pack_run = workload
        .as_ref()
        .map(|pack| pgsurge_workload::run::PackRun::new(pack, &raw.variables, raw.extensions.mix))
        .transpose()
        .map_err(|e| fatal(ctx, e.to_string()))?;
    let limit = if raw.duration > 0 {
        RunLimit::Duration(raw.duration)
    } else {
        RunLimit::Transactions(if raw.transactions > 0 {
            raw.transactions
        } else {
            10
        })
    };
    Ok(Outcome::Bench(BenchOptions {
        connection,
        scripts: raw.scripts,
        internal_script_used: raw.internal_script_used,
        query_mode: raw.query_mode,
        clients: raw.clients,
        threads: raw.threads,
        limit,
        connect_per_transaction: raw.connect,
        no_vacuum: raw.no_vacuum,
        vacuum_all: raw.vacuum_all,
        scale: raw.scale,
        scale_given: raw.scale_given,
        log: raw.use_log,
        log_prefix: raw.log_prefix,
        sampling_rate: raw.sampling_rate,
        aggregate_interval: raw.aggregate_interval,
        rate: raw.rate,
        throttle_delay_us: raw.throttle_delay,
        latency_limit_us: raw.latency_limit_us,
        progress_secs: raw.progress,
        progress_timestamp: raw.progress_timestamp,
        report_per_command: raw.report_per_command,
        max_tries: raw.max_tries,
        failures_detailed: raw.failures_detailed,
        verbose_errors: raw.verbose_errors,
        exit_on_abort: raw.exit_on_abort,
        random_seed: raw.seed,
        variables: raw.variables,
        debug_level: raw.debug_level,
        extensions: raw.extensions,
        options_given: raw.options_given,
        workload,
        pack_run,
    }))
}

/// `--mix=deck` over the scripts of `-f`/`-b`: a deck of more than
/// [`pgsurge_engine::MAX_DECK_CARDS`] cards is refused before anything connects.
fn deck_size(ctx: &mut Ctx<'_>, raw: &Raw) -> Step<()> {
    use pgsurge_engine::{Mix, MAX_DECK_CARDS};
    let cards: u64 = raw.scripts.iter().map(|s| u64::from(s.weight)).sum();
    if raw.extensions.mix == Some(Mix::Deck) && cards > MAX_DECK_CARDS {
        return Err(fatal(
            ctx,
            format!(
                "--mix=deck: a deck holds one card per unit of script weight, and the total weight {cards} is more than {MAX_DECK_CARDS} cards (use smaller weights)"
            ),
        ));
    }
    Ok(())
}

/// `--workload`: reads the pack. Its scripts, parameters, mix and pauses join the run
/// in `into_run_spec` (`pgsurge_workload::run::PackRun`, made after the checks).
fn workload_scripts(ctx: &mut Ctx<'_>, raw: &mut Raw, name: &str) -> Step<pgsurge_workload::Pack> {
    let pack = pgsurge_workload::Pack::resolve(name).map_err(|e| fatal(ctx, e.to_string()))?;
    if !raw.is_init_mode {
        raw.benchmarking_option_set = true;
    }
    Ok(pack)
}

/// `--generator-split`: `-c`, `-R` and a numeric seed (option or
/// `PGBENCH_RANDOM_SEED`) are the totals of `--generator-count` generators; this one
/// keeps share `--generator-index` of them, by the rule `pgsurge dist local` splits with
/// (`pgsurge_generators::share`). A `time`/`rand` seed is this process's own anyway. Lets
/// every generator take the same arguments (a Kubernetes Indexed Job's pods differ
/// only by their index).
fn generator_split(ctx: &mut Ctx<'_>, raw: &mut Raw) -> Step<()> {
    let g = &raw.extensions.generator;
    let (Some(index), Some(count)) = (g.index, g.count) else {
        return Err(fatal(
            ctx,
            "--generator-split requires --generator-index and --generator-count",
        ));
    };
    let seed = (raw.seed.source == SeedSource::Value).then_some(raw.seed.value);
    let share = match pgsurge_generators::share(raw.clients, raw.rate, seed, count, index) {
        Ok(Some(s)) => s,
        // An index out of range is refused with the other generator checks.
        Ok(None) => return Ok(()),
        Err(e) => return Err(fatal(ctx, format!("--generator-split: {e}"))),
    };
    ensure_open_files(ctx, share.clients)?;
    let mut line = format!(
        "this generator's share (index {index} of {count}): {} of {} clients",
        share.clients, raw.clients
    );
    raw.clients = share.clients;
    if let (Some(total), Some(r)) = (raw.rate, share.rate_tps) {
        line.push_str(&format!(", rate {r} of {total} tps"));
        raw.rate = Some(r);
        raw.throttle_delay = 1_000_000.0 / r;
    }
    if let Some(s) = share.seed {
        line.push_str(&format!(
            ", random seed {s} (derived from {})",
            raw.seed.value
        ));
        raw.seed.value = s;
    }
    ctx.diag.info(line);
    Ok(())
}

/// `$PGDATABASE`, else `$PGUSER`, else the OS user (pgbench's order).
fn default_dbname(ctx: &mut Ctx<'_>) -> Step<String> {
    for var in ["PGDATABASE", "PGUSER"] {
        if let Some(v) = (ctx.env)(var).filter(|v| !v.is_empty()) {
            return Ok(v);
        }
    }
    crate::user::effective_user_name().map_err(|msg| {
        // get_user_name_or_exit prints "progname: message" without a level word
        ctx.diag.info(msg);
        Exit(1)
    })
}

fn init_outcome(ctx: &mut Ctx<'_>, raw: Raw, connection: Connection) -> Step<Outcome> {
    if let Some(pack) = raw.extensions.workload.clone() {
        return workload_init_outcome(ctx, raw, connection, pack);
    }
    if raw.benchmarking_option_set {
        return Err(fatal(
            ctx,
            "some of the specified options cannot be used in initialization (-i) mode",
        ));
    }
    if raw.partitions == 0 && raw.partition_method != PartitionMethod::None {
        return Err(fatal(
            ctx,
            "--partition-method requires greater than zero --partitions",
        ));
    }
    let partition_method = if raw.partitions > 0 && raw.partition_method == PartitionMethod::None {
        PartitionMethod::Range
    } else {
        raw.partition_method
    };
    let mut steps = raw
        .init_steps
        .unwrap_or_else(|| DEFAULT_INIT_STEPS.to_string());
    if raw.no_vacuum {
        steps = steps.replace('v', " ");
    }
    if raw.foreign_keys && !steps.contains('f') {
        steps.push('f');
    }
    // -s, -F and --partitions were checked against pgbench's int ranges while parsing.
    let int = |v: u32| i32::try_from(v).unwrap_or(i32::MAX);
    Ok(Outcome::Init(InitOptions {
        connection,
        spec: pgsurge_init::InitSpec {
            steps,
            scale: int(raw.scale),
            fillfactor: int(raw.fillfactor),
            partitions: int(raw.partitions),
            partition_method,
            tablespace: raw.tablespace,
            index_tablespace: raw.index_tablespace,
            unlogged: raw.unlogged_tables,
            quiet: raw.quiet,
        },
        debug_level: raw.debug_level,
        init_jobs: raw.init_jobs,
        workload: None,
    }))
}

/// `-i --workload`: the pack's loader takes `-s`, `--init-jobs`, `--random-seed` and
/// `-D`; pgbench's own table options do not apply to it.
fn workload_init_outcome(
    ctx: &mut Ctx<'_>,
    raw: Raw,
    connection: Connection,
    pack: String,
) -> Step<Outcome> {
    if raw.benchmarking_besides_seed {
        return Err(fatal(
            ctx,
            "some of the specified options cannot be used in initialization (-i) mode",
        ));
    }
    if raw.init_steps.is_some()
        || raw.partitions > 0
        || raw.partition_method != PartitionMethod::None
        || raw.foreign_keys
        || raw.tablespace.is_some()
        || raw.index_tablespace.is_some()
        || raw.unlogged_tables
        || raw.fillfactor != 100
    {
        return Err(fatal(
            ctx,
            "--workload loads with the pack's own SQL: -I, -F, --partitions, --partition-method, --foreign-keys, --tablespace, --index-tablespace and --unlogged-tables do not apply",
        ));
    }
    Ok(Outcome::Init(InitOptions {
        connection,
        spec: pgsurge_init::InitSpec {
            steps: DEFAULT_INIT_STEPS.to_string(),
            scale: i32::try_from(raw.scale).unwrap_or(i32::MAX),
            fillfactor: 100,
            partitions: 0,
            partition_method: PartitionMethod::None,
            tablespace: None,
            index_tablespace: None,
            unlogged: false,
            quiet: raw.quiet,
        },
        debug_level: raw.debug_level,
        init_jobs: raw.init_jobs,
        workload: Some(WorkloadInit {
            pack,
            scale: raw.scale,
            seed: raw.seed.value,
            variables: raw.variables,
        }),
    }))
}

/// Checks 7–16 of spec §1.6, in pgbench's order.
fn bench_checks(ctx: &mut Ctx<'_>, raw: &Raw) -> Step<()> {
    if raw.transactions > 0 && raw.duration > 0 {
        return Err(fatal(
            ctx,
            "specify either a number of transactions (-t) or a duration (-T), not both",
        ));
    }
    if raw.sampling_rate > 0.0 && !raw.use_log {
        return Err(fatal(
            ctx,
            "log sampling (--sampling-rate) is allowed only when logging transactions (-l)",
        ));
    }
    if raw.sampling_rate > 0.0 && raw.aggregate_interval > 0 {
        return Err(fatal(ctx, "log sampling (--sampling-rate) and aggregation (--aggregate-interval) cannot be used at the same time"));
    }
    if raw.aggregate_interval > 0 && !raw.use_log {
        return Err(fatal(
            ctx,
            "log aggregation is allowed only when actually logging transactions",
        ));
    }
    if !raw.use_log && raw.log_prefix.is_some() {
        return Err(fatal(
            ctx,
            "log file prefix (--log-prefix) is allowed only when logging transactions (-l)",
        ));
    }
    if raw.duration > 0 && raw.aggregate_interval > raw.duration {
        return Err(fatal(
            ctx,
            format!(
                "number of seconds for aggregation ({}) must not be higher than test duration ({})",
                raw.aggregate_interval, raw.duration
            ),
        ));
    }
    if raw.duration > 0
        && raw.aggregate_interval > 0
        && !raw.duration.is_multiple_of(raw.aggregate_interval)
    {
        return Err(fatal(
            ctx,
            format!(
                "duration ({}) must be a multiple of aggregation interval ({})",
                raw.duration, raw.aggregate_interval
            ),
        ));
    }
    if raw.progress_timestamp && raw.progress == 0 {
        return Err(fatal(
            ctx,
            "--progress-timestamp is allowed only under --progress",
        ));
    }
    if raw.max_tries == 0 && raw.latency_limit_us == 0 && raw.duration == 0 {
        return Err(fatal(ctx, "an unlimited number of transaction tries can only be used with --latency-limit or a duration (-T)"));
    }
    if raw.extensions.check_commits.is_some() && !raw.extensions.reconnect {
        return Err(fatal(ctx, "--check-commits requires --reconnect"));
    }
    if !raw.extensions.replica_scripts.is_empty() {
        if raw.connect {
            return Err(fatal(
                ctx,
                "--replica-file cannot be used with -C/--connect",
            ));
        }
        if raw.extensions.workload.is_some() {
            return Err(fatal(ctx, "--replica-file cannot be used with --workload"));
        }
    }
    if raw.extensions.set.is_some() && raw.extensions.store.is_none() {
        return Err(fatal(ctx, "--set requires --store"));
    }
    if raw.extensions.group.is_some() {
        if raw.extensions.store.is_none() {
            return Err(fatal(ctx, "--group requires --store"));
        }
        if raw.extensions.set.is_some() {
            return Err(fatal(ctx, "--set and --group cannot be used together"));
        }
        if raw.extensions.generator.count.is_none() {
            return Err(fatal(
                ctx,
                "--group requires --generator-count (and --generator-index)",
            ));
        }
        if raw.extensions.generator.index.is_none() {
            return Err(fatal(ctx, "--group requires --generator-index"));
        }
    }
    if raw.hdr_log_unit_given && raw.extensions.hdr_log.is_none() {
        return Err(fatal(ctx, "--hdr-log-unit requires --hdr-log"));
    }
    let g = &raw.extensions.generator;
    match (g.index, g.count) {
        (Some(_), None) => {
            return Err(fatal(ctx, "--generator-index requires --generator-count"));
        }
        (Some(i), Some(n)) if i >= n => {
            return Err(fatal(
                ctx,
                format!("--generator-index ({i}) must be less than --generator-count ({n})"),
            ));
        }
        _ => {}
    }
    Ok(())
}
