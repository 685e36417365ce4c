//! One benchmark run, in-process, in named phases:
//!
//! 1. [`prepare_threads`]: the [`Plan`], seeding of every stream in pgbench's order,
//!    clients dealt to threads, each thread's statistics and `-l` log (file errors stop
//!    the run here, before any connection);
//! 2. [`connect_thread`] (in each driver thread): open the thread's connections, then
//!    wait for the others so the benchmark starts together;
//! 3. [`drive_thread`]: the driver loop until the thread's clients are done;
//! 4. wind down: [`finish_thread_log`] in each thread, and on the main thread
//!    [`IntervalSampler`] (progress lines, `--hdr-log`, the caller's interval hook) until
//!    every thread has finished;
//! 5. [`merge`]: the threads' statistics into one [`RunResult`].
//!
//! Setup that talks to the server before the run (banner, scale detection, vacuum) is
//! the caller's (`pgsurge bench` does it the pgbench way, campaigns their own way);
//! this module prints only what pgbench prints while running (progress lines, client
//! errors).

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Condvar, Mutex};
use std::time::Duration;

use pgsurge_init::PartitionMethod;
use pgsurge_results::progress::{format_progress_line, ProgressOptions};
use pgsurge_results::progress_counters::{IntervalSample, ProgressAggregator, SharedCounters};
use pgsurge_results::result::{encode_histogram, RunInfo, RunOptions, RunResult, ScriptInfo};
use pgsurge_results::stats::{StatsConfig, ThreadStats};
use pgsurge_results::txnlog::{log_file_path, AggregateLogWriter, LogOptions, TxnLogWriter};
use pgsurge_results::{HdrIntervalLogWriter, LatencyHistogram};
use pgsurge_script::{Prng, SeedStreams, Variables};
use pgsurge_wire::ErrorClass;

use crate::client::{Client, Pacing};
use crate::clock::RunClock;
use crate::distribute::clients_per_thread;
use crate::driver::{connect_all, run_loop, take_open, DriverCtx, LoopEnd, Slot, ThreadStreams};
use crate::plan::{build_plan, Plan};
use crate::recorder::{ThreadLog, ThreadRecorder};
use crate::script_host::ClientScript;
use crate::spec::{Mix, RunSpec};
use crate::start_at::{generator_info, StartGate};
use crate::stderr::{DiagnosticSink, SinkGuard};
use crate::stop::StopFlag;
use crate::throttle::ThrottleSchedule;
use crate::EngineError;

/// Receives an interval's sample and the latency histogram of its successful
/// transactions (see [`RunHooks::on_interval`]).
pub type IntervalHook<'a> = dyn FnMut(&IntervalSample, &LatencyHistogram) + 'a;

/// Callbacks and controls for an in-process run.
#[derive(Default)]
pub struct RunHooks<'a> {
    /// Raise to stop the run: clients end where they are (statements under way are
    /// cancelled), and the result covers the transactions completed before.
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

