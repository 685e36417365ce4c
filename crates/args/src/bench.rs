//! `pgsurge bench` / `pgbench`, the program: parse the command line, then either
//! initialize (`-i`) or set up (setup connection, version banner, scale and partition
//! detection, vacuum), turn the options into a [`RunSpec`] and run it with the engine,
//! print pgbench's report and map the outcome to pgbench's exit codes (§3.1, §8.4).
//! Prints what pgbench prints; never ends the process itself (the binary does, with
//! the returned code).
//!
//! Client version: pgsurge reproduces pgbench 18, and calls itself `18.0` in the banner
//! (`pgbench (18.0, server 17.11)`), the same number `--version` prints; the minor is 0
//! because pgsurge follows 18's behaviour, not one minor release.

use std::ffi::OsString;
use std::io::Write;

use pgsurge_observe::costs::CostProbe;
use pgsurge_observe::hostmetrics::HostSource;
use pgsurge_observe::lag::LagSampler;
use pgsurge_observe::profile::Profiler;
use pgsurge_observe::sampler::{Sampler, SamplerConfig};

use pgsurge_engine::layout::{self, LayoutError};
use pgsurge_engine::stop::{signal_name, SignalWatcher, StopCause, StopFlag};
use pgsurge_engine::{
    run, DatabaseInfo, EngineError, IntervalSample, RunHooks, RunResult, RunSpec,
};
use pgsurge_results::report::{write_pgbench_report, ReportOptions};
use pgsurge_results::LatencyHistogram;
use pgsurge_wire::{ConnConfig, ConnectError, Connection};

use crate::{BenchOptions, InitOptions, Outcome, RunLimit};

/// The version pgsurge reports itself as in the banner.
pub const CLIENT_VERSION: &str = "18.0";
/// `PG_VERSION_NUM` matching [`CLIENT_VERSION`].
pub const CLIENT_VERSION_NUM: i32 = 180000;

fn err_line(msg: &str) {
    let _ = std::io::stdout().flush();
    eprintln!("pgbench: error: {}", msg.strip_suffix('\n').unwrap_or(msg));
}

fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// What `--store` asks for, handed to the binary's store writer with the finished run.
#[derive(Debug)]
pub struct StoreRequest<'a> {
    /// `--store=LOCATION`; `None`: the default store.
    pub location: Option<&'a str>,
    /// `--set=NAME`; `None`: the default set for ad-hoc runs.
    pub set: Option<&'a str>,
    /// `--group=NAME`: the distributed run this generator belongs to.
    pub group: Option<&'a str>,
    /// The database benchmarked (names the target in the store).
    pub dbname: &'a str,
    /// The run as a pgbench command line (no password: connection options only).
    pub command_line: String,
}

/// Writes a finished run into a results store (`--store`): the request, the result,
/// and every interval sample with its latency histogram (µs). Returns the line telling
/// where the run went, or the error. The binary provides it: this crate does not
/// depend on the store.
pub type StoreRun<'a> = dyn Fn(
        &StoreRequest<'_>,
        &RunResult,
        &[(IntervalSample, LatencyHistogram)],
    ) -> Result<String, String>
    + 'a;

/// Checks, before anything connects, that the results store `--store` names (`None`:
/// the default store) can take a run; returns the one-line reason when it cannot.
pub type StoreCheck<'a> = dyn Fn(Option<&str>) -> Result<(), String> + 'a;

/// The binary's results store for `--store`: checked before the benchmark, so a store
/// that cannot take the run fails at once, and written after it.
#[derive(Clone, Copy)]
pub struct StoreHooks<'a> {
    /// Run before the benchmark connects.
    pub check: &'a StoreCheck<'a>,
    /// Run with the finished run.
    pub write: &'a StoreRun<'a>,
}

/// Entry point of `pgsurge bench` and of the binary invoked as `pgbench`. `args`
/// excludes the program name. Returns the process exit code.
pub fn bench_main(args: &[OsString]) -> i32 {
    bench_main_with(args, None)
}

