//! `pgsurge server start|stop|status|env|build|builds`: detached throwaway servers for interactive use
//! and scripts. Parsing (clap) and printing only; clusters are [`crate::cluster`]'s job
//! and the records that let `stop`/`status` find a server are [`crate::state`]'s.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};
use pgsurge_command::EXIT_NOTHING;

use crate::builder::{BinarySource, ClusterBuilder};
use crate::cluster::conninfo;
use crate::datadir::holds_standby;
use crate::error::{Result, ServerError};
use crate::postmaster::{is_alive, looks_like_postgres, stop_postmaster, PidFile, StopTimeouts};
use crate::state::{self, ServerRecord};

#[derive(Debug, Parser)]
#[command(
    name = "pgsurge server",
    about = "Start, stop and inspect throwaway PostgreSQL servers; build PostgreSQL from source",
    disable_version_flag = true
)]
struct ServerCli {
    /// Directory holding the records of started servers (default: the user's state dir).
    #[arg(long, global = true, value_name = "DIR", hide = true)]
    state_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Initialize (if needed) and start a server that keeps running until `stop`;
    /// prints its connection string.
    Start(StartArgs),
    /// Stop a server started with `start` (fast shutdown, then immediate). Exit status
    /// 3 when no server is recorded (nothing to stop).
    Stop(SelectArgs),
    /// Show the servers started with `start` and whether they run. Exit status 3 when
    /// none runs.
    Status(SelectArgs),
    /// Print `export PGHOST=… PGPORT=… PGUSER=… PGDATABASE=…` lines for a running
    /// server, so that `eval "$(pgsurge server env)"` makes `pgsurge bench` and `psql`
    /// connect to it without arguments. Exit status 3 when none runs.
    Env(SelectArgs),
    /// Build and install PostgreSQL from a source tree, a git checkout (at --ref) or a
    /// release tarball, with patches; cached by its inputs. Prints the installation's
    /// bin directory as the last line.
    Build(BuildArgs),
    /// List the builds in the cache (or empty it with --prune). Exit status 3 when the
    /// cache holds no build (nothing to list or remove).
    Builds(BuildsArgs),
}

#[derive(Debug, Args)]
struct BuildArgs {
    /// A PostgreSQL source tree, a git checkout or a release tarball (.tar.gz, .tar.bz2).
    #[arg(long, value_name = "PATH")]
    source: PathBuf,
    /// Commit, branch or tag to build (git checkouts only; exported to a private
    /// directory, the checkout is not touched). Default: HEAD with the uncommitted
    /// changes to tracked files.
    #[arg(long = "ref", value_name = "REF")]
    git_ref: Option<String>,
    /// Patch to apply, repeatable, in order (git apply, else patch -p1).
    #[arg(long = "patch", value_name = "FILE")]
    patches: Vec<PathBuf>,
    /// Argument for configure (or meson setup), repeatable (e.g. --configure=--enable-debug).
    #[arg(long = "configure", value_name = "ARG", allow_hyphen_values = true)]
    configure: Vec<String>,
    /// Build system: auto (configure if the tree has it, else meson), autoconf or meson.
    #[arg(long, value_name = "SYSTEM", default_value = "auto", value_parser = parse_system)]
    system: crate::source_build::BuildSystem,
    /// Contrib modules to build, comma-separated, or `none` (default: pg_stat_statements,
    /// pg_prewarm, pg_buffercache, pg_visibility, pgstattuple, pg_freespacemap).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    contrib: Option<Vec<String>>,
    /// Parallel compile jobs (default: the online CPUs).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    jobs: Option<u16>,
    /// Build for profiling: frame pointers and debug symbols (-fno-omit-frame-pointer
    /// -g) added to the compiler's flags, the optimisation unchanged; cached apart.
    #[arg(long)]
    profiling: bool,
    /// A layout build: the objects of the build without it, linked by LLVM's lld with
    /// every input section shuffled in the order this seed draws (1 or more); cached
    /// apart. Builds that differ in their seed differ in code layout only.
    #[arg(long, value_name = "SEED", value_parser = clap::value_parser!(u64).range(1..))]
    layout_seed: Option<u64>,
}

#[derive(Debug, Args)]
struct BuildsArgs {
    /// Remove every cached build but those running now and those a recorded or running
    /// server uses (named on stderr).
    #[arg(long)]
    prune: bool,
}

