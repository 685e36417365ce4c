//! Per-second samplers running beside a test: OS metrics from `/proc` (through the
//! `procfs` crate) and PostgreSQL statistics (see [`crate::pgstats`]). Counters become
//! per-second rates (`*_per_s`); gauges are stored as read.
//!
//! OS names: `os.cpu.{user,system,iowait,steal,idle}_pct`, `os.procs.running`,
//! `os.procs.blocked`, `os.ctxt_per_s`, `os.mem.{dirty,writeback,cached,available}_mb`,
//! `os.disk.<dev>.{read_mbps,write_mbps,util_pct,await_ms,reads_per_s,writes_per_s}`.
//!
//! OS metrics describe the machine pgsurge runs on: for a throwaway server (and any
//! local server) that is the server's host. There the CPU of the target's PostgreSQL
//! processes (the postmaster and its children, exited ones included) is sampled too,
//! `os.postgres.cpu_pct` (percent of one CPU, like `client.process.cpu_pct`), so that
//! the host's busy time can be split between the server, pgsurge and everything else.
//!
//! With PostgreSQL sampling on, a second thread samples active sessions by wait event
//! several times a second ([`crate::waits`]: `pg.wait.*`, one mean per second).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pgsurge_store::{activity, now_epoch, FactRecord, MetricInfo, MetricSample};
use pgsurge_wire::ConnConfig;

use crate::hostmetrics::{self, HostRates, HostSource};
pub use crate::latest::Latest;

use crate::manifest;
use crate::pgstats;
use crate::sql_session::Pg;

/// What to sample.
#[derive(Debug, Clone)]
pub struct SamplerConfig {
    /// Sample the server host's OS metrics (`os.*`) from [`SamplerConfig::host`].
    pub os: bool,
    /// Where the server host's metrics come from ([`HostSource::None`]: not sampled).
    pub host: HostSource,
    /// Sample the client: its host's CPU (`client.cpu.*`), the pgsurge process's CPU
    /// (`client.process.cpu_pct`) and its busiest driver thread
    /// (`client.thread.max_cpu_pct`), and decide whether the client was the bottleneck.
    pub client: bool,
    /// Sample PostgreSQL: (monitoring connection, benchmark database name).
    pub pg: Option<(ConnConfig, String)>,
    /// Seconds between samples.
    pub interval: f64,
    /// Block devices (empty: every whole, non-virtual device).
    pub devices: Vec<String>,
}

/// A running sampler thread.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<SamplerOutput>>,
    /// The wait-event sampler ([`crate::waits::sample_loop`]).
    waits: Option<JoinHandle<(Vec<MetricSample>, Vec<String>)>>,
    latest: Latest,
}

/// What a sampler collected.
#[derive(Debug, Default)]
pub struct SamplerOutput {
    /// Every sample taken, in time order (metric name, epoch seconds, value).
    pub samples: Vec<MetricSample>,
    /// Problems met (a view missing, a query failing); sampling went on without them.
    pub errors: Vec<String>,
    /// Facts for `run_facts`: `server_host_metrics_source`, `client_bound`,
    /// `client_bound_reason`.
    pub facts: Vec<FactRecord>,
}