/// [`bench_main`] with a results store for `--store` (without one, `--store` is an
/// error).
pub fn bench_main_with(args: &[OsString], store: Option<StoreHooks<'_>>) -> i32 {
    let outcome = {
        let stdout = std::io::stdout();
        let stderr = std::io::stderr();
        let mut out = stdout.lock();
        let mut err = stderr.lock();
        crate::parse(args, &env_lookup, &mut out, &mut err)
    };
    match outcome {
        Outcome::Exit(code) => code,
        Outcome::Init(o) => init_main(&o),
        Outcome::Bench(o) => bench(o, store),
    }
}

fn conn_config(c: &crate::Connection) -> Result<ConnConfig, String> {
    ConnConfig::for_pgbench(
        c.host.as_deref(),
        c.port.as_deref(),
        c.user.as_deref(),
        &c.dbname,
        &env_lookup,
    )
    .map_err(|e| e.to_string())
}

/// pgbench's `doConnect`: when the server wants a password and none was given, prompts
/// `Password: ` once and retries. The password stays in `cfg`, so every later
/// connection of the run (all clients) uses it, as pgbench's static variable does.
fn connect_prompting(cfg: &mut ConnConfig) -> Result<Connection, ConnectError> {
    match Connection::connect(cfg) {
        Err(e) if e.needs_password() => {
            let pw = pgsurge_wire::simple_prompt("Password: ", false).unwrap_or_default();
            cfg.set_password(&pw);
            Connection::connect(cfg)
        }
        other => other,
    }
}

fn init_main(o: &InitOptions) -> i32 {
    let mut cfg = match conn_config(&o.connection) {
        Ok(c) => c,
        Err(m) => {
            err_line(&m);
            err_line("could not create connection for initialization");
            return 1;
        }
    };
    let mut conn = match connect_prompting(&mut cfg) {
        Ok(c) => c,
        Err(e) => {
            err_line(&e.to_string());
            err_line("could not create connection for initialization");
            return 1;
        }
    };
    let stderr = std::io::stderr();
    let mut err = stderr.lock();
    // Ctrl-C (or SIGTERM) cancels the running statement on the server, as pgbench's
    // handler does, and no later statement starts: the initialization fails (exit 1).
    let stop = StopFlag::new();
    let _watcher = SignalWatcher::install(stop.clone()).ok();
    let cfg = &cfg;
    let connect = move || Connection::connect(cfg).map_err(|e| e.to_string());
    if let Some(w) = &o.workload {
        return load_workload(
            &mut conn,
            w,
            o.init_jobs,
            &connect,
            stop.as_atomic(),
            &mut err,
        );
    }
    let result = initialize_jobs(&mut conn, o, &connect, stop.as_atomic(), &mut err);
    match result {
        Ok(()) => 0,
        Err(e) => {
            let _ = err.write_all(e.render().as_bytes());
            e.exit_code()
        }
    }
}

/// `-i --workload`: the pack's loader over `--init-jobs` connections.
fn load_workload(
    conn: &mut Connection,
    w: &crate::WorkloadInit,
    init_jobs: u32,
    connect: &pgsurge_workload::load::Connect<'_>,
    cancel: &std::sync::atomic::AtomicBool,
    err: &mut dyn Write,
) -> i32 {
    let mut pack = match pgsurge_workload::Pack::resolve(&w.pack) {
        Ok(p) => p,
        Err(e) => {
            err_line(&e.to_string());
            return 1;
        }
    };
    for (name, value) in &w.variables {
        pack.set_parameter(name, value);
    }
    let opts = pgsurge_workload::load::LoadOptions {
        scale: w.scale,
        jobs: usize::try_from(init_jobs).unwrap_or(1),
        seed: w.seed,
    };
    match pgsurge_workload::load::load(&pack, conn, connect, opts, err, Some(cancel)) {
        Ok(()) => 0,
        Err(e) => {
            err_line(&e.to_string());
            1
        }
    }
}

