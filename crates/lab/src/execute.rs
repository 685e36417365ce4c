//! One test, in order: re-initialize when the scale changes; truncate history, vacuum
//! analyze, checkpoint (CHECKPOINT returns when it is done), reset statistics; warm-up
//! (a separate run whose results are kept only as warm-up intervals); snapshot server
//! counters; run the engine in-process with OS/PG samplers beside it; snapshot again;
//! cleanup. Produces the [`RunWrite`] the runner stores in one transaction.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use pgsurge_engine::{Diagnostic, DiagnosticLevel, DiagnosticSink, RunHooks, RunSpec, StopFlag};
use pgsurge_results::{IntervalSample, LatencyHistogram, RunResult};
use pgsurge_store::{
    epoch_to_rfc3339, now_epoch, now_rfc3339, run_status, CounterRecord, RunRecord, RunWrite,
    SettingRecord, WarningRecord,
};
use pgsurge_wire::ConnConfig;

use crate::error::{LabError, Result};
use crate::matrix::{TestPlan, Workload};
use crate::pg::Pg;
use crate::pgstats;
use crate::sampler::Sampler;
use crate::spec::{Campaign, InitOptionsSpec, Limit, ThreadsValue};
use crate::target::LiveTarget;

/// Everything about a test that does not depend on how it went.
pub struct TestSetup<'a> {
    /// The campaign.
    pub campaign: &'a Campaign,
    /// The planned test.
    pub plan: &'a TestPlan,
    /// Its workload.
    pub workload: &'a Workload,
    /// Set id.
    pub set_id: i64,
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