/// Initial variables of every client: `-D` values (as strings), then the automatic
/// variables unless `-D` defined them, and with `--reconnect` `:txn_seq` (see
/// [`crate::client::ScriptHost::set_txn_seq`]).
fn client_variables(spec: &RunSpec, seeds: &SeedStreams) -> Result<Vec<Variables>, EngineError> {
    let mut base = Variables::new();
    for (name, value) in &spec.variables {
        base.set_string("option", name, value)
            .map_err(|e| EngineError::Script(e.to_string()))?;
    }
    let mut out = Vec::with_capacity(spec.clients as usize);
    for id in 0..spec.clients as usize {
        let mut vars = base.clone();
        let autos: [(&str, i64); 4] = [
            ("scale", spec.database.scale),
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
        if spec.errors.reconnect {
            vars.set_int("option", crate::script_host::TXN_SEQ, 0)
                .map_err(|e| EngineError::Script(e.to_string()))?;
        }
        out.push(vars);
    }
    Ok(out)
}

/// The spec's options in the form the result records, and from which the recorder, the
/// logs and the progress lines take their flags.
pub fn run_options(spec: &RunSpec) -> RunOptions {
    let out = &spec.output;
    let log = out.txn_log.as_ref();
    RunOptions {
        query_mode: spec.query_mode,
        clients: spec.clients,
        threads: spec.threads,
        max_tries: spec.max_tries,
        transactions_per_client: spec.transactions_per_client(),
        duration_s: spec.duration_s(),
        rate_tps: spec.rate_tps,
        latency_limit_us: spec.latency_limit_us,
        connect_per_transaction: spec.connect_per_transaction,
        progress_s: out.progress.map(|p| p.interval_s),
        progress_timestamp: out.progress.is_some_and(|p| p.timestamp),
        failures_detailed: spec.errors.failures_detailed,
        reconnect: spec.errors.reconnect,
        report_per_command: out.per_command,
        log: log.is_some(),
        sampling_rate: log.and_then(|l| l.sampling_rate),
        aggregate_interval_s: log.and_then(|l| l.aggregate_interval_s),
        percentiles: out.percentiles.clone().unwrap_or_default(),
        random_seed: Some(spec.random_seed),
    }
}

/// What a driver thread owns: its clients, random streams and recorder.
struct ThreadSetup {
    slots: Vec<Slot<ClientScript>>,
    streams: ThreadStreams,
    recorder: ThreadRecorder,
}

/// Everything built before the first connection.
struct PreparedRun {
    plan: Plan,
    options: RunOptions,
    clock: RunClock,
    /// Holds the clients until `--start-at` (open without it).
    gate: StartGate,
    /// Run clock time when preparation ended (the `-T` deadline counts from it).
    start_time: i64,
    start_epoch_us: i64,
    /// `-T` deadline on the run clock; 0 for a run limited by transactions.
    end_us: i64,
    /// Whether the main thread samples intervals (and the threads keep shared counters).
    want_intervals: bool,
    stats_config: StatsConfig,
    threads: Vec<ThreadSetup>,
    /// Each thread's live counters, read by the interval sampler.
    counters: Vec<Arc<SharedCounters>>,
}

/// Phase 1: plan, seeds, variables, and each thread's clients, statistics and log.
fn prepare_threads(spec: &RunSpec, hooks: &RunHooks<'_>) -> Result<PreparedRun, EngineError> {
    let plan = build_plan(spec)?;
    let options = run_options(spec);
    let scripts = Arc::new(spec.scripts.iter().map(|s| s.script.clone()).collect());
    let nclients = spec.clients as usize;
    let ranges = clients_per_thread(nclients, spec.threads as usize);
    let nthreads = ranges.len();
    // pgbench draws :default_seed only when -D did not define it.
    let draw_default_seed = !spec.variables.iter().any(|(k, _)| k == "default_seed");
    let seeds =
        SeedStreams::with_default_seed(spec.random_seed, nclients, nthreads, draw_default_seed);
    let mut vars = client_variables(spec, &seeds)?.into_iter();

    let clock = RunClock::new();
    let start_time = clock.now();
    let start_epoch_us = clock.to_epoch_us(start_time);
    // `--start-at`: the threads connect, then wait for the instant; -T counts from it.
    let gate = StartGate::new(&spec.generator, &clock);
    let end_us = spec
        .duration_s()
        .map_or(0, |secs| gate.end_of_duration(start_time, secs));
    let out = &spec.output;
    // The JSON document carries the per-interval series, so --json collects it too
    // (progress lines are still printed only with -P).
    let want_intervals = out.progress.is_some()
        || hooks.on_interval.is_some()
        || out.hdr_log.is_some()
        || out.json.is_some();
    let interval_hists = out.percentiles.is_some()
        || out.hdr_log.is_some()
        || out.json.is_some()
        || hooks.on_interval.is_some();
    // Run-wide histograms only when something reads them (percentile lines, the JSON
    // document, library callers); pgbench's report does not.
    let histograms = out.percentiles.is_some() || out.json.is_some() || hooks.on_interval.is_some();
    let script_commands = plan.scripts.iter().map(|s| s.commands.len()).collect();
    let stats_config = StatsConfig::for_run(&options, histograms, script_commands);
    let log_options = LogOptions::for_run(&options);

    let weights: Vec<i64> = plan.scripts.iter().map(|s| s.weight).collect();
    let mut threads = Vec::with_capacity(nthreads);
    let mut counters = Vec::new();
    for (thread, range) in ranges.iter().enumerate() {
        let thread_seeds = &seeds.threads[thread];
        let stats = if want_intervals {
            let live = Arc::new(SharedCounters::new(interval_hists, plan.scripts.len()));
            counters.push(Arc::clone(&live));
            ThreadStats::with_shared(&stats_config, live)
        } else {
            ThreadStats::new(&stats_config)
        };
        let log = match &out.txn_log {
            None => None,
            Some(spec_log) => {
                let path = log_file_path(spec_log.prefix.as_deref(), std::process::id(), thread);
                let setup_err =
                    |e: pgsurge_results::ResultsError| EngineError::Setup(e.to_string());
                Some(match spec_log.aggregate_interval_s {
                    Some(secs) => ThreadLog::Aggregate(
                        AggregateLogWriter::create(&path, log_options, secs, start_epoch_us)
                            .map_err(setup_err)?,
                    ),
                    None => ThreadLog::PerTxn {
                        writer: TxnLogWriter::create(&path, log_options).map_err(setup_err)?,
                        sampling_rate: spec_log.sampling_rate.unwrap_or(0.0),
                        sample: thread_seeds.sample,
                    },
                })
            }
        };
        // Each client's deck and think times draw from a stream of its own, seeded
        // from its thread's script-choice stream in client order: the same seed deals
        // each client the same cards, however its thread interleaves the clients.
        let mut choose = thread_seeds.choose;
        let paced = plan.paced();
        let slots = range
            .clone()
            .map(|id| {
                let host = ClientScript::new(
                    Arc::clone(&scripts),
                    vars.next().unwrap_or_default(),
                    seeds.clients[id],
                );
                let client = Client::new(id, host);
                Slot::new(if paced {
                    client.with_pacing(Pacing::new(
                        Prng::seed(choose.next_u64()),
                        &weights,
                        plan.config.mix == Mix::Deck,
                    ))
                } else {
                    client
                })
            })
            .collect();
        let streams = ThreadStreams {
            choose,
            throttle: thread_seeds.throttle,
        };
        let recorder = ThreadRecorder::new(stats, log, clock);
        let recorder = if spec.errors.reconnect {
            recorder.with_commit_timeline()
        } else {
            recorder
        };
        threads.push(ThreadSetup {
            slots,
            streams,
            recorder,
        });
    }
    Ok(PreparedRun {
        plan,
        options,
        clock,
        gate,
        start_time,
        start_epoch_us,
        end_us,
        want_intervals,
        stats_config,
        threads,
        counters,
    })
}

/// What the driver threads share while they run.
struct Shared<'a> {
    spec: &'a RunSpec,
    /// Each client's standby connection (`--replica-file`): `spec.conn` asking for a
    /// server in recovery.
    replica_conn: Option<pgsurge_wire::ConnConfig>,
    plan: &'a Plan,
    clock: &'a RunClock,
    gate: &'a StartGate,
    /// The caller's stop request.
    stop: &'a StopFlag,
    /// Raised by a thread that met `--exit-on-abort`: the others stop too.
    halt: StopFlag,
    /// Every thread waits here after connecting, so the benchmark starts together.
    barrier: Barrier,
    /// Some thread's initial connections failed.
    connect_failed: AtomicBool,
    /// Threads that have left their loop (the sampler stops when all have).
    finished: AtomicUsize,
    /// Where threads whose clients are done wait for the others before disconnecting.
    settled: Settled,
    nthreads: usize,
    end_us: i64,
}