impl Sampler {
    /// Starts sampling now (the first sample is a baseline; values follow every interval).
    pub fn start(cfg: SamplerConfig) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let latest = Latest::default();
        let waits = cfg.pg.clone().and_then(|(conn, db)| {
            let (flag, latest) = (Arc::clone(&stop), latest.clone());
            std::thread::Builder::new()
                .name("pgsurge-waits".into())
                .spawn(move || crate::waits::sample_loop(&conn, &db, &flag, &latest))
                .ok()
        });
        let (flag, shown) = (Arc::clone(&stop), latest.clone());
        let handle = std::thread::Builder::new()
            .name("pgsurge-sampler".into())
            .spawn(move || sample_loop(&cfg, &flag, &shown))
            .ok();
        Sampler {
            stop,
            handle,
            waits,
            latest,
        }
    }

    /// The newest waits and host figures, as each second is sampled.
    pub fn latest(&self) -> Latest {
        self.latest.clone()
    }

    /// Stops and returns what was collected.
    pub fn finish(mut self) -> SamplerOutput {
        self.stop.store(true, Ordering::SeqCst);
        let mut out: SamplerOutput = self
            .handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        if let Some((samples, errors)) = self.waits.take().and_then(|h| h.join().ok()) {
            out.samples.extend(samples);
            out.samples.sort_by(|a, b| a.ts.total_cmp(&b.ts));
            out.errors.extend(
                errors
                    .into_iter()
                    .map(|e| format!("wait-event sampler: {e}")),
            );
        }
        out
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn sample_loop(cfg: &SamplerConfig, stop: &AtomicBool, latest: &Latest) -> SamplerOutput {
    let mut out = SamplerOutput::default();
    let host = if cfg.os {
        cfg.host.clone()
    } else {
        HostSource::None("OS sampling is off ([sampling] os = false)".into())
    };
    out.facts.push(FactRecord::new(
        pgsurge_store::facts::SERVER_HOST_METRICS_SOURCE,
        host.name(),
    ));
    let mut os =
        (!matches!(host, HostSource::None(_))).then(|| OsSampler::new(host.clone(), &cfg.devices));
    let mut client = cfg.client.then(ClientSampler::default);
    let mut pg = match &cfg.pg {
        Some((conn, db)) => match Pg::connect(conn) {
            Ok(conn) => Some(PgSampler::new(conn, db)),
            Err(e) => {
                out.errors.push(format!("PostgreSQL sampler: {e}"));
                None
            }
        },
        None => None,
    };
    // The server's own CPU, when its postmaster runs on this machine (a server in a
    // container of its own shows no postmaster here: its CPU is then not split).
    let mut server_cpu = match (&host, pg.as_mut()) {
        (HostSource::Local, Some(pg)) => ServerCpu::find(&mut pg.conn).ok(),
        _ => None,
    };
    let period = Duration::from_secs_f64(cfg.interval.max(0.1));
    let mut next = Instant::now();
    loop {
        let ts = now_epoch();
        let round = out.samples.len();
        if let Some(os) = os.as_mut() {
            if let Err(e) = os.sample(ts, &mut out.samples) {
                push_once(
                    &mut out.errors,
                    format!("server host sampler ({}): {e}", host.name()),
                );
            }
        }
        // A postmaster that is gone (a fault test stops it) ends this sampling; the
        // PostgreSQL sampler reports the lost server.
        if server_cpu
            .as_mut()
            .is_some_and(|s| s.sample(ts, &mut out.samples).is_err())
        {
            server_cpu = None;
        }
        if let Some(c) = client.as_mut() {
            if let Err(e) = c.sample(ts, &mut out.samples) {
                push_once(&mut out.errors, format!("client sampler: {e}"));
            }
        }
        if let Some(pg) = pg.as_mut() {
            if let Err(e) = pg.sample(ts, &mut out.samples) {
                push_once(&mut out.errors, format!("PostgreSQL sampler: {e}"));
            }
        }
        latest.put(&out.samples[round..]);
        next += period;
        // Sleep in small steps so stopping is prompt.
        loop {
            if stop.load(Ordering::SeqCst) {
                if cfg.client {
                    let local = matches!(cfg.host, HostSource::Local);
                    out.facts.extend(client_bound(&out.samples, local));
                }
                return out;
            }
            let now = Instant::now();
            if now >= next {
                break;
            }
            std::thread::sleep((next - now).min(Duration::from_millis(50)));
        }
    }
}

fn mean_of(samples: &[MetricSample], metric: &str) -> Option<f64> {
    let v: Vec<f64> = samples
        .iter()
        .filter(|s| s.metric == metric)
        .map(|s| s.value)
        .collect();
    (!v.is_empty()).then(|| pgsurge_analysis::describe::mean(&v))
}

/// The `client_bound` facts of a test from its client samples.
pub fn client_bound(samples: &[MetricSample], server_is_local: bool) -> Vec<FactRecord> {
    let thread = mean_of(samples, "client.thread.max_cpu_pct");
    let host_busy = mean_of(samples, "client.cpu.idle_pct").map(|idle| 100.0 - idle);
    let Some(reasons) = pgsurge_analysis::limits::client_bound(thread, host_busy, server_is_local)
    else {
        return Vec::new();
    };
    let mut facts = vec![FactRecord::new(
        pgsurge_store::facts::CLIENT_BOUND,
        if reasons.is_empty() { "false" } else { "true" },
    )];
    if !reasons.is_empty() {
        facts.push(FactRecord::new(
            pgsurge_store::facts::CLIENT_BOUND_REASON,
            reasons.join("; "),
        ));
    }
    facts
}

fn push_once(errors: &mut Vec<String>, e: String) {
    if !errors.contains(&e) {
        errors.push(e);
    }
}

/// Rates from successive counter readings.
#[derive(Default)]
struct Rates {
    prev: BTreeMap<String, (f64, f64)>,
}

impl Rates {
    /// Records `value` of counter `name` at `ts`; returns the per-second rate since the
    /// previous reading (None for the first, or when the counter went backwards).
    fn rate(&mut self, name: &str, ts: f64, value: f64) -> Option<f64> {
        let prev = self.prev.insert(name.to_string(), (ts, value));
        let (pts, pv) = prev?;
        let dt = ts - pts;
        (dt > 0.0 && value >= pv).then(|| (value - pv) / dt)
    }
}

struct OsSampler {
    source: HostSource,
    devices: Vec<String>,
    conn: hostmetrics::SourceConn,
    rates: HostRates,
}

impl OsSampler {
    fn new(source: HostSource, devices: &[String]) -> OsSampler {
        OsSampler {
            devices: if devices.is_empty() && source == HostSource::Local {
                manifest::default_devices()
            } else {
                devices.to_vec()
            },
            source,
            conn: hostmetrics::SourceConn::default(),
            rates: HostRates::default(),
        }
    }

    fn sample(&mut self, ts: f64, out: &mut Vec<MetricSample>) -> Result<(), String> {
        let r = hostmetrics::read(&self.source, &mut self.conn)?;
        self.rates.push(ts, r, "os", &self.devices, true, out);
        Ok(())
    }
}

/// The client: its host's CPU and the pgsurge process's own CPU, per thread.
#[derive(Default)]
struct ClientSampler {
    host: HostRates,
    /// Previous (ts, process ticks, driver thread id → ticks).
    prev: Option<(f64, f64, BTreeMap<i32, f64>)>,
}

impl ClientSampler {
    fn sample(&mut self, ts: f64, out: &mut Vec<MetricSample>) -> Result<(), String> {
        let r = hostmetrics::local_reading()?;
        self.host.push(ts, r, "client", &[], false, out);
        let me = procfs::process::Process::myself().map_err(|e| e.to_string())?;
        let st = me.stat().map_err(|e| e.to_string())?;
        let total = (st.utime + st.stime) as f64;
        let mut threads = BTreeMap::new();
        if let Ok(tasks) = me.tasks() {
            for t in tasks.flatten() {
                if let Ok(ts) = t.stat() {
                    // The engine's driver threads are named pgsurge-<n>.
                    let driver = ts
                        .comm
                        .strip_prefix("pgsurge-")
                        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
                    if driver {
                        threads.insert(t.tid, (ts.utime + ts.stime) as f64);
                    }
                }
            }
        }
        let hz = procfs::ticks_per_second() as f64;
        if let Some((pts, ptotal, pthreads)) = &self.prev {
            let dt = ts - pts;
            if dt > 0.0 && hz > 0.0 {
                let pct = |d: f64| 100.0 * d / hz / dt;
                out.push(MetricSample {
                    ts,
                    metric: "client.process.cpu_pct".into(),
                    value: pct((total - ptotal).max(0.0)),
                });
                let busiest = threads
                    .iter()
                    .filter_map(|(tid, v)| Some(v - pthreads.get(tid)?))
                    .fold(None, |m: Option<f64>, d| Some(m.map_or(d, |m| m.max(d))));
                if let Some(d) = busiest {
                    out.push(MetricSample {
                        ts,
                        metric: "client.thread.max_cpu_pct".into(),
                        value: pct(d.max(0.0)).min(100.0),
                    });
                }
            }
        }
        self.prev = Some((ts, total, threads));
        Ok(())
    }
}

/// The CPU time of a PostgreSQL server running on this machine: its postmaster's and
/// every child's (backends, background workers, checkpointer…), and through the
/// postmaster's `cutime`/`cstime` the children that exited since it started.
struct ServerCpu {
    postmaster: i32,
    /// Previous (ts, ticks).
    prev: Option<(f64, f64)>,
}

impl ServerCpu {
    /// The server of the session `pg`: the parent of its backend, when that is a
    /// postmaster running here.
    fn find(pg: &mut Pg) -> Result<ServerCpu, String> {
        let backend: i32 = pg
            .value("SELECT pg_backend_pid()")
            .map_err(|e| e.to_string())?
            .and_then(|v| v.parse().ok())
            .ok_or("pg_backend_pid() gave no process id")?;
        let stat = |pid: i32| {
            procfs::process::Process::new(pid)
                .and_then(|p| p.stat())
                .map_err(|e| format!("process {pid}: {e}"))
        };
        let postmaster = stat(backend)?.ppid;
        let comm = stat(postmaster)?.comm;
        if comm != "postgres" && comm != "postmaster" {
            return Err(format!(
                "the parent of backend {backend} is {comm} (pid {postmaster}), not a postmaster"
            ));
        }
        Ok(ServerCpu {
            postmaster,
            prev: None,
        })
    }

    fn sample(&mut self, ts: f64, out: &mut Vec<MetricSample>) -> Result<(), String> {
        let mut ticks = 0.0;
        let mut found = false;
        for p in procfs::process::all_processes()
            .map_err(|e| e.to_string())?
            .flatten()
        {
            // A process may exit between the listing and the read: skipped.
            let Ok(st) = p.stat() else { continue };
            if st.pid == self.postmaster {
                found = true;
                ticks += (st.utime + st.stime) as f64 + (st.cutime + st.cstime).max(0) as f64;
            } else if st.ppid == self.postmaster {
                ticks += (st.utime + st.stime) as f64;
            }
        }
        if !found {
            return Err(format!("postmaster {} is gone", self.postmaster));
        }
        let hz = procfs::ticks_per_second() as f64;
        if let Some((pts, pticks)) = self.prev {
            let dt = ts - pts;
            if dt > 0.0 && hz > 0.0 {
                out.push(MetricSample {
                    ts,
                    metric: "os.postgres.cpu_pct".into(),
                    value: 100.0 * (ticks - pticks).max(0.0) / hz / dt,
                });
            }
        }
        self.prev = Some((ts, ticks));
        Ok(())
    }
}

struct PgSampler {
    conn: Pg,
    counters: Vec<String>,
    gauges: String,
    rates: Rates,
}

impl PgSampler {
    fn new(conn: Pg, db: &str) -> PgSampler {
        let v = conn.version_num();
        PgSampler {
            counters: pgstats::counters_sql(v, db),
            gauges: pgstats::gauges_sql(db),
            conn,
            rates: Rates::default(),
        }
    }

    fn sample(&mut self, ts: f64, out: &mut Vec<MetricSample>) -> Result<(), String> {
        let mut first_error = None;
        let mut failed = Vec::new();
        for (i, sql) in self.counters.iter().enumerate() {
            match self.conn.pairs(sql) {
                Ok(pairs) => {
                    for (name, v) in pairs {
                        if let Some(r) = self.rates.rate(&name, ts, v) {
                            out.push(MetricSample {
                                ts,
                                metric: format!("{name}_per_s"),
                                value: r,
                            });
                        }
                    }
                }
                Err(e) => {
                    first_error.get_or_insert(e.to_string());
                    failed.push(i);
                }
            }
        }
        // A query that failed once (missing view or privilege) is not retried.
        for i in failed.into_iter().rev() {
            self.counters.remove(i);
        }
        for (name, v) in self.conn.pairs(&self.gauges).map_err(|e| e.to_string())? {
            out.push(MetricSample {
                ts,
                metric: name,
                value: v,
            });
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// `metrics_info` rows for the names in `samples`.
pub fn describe_all(samples: &[MetricSample]) -> Vec<MetricInfo> {
    let names: std::collections::BTreeSet<&str> =
        samples.iter().map(|s| s.metric.as_str()).collect();
    names
        .into_iter()
        .map(|m| {
            if let Some(label) = activity::wait_label(m) {
                return MetricInfo {
                    metric: m.to_string(),
                    category: activity::WAIT_CATEGORY.into(),
                    unit: activity::WAIT_UNIT.into(),
                    description: Some(format!(
                        "active sessions in {label} (mean over each second, pg_stat_activity sampled every {} ms)",
                        crate::waits::SAMPLE_EVERY.as_millis()
                    )),
                };
            }
            let (category, unit) = if m.starts_with("pg.") {
                pgstats::describe(m)
            } else {
                describe_os(m)
            };
            MetricInfo {
                metric: m.to_string(),
                category: category.to_string(),
                unit: unit.to_string(),
                description: None,
            }
        })
        .collect()
}

fn describe_os(m: &str) -> (&'static str, &'static str) {
    if m.starts_with("client.cpu.") {
        ("client.cpu", "%")
    } else if m.starts_with("client.") {
        ("client.process", "%")
    } else if m.starts_with("os.net.") {
        ("os.network", "MB/s")
    } else if m == "os.load1" {
        ("os.kernel", "load")
    } else if m.starts_with("os.cpu.") {
        ("os.cpu", "%")
    } else if m.starts_with("os.postgres.") {
        ("os.postgres", "%")
    } else if m.starts_with("os.mem.") {
        ("os.memory", "MB")
    } else if m.starts_with("os.disk.") {
        let unit = if m.ends_with("_mbps") {
            "MB/s"
        } else if m.ends_with("_pct") {
            "%"
        } else if m.ends_with("_ms") {
            "ms"
        } else {
            "1/s"
        };
        ("os.disk", unit)
    } else if m.ends_with("_per_s") {
        ("os.kernel", "1/s")
    } else {
        ("os.kernel", "count")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_sampler_produces_cpu_memory_and_rates() {
        let mut s = OsSampler::new(HostSource::Local, &[]);
        let mut out = Vec::new();
        s.sample(now_epoch(), &mut out).unwrap();
        assert!(out.iter().any(|m| m.metric == "os.mem.cached_mb"));
        assert!(
            !out.iter().any(|m| m.metric == "os.cpu.user_pct"),
            "no CPU % from one reading"
        );
        std::thread::sleep(Duration::from_millis(200));
        // Burn a little CPU so the delta is not empty.
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        assert_ne!(x, 1);
        s.sample(now_epoch(), &mut out).unwrap();
        let pct: f64 = ["user", "system", "iowait", "steal", "idle"]
            .iter()
            .map(|k| {
                out.iter()
                    .find(|m| m.metric == format!("os.cpu.{k}_pct"))
                    .map(|m| m.value)
                    .unwrap()
            })
            .sum();
        assert!(
            (pct - 100.0).abs() < 0.01,
            "CPU shares add up to 100: {pct}"
        );
        assert!(out
            .iter()
            .any(|m| m.metric == "os.ctxt_per_s" && m.value > 0.0));
    }

    #[test]
    fn client_sampler_sees_a_busy_driver_thread() {
        let mut c = ClientSampler::default();
        let mut out = Vec::new();
        // The thread spins from before the first sample until after the second, however
        // long this thread waits for a core in between.
        let (started, done) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let spin = {
            let (started, done) = (Arc::clone(&started), Arc::clone(&done));
            std::thread::Builder::new()
                .name("pgsurge-0".into())
                .spawn(move || {
                    started.store(true, Ordering::SeqCst);
                    let mut x = 0u64;
                    while !done.load(Ordering::Relaxed) {
                        x = std::hint::black_box(x.wrapping_add(1));
                    }
                    x
                })
                .unwrap()
        };
        while !started.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        c.sample(now_epoch(), &mut out).unwrap();
        std::thread::sleep(Duration::from_millis(500));
        c.sample(now_epoch(), &mut out).unwrap();
        done.store(true, Ordering::SeqCst);
        spin.join().unwrap();
        let t = out
            .iter()
            .find(|m| m.metric == "client.thread.max_cpu_pct")
            .expect("driver thread measured");
        // A spinning thread gets some share even of a heavily loaded machine (an
        // idle one would show 0; ticks are 10 ms, the window 500 ms).
        assert!(t.value >= 4.0, "{t:?}");
        assert!(out
            .iter()
            .any(|m| m.metric == "client.process.cpu_pct" && m.value + 4.0 >= t.value));
        assert!(out.iter().any(|m| m.metric == "client.cpu.idle_pct"));
        assert!(
            !out.iter().any(|m| m.metric.starts_with("os.")),
            "nothing under the server's name"
        );
    }

    #[test]
    fn client_bound_flags_a_saturated_thread_or_remote_host() {
        let s = |m: &str, v: f64| MetricSample {
            ts: 1.0,
            metric: m.into(),
            value: v,
        };
        let busy = vec![
            s("client.thread.max_cpu_pct", 97.0),
            s("client.cpu.idle_pct", 50.0),
        ];
        let f = client_bound(&busy, true);
        assert_eq!(f[0].value.as_deref(), Some("true"));
        assert!(f[1].value.as_deref().unwrap().contains("driver thread"));
        let host = vec![
            s("client.thread.max_cpu_pct", 40.0),
            s("client.cpu.idle_pct", 2.0),
        ];
        assert_eq!(client_bound(&host, false)[0].value.as_deref(), Some("true"));
        assert_eq!(
            client_bound(&host, true)[0].value.as_deref(),
            Some("false"),
            "same host: not the client's fault"
        );
        assert!(client_bound(&[], false).is_empty());
    }

    #[test]
    fn rates_skip_first_reading_and_resets() {
        let mut r = Rates::default();
        assert_eq!(r.rate("a", 1.0, 10.0), None);
        assert_eq!(r.rate("a", 3.0, 30.0), Some(10.0));
        assert_eq!(r.rate("a", 4.0, 5.0), None);
    }
}
