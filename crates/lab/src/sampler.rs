//! Per-second samplers running beside a test: OS metrics from `/proc` (through the
//! `procfs` crate) and PostgreSQL statistics (see [`crate::pgstats`]). Counters become
//! per-second rates (`*_per_s`); gauges are stored as read.
//!
//! OS names: `os.cpu.{user,system,iowait,steal,idle}_pct`, `os.procs.running`,
//! `os.procs.blocked`, `os.ctxt_per_s`, `os.mem.{dirty,writeback,cached,available}_mb`,
//! `os.disk.<dev>.{read_mbps,write_mbps,util_pct,await_ms,reads_per_s,writes_per_s}`.
//!
//! OS metrics describe the machine pgsurge runs on: for a throwaway server (and any
//! local server) that is the server's host.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pgsurge_store::{now_epoch, MetricInfo, MetricSample};
use procfs::{Current, CurrentSI};

use crate::pgstats;
use crate::sql_session::Pg;

/// What to sample.
#[derive(Debug, Clone)]
pub struct SamplerConfig {
    /// Sample /proc.
    pub os: bool,
    /// Sample PostgreSQL: (monitoring conninfo, benchmark database name).
    pub pg: Option<(String, String)>,
    /// Seconds between samples.
    pub interval: f64,
    /// Block devices (empty: every whole, non-virtual device).
    pub devices: Vec<String>,
}

/// A running sampler thread.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<SamplerOutput>>,
}

/// What a sampler collected.
#[derive(Debug, Default)]
pub struct SamplerOutput {
    /// The samples.
    pub samples: Vec<MetricSample>,
    /// Problems met (a view missing, a query failing); sampling went on without them.
    pub errors: Vec<String>,
}