/// How a driver thread ended without statistics to merge.
enum ThreadFailure {
    /// Its (or another thread's) initial connections failed; the message is complete,
    /// or empty when another thread reports it.
    Connect(String, ErrorClass),
    /// A client of this thread aborted under `--exit-on-abort`.
    ExitOnAbort(usize),
    /// The thread panicked (the panic hook printed why).
    Panicked,
    /// The thread could not be started.
    Spawn(String),
}

/// What a driver thread hands to [`merge`].
struct ThreadOutput {
    stats: ThreadStats,
    bench_start: i64,
    /// When its clients were done and their connections closed.
    bench_end: i64,
    aborted: bool,
    /// A client aborted with its connection lost or not made ([`ErrorClass::Connection`]).
    connection_lost: bool,
    loop_end: LoopEnd,
    log_error: Option<String>,
    /// `--reconnect`: commits per bucket.
    commits: Option<Vec<u32>>,
    /// `--reconnect`: the transactions its clients were told were committed.
    acks: Vec<pgsurge_results::failure::AckRange>,
    /// `--reconnect`: when its first transaction failed with its connection lost.
    first_lost: Option<i64>,
    /// `--replica-file`: reads and stale reads per second.
    replica_reads: Vec<[u32; 2]>,
}

/// Phase 2: open the thread's connections (unless `-C`), then wait for every thread.
fn connect_thread(
    shared: &Shared<'_>,
    slots: &mut [Slot<ClientScript>],
) -> Result<(), (String, ErrorClass)> {
    let mut err = None;
    if !shared.plan.config.connect_per_txn {
        if let Err((id, msg, class)) =
            connect_all(&shared.spec.conn, shared.replica_conn.as_ref(), slots)
        {
            shared.connect_failed.store(true, Ordering::SeqCst);
            err = Some((
                format!(
                    "{}\npgbench: error: could not create connection for client {id}",
                    msg.trim_end()
                ),
                class,
            ));
        }
    }
    shared.barrier.wait();
    match err {
        Some(e) => Err(e),
        None if shared.connect_failed.load(Ordering::SeqCst) => {
            Err((String::new(), ErrorClass::Other))
        }
        None => Ok(()),
    }
}

