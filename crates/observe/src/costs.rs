//! What a measured window cost: the totals behind `pgsurge_results::TxnCosts`, read
//! around a run. [`CostProbe::start`] just before the run, [`CostProbe::finish`] when
//! it has ended (and its sessions have left, see [`settle`]).
//!
//! * Server CPU, user and system: the target's postmaster and its children (backends,
//!   auxiliary processes) from `/proc/PID/stat`; children that exited during the window
//!   are in the postmaster's `cutime`/`cstime` once it has reaped them, so the sum is
//!   exact. The probe's own monitoring backend is left out.
//! * Server context switches: `/proc/PID/status` of the same processes, kept per
//!   process by a thread that reads them four times a second (a backend's counts go
//!   when it exits: one that exits loses at most its last quarter second).
//! * Client CPU and context switches: `getrusage(RUSAGE_SELF)` of this process (every
//!   thread, exited ones included).
//! * WAL bytes and records (`pg_stat_wal`, PostgreSQL 14 and later), shared buffer hits
//!   and reads and temporary bytes (`pg_stat_database` of the benchmark database):
//!   counter deltas over the window.
//!
//! The server's processes are measured only when the server runs on this machine (the
//! parent of the monitoring backend is a postmaster here); otherwise the server's CPU
//! and context switches are reported as not measured, with why.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pgsurge_results::TxnCosts;
use pgsurge_wire::ConnConfig;

use crate::sql_session::{literal, Pg};

/// How often the server's processes' context switches are read.
const POLL: Duration = Duration::from_millis(250);
/// How long [`settle`] waits for the window's sessions to end.
const SESSIONS_END_WAIT: Duration = Duration::from_secs(30);

/// CPU time and context switches, as totals.
#[derive(Debug, Clone, Copy, Default)]
struct Usage {
    user_us: f64,
    system_us: f64,
    switches: f64,
}

/// `getrusage(RUSAGE_SELF)`: this process, every thread.
fn client_usage() -> Usage {
    // SAFETY: getrusage writes into the zeroed struct it is given and nothing else.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return Usage::default();
    }
    let us = |t: libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
    Usage {
        user_us: us(ru.ru_utime),
        system_us: us(ru.ru_stime),
        switches: (ru.ru_nvcsw + ru.ru_nivcsw) as f64,
    }
}

/// A process of the server, told apart from a later one of the same pid by its start.
type ProcKey = (i32, u64);

/// The target's postmaster and what its processes did.
struct ServerProcs {
    postmaster: i32,
    /// The monitoring backend, left out of the sums.
    monitor: i32,
    /// Context switches per process: (first seen, last seen).
    switches: BTreeMap<ProcKey, (u64, u64)>,
    /// Processes alive at the start (their counts before the window are not the window's).
    at_start: std::collections::BTreeSet<ProcKey>,
}

impl ServerProcs {
    /// The server of the session `pg`: the parent of its backend, when that is a
    /// postmaster running here.
    fn find(pg: &mut Pg) -> Result<ServerProcs, String> {
        let (postmaster, backend) = local_postmaster(pg)?;
        Ok(ServerProcs {
            postmaster,
            monitor: backend,
            switches: BTreeMap::new(),
            at_start: Default::default(),
        })
    }

    fn children(&self) -> Vec<i32> {
        children_of(self.postmaster)
    }

    /// Reads every process's context switches; `start` marks them as there before the
    /// window.
    fn poll(&mut self, start: bool) {
        let mut pids = self.children();
        pids.push(self.postmaster);
        for pid in pids.into_iter().filter(|p| *p != self.monitor) {
            // A process may exit between the listing and the read: skipped.
            let Ok(p) = procfs::process::Process::new(pid) else {
                continue;
            };
            let (Ok(stat), Ok(status)) = (p.stat(), p.status()) else {
                continue;
            };
            let n = status.voluntary_ctxt_switches.unwrap_or(0)
                + status.nonvoluntary_ctxt_switches.unwrap_or(0);
            let key = (pid, stat.starttime);
            if start {
                self.at_start.insert(key);
            }
            self.switches
                .entry(key)
                .and_modify(|e| e.1 = n)
                .or_insert((n, n));
        }
    }

    /// Context switches over the window: a process there at the start counts from its
    /// first reading, one born during the window from zero.
    fn switches(&self) -> f64 {
        self.switches
            .iter()
            .map(|(k, (first, last))| {
                let from = if self.at_start.contains(k) { *first } else { 0 };
                last.saturating_sub(from) as f64
            })
            .sum()
    }

