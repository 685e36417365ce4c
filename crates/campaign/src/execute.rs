//! One test, in order: re-initialize when the scale changes; truncate history, vacuum
//! analyze, checkpoint (CHECKPOINT returns when it is done), reset statistics; warm-up
//! (a separate run whose results are kept only as warm-up intervals); snapshot
//! `pg_stat_statements` (when installed) and server counters; run the engine
//! in-process with OS/PG/wait-event samplers beside it; snapshot again; cleanup. Produces the [`RunWrite`] the runner stores in one transaction.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use pgsurge_engine::layout;
use pgsurge_engine::steady::Watch;
use pgsurge_engine::{
    DatabaseInfo, Diagnostic, DiagnosticLevel, DiagnosticSink, ErrorSpec, QueryMode, RunHooks,
    RunLimit, RunScript, RunSpec, SpecError, StopFlag,
};
use pgsurge_events::Second;
use pgsurge_observe::sampler::{self, Sampler};
use pgsurge_observe::{pgstats, statements, Pg};
use pgsurge_results::{IntervalSample, LatencyHistogram, RunResult};
use pgsurge_store::{
    convert, epoch_to_rfc3339, facts, now_epoch, now_rfc3339, run_status, RunRecord, RunWrite,
    WarningRecord,
};
use pgsurge_wire::ErrorClass;

use crate::error::{CampaignError, Result};
use crate::matrix::{ScriptSource, TestPlan, Workload};
use crate::spec::{Campaign, Limit, ThreadsValue};
use crate::target::{self, LiveTarget};

/// Everything about a test that does not depend on how it went.
pub struct TestSetup<'a> {
    /// The campaign the test belongs to (run options, init, sampling, hygiene).
    pub campaign: &'a Campaign,
    /// The test to run: its matrix cell, repeat and key.
    pub plan: &'a TestPlan,
    /// Its workload.
    pub workload: &'a Workload,
    /// Set id.
    pub set_id: i64,
    /// The location of the store the set is in.
    pub store: &'a str,
}

/// The thread count of a test: its `matrix.threads` value, else `run.threads`, at most
/// the client count.
pub fn test_threads(campaign: &Campaign, plan: &TestPlan) -> u32 {
    match plan.threads {
        Some(j) => j.min(plan.clients).max(1),
        None => threads_for(campaign, plan.clients),
    }
}

/// The query mode of a test: its `matrix.query_modes` value, else `run.query_mode`.
pub fn test_query_mode<'a>(campaign: &'a Campaign, plan: &'a TestPlan) -> &'a str {
    plan.query_mode
        .as_deref()
        .unwrap_or(&campaign.spec.run.query_mode)
}