/// `-i`: [`pgsurge_init::initialize_parallel`] with `--init-jobs` connections (1: pgbench's
/// serial steps) opened like the first one, and `cancel` raised by Ctrl-C.
fn initialize_jobs(
    conn: &mut Connection,
    o: &InitOptions,
    connect: &pgsurge_init::Connect<'_>,
    cancel: &std::sync::atomic::AtomicBool,
    err: &mut dyn Write,
) -> Result<(), pgsurge_init::InitError> {
    use std::io::IsTerminal;
    let clock = pgsurge_init::MonotonicClock::new();
    let ctx = pgsurge_init::InitContext {
        clock: &clock,
        stderr_is_tty: std::io::stderr().is_terminal(),
        cancel: Some(cancel),
    };
    let jobs = usize::try_from(o.init_jobs).unwrap_or(1);
    pgsurge_init::initialize_parallel(conn, &o.spec, Some((jobs, connect)), err, &ctx)
}

/// pgbench's setup steps 3–8 on the setup connection: banner, `--debug` line, scale
/// and partition detection (builtin scripts only), vacuum. Returns what the run needs
/// to know about the database; `Err(code)` after printing pgbench's messages.
fn setup(o: &BenchOptions, cfg: &mut ConnConfig) -> Result<DatabaseInfo, i32> {
    let mut conn = match connect_prompting(cfg) {
        Ok(c) => c,
        Err(e) => {
            err_line(&e.to_string());
            err_line("could not create connection for setup");
            return Err(1);
        }
    };
    let server_version = conn.parameter("server_version").map(str::to_string);
    // With `--json=-` stdout carries the JSON document only; the banner goes with the
    // text report, to stderr.
    let json_to_stdout = o
        .extensions
        .json
        .as_deref()
        .is_some_and(|p| p.as_os_str() == "-");
    print_banner(&conn, server_version.as_deref(), json_to_stdout);
    if o.debug_level > 0 {
        let _ = std::io::stdout().flush();
        let (name, count) = match o.limit {
            RunLimit::Transactions(n) => ("nxacts", n),
            RunLimit::Duration(n) => ("duration", n),
        };
        eprintln!(
            "pgbench: pghost: {} pgport: {} nclients: {} {name}: {count} dbName: {}",
            conn.host(),
            conn.port(),
            o.clients,
            conn.dbname()
        );
    }
    let mut info = DatabaseInfo {
        scale: i64::from(o.scale),
        server_version,
        ..DatabaseInfo::default()
    };
    if let Some(pack) = &o.workload {
        match pgsurge_workload::read_scale(pack, &mut conn) {
            Ok(scale) => {
                if o.scale_given && i64::from(o.scale) != scale {
                    let _ = std::io::stdout().flush();
                    eprintln!(
                        "pgbench: warning: scale option ignored, using the scale of workload {} ({scale})",
                        pack.name()
                    );
                }
                info.scale = scale;
            }
            Err(e) => {
                err_line(&e.to_string());
                if matches!(e, pgsurge_workload::WorkloadError::NotLoaded { .. }) {
                    let arg = match &pack.origin {
                        pgsurge_workload::Origin::Dir(d) => d.display().to_string(),
                        pgsurge_workload::Origin::Builtin => pack.name().to_string(),
                    };
                    eprintln!("pgbench: hint: load it with: pgsurge bench --workload {arg} -i");
                }
                return Err(1);
            }
        }
    }
    // pgbench looks at the tables only for its builtin scripts (custom scripts get -s).
    if o.internal_script_used {
        let found = match layout::detect(&mut conn) {
            Ok(found) => found,
            Err(e) => {
                report_layout_error(&e, conn.dbname());
                return Err(1);
            }
        };
        info.scale = found.scale;
        info.partition_method = found.partition_method;
        info.partitions = found.partitions;
        if o.scale_given {
            let _ = std::io::stdout().flush();
            eprintln!(
                "pgbench: warning: scale option ignored, using count from pgbench_branches table ({})",
                info.scale
            );
        }
    }
    // A pack's tables are not pgbench's: only runs with a builtin script vacuum them.
    if !o.no_vacuum && (o.workload.is_none() || o.internal_script_used) {
        vacuum(&mut conn, o.vacuum_all);
    }
    conn.close();
    Ok(info)
}

