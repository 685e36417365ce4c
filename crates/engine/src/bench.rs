//! `pgsurge bench` / `pgbench`: parse the command line, then either initialize (`-i`) or
//! set up (setup connection, version banner, scale and partition detection, vacuum) and
//! run the benchmark, print pgbench's report and map the outcome to pgbench's exit codes
//! (§3.1, §8.4).
//!
//! Client version: pgsurge reproduces pgbench 18, and calls itself `18.0` in the banner
//! (`pgbench (18.0, server 17.11)`), the same number `--version` prints; the minor is 0
//! because pgsurge follows 18's behaviour, not one minor release.

use std::ffi::OsString;
use std::io::Write;

use pgsurge_args::{BenchOptions, InitOptions, Outcome};
use pgsurge_results::report::{write_pgbench_report, ReportOptions};
use pgsurge_wire::{ConnConfig, ConnectError, Connection};

use crate::run::{run, RunHooks, RunSpec};
use crate::stop::{signal_name, SignalWatcher, StopCause, StopFlag};
use crate::EngineError;

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

/// Entry point (see [`crate::bench_main`]).
pub fn main(args: &[OsString]) -> i32 {
    let outcome = {
        let stdout = std::io::stdout();
        let stderr = std::io::stderr();
        let mut out = stdout.lock();
        let mut err = stderr.lock();
        pgsurge_args::parse(args, &env_lookup, &mut out, &mut err)
    };
    match outcome {
        Outcome::Exit(code) => code,
        Outcome::Init(o) => init_main(&o),
        Outcome::Bench(o) => bench(o),
    }
}

fn conn_config(c: &pgsurge_args::Connection) -> Result<ConnConfig, String> {
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
    let spec = pgsurge_init::InitSpec {
        steps: o.steps.clone(),
        scale: o.scale as i32,
        fillfactor: o.fillfactor as i32,
        partitions: o.partitions as i32,
        partition_method: match o.partition_method {
            pgsurge_args::PartitionMethod::None => pgsurge_init::PartitionMethod::None,
            pgsurge_args::PartitionMethod::Range => pgsurge_init::PartitionMethod::Range,
            pgsurge_args::PartitionMethod::Hash => pgsurge_init::PartitionMethod::Hash,
        },
        tablespace: o.tablespace.clone(),
        index_tablespace: o.index_tablespace.clone(),
        unlogged: o.unlogged_tables,
        quiet: o.quiet,
    };
    let stderr = std::io::stderr();
    let mut err = stderr.lock();
    match pgsurge_init::initialize(&mut conn, &spec, &mut err) {
        Ok(()) => 0,
        Err(e) => {
            let _ = err.write_all(e.render().as_bytes());
            e.exit_code()
        }
    }
}

/// What setup learned from the server.
struct SetupInfo {
    server_version: Option<String>,
    scale: i64,
    partition_method: Option<String>,
    partitions: u32,
}

const PARTITION_QUERY: &str = "select o.n, p.partstrat, pg_catalog.count(i.inhparent) from pg_catalog.pg_class as c join pg_catalog.pg_namespace as n on (n.oid = c.relnamespace) cross join lateral (select pg_catalog.array_position(pg_catalog.current_schemas(true), n.nspname)) as o(n) left join pg_catalog.pg_partitioned_table as p on (p.partrelid = c.oid) left join pg_catalog.pg_inherits as i on (c.oid = i.inhparent) where c.relname = 'pgbench_accounts' and o.n is not null group by 1, 2 order by 1 asc limit 1";

