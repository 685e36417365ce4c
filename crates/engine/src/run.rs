//! One benchmark run, in-process: builds the [`Plan`] from the parsed options, seeds every
//! stream in pgbench's order, deals clients to threads, starts the driver threads,
//! produces progress samples (for `-P`, `--hdr-log` and library callers) from the main
//! thread, and merges the threads' statistics into a [`RunResult`].
//!
//! Setup that talks to the server before the run (banner, scale detection, vacuum) lives
//! in `setup`; printing the report lives in `bench`. This module prints only what the
//! threads print while running (progress lines, client errors).

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use pgsurge_args::{BenchOptions, QueryMode as ArgsMode, RunLimit};
use pgsurge_results::result::{QueryMode as ResMode, RunInfo, RunOptions, RunResult, ScriptInfo};
use pgsurge_results::shared::{IntervalSample, ProgressAggregator, SharedCounters};
use pgsurge_results::stats::{StatsConfig, ThreadStats};
use pgsurge_results::txnlog::{log_file_path, AggregateLogWriter, LogOptions, TxnLogWriter};
use pgsurge_results::{HdrIntervalLogWriter, LatencyHistogram};
use pgsurge_script::{Command, Script, SeedStreams, SqlMeta, Variables};
use pgsurge_wire::ConnConfig;

use crate::client::Client;
use crate::clock::RunClock;
use crate::distribute::clients_per_thread;
use crate::driver::{connect_all, run_loop, DriverCtx, LoopEnd, Slot, ThreadStreams};
use crate::host::ClientScript;
use crate::plan::{
    Capture, CommandKind, CommandPlan, MachineConfig, MetaTag, Plan, QueryMode, ScriptPlan,
    SqlForm, SqlPlan,
};
use crate::recorder::{ThreadLog, ThreadRecorder};
use crate::sqltext::{to_param_sql, SqlTemplate};
use crate::stderr::{DiagnosticSink, SinkGuard, StderrDiag};
use crate::stop::StopFlag;
use crate::throttle::ThrottleSchedule;
use crate::EngineError;

/// Everything a run needs: the parsed options plus what setup learned from the server.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// The parsed pgbench options.
    pub options: BenchOptions,
    /// Connection parameters for every client.
    pub conn: ConnConfig,
    /// `:scale` and the report's scaling factor (from `pgbench_branches` for builtin
    /// scripts, else `-s`).
    pub scale: i64,
    /// Detected partitioning of pgbench_accounts (`range`/`hash`), if any.
    pub partition_method: Option<String>,
    /// Number of partitions.
    pub partitions: u32,
    /// The server's `server_version`.
    pub server_version: Option<String>,
}

/// Receives an interval's sample and the latency histogram of its successful
/// transactions (see [`RunHooks::on_interval`]).
pub type IntervalHook<'a> = dyn FnMut(&IntervalSample, &LatencyHistogram) + 'a;

/// Callbacks and controls for an in-process run.
#[derive(Default)]
pub struct RunHooks<'a> {
    /// Raise to stop the run (clients finish their current transaction).
    pub stop: StopFlag,
    /// Called from the main thread with each interval sample (every `-P` seconds, or
    /// every second when `-P` is off) and the latency histogram of the interval's
    /// successful transactions (µs). After the clients finish, it is called once more
    /// for the remainder since the last full interval (shorter, and not printed by
    /// `-P`) when that recorded anything; so the interval histograms merge exactly to the
    /// run's latency histogram.
    pub on_interval: Option<&'a mut IntervalHook<'a>>,
    /// Takes the run's diagnostics (client errors such as `client 3 script 0 aborted in
    /// command 1 query 0: ERROR:  …`, `--verbose-errors` lines, server notices) instead
    /// of stderr. Called from the thread that meets them; only on a diagnostic, never on
    /// the path of a successful transaction.
    pub on_diagnostic: Option<DiagnosticSink>,
}