/// `pgbench (18.0)`, or `pgbench (18.0, server 17.11)` when the versions differ.
fn print_banner(conn: &Connection, server_version: Option<&str>, to_stderr: bool) {
    let mut out: Box<dyn Write> = if to_stderr {
        Box::new(std::io::stderr().lock())
    } else {
        Box::new(std::io::stdout().lock())
    };
    let _ = if conn.server_version_num() == CLIENT_VERSION_NUM {
        writeln!(out, "pgbench ({CLIENT_VERSION})")
    } else {
        let server = server_version.map(str::to_string).unwrap_or_else(|| {
            let n = conn.server_version_num();
            format!("{}.{}", n / 10000, n % 10000)
        });
        writeln!(out, "pgbench ({CLIENT_VERSION}, server {server})")
    };
}

/// pgbench's `error:` line for a detection failure, and its hint to initialize.
fn report_layout_error(e: &LayoutError, dbname: &str) {
    err_line(&e.to_string());
    if e.suggests_init() {
        let _ = std::io::stdout().flush();
        eprintln!(
            "pgbench: hint: Perhaps you need to do initialization (\"pgbench -i\") in database \"{dbname}\"."
        );
    }
}

/// Vacuums the small tables and empties the history (`-v`: accounts too), ignoring
/// failures as pgbench does.
fn vacuum(conn: &mut Connection, vacuum_all: bool) {
    let mut e = std::io::stderr();
    let _ = std::io::stdout().flush();
    let _ = write!(e, "starting vacuum...");
    for sql in [
        "vacuum pgbench_branches",
        "vacuum pgbench_tellers",
        "truncate pgbench_history",
    ] {
        try_execute(conn, sql);
    }
    let _ = writeln!(e, "end.");
    if vacuum_all {
        let _ = write!(e, "starting vacuum pgbench_accounts...");
        try_execute(conn, "vacuum analyze pgbench_accounts");
        let _ = writeln!(e, "end.");
    }
}

/// pgbench's `tryExecuteStatement`: failures are reported and ignored.
fn try_execute(conn: &mut Connection, sql: &str) {
    if let Err(e) = conn.execute(sql) {
        err_line(e.pq_message().trim_end());
        let _ = std::io::stdout().flush();
        eprintln!("pgbench: detail: (ignoring this error and continuing anyway)");
    }
}

/// Setup for an in-process run (what `pgsurge bench` does before running): setup
/// connection, version banner, scale and partition detection, vacuum — printing pgbench's
/// messages — and the resulting [`RunSpec`]. `Err` holds the exit code pgbench would use
/// (the messages are already printed).
pub fn prepare(o: BenchOptions) -> Result<RunSpec, i32> {
    let mut cfg = match conn_config(&o.connection) {
        Ok(c) => c,
        Err(m) => {
            err_line(&m);
            err_line("could not create connection for setup");
            return Err(1);
        }
    };
    let database = setup(&o, &mut cfg)?;
    Ok(o.into_run_spec(cfg, database))
}

/// pgbench checks `-c` plus the three standard streams against the open-files limit;
/// a pgsurge run also holds a poll set per thread and its output files, and takes
/// timers and, on a stop, cancel sockets where it can. Counted here, once everything
/// before the run is open, so that a run that cannot fit fails now with pgbench's
/// message instead of aborting in a thread.
fn make_room_for_run(spec: &RunSpec) -> Result<(), crate::rlimit::RlimitError> {
    let clients = u64::from(spec.clients);
    let threads = u64::from(spec.threads.min(spec.clients).max(1));
    let logs = if spec.output.txn_log.is_some() {
        threads
    } else {
        0
    };
    let hdr_log = u64::from(spec.output.hdr_log.is_some());
    let needed = crate::rlimit::open_descriptors() + clients + threads + logs + hdr_log;
    // Two timers per thread (wake-ups, the -T end) and up to eight cancel sockets.
    let wanted = needed + 2 * threads + 8;
    crate::rlimit::ensure_run_files(needed, wanted)
}

/// `--cpus`: pins this thread, so the engine's threads, which inherit the CPUs of the
/// thread that starts them, run there too.
fn pin_client(o: &BenchOptions) -> Result<(), ()> {
    match &o.extensions.cpus {
        Some(cpus) => cpus.pin_current_thread().map_err(|e| {
            err_line(&format!("cannot run on CPUs {cpus}: {e}"));
        }),
        None => Ok(()),
    }
}