/// The driver threads that are done: their clients finished, or the thread ended
/// otherwise. A thread whose clients finished waits here for the others before closing
/// its connections, so no backend exits while another thread's last transactions are
/// under way: on few cores, hundreds of exiting backends take the cores from those
/// still answering. Then every thread closes its own connections at once.
struct Settled {
    count: Mutex<usize>,
    all: Condvar,
    threads: usize,
}

impl Settled {
    fn new(threads: usize) -> Settled {
        Settled {
            count: Mutex::new(0),
            all: Condvar::new(),
            threads,
        }
    }

    fn arrive(&self) {
        let mut count = self.count.lock().unwrap_or_else(|e| e.into_inner());
        *count += 1;
        if *count >= self.threads {
            self.all.notify_all();
        }
    }

    fn wait_all(&self) {
        let count = self.count.lock().unwrap_or_else(|e| e.into_inner());
        let _all = self
            .all
            .wait_while(count, |c| *c < self.threads)
            .unwrap_or_else(|e| e.into_inner());
    }
}

/// A driver thread's arrival in [`Settled`]: made when the thread ends, however it ends.
struct Arrival<'s> {
    settled: &'s Settled,
    arrived: bool,
}

impl Arrival<'_> {
    fn arrive(&mut self) {
        if !self.arrived {
            self.arrived = true;
            self.settled.arrive();
        }
    }

    /// Arrives, and waits until every other thread has.
    fn wait_all(&mut self) {
        self.arrive();
        self.settled.wait_all();
    }
}

impl Drop for Arrival<'_> {
    fn drop(&mut self) {
        self.arrive();
    }
}

/// Phase 3: one driver thread, from connecting to its clients' end.
fn drive_thread(
    shared: &Shared<'_>,
    thread: usize,
    mut setup: ThreadSetup,
) -> Result<ThreadOutput, ThreadFailure> {
    let mut arrival = Arrival {
        settled: &shared.settled,
        arrived: false,
    };
    // The poll set first: see `run_loop`.
    let poll = mio::Poll::new();
    let connected = connect_thread(shared, &mut setup.slots);
    if let Err((msg, class)) = connected {
        shared.finished.fetch_add(1, Ordering::SeqCst);
        return Err(ThreadFailure::Connect(msg, class));
    }
    shared.gate.wait(shared.clock, shared.stop);
    let bench_start = shared.clock.now();
    let mut schedule = shared
        .spec
        .rate_tps
        .map(|rate| ThrottleSchedule::new(rate, shared.nthreads, bench_start));
    let dctx = DriverCtx {
        plan: shared.plan,
        conn_config: &shared.spec.conn,
        replica_config: shared.replica_conn.as_ref(),
        clock: shared.clock,
        stop: shared.stop,
        halt: &shared.halt,
        end_us: shared.end_us,
        exit_on_abort: shared.spec.errors.exit_on_abort,
        early_read_after_ns: shared.spec.early_read.after_ns(),
    };
    let mut rec = setup.recorder;
    let loop_end = run_loop(
        &dctx,
        poll,
        &mut setup.slots,
        &mut setup.streams,
        &mut schedule,
        &mut rec,
    );
    if loop_end == LoopEnd::AllDone {
        arrival.wait_all();
    }
    for c in take_open(&mut setup.slots) {
        c.close();
    }
    // The thread's end, disconnecting included, as pgbench times the end of a thread.
    let bench_end = shared.clock.now();
    let aborted = setup.slots.iter().any(|s| s.client.is_aborted())
        || !matches!(loop_end, LoopEnd::AllDone | LoopEnd::Stopped);
    // The driver marks a connection lost when the transport failed (EOF, an I/O error,
    // a connection that could not be made): an abort then is the server's going away.
    let connection_lost = setup
        .slots
        .iter()
        .any(|s| s.client.is_aborted() && s.io.lost);
    let log_error = finish_thread_log(&mut rec, shared.clock);
    shared.finished.fetch_add(1, Ordering::SeqCst);
    if loop_end == LoopEnd::ExitOnAbort {
        // The other threads stop too (their clients finish the transaction in flight).
        shared.halt.raise();
        return Err(ThreadFailure::ExitOnAbort(thread));
    }
    Ok(ThreadOutput {
        stats: rec.stats,
        bench_start,
        bench_end,
        aborted,
        connection_lost,
        loop_end,
        log_error,
        commits: rec.commits,
        acks: rec.acks.into_ranges(),
        first_lost: rec.first_lost,
        replica_reads: rec.replica_reads,
    })
}