/// Parses the script texts again with the script crate (the args crate validated them),
/// so the engine does not depend on which parsed form the args crate carries.
fn parse_scripts(o: &BenchOptions) -> Result<Vec<Script>, EngineError> {
    o.scripts
        .iter()
        .map(|e| {
            pgsurge_script::parse_script(&e.desc, &e.text)
                .map_err(|err| EngineError::Script(err.to_string()))
        })
        .collect()
}

/// Builds the machine's plan: SQL pre-scanned for the query mode, `P_<k>` names.
pub fn build_plan(o: &BenchOptions, scripts: &[Script]) -> Result<Plan, EngineError> {
    let mode = match o.query_mode {
        ArgsMode::Simple => QueryMode::Simple,
        ArgsMode::Extended => QueryMode::Extended,
        ArgsMode::Prepared => QueryMode::Prepared,
    };
    let mut prep_no = 0usize;
    let mut plans = Vec::with_capacity(scripts.len());
    for (entry, script) in o.scripts.iter().zip(scripts) {
        let mut commands = Vec::with_capacity(script.commands.len());
        for c in &script.commands {
            let kind = match c {
                Command::Sql(s) => {
                    let form = match mode {
                        QueryMode::Simple => SqlForm::Simple(SqlTemplate::new(&s.source)),
                        _ => SqlForm::Params(to_param_sql(&s.source).map_err(|_| {
                            EngineError::Script(format!(
                                "statement has too many arguments (maximum is 255): {}",
                                s.source
                            ))
                        })?),
                    };
                    let stmt_name = (mode == QueryMode::Prepared).then(|| {
                        let n = format!("P_{prep_no}").into_boxed_str();
                        prep_no += 1;
                        n
                    });
                    let capture = match &s.meta {
                        SqlMeta::None => None,
                        SqlMeta::Gset { prefix } => Some(Capture {
                            prefix: prefix.clone(),
                            all: false,
                        }),
                        SqlMeta::Aset { prefix } => Some(Capture {
                            prefix: prefix.clone(),
                            all: true,
                        }),
                    };
                    CommandKind::Sql(SqlPlan {
                        form,
                        stmt_name,
                        capture,
                    })
                }
                Command::Meta(m) => {
                    use pgsurge_script::MetaKind as K;
                    let tag = match &m.kind {
                        K::Set { .. } => MetaTag::Set,
                        K::SetShell { .. } => MetaTag::SetShell,
                        K::Shell { .. } => MetaTag::Shell,
                        K::Sleep(_) => MetaTag::Sleep,
                        K::If(_) => MetaTag::If,
                        K::Elif(_) => MetaTag::Elif,
                        K::Else => MetaTag::Else,
                        K::EndIf => MetaTag::Endif,
                        K::StartPipeline => MetaTag::StartPipeline,
                        K::SyncPipeline => MetaTag::SyncPipeline,
                        K::EndPipeline => MetaTag::EndPipeline,
                    };
                    CommandKind::Meta {
                        tag,
                        name: m.argv.first().cloned().unwrap_or_default().into_boxed_str(),
                    }
                }
            };
            commands.push(CommandPlan {
                first_line: c.first_line().to_string(),
                kind,
            });
        }
        plans.push(ScriptPlan {
            desc: entry.desc.clone(),
            weight: entry.weight as i64,
            commands,
        });
    }
    let (nxacts, timed) = match o.limit {
        RunLimit::Transactions(n) => (n as i64, false),
        RunLimit::Duration(_) => (0, true),
    };
    let config = MachineConfig {
        mode,
        nxacts,
        timed,
        latency_limit_us: o.latency_limit_us,
        throttle: o.rate.is_some(),
        max_tries: o.max_tries,
        per_command: o.report_per_command,
        verbose_errors: o.verbose_errors,
        connect_per_txn: o.connect_per_transaction,
        debug: o.debug_level > 0,
    };
    Ok(Plan::new(plans, config))
}