/// Who uses a build, shortly: the servers by name, the processes (a server's
/// postmaster and its children) by count and their first pids.
fn users_text(who: &[String]) -> String {
    let (processes, others): (Vec<&String>, Vec<&String>) =
        who.iter().partition(|w| w.starts_with("process "));
    let mut parts: Vec<String> = others.iter().map(|w| w.to_string()).collect();
    match processes.len() {
        0 => {}
        1 => parts.push(processes[0].clone()),
        n => {
            let shown: Vec<&str> = processes
                .iter()
                .take(3)
                .map(|p| p.trim_start_matches("process "))
                .collect();
            parts.push(format!(
                "{n} processes: {}{}",
                shown.join(", "),
                if n > 3 { ", …" } else { "" }
            ));
        }
    }
    parts.join("; ")
}

fn parse_system(text: &str) -> std::result::Result<crate::source_build::BuildSystem, String> {
    crate::source_build::BuildSystem::parse(text)
        .ok_or_else(|| format!("expected auto, autoconf or meson, got `{text}`"))
}

#[derive(Debug, Args)]
struct StartArgs {
    /// Use the PostgreSQL binaries in DIR (e.g. a self-built server's bin directory).
    #[arg(long, value_name = "DIR", conflicts_with = "pg_version")]
    pg_bin: Option<PathBuf>,
    /// Use PostgreSQL version V (17 or 18.1): installed if available, else downloaded.
    #[arg(long, value_name = "V")]
    pg_version: Option<String>,
    /// Server setting, repeatable (e.g. --set shared_buffers=1GB). pg_stat_statements is
    /// preloaded and created in the database unless shared_preload_libraries names other
    /// libraries (--set shared_preload_libraries= loads nothing).
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = parse_setting)]
    settings: Vec<(String, String)>,
    /// Data directory (created and initialized if missing, reused if it holds a cluster;
    /// kept at stop). Default: a temporary directory removed at stop. A standby's
    /// directory (standby.signal, as `pg_basebackup -R` leaves it) starts as a standby:
    /// read-only, streaming from its primary, nothing created in it.
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
    /// TCP port, on 127.0.0.1 unless `--set listen_addresses=…` says otherwise (default, or
    /// 0: a free port).
    #[arg(long, value_name = "N")]
    port: Option<u16>,
    /// Database to create at initialization; the connection string names it.
    #[arg(long, value_name = "NAME", default_value = "pgsurge")]
    database: String,
    /// When running as root, run the server as USER (default: postgres).
    #[arg(long, value_name = "USER")]
    run_as: Option<String>,
    /// Initialize with data page checksums.
    #[arg(long)]
    data_checksums: bool,
    /// Also start N streaming standbys of the server (from the same binaries, each on
    /// its own port; stopped with it). The printed connection string lists them all
    /// with `target_session_attrs=read-write`.
    #[arg(long, value_name = "N", default_value_t = 0)]
    replicas: usize,
    /// Commits wait until one of the standbys has flushed them (synchronous replication).
    #[arg(long, requires = "replicas")]
    sync: bool,
}

#[derive(Debug, Args)]
struct SelectArgs {
    /// The server's data directory (needed when several servers run).
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
    /// All recorded servers.
    #[arg(long, conflicts_with = "data")]
    all: bool,
}

fn parse_setting(text: &str) -> std::result::Result<(String, String), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=VALUE, got `{text}`"))?;
    crate::config_files::check_setting_name(name.trim()).map_err(|e| e.to_string())?;
    Ok((name.trim().to_string(), value.to_string()))
}

/// `pgsurge server` with the given output streams; returns the exit code (0 success,
/// 1 failure, 2 usage error, [`EXIT_NOTHING`] 3: nothing to act on).
pub(crate) fn run(args: &[OsString], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let cli = match pgsurge_command::parse_to::<ServerCli>("pgsurge server", args, out, err) {
        Ok(c) => c,
        Err(status) => return status,
    };
    let state_dir = match cli
        .state_dir
        .map(Ok)
        .unwrap_or_else(state::default_state_dir)
    {
        Ok(d) => d,
        Err(e) => return fail(err, &e),
    };
    let result = match cli.command {
        Command::Start(a) => start(&state_dir, a, out, err),
        Command::Stop(a) => stop(&state_dir, a, out, err),
        Command::Status(a) => status(&state_dir, a, out),
        Command::Env(a) => env(&state_dir, a, out, err),
        Command::Build(a) => build(a, out, err),
        Command::Builds(a) => builds(&state_dir, a, out, err),
    };
    match result {
        Ok(code) => code,
        Err(e) => fail(err, &e),
    }
}