/// pgbench's setup steps 3–8; `Err(code)` after printing the messages.
fn setup(o: &BenchOptions, cfg: &mut ConnConfig) -> Result<SetupInfo, i32> {
    let mut conn = match connect_prompting(cfg) {
        Ok(c) => c,
        Err(e) => {
            err_line(&e.to_string());
            err_line("could not create connection for setup");
            return Err(1);
        }
    };
    let server_version = conn.parameter("server_version").map(str::to_string);
    {
        // With `--json=-` stdout carries the JSON document only; the banner goes with
        // the text report, to stderr.
        let json_to_stdout = o
            .extensions
            .json
            .as_deref()
            .is_some_and(|p| p.as_os_str() == "-");
        let mut out: Box<dyn Write> = if json_to_stdout {
            Box::new(std::io::stderr().lock())
        } else {
            Box::new(std::io::stdout().lock())
        };
        let _ = if conn.server_version_num() == CLIENT_VERSION_NUM {
            writeln!(out, "pgbench ({CLIENT_VERSION})")
        } else {
            let sv = server_version.clone().unwrap_or_else(|| {
                let n = conn.server_version_num();
                format!("{}.{}", n / 10000, n % 10000)
            });
            writeln!(out, "pgbench ({CLIENT_VERSION}, server {sv})")
        };
    }
    if o.debug_level > 0 {
        let _ = std::io::stdout().flush();
        let dur = match o.limit {
            pgsurge_args::RunLimit::Transactions(n) => n,
            pgsurge_args::RunLimit::Duration(n) => n,
        };
        eprintln!(
            "pgbench: pghost: {} pgport: {} nclients: {} {}: {} dbName: {}",
            conn.host(),
            conn.port(),
            o.clients,
            match o.limit {
                pgsurge_args::RunLimit::Transactions(_) => "nxacts",
                pgsurge_args::RunLimit::Duration(_) => "duration",
            },
            dur,
            conn.dbname()
        );
    }
    let mut info = SetupInfo {
        server_version,
        scale: o.scale as i64,
        partition_method: None,
        partitions: 0,
    };
    if o.internal_script_used {
        match conn.simple_query("select count(*) from pgbench_branches") {
            Ok(res) => {
                let v = res.first().and_then(|r| r.get(0, 0)).unwrap_or("");
                match v.trim().parse::<i64>() {
                    Ok(n) if n >= 0 => info.scale = n,
                    _ => {
                        err_line(&format!("invalid count(*) from pgbench_branches: \"{v}\""));
                        return Err(1);
                    }
                }
            }
            Err(e) => {
                err_line(&format!(
                    "could not count number of branches: {}",
                    e.pq_message().trim_end()
                ));
                if e.code() == Some("42P01") {
                    let _ = std::io::stdout().flush();
                    eprintln!(
                        "pgbench: hint: Perhaps you need to do initialization (\"pgbench -i\") in database \"{}\".",
                        conn.dbname()
                    );
                }
                return Err(1);
            }
        }
        if o.scale_given {
            let _ = std::io::stdout().flush();
            eprintln!(
                "pgbench: warning: scale option ignored, using count from pgbench_branches table ({})",
                info.scale
            );
        }
        if let Ok(res) = conn.simple_query(PARTITION_QUERY) {
            let r = res.first();
            if r.map(|r| r.get(0, 0).is_none()).unwrap_or(true) {
                err_line("no pgbench_accounts table found in \"search_path\"");
                let _ = std::io::stdout().flush();
                eprintln!(
                    "pgbench: hint: Perhaps you need to do initialization (\"pgbench -i\") in database \"{}\".",
                    conn.dbname()
                );
                return Err(1);
            }
            let r = r.expect("checked above");
            match r.get(0, 1) {
                None | Some("") => {}
                Some("r") => info.partition_method = Some("range".into()),
                Some("h") => info.partition_method = Some("hash".into()),
                Some(other) => {
                    err_line(&format!("unexpected partition method: \"{other}\""));
                    return Err(1);
                }
            }
            info.partitions = r.get(0, 2).and_then(|s| s.parse().ok()).unwrap_or(0);
        }
    }
    if !o.no_vacuum {
        let mut e = std::io::stderr();
        let _ = std::io::stdout().flush();
        let _ = write!(e, "starting vacuum...");
        for sql in [
            "vacuum pgbench_branches",
            "vacuum pgbench_tellers",
            "truncate pgbench_history",
        ] {
            try_execute(&mut conn, sql);
        }
        let _ = writeln!(e, "end.");
        if o.vacuum_all {
            let _ = write!(e, "starting vacuum pgbench_accounts...");
            try_execute(&mut conn, "vacuum analyze pgbench_accounts");
            let _ = writeln!(e, "end.");
        }
    }
    conn.close();
    Ok(info)
}

/// pgbench's `tryExecuteStatement`: failures are reported and ignored.
fn try_execute(conn: &mut Connection, sql: &str) {
    if let Err(e) = conn.execute(sql) {
        err_line(e.pq_message().trim_end());
        let _ = std::io::stdout().flush();
        eprintln!("pgbench: detail: (ignoring this error and continuing anyway)");
    }
}

/// Setup for an in-process run (what `bench_main` does before running): setup
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
    let info = setup(&o, &mut cfg)?;
    Ok(RunSpec {
        options: o,
        conn: cfg,
        scale: info.scale,
        partition_method: info.partition_method,
        partitions: info.partitions,
        server_version: info.server_version,
    })
}

fn bench(o: BenchOptions) -> i32 {
    if let Some(&name) = o.options_given.iter().find(|n| UNSUPPORTED.contains(n)) {
        err_line(&format!("option {name} is not supported yet"));
        return 1;
    }
    let json = o.extensions.json.clone();
    let spec = match prepare(o) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let stop = StopFlag::new();
    let _watcher = SignalWatcher::install(stop.clone()).ok();
    let result = match run(
        &spec,
        RunHooks {
            stop: stop.clone(),
            ..Default::default()
        },
    ) {
        Ok(r) => r,
        Err(EngineError::ClientConnection(msg)) => {
            if !msg.is_empty() {
                err_line(&msg);
            }
            return 1;
        }
        Err(e) => {
            err_line(&e.to_string());
            return 1;
        }
    };
    // With `--json=-` the JSON document is stdout's only content (so `| jq` works);
    // the text report then goes to stderr.
    if json.as_deref().is_some_and(|p| p.as_os_str() == "-") {
        let mut err = std::io::stderr().lock();
        let _ = write_pgbench_report(&result, &ReportOptions::from_result(&result), &mut err);
        let _ = err.flush();
    } else {
        let mut out = std::io::stdout().lock();
        let _ = write_pgbench_report(&result, &ReportOptions::from_result(&result), &mut out);
        let _ = out.flush();
    }
    if let Some(path) = json {
        let r = if path.as_os_str() == "-" {
            pgsurge_results::json::write_json_to(&result, &mut std::io::stdout())
        } else {
            pgsurge_results::json::write_json(&result, &path)
        };
        if let Err(e) = r {
            err_line(&e.to_string());
        }
    }
    let mut code = 0;
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
    code
}

/// Options parsed by `pgsurge-args` that the engine does not implement (none today).
const UNSUPPORTED: &[&str] = &[];