    /// User and system CPU of the postmaster, its reaped children and its live
    /// children (the monitoring backend left out), in µs.
    fn cpu(&self) -> Result<(f64, f64), String> {
        let hz = procfs::ticks_per_second() as f64;
        let pm = procfs::process::Process::new(self.postmaster)
            .and_then(|p| p.stat())
            .map_err(|_| format!("postmaster {} is gone", self.postmaster))?;
        let mut user = pm.utime as f64 + pm.cutime.max(0) as f64;
        let mut system = pm.stime as f64 + pm.cstime.max(0) as f64;
        for pid in self.children().into_iter().filter(|p| *p != self.monitor) {
            if let Ok(st) = procfs::process::Process::new(pid).and_then(|p| p.stat()) {
                user += st.utime as f64;
                system += st.stime as f64;
            }
        }
        Ok((user / hz * 1e6, system / hz * 1e6))
    }
}

/// The postmaster of the session `pg` when it runs on this machine (the parent of the
/// session's backend), and the backend: `(postmaster, backend)`; `Err` says why not.
pub(crate) fn local_postmaster(pg: &mut Pg) -> Result<(i32, i32), String> {
    let backend: i32 = pg
        .value("SELECT pg_backend_pid()")
        .map_err(|e| e.to_string())?
        .and_then(|v| v.parse().ok())
        .ok_or("pg_backend_pid() gave no process id")?;
    let stat = |pid: i32| {
        procfs::process::Process::new(pid)
            .and_then(|p| p.stat())
            .map_err(|_| "the server does not run on this machine (its backend's process is not visible here)".to_string())
    };
    let postmaster = stat(backend)?.ppid;
    let comm = stat(postmaster)?.comm;
    if comm != "postgres" && comm != "postmaster" {
        return Err(format!(
            "the parent of backend {backend} is {comm} (pid {postmaster}), not a postmaster"
        ));
    }
    Ok((postmaster, backend))
}