fn bench(o: BenchOptions, store: Option<StoreHooks<'_>>) -> i32 {
    if let Some(&name) = o.options_given.iter().find(|n| UNSUPPORTED.contains(n)) {
        err_line(&format!("option {name} is not supported yet"));
        return 1;
    }
    // The live page's address is bound before anything else starts: a bad one is
    // an error now.
    let Ok(mut live) = pgsurge_live::RunView::start(o.extensions.live.as_deref())
        .map_err(|e| err_line(&e.to_string()))
    else {
        return 1;
    };
    let store_to = o.extensions.store.clone();
    let set = o.extensions.set.clone();
    let group = o.extensions.group.clone();
    if let Some(location) = &store_to {
        let Some(hooks) = store else {
            err_line("--store is not available in this program");
            return 1;
        };
        // The store is checked before anything connects: a store that cannot take the
        // run fails now, not after the whole benchmark.
        if let Err(e) = (hooks.check)(location.as_deref()) {
            err_line(&e);
            return 1;
        }
    }
    // The JSON document's path is opened before anything runs: a path that cannot be
    // written fails now, not after the whole benchmark.
    let mut json_out = match o.extensions.json.as_deref() {
        Some(path) if path.as_os_str() != "-" => match pgsurge_results::json::open_json(path) {
            Ok(out) => Some(out),
            Err(e) => {
                err_line(&e.to_string());
                return 1;
            }
        },
        _ => None,
    };
    if pin_client(&o).is_err() {
        return 1;
    }
    let workload = o.workload.clone().zip(o.extensions.workload.clone());
    let wanted = wanted(&o.extensions);
    let spec = match prepare(o) {
        Ok(s) => s,
        Err(code) => return code,
    };
    // The pack's metrics are read on the server just before and just after the run.
    let before = match workload
        .as_ref()
        .map(|w| workload_snapshot(&spec, &w.0))
        .transpose()
    {
        Ok(s) => s,
        Err(code) => return code,
    };
    let stop = StopFlag::new();
    if let Err(e) = make_room_for_run(&spec) {
        err_line(&e.message);
        if let Some(h) = e.hint {
            let _ = std::io::stdout().flush();
            eprintln!("pgbench: hint: {h}");
        }
        return 1;
    }
    let _watcher = SignalWatcher::install(stop.clone()).ok();
    let Ok(probes) = probes(&spec, wanted) else {
        return 1;
    };
    // With --store, every interval and its histogram is kept for the store.
    let mut samples: Vec<(IntervalSample, LatencyHistogram)> = Vec::new();
    let keep = store_to.is_some().then_some(&mut samples);
    let outcome = run_shown(&spec, &stop, keep, live.as_mut(), workload.as_ref());
    let mut result = match outcome {
        Ok(r) => r,
        Err(EngineError::ClientConnection { message, .. }) => {
            if !message.is_empty() {
                err_line(&message);
            }
            return 1;
        }
        // pgbench exits at once with status 2, printing no report.
        Err(e @ EngineError::ExitOnAbort { .. }) => {
            err_line(&e.to_string());
            return 2;
        }
        Err(e) => {
            err_line(&e.to_string());
            return 1;
        }
    };
    // With `--json=-` the JSON document is stdout's only content (so `| jq` works);
    // the text report then goes to stderr.
    let json_on_stdout = spec
        .output
        .json
        .as_deref()
        .is_some_and(|p| p.as_os_str() == "-");
    let metrics = workload_metrics(
        &spec,
        workload.as_ref().map(|w| &w.0).zip(before.as_ref()),
        &mut result,
    )
    .map(|lines| lines + &after_report(probes, &spec, &mut result));
    write_report(&result, metrics.as_deref().unwrap_or(""), json_on_stdout);
    let mut output_failed = metrics.is_err();
    for e in &result.output_errors {
        err_line(e);
        output_failed = true;
    }
    if spec.output.json.is_some() {
        let written = match json_out.take() {
            Some(out) => pgsurge_results::json::write_json_into(&result, out),
            None => pgsurge_results::json::write_json_to(&result, &mut std::io::stdout()),
        };
        if let Err(e) = written {
            err_line(&e.to_string());
            output_failed = true;
        }
    }
    let mut code = 0;
    if let (Some(location), Some(StoreHooks { write, .. })) = (&store_to, store) {
        let dbname = spec.conn.dbname().to_string();
        let request = StoreRequest {
            location: location.as_deref(),
            set: set.as_deref(),
            group: group.as_deref(),
            command_line: stored_command_line(&spec, &dbname, workload.as_ref()),
            dbname: &dbname,
        };
        code = store_run(write, &request, &result, &samples);
    }
    if result.aborted {
        err_line("Run was aborted; the above results are incomplete.");
        code = 2;
    }
    if let Some(StopCause::Signal(sig)) = stop.cause() {
        err_line(&format!(
            "Run was interrupted by {}; the above results cover the transactions completed before it.",
            signal_name(sig)
        ));
        code = 2;
    }
    // An output that was asked for and not written is a failure, never exit 0.
    if output_failed && code == 0 {
        code = 1;
    }
    code
}