/// Phase 4 (per thread): flush and close the `-l` log; the first write error, if any.
fn finish_thread_log(rec: &mut ThreadRecorder, clock: &RunClock) -> Option<String> {
    let mut log_error = rec.log_error.take().map(|e| e.to_string());
    // A log with a failed write is dropped (its temporary file removed); a whole one
    // is committed (flushed, synced and renamed into place).
    let finished = match rec.log.take() {
        _ if log_error.is_some() => Ok(()),
        Some(ThreadLog::PerTxn { writer, .. }) => writer.finish().and_then(|f| f.commit()),
        Some(ThreadLog::Aggregate(w)) => w
            .finish(clock.to_epoch_us(clock.now()))
            .and_then(|f| f.commit()),
        None => Ok(()),
    };
    if let Err(e) = finished {
        log_error.get_or_insert(e.to_string());
    }
    log_error
}

/// Runs the benchmark described by `spec` and returns its merged result. Progress lines
/// (`-P`) are printed to stderr as pgbench prints them, and so are client errors unless
/// [`RunHooks::on_diagnostic`] takes them.
///
/// Under `--exit-on-abort`, the first aborted client makes every thread stop and the run
/// returns [`EngineError::ExitOnAbort`] (pgbench exits with status 2 there; the binary
/// does, a campaign records the test as failed).
pub fn run(spec: &RunSpec, hooks: RunHooks<'_>) -> Result<RunResult, EngineError> {
    spec.validate()
        .map_err(|e| EngineError::InvalidSpec(e.to_string()))?;
    // Diagnostics of the main thread (log file errors) go to the caller's sink too.
    let _sink = SinkGuard::install(hooks.on_diagnostic.as_ref());
    let mut prepared = prepare_threads(spec, &hooks)?;
    let threads = std::mem::take(&mut prepared.threads);
    let shared = Shared {
        spec,
        replica_conn: (!spec.replica_scripts.is_empty()).then(|| {
            spec.conn
                .with_target_session_attrs(pgsurge_wire::TargetSessionAttrs::Standby)
        }),
        plan: &prepared.plan,
        clock: &prepared.clock,
        gate: &prepared.gate,
        stop: &hooks.stop,
        halt: StopFlag::polled(),
        barrier: Barrier::new(threads.len()),
        connect_failed: AtomicBool::new(false),
        finished: AtomicUsize::new(0),
        settled: Settled::new(threads.len()),
        nthreads: threads.len(),
        end_us: prepared.end_us,
    };
    let mut sampler = IntervalSampler::new(spec, &prepared, hooks.on_interval)?;
    let joined: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = threads
            .into_iter()
            .enumerate()
            .map(|(thread, setup)| {
                let (shared, sink) = (&shared, hooks.on_diagnostic.clone());
                let spawned = std::thread::Builder::new()
                    .name(format!("pgsurge-{thread}"))
                    .spawn_scoped(scope, move || {
                        let _sink = SinkGuard::install(sink.as_ref());
                        drive_thread(shared, thread, setup)
                    });
                if spawned.is_err() {
                    // No thread will arrive for it.
                    shared.settled.arrive();
                }
                spawned
            })
            .collect();
        if prepared.want_intervals {
            sampler.sample_until_done(&shared, &prepared.counters);
        }
        handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h.join().unwrap_or(Err(ThreadFailure::Panicked)),
                Err(e) => Err(ThreadFailure::Spawn(format!(
                    "could not create thread: {e}"
                ))),
            })
            .collect()
    });
    sampler.finish();
    let intervals = std::mem::take(&mut sampler.intervals);
    let output_errors = std::mem::take(&mut sampler.output_errors);
    drop(sampler);
    let mut result = merge(spec, &prepared, &shared, joined, intervals)?;
    result.output_errors.extend(output_errors);
    result.steady_state = crate::steady::judge(&result);
    if spec.output.json.is_none() {
        // Kept for the steady window only: the document that carries them was not asked.
        for i in &mut result.intervals {
            i.histogram = None;
        }
    }
    Ok(result)
}