/// `-c name=value` words for the `options` startup parameter (spaces and backslashes
/// escaped as the server reads them).
pub fn session_settings_options(settings: &[(String, String)]) -> String {
    settings
        .iter()
        .map(|(n, v)| {
            let v = v.replace('\\', "\\\\").replace(' ', "\\ ");
            format!("-c {n}={v}")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Threads for `clients` under the campaign's `threads` setting.
pub fn threads_for(campaign: &Campaign, clients: u32) -> u32 {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1);
    match &campaign.spec.run.threads {
        Some(ThreadsValue::Count(n)) => (*n).min(clients).max(1),
        _ => clients.min(cpus).max(1),
    }
}

/// `--percentiles` as a campaign records them (the command line's default list).
const CAMPAIGN_PERCENTILES: [f64; 4] = [50.0, 90.0, 99.0, 99.9];

/// The [`RunSpec`] of a test (or of its warm-up, with `limit`), built from the
/// campaign's typed values. `database` is what [`layout::detect`] found on the target.
pub fn run_spec(
    s: &TestSetup<'_>,
    target: &LiveTarget,
    limit: Limit,
    database: DatabaseInfo,
) -> Result<RunSpec> {
    let mut conn = target.conn.clone();
    if target.cluster.is_none() && !s.plan.settings.is_empty() {
        // An existing server is not reconfigured: each session gets the values.
        conn.add_options(&session_settings_options(&s.plan.settings));
    }
    spec_on(s, conn, limit, database)
}

/// The [`RunSpec`] of a test on the connection `conn`: the campaign's values, and
/// a workload pack applied to it as `pgsurge bench --workload` applies it
/// ([`pgsurge_workload::run::apply`]).
pub fn spec_on(
    s: &TestSetup<'_>,
    conn: pgsurge_wire::ConnConfig,
    limit: Limit,
    database: DatabaseInfo,
) -> Result<RunSpec> {
    let run = &s.campaign.spec.run;
    let plan = s.plan;
    let other = |e: &dyn std::fmt::Display| CampaignError::Other(e.to_string());
    // A pack's scripts join the run when the pack is applied to it.
    let parts = if s.workload.pack.is_some() {
        &[][..]
    } else {
        &s.workload.parts[..]
    };
    let scripts = parts
        .iter()
        .map(|part| match &part.source {
            ScriptSource::Builtin(name) => RunScript::builtin(name, part.weight),
            ScriptSource::File(path) => {
                let bytes = std::fs::read(path)
                    .map_err(|e| SpecError(format!("reading script {}: {e}", path.display())))?;
                let text = pgsurge_script::script_text(&bytes);
                RunScript::parse(&path.display().to_string(), &text, part.weight)
            }
            ScriptSource::Pack { desc, text } => RunScript::parse(desc, text, part.weight),
        })
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| other(&e))?;
    let flags = s.campaign.extra;
    let mut spec = RunSpec::new(conn, scripts);
    spec.clients = plan.clients;
    spec.threads = test_threads(s.campaign, plan);
    spec.limit = match limit {
        Limit::Duration(secs) => RunLimit::Duration(secs),
        Limit::Transactions(n) => RunLimit::Transactions(n),
    };
    let mode = test_query_mode(s.campaign, plan);
    spec.query_mode = QueryMode::parse(mode).ok_or_else(|| {
        CampaignError::Other(format!("query mode \"{mode}\" is not a query mode"))
    })?;
    spec.rate_tps = plan.rate;
    // pgbench keeps -L as whole µs, truncating (`(int64)(ms * 1000)`).
    spec.latency_limit_us =
        (s.campaign.latency_limit_s()).map(|secs| (secs * 1000.0 * 1000.0) as i64);
    if let Some(tries) = run.max_tries {
        spec.max_tries = tries;
    }
    spec.connect_per_transaction = flags.connect_per_transaction;
    spec.variables = run
        .defines
        .iter()
        .map(|(name, value)| {
            (
                name.clone(),
                pgsurge_workload::manifest::parameter_text(value),
            )
        })
        .collect();
    spec.mix = flags.mix.unwrap_or_default();
    if let Some(p) = &s.workload.pack {
        pgsurge_workload::run::apply(&p.pack, &mut spec, flags.mix).map_err(|e| other(&e))?;
    }
    spec.random_seed = plan.seed;
    spec.errors = ErrorSpec {
        failures_detailed: flags.failures_detailed,
        verbose_errors: flags.verbose_errors,
        exit_on_abort: flags.exit_on_abort,
        debug: false,
        // A test with faults survives them: its clients reconnect.
        reconnect: flags.reconnect || !s.campaign.spec.faults.is_empty(),
    };
    spec.output.per_command = flags.per_command;
    spec.output.percentiles = Some(CAMPAIGN_PERCENTILES.to_vec());
    spec.database = database;
    Ok(spec)
}

/// Loads the test's data when the target does not hold it (after a failed test left
/// it unknown).
fn ensure_data(s: &TestSetup<'_>, target: &mut LiveTarget) -> Result<()> {
    let plan = s.plan;
    let wanted = s.workload.dataset(plan.scale);
    if !pgsurge_plan::reloads::checks(target.current_data.as_ref(), &wanted) {
        return Ok(());
    }
    let init = s.campaign.spec.init.for_scale(plan.scale);
    match &s.workload.pack {
        Some(p) => {
            let seed = s.campaign.spec.campaign.seed;
            target::prepare_pack(
                target,
                &p.pack,
                plan.scale,
                seed,
                &init,
                &mut |_| {},
                &|_| {},
            )?;
        }
        None => target::initialize(target, plan.scale, &init)?,
    }
    target.current_data = Some(wanted);
    Ok(())
}

/// Scale, partitioning and server version of the target's pgbench tables, found the
/// way `pgsurge bench` finds them; for a workload pack, its scale from its scale query.
fn detect_database(pg: &mut Pg, target: &LiveTarget, workload: &Workload) -> Result<DatabaseInfo> {
    if let Some(p) = &workload.pack {
        let scale = pgsurge_workload::read_scale(&p.pack, pg.connection()).map_err(|e| {
            CampaignError::Pg {
                context: format!("on target \"{}\"", target.name),
                message: e.to_string(),
            }
        })?;
        return Ok(DatabaseInfo {
            scale,
            server_version: Some(target.server_version.clone()),
            ..DatabaseInfo::default()
        });
    }
    let found = layout::detect(pg.connection()).map_err(|e| CampaignError::Pg {
        context: format!(
            "looking at the pgbench tables on target \"{}\"",
            target.name
        ),
        message: e.to_string(),
    })?;
    Ok(DatabaseInfo {
        scale: found.scale,
        partition_method: found.partition_method,
        partitions: found.partitions,
        server_version: Some(target.server_version.clone()),
    })
}

/// The workload pack's metric queries before or after a test (None without a pack).
fn pack_snapshot(
    workload: &Workload,
    target: &LiveTarget,
) -> Result<Option<pgsurge_workload::metrics::Snapshot>> {
    let Some(p) = &workload.pack else {
        return Ok(None);
    };
    pgsurge_workload::run::snapshot_at(&p.pack, &target.conn)
        .map(Some)
        .map_err(|e| CampaignError::Pg {
            context: format!(
                "reading the metrics of workload {} on target \"{}\"",
                p.pack.name(),
                target.name
            ),
            message: e.to_string(),
        })
}

/// How long [`settle`] waits for the sessions of a test to end.
const SESSIONS_END_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// The server's clock now, to tell the sessions a test opens from those that were
/// there before it ([`settle`]).
fn server_now(monitor: &mut Pg) -> Result<String> {
    Ok(monitor
        .value("SELECT clock_timestamp()::text")?
        .unwrap_or_default())
}

/// Waits until the server's counters hold what the test's sessions did. First until
/// every session that connected to `db` since `since` (the server's clock when the
/// test began: its load, warm-up, clients and generators) has ended, at most
/// [`SESSIONS_END_WAIT`]: a session's statistics reach the shared views before it
/// leaves `pg_stat_activity` (PostgreSQL 15 and later), and on a busy machine a
/// backend can exit well after its client. Then until the commit counter stops moving
/// (older servers pass statistics through a collector process), at most ~3 s.
fn settle(monitor: &mut Pg, db: &str, since: &str) -> Result<()> {
    let db = pgsurge_observe::sql_session::literal(db);
    // A role that may not see other users' sessions sees no start time: those
    // sessions are not waited for.
    let sessions = format!(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = {db} \
         AND backend_type = 'client backend' AND pid <> pg_backend_pid() \
         AND backend_start >= {}::timestamptz",
        pgsurge_observe::sql_session::literal(since)
    );
    let deadline = Instant::now() + SESSIONS_END_WAIT;
    while !since.is_empty()
        && monitor.value(&sessions)?.as_deref() != Some("0")
        && Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let sql = format!("SELECT xact_commit FROM pg_stat_database WHERE datname = {db}");
    let mut last = monitor.value(&sql)?;
    for _ in 0..12 {
        std::thread::sleep(std::time::Duration::from_millis(250));
        let now = monitor.value(&sql)?;
        if now == last {
            break;
        }
        last = now;
    }
    Ok(())
}

/// How many client messages a stored error or warning quotes.
const KEPT_MESSAGES: usize = 10;

/// The error and info lines the engine's clients reported during a run (what pgbench
/// prints on stderr), the first [`KEPT_MESSAGES`] of them verbatim.
#[derive(Debug, Default)]
pub struct ClientMessages {
    /// The first messages, in the order they arrived.
    pub kept: Vec<String>,
    /// How many more there were.
    pub dropped: usize,
}

impl ClientMessages {
    fn push(&mut self, message: &str) {
        if self.kept.len() < KEPT_MESSAGES {
            self.kept.push(message.to_string());
        } else {
            self.dropped += 1;
        }
    }

    /// True when no client reported anything.
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }

    /// The messages, one per line (a server error keeps its own `LINE n:` lines), and
    /// how many were left out.
    pub fn text(&self) -> String {
        let mut s = self.kept.join("\n");
        if self.dropped > 0 {
            s.push_str(&format!("\n(and {} more messages)", self.dropped));
        }
        s
    }
}

