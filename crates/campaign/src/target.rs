//! Live targets: a throwaway cluster started for the campaign, or an existing server.
//!
//! A target's connection string is parsed once, when it starts ([`LiveTarget::conn`]
//! and [`LiveTarget::monitor`]). Each target knows where its server host's OS metrics
//! come from ([`HostSource`]) and describes that host in its manifest from the
//! same source; the client's own host is described apart, under `client`. Before the
//! first test of a scale, [`prepare_scale`] decides whether the pgbench tables must be
//! (re)built: with `init = "if-needed"` (the default) tables already holding the scale
//! are reused, so a second campaign or a resume does not load them again; when they
//! must be built, [`initialize`] runs `-i`.

use std::time::{Duration, Instant};

use pgsurge_observe::hostmetrics::{self, Exporter, HostSource};
use pgsurge_observe::sampler::SamplerConfig;
use pgsurge_observe::{manifest, ObserveError, Pg};
use pgsurge_server::source_build::Built;
use pgsurge_server::Cluster;
use pgsurge_store::{facts, FactRecord};
use pgsurge_wire::redact::{passwords, redact, redact_with};
use pgsurge_wire::ConnConfig;
use serde_json::{json, Value};

use crate::error::{CampaignError, Result};
use crate::matrix::Dataset;
use crate::pinning::Pinning;
use crate::spec::{InitMode, InitOptionsSpec, SamplingSection, TargetSpec};