/// Phase 4 (main thread): interval samples for `-P`, `--hdr-log`, `--json` and the
/// caller's hook, taken from the threads' live counters while they run.
struct IntervalSampler<'h> {
    period_us: i64,
    /// `--json`: each sample carries its encoded latency histogram.
    histograms_in_samples: bool,
    progress: Option<ProgressOptions>,
    percentiles: Vec<f64>,
    hdr_log: Option<HdrIntervalLogWriter>,
    on_interval: Option<&'h mut IntervalHook<'h>>,
    intervals: Vec<IntervalSample>,
    /// The `--hdr-log` failure, if writing it failed (the log is given up then).
    output_errors: Vec<String>,
    /// `--hdr-log`'s path, for messages.
    hdr_log_path: Option<std::path::PathBuf>,
}

impl<'h> IntervalSampler<'h> {
    fn new(
        spec: &RunSpec,
        prepared: &PreparedRun,
        on_interval: Option<&'h mut IntervalHook<'h>>,
    ) -> Result<Self, EngineError> {
        let hdr_log = match &spec.output.hdr_log {
            Some(path) => Some(
                HdrIntervalLogWriter::create(
                    path,
                    prepared.start_epoch_us,
                    spec.output.hdr_log_unit,
                )
                .map_err(|e| EngineError::Setup(e.to_string()))?,
            ),
            None => None,
        };
        let progress = spec.output.progress;
        Ok(IntervalSampler {
            period_us: i64::from(progress.map_or(1, |p| p.interval_s)) * 1_000_000,
            // The JSON document carries them; a library caller's run (a campaign's) has
            // its steady window's percentiles read from them, and they are dropped after.
            histograms_in_samples: spec.output.json.is_some() || on_interval.is_some(),
            progress: progress.map(|_| ProgressOptions::for_run(&prepared.options)),
            percentiles: spec.output.percentiles.clone().unwrap_or_default(),
            hdr_log,
            on_interval,
            intervals: Vec::new(),
            output_errors: Vec::new(),
            hdr_log_path: spec.output.hdr_log.clone(),
        })
    }