/// Runs the engine in-process for `spec`. The clients' error lines are collected
/// instead of printed: an aborted run (or one ended by `--exit-on-abort`) fails with
/// them as its error, a run that completed returns them beside its result.
pub fn engine_run(
    spec: &RunSpec,
    stop: &StopFlag,
    on_interval: &mut dyn FnMut(&IntervalSample, &LatencyHistogram),
) -> Result<(RunResult, ClientMessages)> {
    let messages = Arc::new(Mutex::new(ClientMessages::default()));
    let collector = Arc::clone(&messages);
    // Server notices are not errors: they are dropped (pgbench would print them).
    let sink: DiagnosticSink = Arc::new(move |d: &Diagnostic<'_>| {
        if d.level != DiagnosticLevel::Notice {
            if let Ok(mut m) = collector.lock() {
                m.push(d.message);
            }
        }
    });
    let hooks = RunHooks {
        stop: stop.clone(),
        on_interval: Some(on_interval),
        on_diagnostic: Some(sink),
    };
    let result = pgsurge_engine::run(spec, hooks);
    let messages = std::mem::take(&mut *messages.lock().unwrap_or_else(|p| p.into_inner()));
    let result = result.map_err(|e| CampaignError::Run {
        class: match &e {
            pgsurge_engine::EngineError::ClientConnection { class, .. } => *class,
            _ => ErrorClass::Other,
        },
        message: if messages.is_empty() {
            format!("benchmark run: {e}")
        } else {
            format!("benchmark run: {e}:\n{}", messages.text())
        },
    })?;
    if result.aborted {
        return Err(CampaignError::Run {
            message: if messages.is_empty() {
                "benchmark run aborted (no client reported an error)".into()
            } else {
                format!("benchmark run aborted:\n{}", messages.text())
            },
            class: if result.connection_lost {
                ErrorClass::Connection
            } else {
                ErrorClass::Other
            },
        });
    }
    Ok((result, messages))
}