/// Runs `spec`, each interval kept in `samples` (`--store`) and shown on `live`'s page
/// (`--live`, where the run is called by its command line: no password, connection
/// options only), which is told how the run ended.
fn run_shown(
    spec: &RunSpec,
    stop: &StopFlag,
    mut samples: Option<&mut Vec<(IntervalSample, LatencyHistogram)>>,
    mut live: Option<&mut pgsurge_live::RunView>,
    workload: Option<&(pgsurge_workload::Pack, String)>,
) -> Result<RunResult, EngineError> {
    let watched = samples.is_some() || live.is_some();
    let sampler = live.as_mut().map(|v| {
        let line = stored_command_line(spec, spec.conn.dbname(), workload);
        v.started(&line, spec.duration_s().map_or(0, u64::from));
        live_sampler(spec, v)
    });
    let latest = sampler.as_ref().map(Sampler::latest);
    let mut keep = |s: &IntervalSample, h: &LatencyHistogram| {
        if let Some(kept) = samples.as_mut() {
            kept.push((s.clone(), h.clone()));
        }
        if let (Some(v), Some(latest)) = (live.as_mut(), latest.as_ref()) {
            v.interval(s, h, latest.take());
        }
    };
    let hooks = RunHooks {
        stop: stop.clone(),
        on_interval: watched.then_some(&mut keep as &mut pgsurge_engine::IntervalHook<'_>),
        ..Default::default()
    };
    let outcome = run(spec, hooks);
    // What it sampled is shown, not kept: the run's result is the engine's alone.
    drop(sampler.map(Sampler::finish));
    if let Some(v) = live.as_mut() {
        let error = outcome.as_ref().err().map(ToString::to_string);
        v.ended(
            outcome
                .as_ref()
                .map_err(|_| error.as_deref().unwrap_or_default()),
        );
    }
    outcome
}

/// `--live`: the server's waits, sampled on a session of their own beside the run, and
/// its host's figures when it runs on this machine (said on the page when not), for
/// the page alone.
fn live_sampler(spec: &RunSpec, view: &mut pgsurge_live::RunView) -> Sampler {
    let host = if spec.conn.is_local() {
        HostSource::Local
    } else {
        let why = "not sampled: the server is not on this machine (bench --live reads the \
                   host's figures from this machine's /proc only)";
        view.host_unsampled(why);
        HostSource::None(why.into())
    };
    Sampler::start(SamplerConfig {
        os: matches!(host, HostSource::Local),
        host,
        client: false,
        pg: Some((spec.conn.clone(), spec.conn.dbname().to_string())),
        interval: 1.0,
        devices: Vec::new(),
    })
}

/// `--reconnect`: the stretch without a commit around the first lost connection (the
/// longest of the run when none was lost) and the recovery after it, and
/// with `--check-commits` the acknowledged commits the server lacks, put into `result`
/// (for `--json`) and returned as the report's lines (none without it). A check that
/// cannot be made is one of the run's output errors.
fn failure_cost(check_commits: Option<&str>, spec: &RunSpec, result: &mut RunResult) -> String {
    let Some(t) = result.commit_timeline.as_ref() else {
        return String::new();
    };
    let mut cost = pgsurge_results::failure::FailureCost {
        outage: pgsurge_faults::outage(t, None, &[]),
        ..Default::default()
    };
    let mut lines = cost.outage.as_ref().map(|o| o.render()).unwrap_or_default();
    if let Some(table) = check_commits {
        match pgsurge_faults::lost_commits(&spec.conn, table, &t.acknowledged) {
            Ok(c) => {
                cost.acknowledged_checked = Some(c.checked);
                cost.acknowledged_lost = Some(c.lost);
                lines.push_str(&format!(
                    "acknowledged commits checked = {}\nacknowledged commits lost = {}\n",
                    c.checked, c.lost
                ));
            }
            Err(e) => result.output_errors.push(format!(
                "--check-commits: the acknowledged commits were not checked: {e}"
            )),
        }
    }
    result.failure_cost = Some(cost);
    lines
}

/// `--costs`: the run's costs, put into `result` (for `--json`) and returned as the
/// report's lines (none without `--costs`).
fn txn_costs(probe: Option<pgsurge_observe::costs::CostProbe>, result: &mut RunResult) -> String {
    let Some(probe) = probe else {
        return String::new();
    };
    let costs = probe.finish(result.totals.transactions);
    let lines = costs.render();
    result.txn_costs = Some(costs);
    lines
}

/// The lines after the pack's metrics: `--costs`, `--reconnect`'s failure cost and
/// `--profile`, each put into `result` too.
fn after_report(probes: Probes, spec: &RunSpec, result: &mut RunResult) -> String {
    let (costs, profiler, check_commits, lag) = probes;
    let failure = failure_cost(check_commits.as_deref(), spec, result);
    txn_costs(costs, result) + &failure + &replica_reads(lag, result) + &profiles(profiler, result)
}

/// `--replica-file`: the reads on a standby and the stale ones, with the standbys'
/// lag sampled beside the run, put into `result` (for `--json`) and returned as the
/// report's lines (none without it).
fn replica_reads(lag: Option<LagSampler>, result: &mut RunResult) -> String {
    let lag = lag.map(LagSampler::finish).unwrap_or_default();
    let Some(reads) = result.replica_reads.as_mut() else {
        return String::new();
    };
    reads.lag = lag;
    reads.render()
}

/// `--costs` and `--profile`, started just before the run; `Err` after the error line.
/// With the `--check-commits` table, looked at after the run.
/// With `--replica-file`, the standbys' lag sampled on the primary.
type Probes = (
    Option<CostProbe>,
    Option<Profiler>,
    Option<String>,
    Option<LagSampler>,
);
/// `--costs`, `--profile` and `--check-commits` as asked for.
type Wanted = (bool, Option<u32>, Option<String>);
fn wanted(e: &crate::options::Extensions) -> Wanted {
    (e.costs, e.profile_hz, e.check_commits.clone())
}
fn probes(spec: &RunSpec, wanted: Wanted) -> Result<Probes, ()> {
    let (costs, profile_hz, check_commits) = wanted;
    let costs = costs_probe(spec, costs)?;
    let profiler = profile_hz.and_then(|hz| start_profiler(spec, hz));
    // The lag is read where the standbys stream from: the server not in recovery.
    let lag = (!spec.replica_scripts.is_empty()).then(|| {
        LagSampler::start(
            &spec
                .conn
                .with_target_session_attrs(pgsurge_wire::TargetSessionAttrs::Primary),
        )
    });
    Ok((costs, profiler, check_commits, lag))
}

/// `--profile`: the recording of the server's and the client's stacks, started just
/// before the run; `None` (after a warning: the run goes on without it) when it cannot
/// be taken.
fn start_profiler(spec: &RunSpec, hz: u32) -> Option<pgsurge_observe::profile::Profiler> {
    let request = pgsurge_observe::profile::ProfileRequest {
        frequency_hz: hz,
        server: true,
        client: true,
        off_cpu: false,
    };
    match pgsurge_observe::profile::Profiler::start(&spec.conn, request) {
        Ok(p) => Some(p),
        Err(e) => {
            let _ = std::io::stdout().flush();
            eprintln!("pgbench: warning: --profile: no profile is taken: {e}");
            None
        }
    }
}

/// `--profile`: the profiles into `result` (for `--store`) and their hottest functions
/// as the report's lines; what could not be profiled goes to stderr.
fn profiles(
    profiler: Option<pgsurge_observe::profile::Profiler>,
    result: &mut RunResult,
) -> String {
    let Some(profiler) = profiler else {
        return String::new();
    };
    let outcome = profiler.finish();
    for f in &outcome.failures {
        let _ = std::io::stdout().flush();
        eprintln!("pgbench: warning: --profile: {f}");
    }
    let lines: String = outcome.profiles.iter().map(|p| p.render(10)).collect();
    result.profiles = outcome.profiles;
    lines
}

/// `--costs`: a probe started on a monitoring session of its own, just before the
/// run (after the setup and the vacuum); `Err` after the error line.
fn costs_probe(
    spec: &RunSpec,
    wanted: bool,
) -> Result<Option<pgsurge_observe::costs::CostProbe>, ()> {
    if !wanted {
        return Ok(None);
    }
    pgsurge_observe::costs::CostProbe::start(&spec.conn, spec.conn.dbname())
        .map(Some)
        .map_err(|e| {
            err_line(&format!("--costs: {e}"));
        })
}

/// `--store`: writes the run and prints where it went; the exit status (1 when it
/// could not be stored).
fn store_run(
    write: &StoreRun<'_>,
    request: &StoreRequest<'_>,
    result: &RunResult,
    samples: &[(IntervalSample, LatencyHistogram)],
) -> i32 {
    match write(request, result, samples) {
        Ok(line) => {
            let _ = std::io::stdout().flush();
            eprintln!("{line}");
            0
        }
        Err(e) => {
            err_line(&format!("could not store the run: {e}"));
            1
        }
    }
}

/// pgbench's report, then the pack's metric lines, on stdout (stderr when stdout
/// carries the JSON document).
fn write_report(result: &RunResult, metrics: &str, to_stderr: bool) {
    let mut out: Box<dyn Write> = if to_stderr {
        Box::new(std::io::stderr().lock())
    } else {
        Box::new(std::io::stdout().lock())
    };
    let _ = write_pgbench_report(result, &ReportOptions::from_result(result), &mut out);
    let _ = out.write_all(metrics.as_bytes());
    let _ = out.flush();
}

/// The pack's metrics for a finished run, put into `result` (for `--json`) and
/// returned as the report's lines (none without `--workload`); `Err` after the error
/// line when they cannot be read.
fn workload_metrics(
    spec: &RunSpec,
    workload: Option<(
        &pgsurge_workload::Pack,
        &pgsurge_workload::metrics::Snapshot,
    )>,
    result: &mut RunResult,
) -> Result<String, ()> {
    let Some((pack, before)) = workload else {
        return Ok(String::new());
    };
    let after = workload_snapshot(spec, pack).map_err(|_| ())?;
    let values = pgsurge_workload::run::record_metrics(pack, before, &after, spec, result);
    Ok(pgsurge_workload::metrics::render(&values))
}

/// The command line stored with a run: pgbench's, except that a workload pack's scripts
/// and parameter defaults are `pgsurge bench --workload=NAME` (its scripts' names are
/// not files).
fn stored_command_line(
    spec: &RunSpec,
    dbname: &str,
    workload: Option<&(pgsurge_workload::Pack, String)>,
) -> String {
    match workload {
        None => spec.pgbench_command_line(dbname),
        Some((pack, arg)) => pgsurge_workload::run::command_line(pack, arg, spec, dbname),
    }
}

/// Reads the pack's metrics on a connection of its own; `Err` is the exit code after
/// the error line.
fn workload_snapshot(
    spec: &RunSpec,
    pack: &pgsurge_workload::Pack,
) -> Result<pgsurge_workload::metrics::Snapshot, i32> {
    pgsurge_workload::run::snapshot_at(pack, &spec.conn).map_err(|e| {
        err_line(&e.to_string());
        1
    })
}

/// Options parsed by `pgsurge-args` that the engine does not implement (none today).
const UNSUPPORTED: &[&str] = &[];