    /// Samples every period until all driver threads have finished, then adds the
    /// remainder since the last full interval to the result's series and hands it to
    /// the caller (pgbench prints no partial progress line, so neither does this).
    fn sample_until_done(&mut self, shared: &Shared<'_>, counters: &[Arc<SharedCounters>]) {
        let clock = shared.clock;
        let mut aggregator: Option<ProgressAggregator> = None;
        let mut next = 0i64;
        while shared.finished.load(Ordering::SeqCst) < shared.nthreads {
            let now = clock.now();
            let Some(agg) = aggregator.as_mut() else {
                // Intervals count from the end of the connection phase (or --start-at).
                if shared.connect_failed.load(Ordering::SeqCst) || !shared.gate.is_open(now) {
                    std::thread::sleep(Duration::from_millis(1));
                    continue;
                }
                let pct = self.percentiles.clone();
                aggregator = Some(ProgressAggregator::new(
                    counters.to_vec(),
                    now,
                    clock.to_epoch_us(0),
                    pct,
                ));
                next = now + self.period_us;
                continue;
            };
            if now >= next {
                let mut sample = agg.tick(now);
                if self.histograms_in_samples {
                    // Exact merging of generators' seconds (`pgsurge merge`).
                    sample.histogram = encode_histogram(agg.interval_histogram());
                }
                self.emit(clock, now, agg, sample);
                while next <= now {
                    next += self.period_us;
                }
            }
            let wait = (next - clock.now()).clamp(1_000, 20_000);
            std::thread::sleep(Duration::from_micros(wait as u64));
        }
        if let Some(agg) = aggregator.as_mut() {
            let mut sample = agg.tick(clock.now());
            if sample.transactions + sample.failures + sample.skipped > 0
                || !agg.interval_histogram().is_empty()
            {
                if let Some(hook) = self.on_interval.as_mut() {
                    hook(&sample, agg.interval_histogram());
                }
                // The result's series covers the whole run, so its seconds add up to
                // the totals and generators' series merge exactly.
                if self.histograms_in_samples {
                    sample.histogram = encode_histogram(agg.interval_histogram());
                }
                self.intervals.push(sample);
            }
        }
    }

    /// One full interval: the progress line, the HDR log entries, the hook.
    fn emit(
        &mut self,
        clock: &RunClock,
        now: i64,
        agg: &ProgressAggregator,
        sample: IntervalSample,
    ) {
        if let Some(options) = &self.progress {
            let mut line = Vec::with_capacity(128);
            if format_progress_line(&sample, options, &mut line).is_ok() {
                let _ = std::io::stdout().flush();
                let _ = std::io::stderr().write_all(&line);
            }
        }
        if let Some(log) = self.hdr_log.as_mut() {
            // The overall series untagged, then one tagged series per script
            // (`Tag=script0`, …), which sum to it.
            let start = clock.to_epoch_us(now - self.period_us);
            let mut written =
                log.write_interval(agg.interval_histogram(), start, self.period_us, None);
            for (i, hist) in agg.script_histograms().iter().enumerate() {
                let tag = format!("script{i}");
                written = written
                    .and_then(|()| log.write_interval(hist, start, self.period_us, Some(&tag)));
            }
            if let Err(e) = written {
                let e = match (e, &self.hdr_log_path) {
                    (pgsurge_results::ResultsError::Io(source), Some(path)) => {
                        pgsurge_results::ResultsError::Write {
                            path: path.clone(),
                            source,
                        }
                    }
                    (other, _) => other,
                };
                self.output_errors.push(e.to_string());
                if let Some(log) = self.hdr_log.take() {
                    log.abandon();
                }
            }
        }
        if let Some(hook) = self.on_interval.as_mut() {
            hook(&sample, agg.interval_histogram());
        }
        self.intervals.push(sample);
    }

    /// Closes the HDR log: flushed to disk and renamed into place, or an output error.
    fn finish(&mut self) {
        if let Some(log) = self.hdr_log.take() {
            if let Err(e) = log.finish_file() {
                self.output_errors.push(e.to_string());
            }
        }
    }
}