impl Sampler {
    /// Starts sampling now (the first sample is a baseline; values follow every interval).
    pub fn start(cfg: SamplerConfig) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("pgsurge-sampler".into())
            .spawn(move || sample_loop(&cfg, &flag))
            .ok();
        Sampler { stop, handle }
    }

    /// Stops and returns what was collected.
    pub fn finish(mut self) -> SamplerOutput {
        self.stop.store(true, Ordering::SeqCst);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn sample_loop(cfg: &SamplerConfig, stop: &AtomicBool) -> SamplerOutput {
    let mut out = SamplerOutput::default();
    let mut os = cfg.os.then(|| OsSampler::new(&cfg.devices));
    let mut pg = match &cfg.pg {
        Some((conninfo, db)) => match Pg::connect(conninfo) {
            Ok(conn) => Some(PgSampler::new(conn, db)),
            Err(e) => {
                out.errors.push(format!("PostgreSQL sampler: {e}"));
                None
            }
        },
        None => None,
    };
    let period = Duration::from_secs_f64(cfg.interval.max(0.1));
    let mut next = Instant::now();
    loop {
        let ts = now_epoch();
        if let Some(os) = os.as_mut() {
            if let Err(e) = os.sample(ts, &mut out.samples) {
                push_once(&mut out.errors, format!("OS sampler: {e}"));
            }
        }
        if let Some(pg) = pg.as_mut() {
            if let Err(e) = pg.sample(ts, &mut out.samples) {
                push_once(&mut out.errors, format!("PostgreSQL sampler: {e}"));
            }
        }
        next += period;
        // Sleep in small steps so stopping is prompt.
        loop {
            if stop.load(Ordering::SeqCst) {
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
    devices: Vec<String>,
    prev_cpu: Option<procfs::CpuTime>,
    rates: Rates,
    prev_disk: BTreeMap<String, (f64, procfs::DiskStat)>,
}

/// Whole block devices that are not virtual (loop, ram, zram).
pub fn default_devices() -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    let mut out: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !(n.starts_with("loop") || n.starts_with("ram") || n.starts_with("zram")))
        .collect();
    out.sort();
    out
}

impl OsSampler {
    fn new(devices: &[String]) -> OsSampler {
        OsSampler {
            devices: if devices.is_empty() {
                default_devices()
            } else {
                devices.to_vec()
            },
            prev_cpu: None,
            rates: Rates::default(),
            prev_disk: BTreeMap::new(),
        }
    }

    fn sample(&mut self, ts: f64, out: &mut Vec<MetricSample>) -> Result<(), String> {
        let mut push = |metric: &str, value: f64| {
            if value.is_finite() {
                out.push(MetricSample {
                    ts,
                    metric: metric.to_string(),
                    value,
                });
            }
        };
        let ks = procfs::KernelStats::current().map_err(|e| e.to_string())?;
        let cpu = ks.total.clone();
        if let Some(prev) = &self.prev_cpu {
            let d = |a: u64, b: u64| a.saturating_sub(b) as f64;
            let o = |a: Option<u64>| a.unwrap_or(0);
            let user = d(cpu.user + cpu.nice, prev.user + prev.nice);
            let system = d(
                cpu.system + o(cpu.irq) + o(cpu.softirq),
                prev.system + o(prev.irq) + o(prev.softirq),
            );
            let idle = d(cpu.idle, prev.idle);
            let iowait = d(o(cpu.iowait), o(prev.iowait));
            let steal = d(o(cpu.steal), o(prev.steal));
            let total = user + system + idle + iowait + steal;
            if total > 0.0 {
                push("os.cpu.user_pct", 100.0 * user / total);
                push("os.cpu.system_pct", 100.0 * system / total);
                push("os.cpu.iowait_pct", 100.0 * iowait / total);
                push("os.cpu.steal_pct", 100.0 * steal / total);
                push("os.cpu.idle_pct", 100.0 * idle / total);
            }
        }
        self.prev_cpu = Some(cpu);
        if let Some(r) = self.rates.rate("ctxt", ts, ks.ctxt as f64) {
            push("os.ctxt_per_s", r);
        }
        if let Some(r) = ks.procs_running {
            push("os.procs.running", f64::from(r));
        }
        if let Some(b) = ks.procs_blocked {
            push("os.procs.blocked", f64::from(b));
        }
        let mem = procfs::Meminfo::current().map_err(|e| e.to_string())?;
        let mb = |b: u64| b as f64 / 1_048_576.0;
        push("os.mem.dirty_mb", mb(mem.dirty));
        push("os.mem.writeback_mb", mb(mem.writeback));
        push("os.mem.cached_mb", mb(mem.cached));
        if let Some(a) = mem.mem_available {
            push("os.mem.available_mb", mb(a));
        }
        let disks = procfs::diskstats().map_err(|e| e.to_string())?;
        for d in disks.into_iter().filter(|d| self.devices.contains(&d.name)) {
            if let Some((pts, p)) = self.prev_disk.get(&d.name) {
                let dt = ts - pts;
                if dt > 0.0 {
                    let dd = |a: u64, b: u64| a.saturating_sub(b) as f64;
                    let name = &d.name;
                    // diskstats sectors are 512 bytes whatever the device's block size.
                    push(
                        &format!("os.disk.{name}.read_mbps"),
                        dd(d.sectors_read, p.sectors_read) * 512.0 / 1_048_576.0 / dt,
                    );
                    push(
                        &format!("os.disk.{name}.write_mbps"),
                        dd(d.sectors_written, p.sectors_written) * 512.0 / 1_048_576.0 / dt,
                    );
                    let ios = dd(d.reads, p.reads) + dd(d.writes, p.writes);
                    push(
                        &format!("os.disk.{name}.reads_per_s"),
                        dd(d.reads, p.reads) / dt,
                    );
                    push(
                        &format!("os.disk.{name}.writes_per_s"),
                        dd(d.writes, p.writes) / dt,
                    );
                    push(
                        &format!("os.disk.{name}.util_pct"),
                        (dd(d.time_in_progress, p.time_in_progress) / (dt * 1000.0) * 100.0)
                            .min(100.0),
                    );
                    let busy =
                        dd(d.time_reading, p.time_reading) + dd(d.time_writing, p.time_writing);
                    push(
                        &format!("os.disk.{name}.await_ms"),
                        if ios > 0.0 { busy / ios } else { 0.0 },
                    );
                }
            }
            self.prev_disk.insert(d.name.clone(), (ts, d));
        }
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
    if m.starts_with("os.cpu.") {
        ("os.cpu", "%")
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
        let mut s = OsSampler::new(&[]);
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
    fn rates_skip_first_reading_and_resets() {
        let mut r = Rates::default();
        assert_eq!(r.rate("a", 1.0, 10.0), None);
        assert_eq!(r.rate("a", 3.0, 30.0), Some(10.0));
        assert_eq!(r.rate("a", 4.0, 5.0), None);
    }
}