/// A test run by [`run_test`]: what to store, and the class of its error when it failed.
pub struct Tested {
    /// The stored form (a failed test's status and error included).
    pub write: RunWrite,
    /// Why it failed: `Connection` when the server went away during it.
    pub failure: Option<ErrorClass>,
}

/// Outcome of [`run_test`] when it did not produce a storable test.
pub enum Interrupted {
    /// Stopped by the user: do not store, resume later.
    Stopped,
}

/// Runs one test. Failures become a stored failed test; a user stop is returned as
/// [`Interrupted::Stopped`].
pub fn run_test(
    s: &TestSetup<'_>,
    target: &mut LiveTarget,
    stop: &StopFlag,
    on_interval: &mut dyn FnMut(&Second),
) -> std::result::Result<Tested, Interrupted> {
    let started = now_epoch();
    let mut w = RunWrite {
        run: base_record(s, target, started),
        environment: Some(target.manifest.clone()),
        ..Default::default()
    };
    let mut failure = None;
    match run_test_inner(s, target, stop, on_interval, &mut w) {
        Ok(()) => {}
        Err(_) if stop.is_raised() => return Err(Interrupted::Stopped),
        Err(e) => {
            // The database may be half-initialized: initialize again before the next test.
            target.current_data = None;
            w.run.status = run_status::FAILED.into();
            w.run.error = Some(e.to_string());
            failure = Some(e.class());
        }
    }
    if stop.is_raised() && w.run.status != run_status::FAILED {
        return Err(Interrupted::Stopped);
    }
    let end = now_epoch();
    w.run.end_epoch = Some(end);
    w.run.finished_at = Some(epoch_to_rfc3339(end));
    Ok(Tested { write: w, failure })
}