/// A target ready for tests.
pub struct LiveTarget {
    /// Name from the campaign.
    pub name: String,
    /// Conninfo of the benchmark database, as written (the generators of a distributed
    /// test get it; the store keeps it with its password masked).
    pub conninfo: String,
    /// The benchmark database's connection parameters ([`LiveTarget::conninfo`] parsed).
    pub conn: ConnConfig,
    /// Connection parameters of monitoring queries: the `postgres` database when
    /// reachable, so the monitor's own transactions do not count in the benchmark
    /// database's statistics.
    pub monitor: ConnConfig,
    /// Benchmark database name.
    pub dbname: String,
    /// `server_version_num`.
    pub version_num: i32,
    /// `server_version`.
    pub server_version: String,
    /// Binaries directory (throwaway).
    pub bin_dir: Option<String>,
    /// The cluster, stopped when dropped (throwaway).
    pub cluster: Option<Cluster>,
    /// Its streaming standbys (`replicas = N`), stopped with it.
    pub replicas: Vec<Cluster>,
    /// A test's `[[fault]]`s changed the servers (a standby promoted, the primary
    /// stopped): they are started again before the next test.
    pub faulted: bool,
    /// The data the database holds now, as the last test prepared it (None: unknown,
    /// check or re-initialize before the next test).
    pub current_data: Option<Dataset>,
    /// Why the data is no longer as it was loaded, though its tables still look right (a
    /// replay changed it): loaded again before the next test unless `init = "never"`.
    pub data_changed: Option<String>,
    /// Row id in the store.
    pub target_id: i64,
    /// Manifest: the server host (from [`LiveTarget::host_source`]; `source` says
    /// which), `server` (version, settings) and `client` (the machine pgsurge runs on).
    pub manifest: serde_json::Value,
    /// Where the server host's metrics come from.
    pub host_source: HostSource,
    /// When to initialize.
    pub init_mode: InitMode,
    /// Facts stored with every test of the target (data directory filesystem...).
    pub facts: Vec<FactRecord>,
    /// Warnings stored with every test of the target: (warning code, message) — the data
    /// directory in memory, what on the hosts moves numbers, a debug build.
    pub warnings: Vec<(&'static str, String)>,
    /// The `matrix.settings` values a throwaway server was started with.
    pub swept_settings: Vec<(String, String)>,
    /// Tests run on this server since it started.
    pub tests_done: usize,
    /// The layout build and server start (`[repeats] builds` and `starts`, each from
    /// 0) this server is.
    pub level: (u32, u32),
}

impl LiveTarget {
    /// The sampler configuration of a test on this target.
    pub fn sampler_config(&self, sampling: &SamplingSection) -> SamplerConfig {
        SamplerConfig {
            os: sampling.os,
            host: self.host_source.clone(),
            client: true,
            pg: sampling
                .pg
                .then(|| (self.monitor.clone(), self.dbname.clone())),
            interval: sampling.interval,
            devices: sampling.devices.clone(),
        }
    }
}

/// Parses a target's connection string (libpq syntax or URI), once, with the process
/// environment; the error masks any password in it.
pub fn conn_config(conninfo: &str) -> Result<ConnConfig> {
    ConnConfig::parse(conninfo).map_err(|e| CampaignError::Pg {
        context: format!("connection string \"{}\"", redact(conninfo)),
        message: redact_with(&e.to_string(), &passwords(conninfo)),
    })
}

/// The target's node_exporter endpoint, when it gives one.
fn exporter(spec: &TargetSpec) -> Option<Exporter> {
    spec.node_exporter_url().map(|url| Exporter {
        url: url.to_string(),
        ca_file: spec.node_exporter_ca.clone(),
    })
}

/// Chooses the server-host metrics source of a target (see `TargetSpec::host_metrics`);
/// `conn` reaches its benchmark database.
pub fn choose_host_source(
    spec: &TargetSpec,
    conn: &ConnConfig,
    monitor: &mut Pg,
) -> Result<HostSource> {
    let wanted = spec.host_metrics.as_deref().unwrap_or("auto");
    let user = monitor
        .value("SELECT current_user")
        .ok()
        .flatten()
        .unwrap_or_default();
    let no_files = || {
        format!(
            "role \"{user}\" may not read the server's files (neither superuser nor a member of pg_read_server_files)"
        )
    };
    let local = spec.is_throwaway() || (spec.conninfo.is_some() && conn.is_local());
    Ok(match wanted {
        "local" => HostSource::Local,
        "none" => HostSource::None("host_metrics = \"none\"".into()),
        "node_exporter" => {
            HostSource::NodeExporter(exporter(spec).unwrap_or_else(|| Exporter::new("")))
        }
        "pg_read_file" => {
            if !hostmetrics::can_read_server_files(monitor) {
                return Err(CampaignError::Other(format!(
                    "target \"{}\": host_metrics = \"pg_read_file\" but {}",
                    spec.name,
                    no_files()
                )));
            }
            HostSource::PgReadFile(monitor.config().clone())
        }
        _ => {
            if let Some(e) = exporter(spec) {
                HostSource::NodeExporter(e)
            } else if local {
                HostSource::Local
            } else if hostmetrics::can_read_server_files(monitor) {
                HostSource::PgReadFile(monitor.config().clone())
            } else {
                HostSource::None(format!("no node_exporter given and {}", no_files()))
            }
        }
    })
}

/// Starts a throwaway target: its server (and standbys, with `replicas`, each through a
/// relay when `relayed`); returns them with the benchmark database's connection string
/// (multi-host with standbys).
fn start_throwaway(
    spec: &TargetSpec,
    database: &str,
    (build, relayed): (Option<&Built>, bool),
    pinning: &Pinning,
) -> Result<(Cluster, Vec<Cluster>, String)> {
    let built = build.map(|b| b.bin_dir.as_path());
    let builder = (spec.cluster_builder(built, pinning.server_cpus(), database))
        .map_err(CampaignError::Other)?;
    // Without replicas, a topology of the primary alone.
    let (replicas, sync) = (spec.replicas as usize, spec.sync_replication());
    let topology = pgsurge_server::Topology::start_with(builder, replicas, sync, relayed)?;
    let conninfo = topology.conninfo(database);
    let (primary, standbys) = topology.into_parts();
    Ok((primary, standbys, conninfo))
}

/// Starts (throwaway) or connects to (conninfo) a target.
pub fn start(
    spec: &TargetSpec,
    database: &str,
    build: (Option<&Built>, bool),
    pinning: &Pinning,
) -> Result<LiveTarget> {
    // Connection errors name the target.
    let in_target = |message: String| CampaignError::Pg {
        context: format!("target \"{}\"", spec.name),
        message,
    };
    let mut replicas = Vec::new();
    let (cluster, conninfo, conn, monitor, bin_dir) = match &spec.conninfo {
        Some(ci) => {
            let conn = conn_config(ci).map_err(|e| match e {
                CampaignError::Pg { message, .. } => in_target(message),
                other => other,
            })?;
            let monitor = if ci.contains("://") {
                ci.clone()
            } else {
                format!("{ci} dbname=postgres")
            };
            let monitor = match conn_config(&monitor) {
                Ok(m) if Pg::connect(&m).is_ok() => m,
                _ => conn.clone(),
            };
            (None, ci.clone(), conn, monitor, None)
        }
        None => {
            let (cluster, standbys, conninfo) = start_throwaway(spec, database, build, pinning)?;
            replicas = standbys;
            let conn = conn_config(&conninfo)?;
            let monitor = conn_config(&cluster.conninfo("postgres"))?;
            let bin = cluster.binaries().bin_dir().display().to_string();
            (Some(cluster), conninfo, conn, monitor, Some(bin))
        }
    };
    let mut pg =
        Pg::connect_patiently(&conn, std::time::Duration::from_secs(60)).map_err(|e| match e {
            ObserveError::Pg { message, .. } => in_target(message),
        })?;
    let server_version = pg.value("SHOW server_version")?.unwrap_or_default();
    let mut monitor_pg = match Pg::connect(&monitor) {
        Ok(p) => p,
        Err(_) => Pg::connect(&conn)?,
    };
    let host_source = choose_host_source(spec, &conn, &mut monitor_pg)?;
    let data_dir = match &cluster {
        Some(c) => Some(c.data_dir().display().to_string()),
        None => pg
            .value("SELECT setting FROM pg_settings WHERE name = 'data_directory'")
            .ok()
            .flatten(),
    };
    let mut manifest =
        hostmetrics::host_manifest_from(&host_source, Some(&mut monitor_pg), data_dir.as_deref());
    manifest["server"] = manifest::server_manifest(&mut pg);
    manifest["client"] = manifest::host_manifest();
    if cluster.is_some() {
        manifest["pinning"] = pinning.manifest();
    } else if pinning.client.is_some() {
        manifest["pinning"] = json!({ "client": pinning.manifest()["client"] });
    }
    let (mut target_facts, in_memory) = data_dir_facts(&spec.name, &manifest["data_directory"]);
    let mut warnings: Vec<(&'static str, String)> = in_memory
        .into_iter()
        .map(|w| ("data_dir_in_memory", w))
        .collect();
    warnings.extend(
        host_noise(&spec.name, &manifest)
            .into_iter()
            .map(|w| ("host_noise", w)),
    );
    let mut hazards = Vec::new();
    if let Some(b) = build.0 {
        manifest["build"] = serde_json::to_value(&b.info).unwrap_or_default();
        target_facts.extend(build_facts(&b.info));
        hazards.extend(b.info.timing_hazards.iter().cloned());
    }
    if pg.value("SHOW debug_assertions")?.as_deref() == Some("on") {
        hazards.push("debug_assertions=on".into());
    }
    if !hazards.is_empty() {
        warnings.push((
            "timing_hazard",
            format!(
                "target \"{}\": the server is built with {}: assertions and debug options make \
                 its timings meaningless",
                spec.name,
                hazards.join(" ")
            ),
        ));
        target_facts.push(FactRecord::new(facts::TIMING_HAZARDS, hazards.join(" ")));
    }
    Ok(LiveTarget {
        name: spec.name.clone(),
        dbname: pg.dbname().to_string(),
        version_num: pg.version_num(),
        server_version,
        conninfo,
        conn,
        monitor,
        bin_dir,
        cluster,
        replicas,
        faulted: false,
        current_data: None,
        data_changed: None,
        swept_settings: Vec::new(),
        tests_done: 0,
        level: (0, 0),
        target_id: 0,
        manifest,
        host_source,
        init_mode: spec.init_mode(),
        facts: target_facts,
        warnings,
    })
}

/// What on the server's host and on the client's is known to move numbers from run to
/// run (once when they are the same machine).
fn host_noise(target: &str, manifest: &Value) -> Vec<String> {
    let client = &manifest["client"];
    let same = manifest["hostname"].is_string() && manifest["hostname"] == client["hostname"];
    let mut out: Vec<String> = manifest::noise_warnings(manifest)
        .into_iter()
        .map(|w| {
            if same {
                format!("target \"{target}\" (server and client host): {w}")
            } else {
                format!("target \"{target}\", server host: {w}")
            }
        })
        .collect();
    if !same {
        out.extend(
            manifest::noise_warnings(client)
                .into_iter()
                .map(|w| format!("target \"{target}\", client host: {w}")),
        );
    }
    out
}

/// The facts that say what a target built from source was built from.
fn build_facts(info: &pgsurge_server::source_build::BuildInfo) -> Vec<FactRecord> {
    let mut source = info.source.clone();
    for p in &info.patches {
        source.push_str(&format!(
            " + {} ({})",
            p.name,
            &p.sha256[..p.sha256.len().min(8)]
        ));
    }
    let mut out = vec![
        FactRecord::new(facts::BUILD_SOURCE, source),
        FactRecord::new(facts::BUILD_KEY, info.key.clone()),
        FactRecord::new(facts::BUILD_CONFIGURE, info.pg_configure.clone()),
        FactRecord::new(facts::BUILD_COMPILER, info.compiler.clone()),
        FactRecord::new(facts::BUILD_SECONDS, format!("{:.1}", info.seconds)),
    ];
    if let Some(seed) = info.layout_seed {
        out.push(FactRecord::new(facts::BUILD_LAYOUT_SEED, seed.to_string()));
    }
    if let Some(digest) = &info.postgres_sha256 {
        out.push(FactRecord::new(
            facts::BUILD_POSTGRES_SHA256,
            digest.clone(),
        ));
    }
    if let Some(c) = &info.commit {
        out.push(FactRecord::new(facts::BUILD_COMMIT, c.clone()));
    }
    out
}

/// Facts and warnings about a manifest's `data_directory` entry.
pub fn data_dir_facts(target: &str, entry: &Value) -> (Vec<FactRecord>, Vec<String>) {
    let fstype = entry["fstype"].as_str().unwrap_or("unknown");
    let mut f = vec![FactRecord::new(facts::DATA_DIR_FSTYPE, fstype)];
    let mut w = Vec::new();
    if hostmetrics::is_memory_fs(fstype) {
        f.push(FactRecord::new(facts::DATA_DIR_IN_MEMORY, "true"));
        w.push(format!(
            "target \"{target}\": the data directory {} is on {fstype} (in memory): no real I/O happens; give the target a data_dir on a real disk",
            entry["path"].as_str().unwrap_or("?")
        ));
    }
    (f, w)
}

/// What [`prepare_scale`] did.
#[derive(Debug, Clone)]
pub struct InitOutcome {
    /// True when the tables were built now.
    pub performed: bool,
    /// Why (or why not).
    pub reason: String,
    /// Seconds the build took.
    pub duration_s: Option<f64>,
    /// client / server.
    pub method: String,
}

impl InitOutcome {
    /// The facts of this outcome for `run_facts`.
    pub fn facts(&self) -> Vec<FactRecord> {
        let mut f = vec![
            FactRecord::new(facts::INIT_PERFORMED, self.performed.to_string()),
            FactRecord::new(facts::INIT_REASON, self.reason.clone()),
            FactRecord::new(facts::INIT_METHOD, self.method.clone()),
        ];
        if let Some(d) = self.duration_s {
            f.push(FactRecord::new(facts::INIT_DURATION_S, format!("{d:.3}")));
        }
        f
    }
}

/// Why the pgbench tables of `conn` do not hold `scale` as `o` asks (None: they do).
/// Checks the four tables exist, the branches count, the partitions of
/// pgbench_accounts and their method, the primary key (the last step of a complete
/// `-i`) and the last account row.
pub fn dataset_mismatch(pg: &mut Pg, scale: u32, o: &InitOptionsSpec) -> Result<Option<String>> {
    let exists = pg.value(
        "SELECT to_regclass('pgbench_branches') IS NOT NULL AND to_regclass('pgbench_tellers') IS NOT NULL \
         AND to_regclass('pgbench_accounts') IS NOT NULL AND to_regclass('pgbench_history') IS NOT NULL",
    )?;
    if exists.as_deref() != Some("t") {
        return Ok(Some("the pgbench tables do not exist".into()));
    }
    let branches: i64 = pg
        .value("SELECT count(*) FROM pgbench_branches")?
        .and_then(|v| v.parse().ok())
        .unwrap_or(-1);
    if branches != i64::from(scale) {
        return Ok(Some(format!(
            "pgbench_branches holds {branches} rows, scale {scale} needs {scale}"
        )));
    }
    let parts: u32 = pg
        .value("SELECT count(*) FROM pg_inherits WHERE inhparent = 'pgbench_accounts'::regclass")?
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let want_parts = o.partitions.unwrap_or(0);
    if parts != want_parts {
        return Ok(Some(format!(
            "pgbench_accounts has {parts} partitions, {want_parts} configured"
        )));
    }
    if want_parts > 0 {
        let strat = pg
            .value("SELECT partstrat FROM pg_partitioned_table WHERE partrelid = 'pgbench_accounts'::regclass")?
            .unwrap_or_default();
        let want = match o.partition_method.as_deref() {
            Some("hash") => "h",
            _ => "r",
        };
        if strat != want {
            return Ok(Some(
                "pgbench_accounts is partitioned by another method".into(),
            ));
        }
    }
    let pk = pg.value(
        "SELECT count(*) FROM pg_index WHERE indrelid = 'pgbench_accounts'::regclass AND indisprimary",
    )?;
    if pk.as_deref() != Some("1") {
        return Ok(Some(
            "pgbench_accounts has no primary key (an initialization did not finish)".into(),
        ));
    }
    let last = pg.value(&format!(
        "SELECT count(*) FROM pgbench_accounts WHERE aid = {}",
        u64::from(scale) * 100_000
    ))?;
    if last.as_deref() != Some("1") {
        return Ok(Some("pgbench_accounts is incomplete".into()));
    }
    Ok(None)
}

/// Makes the target hold `scale`: decides by its init mode whether to (re)build the
/// tables, announces it through `say` (only pgbench's own tables are dropped), and
/// builds them, calling `progress(elapsed)` about twice a second meanwhile.
pub fn prepare_scale(
    target: &mut LiveTarget,
    scale: u32,
    o: &InitOptionsSpec,
    say: &mut dyn FnMut(&str),
    progress: &(dyn Fn(Duration) + Sync),
) -> Result<InitOutcome> {
    let method = o.method.clone().unwrap_or_else(|| "client".into());
    let mismatch = {
        let mut pg = Pg::connect(&target.conn)?;
        dataset_mismatch(&mut pg, scale, o)?
    };
    let held = format!("the pgbench tables already hold scale {scale}");
    let reason = match reason_to_load(target, mismatch, Dataset::pgbench(scale), held, &method)? {
        Ok(reason) => reason,
        Err(outcome) => return Ok(outcome),
    };
    let tables_exist = {
        let mut pg = Pg::connect(&target.conn)?;
        any_pgbench_table_exists(&mut pg)?
    };
    say(&init_announcement(
        &target.name,
        scale,
        &reason,
        tables_exist,
    ));
    target.current_data = None;
    let t0 = Instant::now();
    let result = with_ticker(
        PROGRESS_PERIOD,
        || progress(t0.elapsed()),
        || initialize(target, scale, o),
    );
    result?;
    target.current_data = Some(Dataset::pgbench(scale));
    Ok(InitOutcome {
        performed: true,
        reason,
        duration_s: Some(t0.elapsed().as_secs_f64()),
        method,
    })
}

/// Makes the target hold workload pack `pack` at `scale`, as [`prepare_scale`] does for
/// pgbench's tables: by the target's init mode, loads it with the pack's loader (its
/// schema drops and creates only the pack's own tables) over `o.jobs` connections,
/// with the data derived from `seed`.
pub fn prepare_pack(
    target: &mut LiveTarget,
    pack: &pgsurge_workload::Pack,
    scale: u32,
    seed: u64,
    o: &InitOptionsSpec,
    say: &mut dyn FnMut(&str),
    progress: &(dyn Fn(Duration) + Sync),
) -> Result<InitOutcome> {
    let method = "workload".to_string();
    let name = pack.name().to_string();
    let held = {
        let mut pg = Pg::connect(&target.conn)?;
        pgsurge_workload::read_scale(pack, pg.connection())
    };
    let mismatch = match held {
        Ok(s) if s == i64::from(scale) => None,
        Ok(s) => Some(format!(
            "workload {name} holds scale {s}, the test needs {scale}"
        )),
        Err(e) => Some(e.to_string()),
    };
    let dataset = Dataset {
        pack: Some(name.clone()),
        scale,
    };
    let held = format!("the tables of workload {name} already hold scale {scale}");
    let reason = match reason_to_load(target, mismatch, dataset, held, &method)? {
        Ok(reason) => reason,
        Err(outcome) => return Ok(outcome),
    };
    say(&format!(
        "target \"{}\": loading workload {name} at scale {scale} ({reason}): its own tables only",
        target.name
    ));
    target.current_data = None;
    let t0 = Instant::now();
    let result = with_ticker(
        PROGRESS_PERIOD,
        || progress(t0.elapsed()),
        || load_pack(target, pack, scale, seed, o),
    );
    result?;
    target.current_data = Some(Dataset {
        pack: Some(name),
        scale,
    });
    Ok(InitOutcome {
        performed: true,
        reason,
        duration_s: Some(t0.elapsed().as_secs_f64()),
        method,
    })
}

/// Why the target's data is to be loaded, by its init mode and `mismatch` (why the
/// database does not hold `dataset`, None when it does): `Ok(reason)` to load,
/// `Err(outcome)` when it holds the data already (then recorded as the target's), an
/// error when `init = "never"` forbids the load the data needs.
fn reason_to_load(
    target: &mut LiveTarget,
    mismatch: Option<String>,
    dataset: Dataset,
    held: String,
    method: &str,
) -> Result<std::result::Result<String, InitOutcome>> {
    let changed = target.data_changed.take();
    let holds = mismatch.is_none();
    if pgsurge_plan::reloads::loads(target.init_mode, changed.is_some(), holds) {
        let always = (target.init_mode == InitMode::Always).then(|| "init = \"always\"".into());
        return Ok(Ok(changed.or(always).or(mismatch).unwrap_or_default()));
    }
    match mismatch {
        None => {
            target.current_data = Some(dataset);
            Ok(Err(InitOutcome {
                performed: false,
                reason: held,
                duration_s: None,
                method: method.to_string(),
            }))
        }
        Some(why) => Err(CampaignError::Other(format!(
            "target \"{}\" has init = \"never\" but {why}",
            target.name
        ))),
    }
}

/// Runs the pack's loader for `scale`.
fn load_pack(
    target: &LiveTarget,
    pack: &pgsurge_workload::Pack,
    scale: u32,
    seed: u64,
    o: &InitOptionsSpec,
) -> Result<()> {
    let mut pg = Pg::connect(&target.conn)?;
    let conn = &target.conn;
    let connect = move || {
        Pg::connect(conn)
            .map(Pg::into_connection)
            .map_err(|e| e.to_string())
    };
    let opts = pgsurge_workload::load::LoadOptions {
        scale,
        jobs: usize::try_from(o.jobs.unwrap_or(1)).unwrap_or(1),
        seed,
    };
    let mut messages = Vec::new();
    pgsurge_workload::load::load(pack, pg.connection(), &connect, opts, &mut messages, None)
        .map_err(|e| {
            CampaignError::Other(format!(
                "loading workload {} at scale {scale} on target \"{}\": {}",
                pack.name(),
                target.name,
                e.to_string().trim_end()
            ))
        })
}

/// How often [`prepare_scale`] reports the elapsed initialization time.
const PROGRESS_PERIOD: Duration = Duration::from_millis(200);

/// The names of the tables an initialization drops and creates.
const PGBENCH_TABLES: &str =
    "pgbench_accounts, pgbench_branches, pgbench_history and pgbench_tellers";

/// Whether any of pgbench's four tables exists (an initialization drops those first).
fn any_pgbench_table_exists(pg: &mut Pg) -> Result<bool> {
    let any = pg.value(
        "SELECT to_regclass('pgbench_branches') IS NOT NULL OR to_regclass('pgbench_tellers') IS NOT NULL \
         OR to_regclass('pgbench_accounts') IS NOT NULL OR to_regclass('pgbench_history') IS NOT NULL",
    )?;
    Ok(any.as_deref() == Some("t"))
}

/// The line announcing an initialization: it says tables are dropped only when some
/// exist, so a fresh server does not read as losing data.
fn init_announcement(target: &str, scale: u32, reason: &str, tables_exist: bool) -> String {
    let action = if tables_exist {
        "dropping and re-creating"
    } else {
        "creating"
    };
    format!(
        "target \"{target}\": initializing scale {scale} ({reason}): {action} {PGBENCH_TABLES} only"
    )
}

/// Runs `work`, calling `tick` at once and then every `period` on another thread
/// until `work` returns. The ticking thread wakes as soon as the work ends, so the
/// call takes as long as the work, not up to one more period.
fn with_ticker<T>(period: Duration, tick: impl Fn() + Sync, work: impl FnOnce() -> T) -> T {
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let tick = &tick;
    std::thread::scope(|scope| {
        scope.spawn(move || loop {
            tick();
            match done_rx.recv_timeout(period) {
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                // The sender is dropped (or sent) when the work ends.
                _ => return,
            }
        });
        let result = work();
        drop(done_tx);
        result
    })
}

/// Runs `-i` for `scale` with the campaign's init options.
pub fn initialize(target: &LiveTarget, scale: u32, o: &InitOptionsSpec) -> Result<()> {
    let mut pg = Pg::connect(&target.conn)?;
    let server_side = o.method.as_deref() == Some("server");
    let mut steps = String::from(if server_side { "dtGvp" } else { "dtgvp" });
    if o.foreign_keys == Some(true) {
        steps.push('f');
    }
    let spec = pgsurge_init::InitSpec {
        steps,
        scale: i32::try_from(scale)
            .map_err(|_| CampaignError::Other(format!("scale {scale} is too large")))?,
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
    let clock = pgsurge_init::MonotonicClock::new();
    let ctx = pgsurge_init::InitContext {
        clock: &clock,
        stderr_is_tty: false,
        cancel: None,
    };
    let conn = &target.conn;
    let connect = move || {
        Pg::connect(conn)
            .map(Pg::into_connection)
            .map_err(|e| e.to_string())
    };
    let jobs = usize::try_from(o.jobs.unwrap_or(1)).unwrap_or(1);
    pgsurge_init::initialize_parallel(
        pg.connection(),
        &spec,
        Some((jobs, &connect)),
        &mut messages,
        &ctx,
    )
    .map_err(|e| {
        CampaignError::Other(format!(
            "initializing scale {scale} on target \"{}\": {}",
            target.name,
            e.to_string().trim_end()
        ))
    })
}

/// Checks that an existing server lets a session set each swept setting (context `user`
/// or `superuser`): others need a restart or a reload, which pgsurge does not do to a
/// server it did not start.
pub fn check_session_settings(
    target: &LiveTarget,
    settings: &[(String, String)],
) -> std::result::Result<(), String> {
    if settings.is_empty() || target.cluster.is_some() {
        return Ok(());
    }
    let mut pg = Pg::connect(&target.conn).map_err(|e| e.to_string())?;
    for (name, _) in settings {
        let context = pg
            .value(&format!(
                "SELECT context FROM pg_settings WHERE name = {}",
                pgsurge_observe::sql_session::literal(name)
            ))
            .map_err(|e| e.to_string())?;
        match context.as_deref() {
            Some("user" | "superuser") => {}
            Some(other) => {
                return Err(format!(
                    "setting {name} cannot be swept on the existing server \"{}\": a session \
                     cannot change it (context {other}); sweep it on a throwaway target",
                    target.name
                ))
            }
            None => {
                return Err(format!(
                    "server of target \"{}\" has no setting {name}",
                    target.name
                ))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn the_ticker_ends_with_the_work_without_waiting_its_period() {
        let ticks = AtomicUsize::new(0);
        let t0 = Instant::now();
        let value = with_ticker(
            Duration::from_secs(600),
            || {
                ticks.fetch_add(1, Ordering::Relaxed);
            },
            || 7,
        );
        assert_eq!(value, 7);
        // A ticker that slept its period would hold the join for ten minutes.
        assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", t0.elapsed());
        assert_eq!(ticks.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn the_ticker_ticks_while_the_work_runs() {
        let ticks = AtomicUsize::new(0);
        // The work lasts until it has seen a second tick (or a minute has passed).
        with_ticker(
            Duration::from_millis(1),
            || {
                ticks.fetch_add(1, Ordering::Relaxed);
            },
            || {
                let t0 = Instant::now();
                while ticks.load(Ordering::Relaxed) < 2 && t0.elapsed() < Duration::from_secs(60) {
                    std::thread::sleep(Duration::from_millis(1));
                }
            },
        );
        assert!(ticks.load(Ordering::Relaxed) >= 2);
    }

    #[test]
    fn the_announcement_speaks_of_dropping_only_when_tables_exist() {
        let fresh = init_announcement("t1", 10, "the pgbench tables do not exist", false);
        assert_eq!(
            fresh,
            "target \"t1\": initializing scale 10 (the pgbench tables do not exist): creating \
             pgbench_accounts, pgbench_branches, pgbench_history and pgbench_tellers only"
        );
        assert!(!fresh.contains("drop"), "{fresh}");
        let existing = init_announcement("t1", 10, "init = \"always\"", true);
        assert!(
            existing.contains(": dropping and re-creating pgbench_accounts"),
            "{existing}"
        );
    }
}