/// The pgbench options of a test (connection excluded), for the engine and for the
/// stored `command_line`.
pub fn pgbench_argv(s: &TestSetup<'_>, limit: Limit, with_seed: bool) -> Vec<String> {
    let run = &s.campaign.spec.run;
    let p = s.plan;
    let mut a = vec![
        "-c".to_string(),
        p.clients.to_string(),
        "-j".into(),
        threads_for(s.campaign, p.clients).to_string(),
    ];
    match limit {
        Limit::Duration(d) => a.extend(["-T".into(), d.to_string()]),
        Limit::Transactions(t) => a.extend(["-t".into(), t.to_string()]),
    }
    a.extend(["-M".into(), run.query_mode.clone()]);
    if let Some(r) = p.rate {
        a.extend(["-R".into(), format!("{r}")]);
    }
    if let Some(l) = run.latency_limit.as_ref().and_then(|l| l.seconds().ok()) {
        a.extend(["-L".into(), format!("{}", l * 1000.0)]);
    }
    if let Some(t) = run.max_tries {
        a.push(format!("--max-tries={t}"));
    }
    for (k, v) in &run.defines {
        let v = match v {
            toml::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        a.extend(["-D".into(), format!("{k}={v}")]);
    }
    a.extend(s.workload.pgbench_args());
    if with_seed {
        a.push(format!("--random-seed={}", p.seed));
    }
    a.extend(run.extra_args.iter().cloned());
    a
}

/// Runs `-i` for `scale` with the campaign's init options.
pub fn initialize(target: &LiveTarget, scale: u32, o: &InitOptionsSpec) -> Result<()> {
    let mut pg = Pg::connect(&target.conninfo)?;
    let server_side = o.method.as_deref() == Some("server");
    let mut steps = String::from(if server_side { "dtGvp" } else { "dtgvp" });
    if o.foreign_keys == Some(true) {
        steps.push('f');
    }
    let spec = pgsurge_init::InitSpec {
        steps,
        scale: i32::try_from(scale)
            .map_err(|_| LabError::Other(format!("scale {scale} is too large")))?,
        fillfactor: o.fillfactor.map_or(100, |f| f as i32),
        partitions: o.partitions.map_or(0, |p| p as i32),
        partition_method: match o.partition_method.as_deref() {
            Some("hash") => pgsurge_init::PartitionMethod::Hash,
            Some("range") => pgsurge_init::PartitionMethod::Range,
            _ => pgsurge_init::PartitionMethod::None,
        },
        tablespace: None,
        index_tablespace: None,
        unlogged: o.unlogged == Some(true),
        quiet: true,
    };
    let mut messages = Vec::new();
    pgsurge_init::initialize(pg.connection(), &spec, &mut messages).map_err(|e| {
        LabError::Other(format!(
            "initializing scale {scale} on target \"{}\": {}",
            target.name,
            e.to_string().trim_end()
        ))
    })
}

/// Reads counters (name → value) through the monitoring connection.
fn snapshot(monitor: &mut Pg, target: &LiveTarget) -> Result<BTreeMap<String, f64>> {
    let mut m: BTreeMap<String, f64> = BTreeMap::new();
    for sql in pgstats::counters_sql(target.version_num, &target.dbname) {
        // A view this role cannot read only loses its own counters (the sampler reports it).
        if let Ok(pairs) = monitor.pairs(&sql) {
            m.extend(pairs);
        }
    }
    for (k, v) in monitor.pairs(&pgstats::gauges_sql(&target.dbname))? {
        if k == "pg.db.size_bytes" {
            m.insert(k, v);
        }
    }
    Ok(m)
}

/// Waits until the server's commit counter stops moving (statistics of the clients
/// that just disconnected are flushed asynchronously), at most ~3 s.
fn settle(monitor: &mut Pg, db: &str) -> Result<()> {
    let sql = format!(
        "SELECT xact_commit FROM pg_stat_database WHERE datname = {}",
        crate::pg::literal(db)
    );
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

/// Runs the engine in-process for `argv` against `target`. The clients' error lines are
/// collected instead of printed: an aborted run fails with them as its error, a run that
/// completed returns them beside its result.
pub fn engine_run(
    target: &LiveTarget,
    argv: &[String],
    scale: u32,
    init: &InitOptionsSpec,
    stop: &StopFlag,
    on_interval: &mut dyn FnMut(&IntervalSample, &LatencyHistogram),
) -> Result<(RunResult, ClientMessages)> {
    let mut args: Vec<OsString> = argv.iter().map(OsString::from).collect();
    args.push("--percentiles".into());
    let mut out = Vec::new();
    let mut err = Vec::new();
    let options = match pgsurge_args::parse(&args, &|_| None, &mut out, &mut err) {
        pgsurge_args::Outcome::Bench(o) => o,
        _ => {
            return Err(LabError::Other(format!(
                "pgbench options {}: {}",
                argv.join(" "),
                String::from_utf8_lossy(&err).trim_end()
            )))
        }
    };
    let conn = ConnConfig::parse(&target.conninfo).map_err(|e| LabError::Pg {
        context: "connection string".into(),
        message: e.to_string(),
    })?;
    let partitions = init.partitions.unwrap_or(0);
    let spec = RunSpec {
        options,
        conn,
        scale: i64::from(scale),
        partition_method: (partitions > 0).then(|| {
            init.partition_method
                .clone()
                .unwrap_or_else(|| "range".into())
        }),
        partitions,
        server_version: Some(target.server_version.clone()),
    };
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
    let result = pgsurge_engine::run(&spec, hooks);
    let messages = std::mem::take(&mut *messages.lock().unwrap_or_else(|p| p.into_inner()));
    let result = result.map_err(|e| LabError::Other(format!("benchmark run: {e}")))?;
    if result.aborted {
        return Err(LabError::Other(if messages.is_empty() {
            "benchmark run aborted (no client reported an error)".into()
        } else {
            format!("benchmark run aborted:\n{}", messages.text())
        }));
    }
    Ok((result, messages))
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
    on_interval: &mut dyn FnMut(&IntervalSample),
) -> std::result::Result<RunWrite, Interrupted> {
    let started = now_epoch();
    let mut w = RunWrite {
        run: base_record(s, target, started),
        environment: Some(target.manifest.clone()),
        ..Default::default()
    };
    match run_test_inner(s, target, stop, on_interval, &mut w) {
        Ok(()) => {}
        Err(_) if stop.is_raised() => return Err(Interrupted::Stopped),
        Err(e) => {
            // The database may be half-initialized: initialize again before the next test.
            target.current_scale = None;
            w.run.status = run_status::FAILED.into();
            w.run.error = Some(e.to_string());
        }
    }
    if stop.is_raised() && w.run.status != run_status::FAILED {
        return Err(Interrupted::Stopped);
    }
    let end = now_epoch();
    w.run.end_epoch = Some(end);
    w.run.finished_at = Some(epoch_to_rfc3339(end));
    Ok(w)
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
                crate::matrix::ScriptSource::Builtin(b) => (b.clone(), builtin_text(b)),
                crate::matrix::ScriptSource::File(f) => (
                    f.display().to_string(),
                    std::fs::read_to_string(f).unwrap_or_default(),
                ),
            };
            serde_json::json!({
                "name": name, "weight": part.weight, "text": text, "sha256": sha256_hex(&text)
            })
        })
        .collect();
    let argv = pgbench_argv(s, limit, true);
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
            "argv": argv,
            "init": init,
            "warmup_s": c.warmup_s(),
            "hygiene": c.spec.hygiene,
        })),
        command_line: Some(format!("pgbench {} {}", argv.join(" "), target.dbname)),
        seed: Some(p.seed.to_string()),
        scale: Some(i64::from(p.scale)),
        clients: Some(i64::from(p.clients)),
        threads: Some(i64::from(threads_for(c, p.clients))),
        rate: p.rate,
        rate_per_client: p.rate_per_client,
        latency_limit_ms: c
            .spec
            .run
            .latency_limit
            .as_ref()
            .and_then(|l| l.seconds().ok())
            .map(|s| s * 1000.0),
        duration_s: match limit {
            Limit::Duration(d) => Some(f64::from(d)),
            Limit::Transactions(_) => None,
        },
        transactions_per_client: match limit {
            Limit::Transactions(t) => Some(i64::from(t)),
            Limit::Duration(_) => None,
        },
        query_mode: Some(c.spec.run.query_mode.clone()),
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