/// Initial variables of every client: `-D` values (as strings), then the automatic
/// variables unless `-D` defined them.
fn client_variables(
    o: &BenchOptions,
    scale: i64,
    seeds: &SeedStreams,
) -> Result<Vec<Variables>, EngineError> {
    let mut base = Variables::new();
    for (k, v) in &o.variables {
        base.set_string("option", k, v)
            .map_err(|e| EngineError::Script(e.to_string()))?;
    }
    let mut out = Vec::with_capacity(o.clients as usize);
    for id in 0..o.clients as usize {
        let mut vars = base.clone();
        let autos: [(&str, i64); 4] = [
            ("scale", scale),
            ("client_id", id as i64),
            ("default_seed", seeds.default_seed),
            ("random_seed", seeds.random_seed()),
        ];
        for (name, value) in autos {
            if !base.contains(name) {
                vars.set_int("option", name, value)
                    .map_err(|e| EngineError::Script(e.to_string()))?;
            }
        }
        out.push(vars);
    }
    Ok(out)
}

fn run_options(o: &BenchOptions) -> RunOptions {
    RunOptions {
        query_mode: match o.query_mode {
            ArgsMode::Simple => ResMode::Simple,
            ArgsMode::Extended => ResMode::Extended,
            ArgsMode::Prepared => ResMode::Prepared,
        },
        clients: o.clients,
        threads: o.threads,
        max_tries: o.max_tries,
        transactions_per_client: match o.limit {
            RunLimit::Transactions(n) => Some(n),
            RunLimit::Duration(_) => None,
        },
        duration_s: match o.limit {
            RunLimit::Duration(n) => Some(n),
            RunLimit::Transactions(_) => None,
        },
        rate_tps: o.rate,
        latency_limit_us: (o.latency_limit_us > 0).then_some(o.latency_limit_us),
        connect_per_transaction: o.connect_per_transaction,
        progress_s: (o.progress_secs > 0).then_some(o.progress_secs),
        progress_timestamp: o.progress_timestamp,
        failures_detailed: o.failures_detailed,
        report_per_command: o.report_per_command,
        log: o.log,
        sampling_rate: (o.sampling_rate > 0.0).then_some(o.sampling_rate),
        aggregate_interval_s: (o.aggregate_interval > 0).then_some(o.aggregate_interval),
        percentiles: o.extensions.percentiles.clone().unwrap_or_default(),
        random_seed: Some(o.random_seed.value),
    }
}

struct ThreadOutput {
    stats: ThreadStats,
    bench_start: i64,
    aborted: bool,
    loop_end: LoopEnd,
    log_error: Option<String>,
}