/// The clap definition of `pgsurge server`, for the top-level command tree (help,
/// completions, man page).
pub(crate) fn command() -> clap::Command {
    <ServerCli as clap::CommandFactory>::command()
}

pub(crate) fn main(args: &[OsString]) -> i32 {
    run(args, &mut std::io::stdout(), &mut std::io::stderr())
}

fn build(a: BuildArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<i32> {
    let req = crate::source_build::BuildRequest {
        source: a.source,
        git_ref: a.git_ref,
        patches: a.patches,
        configure: a.configure,
        system: a.system,
        contrib: a
            .contrib
            .map(|list| list.into_iter().filter(|m| m != "none").collect()),
        jobs: a.jobs.map(usize::from),
        profiling: a.profiling,
        layout_seed: a.layout_seed,
    };
    let built = crate::source_build::build(&req, err)?;
    if built.cached {
        let _ = writeln!(
            err,
            "pgsurge: cached build {} of {}",
            crate::source_build::short(&built.info.key),
            built.info.source
        );
    }
    for hazard in &built.info.timing_hazards {
        let _ = writeln!(
            err,
            "pgsurge: warning: built with {hazard}: timings of this server are not representative"
        );
    }
    let _ = writeln!(out, "{}", built.bin_dir.display());
    Ok(0)
}

fn builds(
    state_dir: &Path,
    a: BuildsArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32> {
    if a.prune {
        let users = crate::source_build::build_users(&state::load_all(state_dir));
        let p = crate::source_build::prune_builds(&users)?;
        let _ = writeln!(
            err,
            "pgsurge: removed {} build{} ({:.1} MB){}",
            p.removed,
            if p.removed == 1 { "" } else { "s" },
            p.freed as f64 / 1e6,
            if p.building > 0 {
                format!("; {} in progress left alone", p.building)
            } else {
                String::new()
            }
        );
        for (key, who) in &p.in_use {
            let _ = writeln!(
                err,
                "pgsurge: kept build {}: in use by {}",
                crate::source_build::short(key),
                users_text(who)
            );
        }
        return Ok(if p.removed == 0 { EXIT_NOTHING } else { 0 });
    }
    let list = crate::source_build::list_builds()?;
    if list.is_empty() {
        let _ = writeln!(err, "pgsurge: no builds in the cache");
        return Ok(EXIT_NOTHING);
    }
    for b in list {
        let i = &b.info;
        let patches: Vec<&str> = i.patches.iter().map(|p| p.name.as_str()).collect();
        let _ = writeln!(
            out,
            "{}  {}  {}{}\n    patches: {}\n    configure: {}\n    {}, {:.0} MB, built in {}{}\n    {}",
            crate::source_build::short(&i.key),
            i.version,
            i.source,
            i.layout_seed.map(|s| format!(" (layout seed {s})")).unwrap_or_default(),
            if patches.is_empty() { "none".to_string() } else { patches.join(", ") },
            if i.configure.is_empty() { "(defaults)".to_string() } else { i.configure.join(" ") },
            if i.profiling {
                format!("{} (for profiling: {})", i.compiler, crate::source_build::PROFILING_CFLAGS)
            } else {
                i.compiler.clone()
            },
            b.bytes as f64 / 1e6,
            crate::source_build::elapsed_text(
                std::time::Duration::try_from_secs_f64(i.seconds).unwrap_or_default()
            ),
            if i.timing_hazards.is_empty() {
                String::new()
            } else {
                format!(", NOT FOR TIMING: {}", i.timing_hazards.join(" "))
            },
            b.bin_dir.display()
        );
    }
    Ok(0)
}

fn fail(err: &mut dyn Write, e: &ServerError) -> i32 {
    let _ = writeln!(err, "pgsurge: error: {e}");
    1
}

fn start(state_dir: &Path, a: StartArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<i32> {
    let source = match (a.pg_bin, a.pg_version) {
        (Some(dir), _) => BinarySource::Dir(dir),
        (None, Some(v)) => BinarySource::Version(v),
        (None, None) => BinarySource::Auto,
    };
    let mut b = ClusterBuilder::new()
        .binaries(source)
        .settings(a.settings)
        .database(a.database.clone())
        .data_checksums(a.data_checksums)
        .statements(true)
        .detached(true);
    let standby_dir = a.data.as_deref().filter(|d| holds_standby(d));
    if let (Some(d), true) = (standby_dir, a.replicas > 0) {
        return Err(ServerError::BadDataDir {
            data_dir: d.to_path_buf(),
            reason: "it holds a standby (standby.signal); --replicas needs a primary".into(),
        });
    }
    if let Some(d) = &a.data {
        b = b.data_dir(d);
    }
    // Port 0 means "any free port", as with bind(2); postgres itself refuses 0.
    if let Some(p) = a.port.filter(|&p| p != 0) {
        b = b.port(p);
    }
    if let Some(u) = a.run_as {
        b = b.run_as(u);
    }
    let (cluster, replicas) = if a.replicas > 0 {
        crate::topology::Topology::start(b, a.replicas, a.sync)?.into_parts()
    } else {
        (b.start()?, Vec::new())
    };
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let record = |c: &crate::cluster::Cluster, database: &str| ServerRecord {
        data_dir: c.data_dir().to_path_buf(),
        pid: c.pid(),
        port: c.port(),
        socket_dir: c.socket_dir().to_path_buf(),
        bin_dir: c.binaries().bin_dir().to_path_buf(),
        version_num: c.binaries().version().num(),
        superuser: c.superuser().to_string(),
        database: database.to_string(),
        log_file: c.log_file().to_path_buf(),
        remove_on_stop: c.removable_paths().to_vec(),
        started_at_ms: now_ms,
        replicas: Vec::new(),
    };
    // A standby holds what its primary holds: nothing was created in it.
    let database = match standby_dir {
        Some(_) => standby_database(&cluster, &a.database, err),
        None => a.database.clone(),
    };
    let mut rec = record(&cluster, &database);
    rec.replicas = replicas.iter().map(|r| record(r, &database)).collect();
    if let Err(e) = state::save(state_dir, &rec) {
        cluster.stop();
        for r in &replicas {
            r.stop();
        }
        return Err(e);
    }
    let _ = writeln!(out, "{}", record_conninfo(&rec));
    let _ = writeln!(
        err,
        "pgsurge: PostgreSQL {} running (pid {}, port {}, data {}, log {}); stop it with `{}`",
        cluster.binaries().version(),
        rec.pid,
        rec.port,
        rec.data_dir.display(),
        rec.log_file.display(),
        stop_command(a.data.is_some().then_some(rec.data_dir.as_path())),
    );
    if standby_dir.is_some() {
        let _ = writeln!(
            err,
            "pgsurge: {} holds a standby (standby.signal): started as it is, replaying its \
             primary's WAL and answering read-only queries; nothing was created in it",
            rec.data_dir.display()
        );
    }
    for (i, r) in rec.replicas.iter().enumerate() {
        let _ = writeln!(
            err,
            "pgsurge: {} ({}) streaming from it (pid {}, port {}, log {})",
            crate::topology::replica_name(i),
            if a.sync {
                "synchronous"
            } else {
                "asynchronous"
            },
            r.pid,
            r.port,
            r.log_file.display()
        );
    }
    cluster.detach();
    for r in replicas {
        r.detach();
    }
    Ok(0)
}

/// The database a started standby's connection string names: `wanted` when the standby
/// has it, else (said on `err`) `postgres` or another database that takes connections.
/// When the standby cannot be asked, `wanted`.
fn standby_database(
    cluster: &crate::cluster::Cluster,
    wanted: &str,
    err: &mut dyn Write,
) -> String {
    let sql = format!(
        "SELECT datname FROM pg_database WHERE datallowconn AND NOT datistemplate \
         ORDER BY datname <> {}, datname <> 'postgres', datname LIMIT 1",
        pgsurge_wire::quote_literal(wanted)
    );
    let found = match cluster.psql("template1", &sql) {
        Ok(out) => out.trim().to_string(),
        Err(_) => return wanted.to_string(),
    };
    if found.is_empty() || found == wanted {
        return wanted.to_string();
    }
    let _ = writeln!(
        err,
        "pgsurge: the standby has no database \"{wanted}\" (its primary has none): its \
         connection string names \"{found}\""
    );
    found
}

/// A record's connection string: over its socket, or over every server's socket with
/// `target_session_attrs=read-write` when it has standbys.
fn record_conninfo(r: &ServerRecord) -> String {
    if r.replicas.is_empty() {
        return conninfo(&r.socket_dir, r.port, &r.superuser, &r.database);
    }
    let servers: Vec<(String, u16)> = std::iter::once(r)
        .chain(r.replicas.iter())
        .map(|s| (s.socket_dir.to_string_lossy().into_owned(), s.port))
        .collect();
    crate::topology::multi_host_conninfo(&servers, &r.superuser, &r.database)
}

/// The recorded servers a command applies to: the one of `--data`, every one with
/// `--all`, else the one recorded, or of several the most recently started that still
/// runs (said on `err`, with how to choose another).
fn select(state_dir: &Path, a: &SelectArgs, err: &mut dyn Write) -> Result<Vec<ServerRecord>> {
    let all = state::load_all(state_dir);
    if let Some(d) = &a.data {
        let d = std::path::absolute(d).map_err(|e| ServerError::io(d, e))?;
        let d = std::fs::canonicalize(&d).unwrap_or(d);
        let found: Vec<ServerRecord> = all
            .into_iter()
            .filter(|r| {
                std::fs::canonicalize(&r.data_dir).unwrap_or_else(|_| r.data_dir.clone()) == d
            })
            .collect();
        if !found.is_empty() {
            return Ok(found);
        }
        // Not started by `pgsurge server start` (or its record was lost): use postmaster.pid.
        return match PidFile::read(&d) {
            Some(pf) => Ok(vec![ServerRecord {
                data_dir: d.clone(),
                pid: pf.pid,
                port: pf.port.unwrap_or(0),
                socket_dir: pf.socket_dir.map(PathBuf::from).unwrap_or_default(),
                bin_dir: PathBuf::new(),
                version_num: 0,
                superuser: "postgres".into(),
                database: "postgres".into(),
                log_file: d.join("pgsurge.log"),
                remove_on_stop: Vec::new(),
                started_at_ms: 0,
                replicas: Vec::new(),
            }]),
            None => Err(ServerError::Invalid(format!(
                "{}: no server recorded for this data directory and no postmaster.pid in it",
                d.display()
            ))),
        };
    }
    if a.all || all.len() <= 1 {
        return Ok(all);
    }
    let newest = |rs: &[ServerRecord]| {
        rs.iter()
            .max_by(|x, y| (x.started_at_ms, &x.data_dir).cmp(&(y.started_at_ms, &y.data_dir)))
            .cloned()
    };
    let running: Vec<ServerRecord> = all
        .iter()
        .filter(|r| live_pid(r).is_some())
        .cloned()
        .collect();
    let chosen = newest(&running)
        .or_else(|| newest(&all))
        .expect("several records");
    let _ = writeln!(
        err,
        "pgsurge: {} servers are recorded; using the most recently started{}, on {} \
         (another: --data DIR; every one: --all)",
        all.len(),
        if running.is_empty() { "" } else { " that runs" },
        chosen.data_dir.display()
    );
    Ok(vec![chosen])
}

/// The live postmaster of a record, if any.
fn live_pid(r: &ServerRecord) -> Option<i32> {
    let pid = PidFile::read(&r.data_dir).map(|p| p.pid).unwrap_or(r.pid);
    (is_alive(pid) && looks_like_postgres(pid)).then_some(pid)
}

fn stop(state_dir: &Path, a: SelectArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<i32> {
    let records = select(state_dir, &a, err)?;
    if records.is_empty() {
        let _ = writeln!(err, "pgsurge: no server to stop");
        return Ok(EXIT_NOTHING);
    }
    let mut code = 0;
    for r in records {
        match live_pid(&r) {
            Some(pid) => {
                if stop_postmaster(pid, None, StopTimeouts::default()) {
                    let _ = writeln!(
                        out,
                        "stopped server on {} (pid {pid})",
                        r.data_dir.display()
                    );
                } else {
                    let _ = writeln!(
                        err,
                        "pgsurge: error: server pid {pid} on {} did not exit",
                        r.data_dir.display()
                    );
                    code = 1;
                    continue;
                }
            }
            None => {
                let _ = writeln!(out, "server on {} was not running", r.data_dir.display());
            }
        }
        for p in &r.remove_on_stop {
            let _ = std::fs::remove_dir_all(p);
        }
        for replica in &r.replicas {
            if let Some(pid) = live_pid(replica) {
                if !stop_postmaster(pid, None, StopTimeouts::default()) {
                    let _ = writeln!(
                        err,
                        "pgsurge: error: replica pid {pid} on {} did not exit",
                        replica.data_dir.display()
                    );
                    code = 1;
                }
            }
            for p in &replica.remove_on_stop {
                let _ = std::fs::remove_dir_all(p);
            }
        }
        state::remove(state_dir, &r.data_dir)?;
    }
    Ok(code)
}

fn status(state_dir: &Path, a: SelectArgs, out: &mut dyn Write) -> Result<i32> {
    let records = select(
        state_dir,
        &SelectArgs {
            data: a.data,
            all: true,
        },
        &mut std::io::sink(),
    )?;
    if records.is_empty() {
        let _ = writeln!(out, "no pgsurge server recorded");
        return Ok(EXIT_NOTHING);
    }
    let mut any_running = false;
    for r in records {
        match live_pid(&r) {
            Some(pid) => {
                any_running = true;
                let _ = writeln!(
                    out,
                    "running  pid {pid}  port {}  data {}\n         {}",
                    r.port,
                    r.data_dir.display(),
                    record_conninfo(&r)
                );
                for (i, replica) in r.replicas.iter().enumerate() {
                    let _ = match live_pid(replica) {
                        Some(pid) => writeln!(
                            out,
                            "  {}  running  pid {pid}  port {}",
                            crate::topology::replica_name(i),
                            replica.port
                        ),
                        None => writeln!(out, "  {}  stopped", crate::topology::replica_name(i)),
                    };
                }
            }
            None => {
                let _ = writeln!(out, "stopped  data {}", r.data_dir.display());
            }
        }
    }
    Ok(if any_running { 0 } else { EXIT_NOTHING })
}

/// The command that stops a server started with `--data DIR` (or without), ready to
/// paste into a shell.
fn stop_command(data: Option<&Path>) -> String {
    match data {
        Some(d) => format!(
            "pgsurge server stop --data {}",
            pgsurge_command::shell_word(&d.to_string_lossy())
        ),
        None => "pgsurge server stop".to_string(),
    }
}

/// The `export` lines of a running server: libpq's variables, which `pgsurge bench`
/// reads as pgbench does.
fn env_lines(r: &ServerRecord) -> String {
    let host = |r: &ServerRecord| {
        if r.socket_dir.as_os_str().is_empty() {
            "127.0.0.1".to_string()
        } else {
            r.socket_dir.display().to_string()
        }
    };
    let servers: Vec<&ServerRecord> = std::iter::once(r).chain(r.replicas.iter()).collect();
    let hosts: Vec<String> = servers.iter().map(|s| host(s)).collect();
    let ports: Vec<String> = servers.iter().map(|s| s.port.to_string()).collect();
    let mut vars = vec![
        ("PGHOST", hosts.join(",")),
        ("PGPORT", ports.join(",")),
        ("PGUSER", r.superuser.clone()),
        ("PGDATABASE", r.database.clone()),
    ];
    if !r.replicas.is_empty() {
        vars.push(("PGTARGETSESSIONATTRS", "read-write".into()));
    }
    let mut s = String::new();
    for (k, v) in vars {
        s.push_str(&format!("export {k}={}\n", pgsurge_command::shell_word(&v)));
    }
    s
}

fn env(state_dir: &Path, a: SelectArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<i32> {
    if a.all {
        return Err(ServerError::Invalid(
            "env describes one server: choose it with --data DIR, not --all".into(),
        ));
    }
    let records = select(state_dir, &a, err)?;
    let Some(r) = records.iter().find(|r| live_pid(r).is_some()) else {
        let _ = writeln!(
            err,
            "pgsurge: error: no running server (start one with `pgsurge server start`)"
        );
        // Read by `eval "$(pgsurge server env)"`: a statement that fails, so the eval
        // (and a `set -e` script, or `&& …`) stops instead of going on with whatever
        // PG* variables the shell had.
        let _ = writeln!(out, "# pgsurge: no running server to export\nfalse");
        return Ok(EXIT_NOTHING);
    };
    let _ = write!(out, "{}", env_lines(r));
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_str(args: &[&str]) -> (i32, String, String) {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        let (mut o, mut e) = (Vec::new(), Vec::new());
        let code = run(&args, &mut o, &mut e);
        (
            code,
            String::from_utf8_lossy(&o).into_owned(),
            String::from_utf8_lossy(&e).into_owned(),
        )
    }

    #[test]
    fn usage_errors_exit_2_with_a_message() {
        let (code, _, err) = run_str(&["start", "--set", "novalue"]);
        assert_eq!(code, 2);
        assert!(err.contains("expected NAME=VALUE"), "{err}");
        let (code, _, err) = run_str(&["start", "--pg-bin", "/x", "--pg-version", "17"]);
        assert_eq!(code, 2);
        assert!(err.contains("cannot be used with"), "{err}");
        let (code, out, _) = run_str(&["--help"]);
        assert_eq!(code, 0);
        assert!(out.contains("start"));
    }

    #[test]
    fn env_lines_are_shell_safe() {
        let r = ServerRecord {
            data_dir: "/d".into(),
            pid: 1,
            port: 5433,
            socket_dir: "/tmp/it's here".into(),
            bin_dir: PathBuf::new(),
            version_num: 0,
            superuser: "postgres".into(),
            database: "pgsurge".into(),
            log_file: "/d/log".into(),
            remove_on_stop: Vec::new(),
            started_at_ms: 1_795_000_000_000,
            replicas: Vec::new(),
        };
        let lines = env_lines(&r);
        assert!(
            lines.ends_with(
                "\nexport PGPORT=5433\nexport PGUSER=postgres\nexport PGDATABASE=pgsurge\n"
            ),
            "{lines}"
        );
        // What sh makes of them: the socket directory as it is.
        assert_eq!(
            sh_words(&format!("{lines} printf '%s\\n' \"$PGHOST\"")),
            ["/tmp/it's here"]
        );
    }

    /// What `sh` prints running `script` (its lines).
    fn sh_words(script: &str) -> Vec<String> {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(script)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn the_stop_hint_is_quoted_for_the_shell() {
        assert_eq!(stop_command(None), "pgsurge server stop");
        let hint = stop_command(Some(Path::new("/srv/my data/it's")));
        assert!(hint.starts_with("pgsurge server stop --data "), "{hint}");
        assert_eq!(
            sh_words(&format!("set -- {hint}; printf '%s\\n' \"$@\"")),
            ["pgsurge", "server", "stop", "--data", "/srv/my data/it's"]
        );
        assert_eq!(
            stop_command(Some(Path::new("/srv/pg-18"))),
            "pgsurge server stop --data /srv/pg-18"
        );
    }

    #[test]
    fn env_with_nothing_recorded_exits_3() {
        let dir = tempfile::tempdir().unwrap();
        let sd = dir.path().to_string_lossy().into_owned();
        let (code, out, err) = run_str(&["env", "--state-dir", &sd]);
        assert_eq!(code, 3);
        // For `eval "$(pgsurge server env)"`: a statement that fails.
        assert_eq!(out, "# pgsurge: no running server to export\nfalse\n");
        assert!(err.contains("no running server"), "{err}");
    }

    #[test]
    fn usage_errors_carry_no_colour_into_pipes() {
        let (_, _, err) = run_str(&["start", "--bogus"]);
        assert!(!err.contains('\x1b'), "{err:?}");
    }

    #[test]
    fn with_nothing_recorded_status_and_stop_both_exit_3() {
        let dir = tempfile::tempdir().unwrap();
        let sd = dir.path().to_string_lossy().into_owned();
        let (code, out, _) = run_str(&["status", "--state-dir", &sd]);
        assert_eq!(code, EXIT_NOTHING);
        assert!(out.contains("no pgsurge server"));
        for stop in [&["stop"][..], &["stop", "--all"]] {
            let mut args = stop.to_vec();
            args.extend(["--state-dir", &sd]);
            let (code, out, err) = run_str(&args);
            assert_eq!(code, EXIT_NOTHING, "{stop:?}");
            assert!(err.contains("no server to stop") && out.is_empty(), "{err}");
        }
    }
}