fn run_test_inner(
    s: &TestSetup<'_>,
    target: &mut LiveTarget,
    stop: &StopFlag,
    on_interval: &mut dyn FnMut(&IntervalSample),
    w: &mut RunWrite,
) -> Result<()> {
    let c = s.campaign;
    let p = s.plan;
    let init = c.spec.init.for_scale(p.scale);
    if target.current_scale != Some(p.scale) {
        initialize(target, p.scale, &init)?;
        target.current_scale = Some(p.scale);
    }
    // Hygiene.
    let h = &c.spec.hygiene;
    let mut pg = Pg::connect(&target.conninfo)?;
    if h.truncate_history {
        pg.exec("TRUNCATE pgbench_history")?;
    }
    if h.vacuum {
        pg.exec(
            "VACUUM ANALYZE pgbench_branches, pgbench_tellers, pgbench_accounts, pgbench_history",
        )?;
    }
    if h.checkpoint {
        pg.exec("CHECKPOINT")?;
    }
    if h.resets_stats(target.cluster.is_some()) {
        pg.exec(&pgstats::reset_sql(target.version_num))?;
    }
    drop(pg);
    // Warm-up: a separate run, discarded but for its intervals.
    let warmup = c.warmup_s().round() as u32;
    if warmup > 0 {
        let argv = pgbench_argv(s, Limit::Duration(warmup), true);
        let mut cb = |iv: &IntervalSample, _: &LatencyHistogram| {
            w.intervals.push(crate::convert::interval(iv, true, 0.0));
            on_interval(iv);
        };
        let (_, warm_messages) = engine_run(target, &argv, p.scale, &init, stop, &mut cb)?;
        if !warm_messages.is_empty() {
            w.warnings.push(warning(
                "client_errors",
                format!(
                    "test {}: the warm-up's clients reported errors:\n{}",
                    p.key,
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
    }
    let mut monitor = Pg::connect(&target.monitor_conninfo)?;
    settle(&mut monitor, &target.dbname)?;
    let before = snapshot(&mut monitor, target)?;
    let sampling = &c.spec.sampling;
    let sampler = Sampler::start(target.sampler_config(sampling));
    let argv = pgbench_argv(s, c.limit(), true);
    let mut cb = |iv: &IntervalSample, h: &LatencyHistogram| {
        let interval = crate::convert::interval(iv, false, 0.0);
        w.interval_histograms
            .extend(crate::convert::interval_histogram(&interval, h));
        w.intervals.push(interval);
        on_interval(iv);
    };
    let result = engine_run(target, &argv, p.scale, &init, stop, &mut cb);
    let sampled = sampler.finish();
    let (result, messages) = result?;
    if !messages.is_empty() {
        w.warnings.push(warning(
            "client_errors",
            format!(
                "test {}: the clients reported errors:\n{}",
                p.key,
                messages.text()
            ),
        ));
    }
    settle(&mut monitor, &target.dbname)?;
    let after = snapshot(&mut monitor, target)?;
    w.metrics = sampled.samples;
    w.facts.extend(sampled.facts);
    w.metric_info = crate::sampler::describe_all(&w.metrics);
    for e in sampled.errors {
        w.warnings.push(warning("sampler", e));
    }
    // Counters and the server-side ground truth.
    for (name, b) in &before {
        let a = after.get(name).copied();
        w.counters.push(CounterRecord {
            name: name.clone(),
            before_value: Some(*b),
            after_value: a,
            delta: a.map(|a| a - b),
        });
    }
    let delta = |k: &str| Some(after.get(k)? - before.get(k)?);
    w.run.server_commits = delta("pg.db.xact_commit").map(|d| d as i64);
    w.run.server_rollbacks = delta("pg.db.xact_rollback").map(|d| d as i64);
    w.run.wal_bytes = delta("pg.wal.lsn_bytes").map(|d| d as i64);
    w.run.db_size_start = before.get("pg.db.size_bytes").map(|v| *v as i64);
    w.run.db_size_end = after.get("pg.db.size_bytes").map(|v| *v as i64);
    crate::convert::fill_run(&mut w.run, &result);
    w.histograms = crate::convert::histograms(&result);
    if let (Some(server), Some(client)) = (w.run.server_commits, w.run.transactions) {
        let pct = 100.0 * (server - client).abs() as f64 / (client.max(1)) as f64;
        w.run.commit_mismatch_pct = Some(pct);
        if pct > h.commit_tolerance_pct {
            w.warnings.push(warning(
                "commit_mismatch",
                format!(
                    "test {}: the server counted {server} commits, the client {client} transactions ({pct:.1} % apart, tolerance {} %)",
                    p.key, h.commit_tolerance_pct
                ),
            ));
        }
    }
    // Settings in force.
    let mut pg = Pg::connect(&target.conninfo)?;
    for r in pg.rows(pgstats::SETTINGS_SQL)? {
        let get = |i: usize| r.get(i).cloned().flatten();
        if let Some(name) = get(0) {
            w.settings.push(SettingRecord {
                name,
                setting: get(1),
                unit: get(2),
                source: get(3),
                boot_val: get(4),
            });
        }
    }
    // Cleanup (timed): leave the history table empty for the next test.
    let t0 = Instant::now();
    if h.truncate_history {
        pg.exec("TRUNCATE pgbench_history")?;
    }
    w.run.cleanup_s = Some(t0.elapsed().as_secs_f64());
    Ok(())
}

fn warning(code: &str, message: String) -> WarningRecord {
    WarningRecord {
        set_id: None,
        run_id: None,
        code: code.into(),
        message,
        created_at: now_rfc3339(),
    }
}