/// Runs the benchmark described by `spec` and returns its merged result. Progress lines
/// (`-P`) are printed to stderr as pgbench prints them, and so are client errors unless
/// [`RunHooks::on_diagnostic`] takes them.
pub fn run(spec: &RunSpec, hooks: RunHooks<'_>) -> Result<RunResult, EngineError> {
    let o = &spec.options;
    // Diagnostics of the main thread (log file errors) go to the caller's sink too.
    let _sink = SinkGuard::install(hooks.on_diagnostic.as_ref());
    let scripts = Arc::new(parse_scripts(o)?);
    let plan = build_plan(o, &scripts)?;
    let nclients = o.clients.max(1) as usize;
    let ranges = clients_per_thread(nclients, o.threads.max(1) as usize);
    let nthreads = ranges.len();
    // pgbench draws :default_seed only when -D did not define it.
    let draw_default_seed = !o.variables.iter().any(|(k, _)| k == "default_seed");
    let seeds =
        SeedStreams::with_default_seed(o.random_seed.value, nclients, nthreads, draw_default_seed);
    let mut vars = client_variables(o, spec.scale, &seeds)?.into_iter();

    let clock = RunClock::new();
    let start_time = clock.now();
    let start_epoch_us = clock.to_epoch_us(start_time);
    let gate = crate::start_at::StartGate::new(&o.extensions.generator, &clock);
    let end_us = match o.limit {
        RunLimit::Duration(s) => gate.end_of_duration(start_time, s),
        RunLimit::Transactions(_) => 0,
    };
    // The JSON document carries the per-interval series, so --json collects it too
    // (progress lines are still printed only with -P).
    let want_intervals = o.progress_secs > 0
        || hooks.on_interval.is_some()
        || o.extensions.hdr_log.is_some()
        || o.extensions.json.is_some();
    let interval_hists = o.extensions.percentiles.is_some()
        || o.extensions.hdr_log.is_some()
        || o.extensions.json.is_some()
        || hooks.on_interval.is_some();
    let stats_config = StatsConfig {
        detailed: true,
        throttled: o.rate.is_some(),
        latency_limit_us: (o.latency_limit_us > 0).then_some(o.latency_limit_us as f64),
        // Run-wide histograms only when something reads them (percentile lines, the
        // JSON document, library callers); pgbench's report does not.
        histograms: o.extensions.percentiles.is_some()
            || o.extensions.json.is_some()
            || hooks.on_interval.is_some(),
        per_command: o.report_per_command,
        script_commands: plan.scripts.iter().map(|s| s.commands.len()).collect(),
    };
    let log_opts = LogOptions {
        throttled: o.rate.is_some(),
        latency_limit: o.latency_limit_us > 0,
        max_tries: o.max_tries,
        failures_detailed: o.failures_detailed,
    };

    // Per-thread state, built on the main thread so file errors stop the run early.
    let mut threads = Vec::with_capacity(nthreads);
    let mut shared = Vec::new();
    for (t, range) in ranges.iter().enumerate() {
        let ts = &seeds.threads[t];
        let stats = if want_intervals {
            let sh = Arc::new(SharedCounters::new(interval_hists, plan.scripts.len()));
            shared.push(Arc::clone(&sh));
            ThreadStats::with_shared(&stats_config, sh)
        } else {
            ThreadStats::new(&stats_config)
        };
        let log = if o.log {
            let path = log_file_path(o.log_prefix.as_deref(), std::process::id(), t);
            Some(if o.aggregate_interval > 0 {
                ThreadLog::Aggregate(
                    AggregateLogWriter::create(
                        &path,
                        log_opts,
                        o.aggregate_interval,
                        start_epoch_us,
                    )
                    .map_err(|e| EngineError::Setup(e.to_string()))?,
                )
            } else {
                ThreadLog::PerTxn {
                    writer: TxnLogWriter::create(&path, log_opts)
                        .map_err(|e| EngineError::Setup(e.to_string()))?,
                    sampling_rate: o.sampling_rate,
                    sample: ts.sample,
                }
            })
        } else {
            None
        };
        let mut slots = Vec::with_capacity(range.len());
        for id in range.clone() {
            let host = ClientScript::new(
                Arc::clone(&scripts),
                vars.next().unwrap_or_default(),
                seeds.clients[id],
            );
            slots.push(Slot::new(Client::new(id, host, &plan)));
        }
        let streams = ThreadStreams {
            choose: ts.choose,
            throttle: ts.throttle,
        };
        threads.push((slots, streams, ThreadRecorder::new(stats, log, clock)));
    }

    let stop = hooks.stop.clone();
    let barrier = Barrier::new(nthreads);
    let connect_failed = AtomicBool::new(false);
    let finished = AtomicUsize::new(0);
    let mut hdr_log = match &o.extensions.hdr_log {
        Some(p) => Some(
            HdrIntervalLogWriter::create(
                p,
                start_epoch_us,
                "pgsurge bench: latency values in microseconds (us); Interval_Max in ms",
            )
            .map_err(|e| EngineError::Setup(e.to_string()))?,
        ),
        None => None,
    };
    let mut on_interval = hooks.on_interval;
    let mut intervals = Vec::new();
    let mut connect_error: Option<String> = None;

    let outputs: Vec<ThreadOutput> = std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(nthreads);
        for (t, (mut slots, mut streams, mut rec)) in threads.into_iter().enumerate() {
            let gate = &gate;
            let (plan, conn, clock, stop, barrier, connect_failed, finished) = (
                &plan,
                &spec.conn,
                &clock,
                &stop,
                &barrier,
                &connect_failed,
                &finished,
            );
            let rate = o.rate;
            let exit_on_abort = o.exit_on_abort;
            let sink = hooks.on_diagnostic.clone();
            let body = move || -> Result<ThreadOutput, String> {
                let _sink = SinkGuard::install(sink.as_ref());
                let mut err = None;
                if !plan.config.connect_per_txn {
                    if let Err((id, msg)) = connect_all(conn, &mut slots) {
                        connect_failed.store(true, Ordering::SeqCst);
                        err = Some(format!(
                            "{}\npgbench: error: could not create connection for client {id}",
                            msg.trim_end()
                        ));
                    }
                }
                barrier.wait();
                if let Some(e) = err {
                    finished.fetch_add(1, Ordering::SeqCst);
                    return Err(e);
                }
                if connect_failed.load(Ordering::SeqCst) {
                    finished.fetch_add(1, Ordering::SeqCst);
                    return Err(String::new());
                }
                gate.wait(clock);
                let bench_start = clock.now();
                let mut schedule = rate.map(|r| ThrottleSchedule::new(r, nthreads, bench_start));
                let dctx = DriverCtx {
                    plan,
                    conn_config: conn,
                    clock,
                    stop,
                    end_us,
                    exit_on_abort,
                };
                let loop_end = run_loop(&dctx, &mut slots, &mut streams, &mut schedule, &mut rec);
                let aborted =
                    slots.iter().any(|s| s.client.is_aborted()) || loop_end != LoopEnd::AllDone;
                let mut log_error = rec.log_error.take().map(|e| e.to_string());
                match rec.log.take() {
                    Some(ThreadLog::PerTxn { writer, .. }) => {
                        if let Err(e) = writer.finish() {
                            log_error.get_or_insert(e.to_string());
                        }
                    }
                    Some(ThreadLog::Aggregate(w)) => {
                        if let Err(e) = w.finish(clock.to_epoch_us(clock.now())) {
                            log_error.get_or_insert(e.to_string());
                        }
                    }
                    None => {}
                }
                finished.fetch_add(1, Ordering::SeqCst);
                if loop_end == LoopEnd::ExitOnAbort {
                    let _ = std::io::stdout().flush();
                    eprintln!("pgbench: error: Run was aborted due to an error in thread {t}");
                    std::process::exit(2);
                }
                Ok(ThreadOutput {
                    stats: rec.stats,
                    bench_start,
                    aborted,
                    loop_end,
                    log_error,
                })
            };
            handles.push(
                std::thread::Builder::new()
                    .name(format!("pgsurge-{t}"))
                    .spawn_scoped(scope, body),
            );
        }

        // Progress / interval sampling on the main thread.
        if want_intervals {
            let period_s = if o.progress_secs > 0 {
                o.progress_secs as i64
            } else {
                1
            };
            let pct = o.extensions.percentiles.clone().unwrap_or_default();
            let mut agg: Option<ProgressAggregator> = None;
            let mut next = 0i64;
            let popts = pgsurge_results::progress::ProgressOptions {
                timestamp: o.progress_timestamp,
                throttled: o.rate.is_some(),
                latency_limit: o.latency_limit_us > 0,
                max_tries: o.max_tries,
                percentiles: o.extensions.percentiles.is_some(),
            };
            while finished.load(Ordering::SeqCst) < nthreads {
                let now = clock.now();
                if agg.is_none() {
                    if connect_failed.load(Ordering::SeqCst) || !gate.is_open(now) {
                        std::thread::sleep(Duration::from_millis(1));
                        continue;
                    }
                    agg = Some(ProgressAggregator::new(
                        shared.clone(),
                        now,
                        clock.to_epoch_us(0),
                        pct.clone(),
                    ));
                    next = now + period_s * 1_000_000;
                }
                if now >= next {
                    if let Some(a) = agg.as_mut() {
                        let mut sample = a.tick(now);
                        if o.extensions.json.is_some() {
                            // Exact merging of generators' seconds (`pgsurge merge`).
                            sample.histogram =
                                pgsurge_results::result::encode_histogram(a.interval_histogram());
                        }
                        if o.progress_secs > 0 {
                            let mut line = Vec::with_capacity(128);
                            if pgsurge_results::progress::format_progress_line(
                                &sample, &popts, &mut line,
                            )
                            .is_ok()
                            {
                                let _ = std::io::stdout().flush();
                                let _ = std::io::stderr().write_all(&line);
                            }
                        }
                        if let Some(h) = hdr_log.as_mut() {
                            // The overall series untagged, then one tagged series
                            // per script (`Tag=script0`, …), which sum to it.
                            let start = clock.to_epoch_us(now - period_s * 1_000_000);
                            let len = period_s * 1_000_000;
                            let _ = h.write_interval(a.interval_histogram(), start, len, None);
                            for (i, sh) in a.script_histograms().iter().enumerate() {
                                let tag = format!("script{i}");
                                let _ = h.write_interval(sh, start, len, Some(&tag));
                            }
                        }
                        if let Some(cb) = on_interval.as_mut() {
                            cb(&sample, a.interval_histogram());
                        }
                        intervals.push(sample);
                    }
                    while next <= now {
                        next += period_s * 1_000_000;
                    }
                }
                let wait = (next - clock.now()).clamp(1_000, 20_000);
                std::thread::sleep(Duration::from_micros(wait as u64));
            }
            // Every client is done: the remainder since the last full interval goes to
            // the caller only (pgbench prints no partial progress line).
            if let (Some(a), Some(cb)) = (agg.as_mut(), on_interval.as_mut()) {
                let sample = a.tick(clock.now());
                if sample.transactions + sample.failures + sample.skipped > 0
                    || !a.interval_histogram().is_empty()
                {
                    cb(&sample, a.interval_histogram());
                }
            }
        }

        let mut outs = Vec::with_capacity(nthreads);
        for h in handles {
            match h {
                Ok(h) => match h.join() {
                    Ok(Ok(out)) => outs.push(out),
                    Ok(Err(msg)) => {
                        if !msg.is_empty() && connect_error.is_none() {
                            connect_error = Some(msg);
                        }
                    }
                    Err(_) => connect_error
                        .get_or_insert_with(|| "a driver thread panicked".into())
                        .clear(),
                },
                Err(e) => {
                    connect_error.get_or_insert(format!("could not create thread: {e}"));
                }
            }
        }
        outs
    });
    if let Some(h) = hdr_log.take() {
        let _ = h.finish();
    }
    if let Some(msg) = connect_error {
        return Err(EngineError::ClientConnection(msg));
    }
    if connect_failed.load(Ordering::SeqCst) {
        return Err(EngineError::ClientConnection(String::new()));
    }
    let end = clock.now();
    let mut merged: Option<ThreadStats> = None;
    let mut min_start = i64::MAX;
    let mut aborted = false;
    for out in outputs {
        min_start = min_start.min(out.bench_start);
        aborted |= out.aborted || out.loop_end == LoopEnd::PollFailed;
        if let Some(e) = &out.log_error {
            StderrDiag::new(false).error_line(&format!("could not write to log file: {e}"));
        }
        match merged.as_mut() {
            None => merged = Some(out.stats),
            Some(m) => m
                .merge(&out.stats)
                .map_err(|e| EngineError::Setup(e.to_string()))?,
        }
    }
    let merged = merged.unwrap_or_else(|| ThreadStats::new(&stats_config));
    if min_start == i64::MAX {
        min_start = start_time;
    }
    let info = RunInfo {
        options: run_options(o),
        scripts: o
            .scripts
            .iter()
            .zip(plan.scripts.iter())
            .map(|(e, p)| ScriptInfo {
                name: e.desc.clone(),
                weight: e.weight,
                text: e.text.clone(),
                commands: p.commands.iter().map(|c| c.first_line.clone()).collect(),
            })
            .collect(),
        scale: spec.scale,
        partition_method: spec.partition_method.clone(),
        partitions: spec.partitions,
        pgsurge_version: env!("CARGO_PKG_VERSION").to_string(),
        server_version: spec.server_version.clone(),
        start_time_unix_us: start_epoch_us,
        end_time_unix_us: clock.to_epoch_us(end),
        bench_duration_us: end - min_start,
        initial_connection_us: min_start - start_time,
        interrupted: stop.is_raised(),
        aborted,
    };
    let mut result = RunResult::build(info, &merged, intervals);
    result.generator =
        crate::start_at::generator_info(&o.extensions.generator, &clock, min_start, end);
    Ok(result)
}