fn base_record(s: &TestSetup<'_>, target: &LiveTarget, started: f64) -> RunRecord {
    let c = s.campaign;
    let p = s.plan;
    let limit = c.limit();
    let init = c.spec.init.for_scale(p.scale);
    let scripts: Vec<serde_json::Value> = s
        .workload
        .parts
        .iter()
        .map(|part| {
            let (name, text) = match &part.source {
                ScriptSource::Builtin(b) => (b.clone(), builtin_text(b)),
                ScriptSource::File(f) => {
                    let bytes = std::fs::read(f).unwrap_or_default();
                    let text = String::from_utf8_lossy(&bytes).into_owned();
                    (f.display().to_string(), text)
                }
                ScriptSource::Pack { desc, text } => (desc.clone(), text.clone()),
            };
            serde_json::json!({
                "name": name, "weight": part.weight, "text": text, "sha256": sha256_hex(&text)
            })
        })
        .collect();
    RunRecord {
        set_id: s.set_id,
        target_id: Some(target.target_id),
        test_key: p.key.clone(),
        seq: Some(p.seq as i64),
        repeat_no: i64::from(p.repeat),
        status: run_status::OK.into(),
        started_at: Some(epoch_to_rfc3339(started)),
        start_epoch: Some(started),
        script: Some(s.workload.name.clone()),
        scripts: Some(serde_json::Value::Array(scripts)),
        options: Some(serde_json::json!({
            "target": target.name,
            "run": c.spec.run,
            "init": init,
            "warmup_s": c.warmup_s(),
            "hygiene": c.spec.hygiene,
            // The matrix dimensions beyond the record's columns (report cells use them).
            "settings": p.settings.iter().cloned().collect::<std::collections::BTreeMap<_, _>>(),
            "threads_dimension": p.threads,
        })),
        // Set once the test's RunSpec exists (see `run_test_inner`).
        command_line: None,
        seed: Some(p.seed.to_string()),
        scale: Some(i64::from(p.scale)),
        clients: Some(i64::from(p.clients)),
        threads: Some(i64::from(test_threads(c, p))),
        rate: p.rate,
        rate_per_client: p.rate_per_client,
        latency_limit_ms: c.latency_limit_s().map(|secs| secs * 1000.0),
        duration_s: match limit {
            Limit::Duration(d) => Some(f64::from(d)),
            Limit::Transactions(_) => None,
        },
        transactions_per_client: match limit {
            Limit::Transactions(t) => Some(i64::from(t)),
            Limit::Duration(_) => None,
        },
        query_mode: Some(test_query_mode(c, p).to_string()),
        init_method: Some(init.method.unwrap_or_else(|| "client".into())),
        warmup_s: Some(c.warmup_s()),
        server_version: Some(target.server_version.clone()),
        server_version_num: Some(i64::from(target.version_num)),
        ..Default::default()
    }
}

fn builtin_text(name: &str) -> String {
    pgsurge_script::BUILTINS
        .iter()
        .find(|b| b.name == name)
        .map(|b| b.script.to_string())
        .unwrap_or_default()
}