/// The children of process `pm`, from `/proc/PID/task/PID/children` (or a scan of
/// every process when the kernel does not list children).
pub(crate) fn children_of(pm: i32) -> Vec<i32> {
    match std::fs::read_to_string(format!("/proc/{pm}/task/{pm}/children")) {
        Ok(text) => text
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect(),
        Err(_) => procfs::process::all_processes()
            .map(|all| {
                all.flatten()
                    .filter_map(|p| p.stat().ok())
                    .filter(|st| st.ppid == pm)
                    .map(|st| st.pid)
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// The server side of a probe: its processes, the thread reading them, CPU at start.
struct ServerSide {
    procs: Arc<Mutex<ServerProcs>>,
    stop: Arc<AtomicBool>,
    poller: Option<JoinHandle<()>>,
    cpu_before: (f64, f64),
}

impl Drop for ServerSide {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Costs being measured over a window.
pub struct CostProbe {
    pg: Pg,
    db: String,
    /// The server's clock at the start (sessions that began since are the window's).
    since: String,
    server: Result<ServerSide, String>,
    counters_before: BTreeMap<String, f64>,
    client_before: Usage,
}

/// The counters read from PostgreSQL: (cost name, SQL returning one value).
fn counter_queries(version_num: i32, db: &str) -> Vec<(&'static str, String)> {
    let db = literal(db);
    let stat_db =
        |col: &str| format!("SELECT {col}::float8 FROM pg_stat_database WHERE datname = {db}");
    let mut q = vec![
        ("shared_blks_hit", stat_db("blks_hit")),
        ("shared_blks_read", stat_db("blks_read")),
        ("temp_bytes", stat_db("temp_bytes")),
    ];
    if version_num >= 140000 {
        q.push((
            "wal_bytes",
            "SELECT wal_bytes::float8 FROM pg_stat_wal".into(),
        ));
        q.push((
            "wal_records",
            "SELECT wal_records::float8 FROM pg_stat_wal".into(),
        ));
    }
    q
}

fn read_counters(pg: &mut Pg, db: &str) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    for (name, sql) in counter_queries(pg.version_num(), db) {
        if let Ok(Some(v)) = pg.value(&sql) {
            if let Ok(v) = v.parse::<f64>() {
                m.insert(name.to_string(), v);
            }
        }
    }
    m
}

impl CostProbe {
    /// Starts measuring now, through a monitoring session of its own on `monitor`
    /// (benchmark database `db`).
    pub fn start(monitor: &ConnConfig, db: &str) -> crate::Result<CostProbe> {
        let mut pg = Pg::connect(monitor)?;
        let since = pg
            .value("SELECT clock_timestamp()::text")?
            .unwrap_or_default();
        let server = ServerProcs::find(&mut pg).and_then(|mut procs| {
            procs.poll(true);
            let cpu_before = procs.cpu()?;
            let procs = Arc::new(Mutex::new(procs));
            let stop = Arc::new(AtomicBool::new(false));
            let (p, s) = (Arc::clone(&procs), Arc::clone(&stop));
            let poller = std::thread::Builder::new()
                .name("pgsurge-costs".into())
                .spawn(move || {
                    while !s.load(Ordering::SeqCst) {
                        std::thread::sleep(POLL);
                        if let Ok(mut p) = p.lock() {
                            p.poll(false);
                        }
                    }
                })
                .ok();
            Ok(ServerSide {
                procs,
                stop,
                poller,
                cpu_before,
            })
        });
        let counters_before = read_counters(&mut pg, db);
        Ok(CostProbe {
            pg,
            db: db.to_string(),
            since,
            server,
            counters_before,
            client_before: client_usage(),
        })
    }

    /// Ends the window when the run has returned: the client's usage now, the server's
    /// once the window's sessions have left ([`settle`]); divides by `transactions`.
    pub fn finish(mut self, transactions: u64) -> TxnCosts {
        let client_after = client_usage();
        let mut totals: Vec<(&str, f64)> = Vec::new();
        let mut unavailable = Vec::new();
        totals.push((
            "client_cpu_user_us",
            client_after.user_us - self.client_before.user_us,
        ));
        totals.push((
            "client_cpu_system_us",
            client_after.system_us - self.client_before.system_us,
        ));
        totals.push((
            "client_context_switches",
            client_after.switches - self.client_before.switches,
        ));
        if let Ok(server) = &mut self.server {
            if let Ok(mut p) = server.procs.lock() {
                p.poll(false);
            }
        }
        if let Err(e) = settle(&mut self.pg, &self.db, &self.since) {
            unavailable.push(format!(
                "server counters: waiting for the run's sessions to end: {e}"
            ));
        }
        match self.server {
            Ok(mut server) => {
                server.stop.store(true, Ordering::SeqCst);
                // Joined, so the last reading is in before the sums are taken.
                if let Some(h) = server.poller.take() {
                    let _ = h.join();
                }
                let procs = server.procs.lock().unwrap_or_else(|p| p.into_inner());
                match procs.cpu() {
                    Ok((user, system)) => {
                        totals.push(("server_cpu_user_us", user - server.cpu_before.0));
                        totals.push(("server_cpu_system_us", system - server.cpu_before.1));
                        totals.push(("server_context_switches", procs.switches()));
                    }
                    Err(e) => unavailable.push(format!("server CPU: {e}")),
                }
            }
            Err(e) => unavailable.push(format!("server CPU and context switches: {e}")),
        }
        let after = read_counters(&mut self.pg, &self.db);
        let mut deltas: Vec<(&'static str, f64)> = Vec::new();
        for (name, _) in counter_queries(self.pg.version_num(), &self.db) {
            match (self.counters_before.get(name), after.get(name)) {
                (Some(b), Some(a)) => deltas.push((name, a - b)),
                _ => unavailable.push(format!("{name}: not readable on this server")),
            }
        }
        if self.pg.version_num() < 140000 {
            unavailable.push("wal_bytes, wal_records: pg_stat_wal needs PostgreSQL 14".into());
        }
        totals.extend(deltas);
        TxnCosts::from_totals(transactions, &totals, unavailable)
    }
}

/// Waits until the server's counters hold what the window's sessions did: until every
/// session of `db` that began since `since` (the server's clock) has ended, at most
/// 30 s (a session's statistics reach the shared views before it leaves
/// `pg_stat_activity`, PostgreSQL 15 and later), then until the commit counter stops
/// moving (older servers pass statistics through a collector), at most ~3 s.
pub fn settle(pg: &mut Pg, db: &str, since: &str) -> crate::Result<()> {
    let dbl = literal(db);
    let sessions = format!(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = {dbl} \
         AND backend_type = 'client backend' AND pid <> pg_backend_pid() \
         AND backend_start >= {}::timestamptz",
        literal(since)
    );
    let deadline = Instant::now() + SESSIONS_END_WAIT;
    while !since.is_empty()
        && pg.value(&sessions)?.as_deref() != Some("0")
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let sql = format!("SELECT xact_commit FROM pg_stat_database WHERE datname = {dbl}");
    let mut last = pg.value(&sql)?;
    for _ in 0..12 {
        std::thread::sleep(Duration::from_millis(250));
        let now = pg.value(&sql)?;
        if now == last {
            break;
        }
        last = now;
    }
    Ok(())
}