/// Phase 5: the first failure, or the threads' statistics merged into the result.
fn merge(
    spec: &RunSpec,
    prepared: &PreparedRun,
    shared: &Shared<'_>,
    joined: Vec<Result<ThreadOutput, ThreadFailure>>,
    intervals: Vec<IntervalSample>,
) -> Result<RunResult, EngineError> {
    let clock = &prepared.clock;
    let end = clock.now();
    let mut outputs = Vec::with_capacity(joined.len());
    let mut connect_error: Option<(String, ErrorClass)> = None;
    let mut exit_on_abort = None;
    for thread in joined {
        match thread {
            Ok(out) => outputs.push(out),
            Err(ThreadFailure::ExitOnAbort(t)) => {
                exit_on_abort.get_or_insert(t);
            }
            Err(ThreadFailure::Connect(msg, class)) => {
                if !msg.is_empty() && connect_error.is_none() {
                    connect_error = Some((msg, class));
                }
            }
            // The panic hook printed the reason already: fail without a message.
            Err(ThreadFailure::Panicked) => {
                connect_error = Some((String::new(), ErrorClass::Other));
            }
            Err(ThreadFailure::Spawn(msg)) => {
                connect_error.get_or_insert((msg, ErrorClass::Other));
            }
        }
    }
    if let Some(thread) = exit_on_abort {
        return Err(EngineError::ExitOnAbort { thread });
    }
    if let Some((message, class)) = connect_error {
        return Err(EngineError::ClientConnection { message, class });
    }
    if shared.connect_failed.load(Ordering::SeqCst) {
        return Err(EngineError::ClientConnection {
            message: String::new(),
            class: ErrorClass::Other,
        });
    }
    let mut merged: Option<ThreadStats> = None;
    let mut log_errors = Vec::new();
    let mut first_start = i64::MAX;
    let mut last_end = i64::MIN;
    let mut aborted = false;
    let mut timeline = spec
        .errors
        .reconnect
        .then(|| pgsurge_results::failure::CommitTimeline {
            origin_unix_us: clock.to_epoch_us(0),
            counts: Vec::new(),
            acknowledged: Vec::new(),
            first_connection_lost_unix_us: None,
        });
    let mut connection_lost = false;
    let mut replica_reads: Vec<[u32; 2]> = Vec::new();
    for out in outputs {
        if let (Some(t), Some(c)) = (timeline.as_mut(), out.commits.as_deref()) {
            t.add(c);
            t.acknowledged.extend_from_slice(&out.acks);
            if let Some(lost) = out.first_lost.map(|us| clock.to_epoch_us(us)) {
                let first = t.first_connection_lost_unix_us.get_or_insert(lost);
                *first = (*first).min(lost);
            }
        }
        if replica_reads.len() < out.replica_reads.len() {
            replica_reads.resize(out.replica_reads.len(), [0, 0]);
        }
        for (a, b) in replica_reads.iter_mut().zip(&out.replica_reads) {
            a[0] += b[0];
            a[1] += b[1];
        }
        first_start = first_start.min(out.bench_start);
        last_end = last_end.max(out.bench_end);
        aborted |= out.aborted || out.loop_end == LoopEnd::PollFailed;
        connection_lost |= out.connection_lost;
        if let Some(e) = &out.log_error {
            log_errors.push(format!("could not write to log file: {e}"));
        }
        match merged.as_mut() {
            None => merged = Some(out.stats),
            Some(m) => m
                .merge(&out.stats)
                .map_err(|e| EngineError::Setup(e.to_string()))?,
        }
    }
    let merged = merged.unwrap_or_else(|| ThreadStats::new(&prepared.stats_config));
    if first_start == i64::MAX {
        first_start = prepared.start_time;
    }
    // The run ends when its last thread is done, as timed by that thread: the main
    // thread wakes from the join later still when the cores are busy.
    let end = if last_end == i64::MIN { end } else { last_end };
    let info = RunInfo {
        options: prepared.options.clone(),
        scripts: spec
            .scripts
            .iter()
            .zip(prepared.plan.scripts.iter())
            .map(|(entry, plan)| ScriptInfo {
                name: entry.desc.clone(),
                weight: entry.weight,
                text: entry.text.clone(),
                commands: plan.commands.iter().map(|c| c.first_line.clone()).collect(),
            })
            .collect(),
        scale: spec.database.scale,
        partition_method: (spec.database.partition_method != PartitionMethod::None)
            .then(|| spec.database.partition_method.keyword().to_string()),
        partitions: spec.database.partitions,
        pgsurge_version: env!("CARGO_PKG_VERSION").to_string(),
        server_version: spec.database.server_version.clone(),
        start_time_unix_us: prepared.start_epoch_us,
        end_time_unix_us: clock.to_epoch_us(end),
        bench_duration_us: end - first_start,
        initial_connection_us: first_start - prepared.start_time,
        interrupted: shared.stop.is_raised(),
        aborted,
    };
    let mut result = RunResult::build(info, &merged, intervals);
    result.generator = generator_info(&spec.generator, clock, first_start, end);
    result.output_errors = log_errors;
    result.commit_timeline = timeline;
    result.connection_lost = connection_lost;
    // Seconds from the run's start: the clock's origin comes first.
    let skip = (first_start.max(0) / 1_000_000) as usize;
    result.replica_reads = (!spec.replica_scripts.is_empty()).then(|| {
        pgsurge_results::failure::ReplicaReads::from_seconds(
            replica_reads.get(skip..).unwrap_or_default(),
        )
    });
    Ok(result)
}