fn sha256_hex(text: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// One test, in steps: the scale loaded, the hygiene before it, the warm-up, the
/// measured run with the samplers beside it, what the server counted and what it was
/// set to, and the cleanup.
fn run_test_inner(
    s: &TestSetup<'_>,
    target: &mut LiveTarget,
    stop: &StopFlag,
    on_interval: &mut dyn FnMut(&Second),
    w: &mut RunWrite,
) -> Result<()> {
    let campaign = s.campaign;
    let mut monitor = Pg::connect(&target.monitor)?;
    let since = server_now(&mut monitor)?;
    ensure_data(s, target)?;
    let mut pg = Pg::connect(&target.conn)?;
    crate::hygiene::before_test(s, target, &mut pg, w)?;
    if let Some(r) = &s.workload.replay {
        drop(pg);
        // A replay changes the data it runs on: the next test loads it again (with
        // `init = "never"` the `before_test` hook restores the user's own data).
        let after = pgsurge_plan::reloads::after_test(target.init_mode, false, true);
        if after == pgsurge_plan::reloads::After::Changed {
            target.current_data = None;
            target.data_changed = Some(format!(
                "the replay of {} changed the data",
                r.log.file_name().unwrap_or_default().to_string_lossy()
            ));
        }
        return crate::replay_run::run_test(r, &target.conn, stop, w);
    }
    let database = detect_database(&mut pg, target, s.workload)?;
    drop(pg);
    warm_up(s, target, stop, on_interval, database.clone(), w)?;
    let sampling = &campaign.spec.sampling;
    // pg_stat_statements before the counters: its connection's transactions are
    // settled with the warm-up's.
    let statements = sampling.pg.then(|| statements::before(&target.conn));
    settle(&mut monitor, &target.dbname, &since)?;
    let before = pgstats::read_counters(&mut monitor, target.version_num, &target.dbname)?;
    let pack_before = pack_snapshot(s.workload, target)?;
    let sampler = Sampler::start(target.sampler_config(sampling));
    let latest = sampler.latest();
    let on_interval = &mut |second: &Second| on_interval(&second.with_metrics(latest.take()));
    let spec = run_spec(s, target, campaign.measured_limit(), database)?;
    w.run.command_line = Some(match &s.workload.pack {
        None => spec.pgbench_command_line(&target.dbname),
        Some(p) => pgsurge_workload::run::command_line(&p.pack, &p.arg, &spec, &target.dbname),
    });
    // The window of the per-transaction costs: the measured run alone.
    let costs = pgsurge_observe::costs::CostProbe::start(&target.monitor, &target.dbname);
    let profiler = crate::profiling::start(campaign, &target.monitor, w);
    let shared: &LiveTarget = target;
    let run = || match &campaign.spec.distributed {
        None => measured_run(s, &spec, stop, on_interval, w),
        Some(d) => run_distributed(s, shared, &spec, d, stop, on_interval, w),
    };
    let servers = pgsurge_faults::Servers {
        primary: shared.cluster.as_ref(),
        replicas: &shared.replicas,
        monitor: &shared.monitor,
        target: &shared.name,
    };
    let (result, beside) = pgsurge_faults::during(&campaign.fault_schedule(), &servers, stop, run);
    let profiles = profiler.map(pgsurge_observe::profile::Profiler::finish);
    let sampled = sampler.finish();
    let (mut result, messages) = result?;
    crate::profiling::record(profiles, &mut result, w);
    let after = match beside.and_then(|b| b.with_faults(&mut result.failure_cost)) {
        None => {
            settle(&mut monitor, &target.dbname, &since)?;
            pgstats::read_counters(&mut monitor, target.version_num, &target.dbname)?
        }
        // The servers are not what they were: the next test starts them again, and the
        // counters are read where the clients ended, when they can be.
        Some(beside) => {
            result.failure_cost = Some(pgsurge_faults::cost(
                beside,
                result.commit_timeline.as_ref(),
                (&target.conn, campaign.spec.run.check_commits.as_deref()),
            ));
            target.faulted = true;
            // What the faults did to the data is checked before the next test.
            let after = pgsurge_plan::reloads::after_test(target.init_mode, true, false);
            if after != pgsurge_plan::reloads::After::Known {
                target.current_data = None;
            }
            let pg = Pg::connect(&target.conn).ok();
            pg.and_then(|mut pg| {
                pgstats::read_counters(&mut pg, target.version_num, &target.dbname).ok()
            })
            .unwrap_or_else(|| before.clone())
        }
    };
    record_costs(costs, campaign.spec.distributed.is_some(), &mut result, w);
    if let (Some(before), Some(p)) = (&pack_before, &s.workload.pack) {
        if let Some(after) = pack_snapshot(s.workload, target)? {
            pgsurge_workload::run::record_metrics(&p.pack, before, &after, &spec, &mut result);
        }
    }
    record_outcome(s, target, &result, &messages, statements, sampled, w);
    record_counters(s, &before, &after, &result, w);
    if campaign.warmup_auto() {
        pgsurge_store::window::keep_steady_window(&result, w, &s.plan.key);
    }
    let mut pg = Pg::connect(&target.conn)?;
    w.settings = pgstats::read_settings(&mut pg)?;
    pgsurge_store::window::window_facts(w, &s.plan.key);
    // Cleanup (timed): leave the history table empty for the next test.
    let t0 = Instant::now();
    if campaign.spec.hygiene.truncate_history && s.workload.pack.is_none() {
        pg.exec("TRUNCATE pgbench_history")?;
    }
    w.run.cleanup_s = Some(t0.elapsed().as_secs_f64());
    Ok(())
}

/// The measured run in-process, its intervals and their histograms kept for the store;
/// with `warmup = "auto"` watched until its steady window lasted the duration.
fn measured_run(
    s: &TestSetup<'_>,
    spec: &RunSpec,
    stop: &StopFlag,
    on_interval: &mut dyn FnMut(&Second),
    w: &mut RunWrite,
) -> Result<(RunResult, ClientMessages)> {
    let mut watch = s.campaign.steady_window_s().map(|d| Watch::new(d, stop));
    let run_stop = watch.as_ref().map_or(stop, Watch::stop).clone();
    let mut cb = |iv: &IntervalSample, histogram: &LatencyHistogram| {
        let interval = convert::interval(iv, false, 0.0);
        w.interval_histograms
            .extend(convert::interval_histogram(&interval, histogram));
        w.intervals.push(interval);
        on_interval(&Second::of(iv, Some(histogram), false));
        if let Some(watch) = watch.as_mut() {
            watch.push(iv);
        }
    };
    let mut out = engine_run(spec, &run_stop, &mut cb)?;
    if let Some(watch) = &watch {
        watch.finish(&mut out.0);
    }
    Ok(out)
}

/// `run.warmup`: a separate run before the measured one, discarded but for its
/// intervals, which end at elapsed 0 where the measured run begins.
fn warm_up(
    s: &TestSetup<'_>,
    target: &LiveTarget,
    stop: &StopFlag,
    on_interval: &mut dyn FnMut(&Second),
    database: DatabaseInfo,
    w: &mut RunWrite,
) -> Result<()> {
    let plan = s.plan;
    let warmup = s.campaign.warmup_s().round() as u32;
    if warmup == 0 {
        return Ok(());
    }
    let spec = run_spec(s, target, Limit::Duration(warmup), database.clone())?;
    let mut cb = |iv: &IntervalSample, histogram: &LatencyHistogram| {
        w.intervals.push(convert::interval(iv, true, 0.0));
        on_interval(&Second::of(iv, Some(histogram), true));
    };
    let (_, warm_messages) = engine_run(&spec, stop, &mut cb)?;
    if !warm_messages.is_empty() {
        w.warnings.push(warning(
            "client_errors",
            format!(
                "test {}: the warm-up's clients reported errors:\n{}",
                plan.key,
                warm_messages.text()
            ),
        ));
    }
    // Warm-up intervals end at elapsed 0, where the measured run begins.
    let end = w
        .intervals
        .iter()
        .map(|i| i.elapsed_s + i.duration_s)
        .fold(0.0, f64::max);
    for i in &mut w.intervals {
        i.elapsed_s -= end;
    }
    Ok(())
}

/// The measured run as a distributed one: its generators' merged result, with the
/// merged per-second samples and histograms.
fn run_distributed(
    s: &TestSetup<'_>,
    target: &LiveTarget,
    spec: &RunSpec,
    d: &crate::spec::DistributedSection,
    stop: &StopFlag,
    on_interval: &mut dyn FnMut(&Second),
    w: &mut RunWrite,
) -> Result<(RunResult, ClientMessages)> {
    let (campaign, plan) = (s.campaign, s.plan);
    let exe = std::env::var_os("PGSURGE_BIN").map(std::path::PathBuf::from);
    let test = crate::distributed::TestContext {
        campaign: &campaign.spec.campaign.name,
        set_id: s.set_id,
        seq: plan.seq,
        key: &plan.key,
        store: s.store,
        stop,
    };
    crate::distributed::run(spec, d, &target.conninfo, exe, &test).map(|outcome| {
        let mut result = outcome.result;
        // The merged series judged as one run's.
        result.steady_state = pgsurge_engine::steady::judge(&result);
        for m in outcome.warnings {
            w.warnings.push(warning("distributed", m));
        }
        // The merged per-second samples, with their merged histograms.
        for iv in &result.intervals {
            let interval = convert::interval(iv, false, 0.0);
            let hdr = iv
                .histogram
                .as_deref()
                .and_then(|e| pgsurge_generators::histograms::decode(e).ok());
            if let Some(h) = hdr {
                w.interval_histograms.extend(
                    pgsurge_store::IntervalHistogramRecord::from_histogram(
                        "latency",
                        interval.ts,
                        interval.elapsed_s,
                        interval.duration_s,
                        &h,
                    )
                    .ok()
                    .flatten(),
                );
            }
            w.intervals.push(interval);
            on_interval(&Second::of(iv, None, false));
        }
        (result, ClientMessages::default())
    })
}

/// What the run said (output errors, client errors), the top statements and what the
/// samplers took.
fn record_outcome(
    s: &TestSetup<'_>,
    target: &LiveTarget,
    result: &RunResult,
    messages: &ClientMessages,
    statements: Option<statements::Before>,
    sampled: sampler::SamplerOutput,
    w: &mut RunWrite,
) {
    let plan = s.plan;
    for e in &result.output_errors {
        w.warnings
            .push(warning("output", format!("test {}: {e}", plan.key)));
    }
    if !messages.is_empty() {
        w.warnings.push(warning(
            "client_errors",
            format!(
                "test {}: the clients reported errors:\n{}",
                plan.key,
                messages.text()
            ),
        ));
    }
    match statements {
        Some(b) => {
            let (facts, problem) = statements::after(b, &target.conn);
            w.facts.extend(facts);
            if let Some(p) = problem {
                w.warnings.push(warning("sampler", p));
            }
        }
        None => w.facts.push(pgsurge_store::FactRecord::new(
            facts::STATEMENTS_SOURCE,
            "none (PostgreSQL sampling is off: [sampling] pg = false)",
        )),
    }
    w.metrics = sampled.samples;
    w.facts.extend(sampled.facts);
    w.metric_info = sampler::describe_all(&w.metrics);
    for e in sampled.errors {
        w.warnings.push(warning("sampler", e));
    }
}

/// The run's per-transaction costs into its result (stored with it); without the
/// client's when generators ran the clients.
fn record_costs(
    probe: pgsurge_observe::Result<pgsurge_observe::costs::CostProbe>,
    distributed: bool,
    result: &mut RunResult,
    w: &mut RunWrite,
) {
    match probe {
        Ok(probe) => {
            let mut costs = probe.finish(result.totals.transactions);
            if distributed {
                costs.costs.retain(|c| !c.name.starts_with("client_"));
                costs
                    .unavailable
                    .push("client CPU and context switches: the clients ran in generators".into());
            }
            result.txn_costs = Some(costs);
        }
        Err(e) => w.warnings.push(warning(
            "sampler",
            format!("per-transaction costs not measured: {e}"),
        )),
    }
}

/// The server's counters before and after, the client's result, and whether the two
/// agree on the commits.
fn record_counters(
    s: &TestSetup<'_>,
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
    result: &RunResult,
    w: &mut RunWrite,
) {
    let plan = s.plan;
    let hygiene = &s.campaign.spec.hygiene;
    convert::counters(w, before, after);
    convert::fill_run(&mut w.run, result);
    w.histograms = convert::histograms(result);
    w.profiles = convert::profiles(result);
    if let (Some(server), Some(client)) = (w.run.server_commits, w.run.transactions) {
        let pct = 100.0 * (server - client).abs() as f64 / (client.max(1)) as f64;
        w.run.commit_mismatch_pct = Some(pct);
        if pct > hygiene.commit_tolerance_pct {
            w.warnings.push(warning(
                "commit_mismatch",
                format!(
                    "test {}: the server counted {server} commits, the client {client} transactions ({pct:.1} % apart, tolerance {} %)",
                    plan.key, hygiene.commit_tolerance_pct
                ),
            ));
        }
    }
}

pub(crate) fn warning(code: &str, message: String) -> WarningRecord {
    WarningRecord {
        set_id: None,
        run_id: None,
        code: code.into(),
        message,
        created_at: now_rfc3339(),
    }
}
