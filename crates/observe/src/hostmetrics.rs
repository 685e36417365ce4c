//! Server-host OS metrics from the server's own machine, whatever the client's.
//!
//! A [`HostReading`] holds a host's cumulative counters and gauges at one instant. It
//! comes from one of three sources ([`HostSource`]):
//!
//! * `local`: `/proc` of the machine pgsurge runs on — right only when the server runs
//!   here too (throwaway servers, servers reached through a local socket or loopback);
//! * `node_exporter`: a Prometheus node_exporter endpoint of the server's host, read
//!   over HTTP and parsed from the text exposition format ([`parse_exposition`]);
//! * `pg_read_file`: `/proc` of the server's host read through the server itself
//!   (superuser or `pg_read_server_files`), parsed exactly as the local files.
//!
//! Otherwise the source is `none` and no server-host metric is stored: the client's
//! figures are never stored under the server's name. [`HostRates`] turns two readings
//! into the per-second rates and percentages of the `os.*` names (see
//! [`crate::sampler`]); the same code, with the `client.*` prefix, measures the client.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use pgsurge_store::MetricSample;
use pgsurge_wire::ConnConfig;
use serde_json::{json, Value};

use crate::sql_session::{literal, Pg};

/// Cumulative CPU time by mode, summed over CPUs (any unit: only shares are used).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuModes {
    /// user + nice.
    pub user: f64,
    /// system + irq + softirq.
    pub system: f64,
    /// idle.
    pub idle: f64,
    /// iowait.
    pub iowait: f64,
    /// steal.
    pub steal: f64,
}

impl CpuModes {
    fn total(&self) -> f64 {
        self.user + self.system + self.idle + self.iowait + self.steal
    }
}

/// Cumulative counters of one block device.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DiskCounters {
    /// Reads completed.
    pub reads: f64,
    /// Writes completed.
    pub writes: f64,
    /// Bytes read.
    pub read_bytes: f64,
    /// Bytes written.
    pub written_bytes: f64,
    /// Seconds spent reading (all requests).
    pub read_time_s: f64,
    /// Seconds spent writing.
    pub write_time_s: f64,
    /// Seconds the device had I/O in progress (utilisation).
    pub io_time_s: f64,
}

/// A host's counters and gauges at one instant. Missing parts are `None`/empty.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostReading {
    /// CPU time by mode.
    pub cpu: Option<CpuModes>,
    /// Context switches since boot.
    pub ctxt: Option<f64>,
    /// Runnable processes.
    pub procs_running: Option<f64>,
    /// Processes blocked on I/O.
    pub procs_blocked: Option<f64>,
    /// Load averages (1, 5, 15 minutes).
    pub load: Option<[f64; 3]>,
    /// Memory gauges in bytes: `dirty`, `writeback`, `cached`, `available`, `total`.
    pub mem: BTreeMap<&'static str, f64>,
    /// Block devices by name.
    pub disks: BTreeMap<String, DiskCounters>,
    /// Network interfaces by name: (bytes received, bytes sent).
    pub net: BTreeMap<String, (f64, f64)>,
}

// ---------------------------------------------------------------------------------
// /proc text (local, or read through the server)
// ---------------------------------------------------------------------------------

/// Fills CPU, context switches and process counts from `/proc/stat`.
pub fn parse_proc_stat(text: &str, r: &mut HostReading) {
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let Some(key) = f.next() else { continue };
        let nums: Vec<f64> = f.filter_map(|x| x.parse().ok()).collect();
        let n = |i: usize| nums.get(i).copied().unwrap_or(0.0);
        match key {
            "cpu" => {
                // user nice system idle iowait irq softirq steal (guest is inside user).
                r.cpu = Some(CpuModes {
                    user: n(0) + n(1),
                    system: n(2) + n(5) + n(6),
                    idle: n(3),
                    iowait: n(4),
                    steal: n(7),
                })
            }
            "ctxt" => r.ctxt = nums.first().copied(),
            "procs_running" => r.procs_running = nums.first().copied(),
            "procs_blocked" => r.procs_blocked = nums.first().copied(),
            _ => {}
        }
    }
}

/// Fills memory gauges from `/proc/meminfo` (kB values).
pub fn parse_meminfo(text: &str, r: &mut HostReading) {
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let Some(kb) = v
            .split_whitespace()
            .next()
            .and_then(|x| x.parse::<f64>().ok())
        else {
            continue;
        };
        let name = match k.trim() {
            "Dirty" => "dirty",
            "Writeback" => "writeback",
            "Cached" => "cached",
            "MemAvailable" => "available",
            "MemTotal" => "total",
            _ => continue,
        };
        r.mem.insert(name, kb * 1024.0);
    }
}

/// Fills block devices from `/proc/diskstats` (sectors are 512 bytes, times in ms).
pub fn parse_diskstats(text: &str, r: &mut HostReading) {
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 14 {
            continue;
        }
        let n = |i: usize| f[i].parse::<f64>().unwrap_or(0.0);
        r.disks.insert(
            f[2].to_string(),
            DiskCounters {
                reads: n(3),
                read_bytes: n(5) * 512.0,
                read_time_s: n(6) / 1000.0,
                writes: n(7),
                written_bytes: n(9) * 512.0,
                write_time_s: n(10) / 1000.0,
                io_time_s: n(12) / 1000.0,
            },
        );
    }
}

/// Fills the load averages from `/proc/loadavg`.
pub fn parse_loadavg(text: &str, r: &mut HostReading) {
    let v: Vec<f64> = text
        .split_whitespace()
        .take(3)
        .filter_map(|x| x.parse().ok())
        .collect();
    if let [a, b, c] = v[..] {
        r.load = Some([a, b, c]);
    }
}

/// Fills network interfaces from `/proc/net/dev`.
pub fn parse_net_dev(text: &str, r: &mut HostReading) {
    for line in text.lines() {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let f: Vec<f64> = rest
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        if f.len() >= 9 {
            r.net.insert(name.trim().to_string(), (f[0], f[8]));
        }
    }
}

/// The `/proc` files a reading is made of, in the order [`reading_from_proc`] takes them.
pub const PROC_FILES: [&str; 5] = [
    "/proc/stat",
    "/proc/meminfo",
    "/proc/diskstats",
    "/proc/loadavg",
    "/proc/net/dev",
];

/// A reading from the texts of [`PROC_FILES`] (None where a file was not readable).
pub fn reading_from_proc(texts: &[Option<String>]) -> HostReading {
    let mut r = HostReading::default();
    let parsers: [fn(&str, &mut HostReading); 5] = [
        parse_proc_stat,
        parse_meminfo,
        parse_diskstats,
        parse_loadavg,
        parse_net_dev,
    ];
    for (text, parse) in texts.iter().zip(parsers) {
        if let Some(t) = text {
            parse(t, &mut r);
        }
    }
    r
}

/// A reading of this machine's `/proc`.
pub fn local_reading() -> Result<HostReading, String> {
    let texts: Vec<Option<String>> = PROC_FILES
        .iter()
        .map(|p| std::fs::read_to_string(p).ok())
        .collect();
    if texts[0].is_none() {
        return Err("cannot read /proc/stat".into());
    }
    Ok(reading_from_proc(&texts))
}

// ---------------------------------------------------------------------------------
// Prometheus text exposition format (node_exporter)
// ---------------------------------------------------------------------------------

/// One sample of the exposition format.
#[derive(Debug, Clone, PartialEq)]
pub struct PromSample {
    /// Metric name.
    pub name: String,
    /// Labels in the order given.
    pub labels: Vec<(String, String)>,
    /// Value (NaN and ±Inf allowed).
    pub value: f64,
}

impl PromSample {
    /// The value of label `k`.
    pub fn label(&self, k: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    }
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// Parses the Prometheus text exposition format (version 0.0.4): `# HELP`/`# TYPE`
/// and comments skipped, `name{label="value",...} value [timestamp]` per line, label
/// values with `\\`, `\"` and `\n` escapes. Any malformed line is an error naming it.
pub fn parse_exposition(text: &str) -> Result<Vec<PromSample>, String> {
    let mut out = Vec::new();
    for (no, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let s = parse_line(line).map_err(|e| {
            let shown: String = line.chars().take(80).collect();
            format!("line {}: {e}: {shown}", no + 1)
        })?;
        out.push(s);
    }
    Ok(out)
}

fn parse_line(line: &str) -> Result<PromSample, String> {
    let mut chars = line.char_indices().peekable();
    match chars.peek() {
        Some((_, c)) if is_name_start(*c) => {}
        _ => return Err("expected a metric name".into()),
    }
    let mut end = line.len();
    while let Some((i, c)) = chars.peek().copied() {
        if !is_name_char(c) {
            end = i;
            break;
        }
        chars.next();
    }
    let name = line[..end].to_string();
    let mut labels = Vec::new();
    if let Some((_, '{')) = chars.peek() {
        chars.next();
        loop {
            while matches!(chars.peek(), Some((_, c)) if c.is_whitespace()) {
                chars.next();
            }
            match chars.peek() {
                Some((_, '}')) => {
                    chars.next();
                    break;
                }
                Some((_, c)) if is_name_start(*c) => {}
                _ => return Err("expected a label name or '}'".into()),
            }
            let mut key = String::new();
            while let Some((_, c)) = chars.peek().copied() {
                if !is_name_char(c) {
                    break;
                }
                key.push(c);
                chars.next();
            }
            if !matches!(chars.next(), Some((_, '='))) {
                return Err(format!("expected '=' after label {key}"));
            }
            if !matches!(chars.next(), Some((_, '"'))) {
                return Err(format!("expected '\"' to open the value of label {key}"));
            }
            let mut value = String::new();
            loop {
                match chars.next() {
                    None => return Err(format!("unterminated value of label {key}")),
                    Some((_, '"')) => break,
                    Some((_, '\\')) => match chars.next() {
                        Some((_, 'n')) => value.push('\n'),
                        Some((_, '\\')) => value.push('\\'),
                        Some((_, '"')) => value.push('"'),
                        Some((_, c)) => {
                            value.push('\\');
                            value.push(c);
                        }
                        None => return Err(format!("unterminated value of label {key}")),
                    },
                    Some((_, c)) => value.push(c),
                }
            }
            labels.push((key, value));
            while matches!(chars.peek(), Some((_, c)) if c.is_whitespace()) {
                chars.next();
            }
            match chars.next() {
                Some((_, ',')) => {}
                Some((_, '}')) => break,
                _ => return Err("expected ',' or '}' after a label".into()),
            }
        }
    }
    let rest: String = chars.map(|(_, c)| c).collect();
    let mut fields = rest.split_whitespace();
    let v = fields.next().ok_or("missing value")?;
    let value = match v {
        "+Inf" | "Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        "NaN" => f64::NAN,
        other => other
            .parse::<f64>()
            .map_err(|_| format!("\"{other}\" is not a number"))?,
    };
    if let Some(ts) = fields.next() {
        ts.parse::<i64>()
            .map_err(|_| format!("\"{ts}\" is not a timestamp"))?;
    }
    if fields.next().is_some() {
        return Err("unexpected text after the timestamp".into());
    }
    Ok(PromSample {
        name,
        labels,
        value,
    })
}

/// A reading from node_exporter samples (`node_cpu_seconds_total`, `node_*` gauges
/// and counters of the default collectors).
pub fn reading_from_node_exporter(samples: &[PromSample]) -> HostReading {
    let mut r = HostReading::default();
    let mut cpu = CpuModes::default();
    let mut have_cpu = false;
    for s in samples {
        let v = s.value;
        if !v.is_finite() {
            continue;
        }
        let dev = || s.label("device").unwrap_or("").to_string();
        match s.name.as_str() {
            "node_cpu_seconds_total" => {
                have_cpu = true;
                match s.label("mode").unwrap_or("") {
                    "user" | "nice" => cpu.user += v,
                    "system" | "irq" | "softirq" => cpu.system += v,
                    "idle" => cpu.idle += v,
                    "iowait" => cpu.iowait += v,
                    "steal" => cpu.steal += v,
                    _ => {}
                }
            }
            "node_context_switches_total" => r.ctxt = Some(v),
            "node_procs_running" => r.procs_running = Some(v),
            "node_procs_blocked" => r.procs_blocked = Some(v),
            "node_load1" | "node_load5" | "node_load15" => {
                let l = r.load.get_or_insert([0.0; 3]);
                let i = match s.name.as_str() {
                    "node_load1" => 0,
                    "node_load5" => 1,
                    _ => 2,
                };
                l[i] = v;
            }
            "node_memory_Dirty_bytes" => {
                r.mem.insert("dirty", v);
            }
            "node_memory_Writeback_bytes" => {
                r.mem.insert("writeback", v);
            }
            "node_memory_Cached_bytes" => {
                r.mem.insert("cached", v);
            }
            "node_memory_MemAvailable_bytes" => {
                r.mem.insert("available", v);
            }
            "node_memory_MemTotal_bytes" => {
                r.mem.insert("total", v);
            }
            "node_disk_reads_completed_total" => r.disks.entry(dev()).or_default().reads = v,
            "node_disk_writes_completed_total" => r.disks.entry(dev()).or_default().writes = v,
            "node_disk_read_bytes_total" => r.disks.entry(dev()).or_default().read_bytes = v,
            "node_disk_written_bytes_total" => r.disks.entry(dev()).or_default().written_bytes = v,
            "node_disk_read_time_seconds_total" => {
                r.disks.entry(dev()).or_default().read_time_s = v
            }
            "node_disk_write_time_seconds_total" => {
                r.disks.entry(dev()).or_default().write_time_s = v
            }
            "node_disk_io_time_seconds_total" => r.disks.entry(dev()).or_default().io_time_s = v,
            "node_network_receive_bytes_total" => r.net.entry(dev()).or_default().0 = v,
            "node_network_transmit_bytes_total" => r.net.entry(dev()).or_default().1 = v,
            _ => {}
        }
    }
    if have_cpu {
        r.cpu = Some(cpu);
    }
    r
}

/// GET of an `http://` URL (node_exporter's `/metrics`; `/metrics` is added when the
/// URL has no path). HTTP/1.0 so the answer is neither chunked nor kept alive.
pub fn http_get(url: &str, timeout: Duration) -> Result<String, String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("node_exporter URL \"{url}\": only http:// URLs are supported"))?;
    let (hostport, path) = match rest.find('/') {
        Some(i) if &rest[i..] != "/" => (&rest[..i], &rest[i..]),
        Some(i) => (&rest[..i], "/metrics"),
        None => (rest, "/metrics"),
    };
    let hostport = if hostport.contains(':') && !hostport.ends_with(']') {
        hostport.to_string()
    } else {
        format!("{hostport}:80")
    };
    let addr = hostport
        .to_socket_addrs()
        .map_err(|e| format!("node_exporter {url}: {e}"))?
        .next()
        .ok_or_else(|| format!("node_exporter {url}: no address"))?;
    let mut sock = TcpStream::connect_timeout(&addr, timeout)
        .map_err(|e| format!("node_exporter {url}: {e}"))?;
    sock.set_read_timeout(Some(timeout)).ok();
    sock.set_write_timeout(Some(timeout)).ok();
    let host = hostport.rsplit_once(':').map_or(hostport.as_str(), |h| h.0);
    write!(
        sock,
        "GET {path} HTTP/1.0\r\nHost: {host}\r\nAccept: text/plain\r\nUser-Agent: pgsurge\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| format!("node_exporter {url}: {e}"))?;
    let mut buf = Vec::new();
    sock.take(64 << 20)
        .read_to_end(&mut buf)
        .map_err(|e| format!("node_exporter {url}: {e}"))?;
    let text = String::from_utf8_lossy(&buf);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("node_exporter {url}: not an HTTP answer"))?;
    let status = head.lines().next().unwrap_or("");
    if status.split_whitespace().nth(1) != Some("200") {
        return Err(format!("node_exporter {url}: {status}"));
    }
    Ok(body.to_string())
}

// ---------------------------------------------------------------------------------
// Sources
// ---------------------------------------------------------------------------------

/// Where a target's server-host metrics come from.
#[derive(Debug, Clone, PartialEq)]
pub enum HostSource {
    /// This machine's `/proc` (the server runs here).
    Local,
    /// A node_exporter URL of the server's host.
    NodeExporter(String),
    /// `/proc` of the server's host through `pg_read_file` on a connection with these
    /// parameters.
    PgReadFile(ConnConfig),
    /// Not measured; the reason.
    None(String),
}

impl HostSource {
    /// `local`, `node_exporter`, `pg_read_file` or `none` (as stored).
    pub fn name(&self) -> &'static str {
        match self {
            HostSource::Local => "local",
            HostSource::NodeExporter(_) => "node_exporter",
            HostSource::PgReadFile(_) => "pg_read_file",
            HostSource::None(_) => "none",
        }
    }
}

/// SQL reading `paths` in one row (NULL for a file that is missing).
fn read_files_sql(paths: &[&str]) -> String {
    let cols: Vec<String> = paths
        .iter()
        .map(|p| {
            // sysctl files refuse large reads (ENOMEM); the others are seq files.
            let len = if p.starts_with("/proc/sys/") {
                4096
            } else {
                1 << 20
            };
            format!("pg_read_file({}, 0, {len}, true)", literal(p))
        })
        .collect();
    format!("SELECT {}", cols.join(", "))
}

/// Reads `paths` on the server's host through `pg`.
pub fn read_server_files(pg: &mut Pg, paths: &[&str]) -> Result<Vec<Option<String>>, String> {
    let rows = pg.rows(&read_files_sql(paths)).map_err(|e| e.to_string())?;
    Ok(rows.into_iter().next().unwrap_or_default())
}

/// True when the role of `pg` may read server files (superuser or member of
/// `pg_read_server_files`, PostgreSQL 11+) and `/proc/stat` is readable that way.
pub fn can_read_server_files(pg: &mut Pg) -> bool {
    let privileged = pg
        .value(
            "SELECT r.rolsuper OR (current_setting('server_version_num')::int >= 110000 \
             AND pg_has_role(current_user, 'pg_read_server_files', 'MEMBER')) \
             FROM pg_roles r WHERE r.rolname = current_user",
        )
        .ok()
        .flatten()
        .as_deref()
        == Some("t");
    privileged
        && read_server_files(pg, &["/proc/stat"])
            .ok()
            .and_then(|v| v.into_iter().next().flatten())
            .is_some_and(|t| t.contains("cpu "))
}

/// Reads a host through an open source. `pg` is the connection of a `pg_read_file`
/// source (opened on first use).
pub fn read(source: &HostSource, pg: &mut Option<Pg>) -> Result<HostReading, String> {
    match source {
        HostSource::Local => local_reading(),
        HostSource::NodeExporter(url) => {
            let body = http_get(url, Duration::from_secs(3))?;
            let samples =
                parse_exposition(&body).map_err(|e| format!("node_exporter {url}: {e}"))?;
            Ok(reading_from_node_exporter(&samples))
        }
        HostSource::PgReadFile(conn) => {
            if pg.is_none() {
                *pg = Some(Pg::connect(conn).map_err(|e| e.to_string())?);
            }
            let conn = pg.as_mut().ok_or("no connection")?;
            let texts = read_server_files(conn, &PROC_FILES)?;
            Ok(reading_from_proc(&texts))
        }
        HostSource::None(reason) => Err(reason.clone()),
    }
}

/// Whole block devices among `names`: no loop, ram, zram, optical or floppy devices,
/// and no partition of another listed device (`sda1` of `sda`, `nvme0n1p2` of `nvme0n1`).
pub fn whole_devices<'a>(names: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    let all: BTreeSet<&str> = names.into_iter().map(String::as_str).collect();
    all.iter()
        .filter(|n| {
            !["loop", "ram", "zram", "sr", "fd"]
                .iter()
                .any(|p| n.starts_with(p))
        })
        .filter(|n| {
            !all.iter().any(|parent| {
                n.len() > parent.len() && n.starts_with(parent) && {
                    let rest = &n[parent.len()..];
                    let rest = rest.strip_prefix('p').unwrap_or(rest);
                    !rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit())
                }
            })
        })
        .map(|n| n.to_string())
        .collect()
}

/// Network interfaces worth a series: not loopback.
fn interesting_interface(name: &str) -> bool {
    name != "lo"
}

/// Per-second rates and percentages from successive [`HostReading`]s.
#[derive(Debug, Default)]
pub struct HostRates {
    prev: Option<(f64, HostReading)>,
}

impl HostRates {
    /// Pushes the metrics of `cur` (taken at `ts`) named `{prefix}.…`; rates need a
    /// previous reading. `devices`: block devices to report (empty: whole devices).
    /// `full`: everything; otherwise CPU only (the client host).
    pub fn push(
        &mut self,
        ts: f64,
        cur: HostReading,
        prefix: &str,
        devices: &[String],
        full: bool,
        out: &mut Vec<MetricSample>,
    ) {
        let mut put = |m: String, value: f64| {
            if value.is_finite() {
                out.push(MetricSample {
                    ts,
                    metric: m,
                    value,
                });
            }
        };
        if let Some((pts, prev)) = &self.prev {
            let dt = ts - pts;
            if dt > 0.0 {
                if let (Some(c), Some(p)) = (cur.cpu, prev.cpu) {
                    let d = |a: f64, b: f64| (a - b).max(0.0);
                    let parts = [
                        ("user", d(c.user, p.user)),
                        ("system", d(c.system, p.system)),
                        ("iowait", d(c.iowait, p.iowait)),
                        ("steal", d(c.steal, p.steal)),
                        ("idle", d(c.idle, p.idle)),
                    ];
                    let total: f64 = parts.iter().map(|x| x.1).sum();
                    if total > 0.0 && c.total() >= p.total() {
                        for (k, v) in parts {
                            put(format!("{prefix}.cpu.{k}_pct"), 100.0 * v / total);
                        }
                    }
                }
                if full {
                    if let (Some(c), Some(p)) = (cur.ctxt, prev.ctxt) {
                        if c >= p {
                            put(format!("{prefix}.ctxt_per_s"), (c - p) / dt);
                        }
                    }
                    let wanted = if devices.is_empty() {
                        whole_devices(cur.disks.keys())
                    } else {
                        devices.to_vec()
                    };
                    for name in wanted {
                        let (Some(c), Some(p)) = (cur.disks.get(&name), prev.disks.get(&name))
                        else {
                            continue;
                        };
                        let d = |a: f64, b: f64| (a - b).max(0.0);
                        let mb = 1_048_576.0;
                        let base = format!("{prefix}.disk.{name}");
                        put(
                            format!("{base}.read_mbps"),
                            d(c.read_bytes, p.read_bytes) / mb / dt,
                        );
                        put(
                            format!("{base}.write_mbps"),
                            d(c.written_bytes, p.written_bytes) / mb / dt,
                        );
                        put(format!("{base}.reads_per_s"), d(c.reads, p.reads) / dt);
                        put(format!("{base}.writes_per_s"), d(c.writes, p.writes) / dt);
                        put(
                            format!("{base}.util_pct"),
                            (d(c.io_time_s, p.io_time_s) / dt * 100.0).min(100.0),
                        );
                        let ios = d(c.reads, p.reads) + d(c.writes, p.writes);
                        let busy =
                            d(c.read_time_s, p.read_time_s) + d(c.write_time_s, p.write_time_s);
                        put(
                            format!("{base}.await_ms"),
                            if ios > 0.0 { busy * 1000.0 / ios } else { 0.0 },
                        );
                    }
                    for (name, (rx, tx)) in &cur.net {
                        if !interesting_interface(name) {
                            continue;
                        }
                        if let Some((prx, ptx)) = prev.net.get(name) {
                            let base = format!("{prefix}.net.{name}");
                            put(
                                format!("{base}.rx_mbps"),
                                (rx - prx).max(0.0) / 1_048_576.0 / dt,
                            );
                            put(
                                format!("{base}.tx_mbps"),
                                (tx - ptx).max(0.0) / 1_048_576.0 / dt,
                            );
                        }
                    }
                }
            }
        }
        if full {
            if let Some(v) = cur.procs_running {
                put(format!("{prefix}.procs.running"), v);
            }
            if let Some(v) = cur.procs_blocked {
                put(format!("{prefix}.procs.blocked"), v);
            }
            if let Some([l1, _, _]) = cur.load {
                put(format!("{prefix}.load1"), l1);
            }
            for (k, v) in &cur.mem {
                if *k != "total" {
                    put(format!("{prefix}.mem.{k}_mb"), v / 1_048_576.0);
                }
            }
        }
        self.prev = Some((ts, cur));
    }
}

// ---------------------------------------------------------------------------------
// The host part of the manifest, from the same source
// ---------------------------------------------------------------------------------

/// Longest mount point containing `path` in `/proc/mounts` text: (mount, fstype, device).
pub fn mount_of(mounts: &str, path: &str) -> Option<(String, String, String)> {
    let mut best: Option<(String, String, String)> = None;
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(dev), Some(dir), Some(fstype)) = (f.first(), f.get(1), f.get(2)) else {
            continue;
        };
        let dir = dir.replace("\\040", " ");
        let inside = path == dir
            || dir == "/"
            || path.starts_with(&format!("{}/", dir.trim_end_matches('/')));
        if inside && best.as_ref().is_none_or(|b| dir.len() >= b.0.len()) {
            best = Some((dir, fstype.to_string(), dev.to_string()));
        }
    }
    best
}

/// Filesystem types whose data lives in memory: benchmarks on them never do I/O.
pub fn is_memory_fs(fstype: &str) -> bool {
    matches!(fstype, "tmpfs" | "ramfs")
}

/// The `data_directory` entry of a manifest from a `/proc/mounts` text.
pub fn data_dir_entry(mounts: Option<&str>, data_dir: Option<&str>) -> Value {
    let Some(dir) = data_dir else {
        return json!({"path": null, "note": "data_directory not readable by this role"});
    };
    let real = std::fs::canonicalize(dir)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| dir.to_string());
    match mounts.and_then(|m| mount_of(m, &real).or_else(|| mount_of(m, dir))) {
        Some((mount, fstype, device)) => json!({
            "path": dir, "mount": mount, "fstype": fstype, "device": device,
            "in_memory": is_memory_fs(&fstype),
        }),
        None => json!({"path": dir, "fstype": null}),
    }
}

/// Host manifest of the server's host read through `pg_read_file`.
pub fn manifest_via_server(pg: &mut Pg, data_dir: Option<&str>) -> Value {
    let files = [
        "/proc/sys/kernel/hostname",
        "/proc/sys/kernel/osrelease",
        "/proc/version",
        "/proc/cpuinfo",
        "/proc/meminfo",
        "/proc/mounts",
        "/etc/os-release",
    ];
    let t = match read_server_files(pg, &files) {
        Ok(t) => t,
        Err(e) => return json!({ "error": e }),
    };
    let get = |i: usize| t.get(i).cloned().flatten();
    let trimmed = |i: usize| get(i).map(|s| s.trim().to_string());
    let cpuinfo = get(3).unwrap_or_default();
    let model = cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "model name").then(|| v.trim().to_string())
    });
    let count = cpuinfo
        .lines()
        .filter(|l| l.split(':').next().map(str::trim) == Some("processor"))
        .count();
    let mut r = HostReading::default();
    parse_meminfo(&get(4).unwrap_or_default(), &mut r);
    let os_release = get(6).and_then(|t| {
        t.lines().find_map(|l| {
            l.strip_prefix("PRETTY_NAME=")
                .map(|v| v.trim_matches('"').to_string())
        })
    });
    json!({
        "hostname": trimmed(0),
        "kernel": trimmed(1),
        "kernel_version": trimmed(2),
        "os_release": os_release,
        "cpu": {"model": model, "count": (count > 0).then_some(count)},
        "memory_bytes": r.mem.get("total").map(|v| *v as u64),
        "data_directory": data_dir_entry(get(5).as_deref(), data_dir),
    })
}

/// Host manifest of the server's host from node_exporter samples.
pub fn manifest_via_node_exporter(samples: &[PromSample], data_dir: Option<&str>) -> Value {
    let uname = samples.iter().find(|s| s.name == "node_uname_info");
    let cpus: BTreeSet<&str> = samples
        .iter()
        .filter(|s| s.name == "node_cpu_seconds_total")
        .filter_map(|s| s.label("cpu"))
        .collect();
    let model = samples
        .iter()
        .find(|s| s.name == "node_cpu_info")
        .and_then(|s| s.label("model_name"))
        .map(str::to_string);
    let mem = samples
        .iter()
        .find(|s| s.name == "node_memory_MemTotal_bytes")
        .map(|s| s.value as u64);
    let os_release = samples
        .iter()
        .find(|s| s.name == "node_os_info")
        .and_then(|s| s.label("pretty_name"))
        .map(str::to_string);
    // A /proc/mounts-like text from node_filesystem_size_bytes' labels.
    let mounts: String = samples
        .iter()
        .filter(|s| s.name == "node_filesystem_size_bytes")
        .filter_map(|s| {
            Some(format!(
                "{} {} {} -\n",
                s.label("device")?,
                s.label("mountpoint")?.replace(' ', "\\040"),
                s.label("fstype")?
            ))
        })
        .collect();
    json!({
        "hostname": uname.and_then(|u| u.label("nodename")),
        "kernel": uname.and_then(|u| u.label("release")),
        "kernel_version": uname.and_then(|u| u.label("version")),
        "os_release": os_release,
        "cpu": {"model": model, "count": (!cpus.is_empty()).then_some(cpus.len())},
        "memory_bytes": mem,
        "data_directory": data_dir_entry((!mounts.is_empty()).then_some(mounts.as_str()), data_dir),
    })
}

/// The server host's manifest from `source` (`local_manifest` for [`HostSource::Local`]).
/// For [`HostSource::None`] it says why the host is not described.
pub fn host_manifest_from(
    source: &HostSource,
    monitor: Option<&mut Pg>,
    data_dir: Option<&str>,
) -> Value {
    let mut m = match source {
        HostSource::Local => {
            let mut m = crate::manifest::host_manifest();
            let mounts = std::fs::read_to_string("/proc/mounts").ok();
            m["data_directory"] = data_dir_entry(mounts.as_deref(), data_dir);
            m
        }
        HostSource::NodeExporter(url) => {
            match http_get(url, Duration::from_secs(5)).and_then(|b| parse_exposition(&b)) {
                Ok(samples) => manifest_via_node_exporter(&samples, data_dir),
                Err(e) => json!({"error": e}),
            }
        }
        HostSource::PgReadFile(_) => match monitor {
            Some(pg) => manifest_via_server(pg, data_dir),
            None => json!({"error": "no connection"}),
        },
        HostSource::None(reason) => json!({"note": format!("server host not measured: {reason}")}),
    };
    m["source"] = Value::String(source.name().into());
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXPOSITION: &str = r##"# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.
# TYPE node_cpu_seconds_total counter
node_cpu_seconds_total{cpu="0",mode="idle"} 100.5
node_cpu_seconds_total{cpu="0",mode="user"} 10
node_cpu_seconds_total{cpu="0",mode="nice"} 1
node_cpu_seconds_total{cpu="0",mode="system"} 5
node_cpu_seconds_total{cpu="1",mode="idle"} 99.5
node_cpu_seconds_total{cpu="1",mode="iowait"} 2e0
node_context_switches_total 1.234e+06
node_load1 0.5
node_memory_Dirty_bytes 4096
node_memory_MemTotal_bytes 8.589934592e+09
node_disk_read_bytes_total{device="sda"} 1048576
node_disk_io_time_seconds_total{device="sda"} 1.5
node_network_receive_bytes_total{device="eth0"} 2048
node_uname_info{domainname="(none)",machine="x86_64",nodename="db-\"1\"",release="6.1.0",sysname="Linux",version="#1 SMP"} 1
node_filesystem_size_bytes{device="/dev/sda1",fstype="ext4",mountpoint="/"} 1e10
node_filesystem_size_bytes{device="tmpfs",fstype="tmpfs",mountpoint="/run",} 1e6
node_scrape_collector_success{collector="arp"} NaN 1700000000000
"##;

    #[test]
    fn exposition_parses_names_labels_escapes_and_values() {
        let s = parse_exposition(EXPOSITION).unwrap();
        assert_eq!(s.len(), 17);
        assert_eq!(s[0].name, "node_cpu_seconds_total");
        assert_eq!(s[0].label("mode"), Some("idle"));
        assert_eq!(s[0].value, 100.5);
        assert_eq!(s[6].value, 1_234_000.0);
        let uname = s.iter().find(|x| x.name == "node_uname_info").unwrap();
        assert_eq!(uname.label("nodename"), Some("db-\"1\""));
        assert_eq!(s[15].label("mountpoint"), Some("/run"), "trailing comma");
        assert!(s[16].value.is_nan());
    }

    #[test]
    fn exposition_errors_name_the_line() {
        for (bad, what) in [
            ("node_x{a=\"1\" 3", "expected ',' or '}'"),
            ("node_x{a=1} 3", "expected '\"'"),
            ("node_x 3 4 5", "unexpected text"),
            ("node_x abc", "not a number"),
            ("{a=\"b\"} 1", "expected a metric name"),
            ("node_x{a=\"b", "unterminated"),
            ("node_x", "missing value"),
        ] {
            let e = parse_exposition(&format!("# ok\nnode_ok 1\n{bad}\n")).unwrap_err();
            assert!(e.starts_with("line 3: "), "{bad}: {e}");
            assert!(e.contains(what), "{bad}: {e}");
        }
    }

    #[test]
    fn node_exporter_reading_and_manifest() {
        let s = parse_exposition(EXPOSITION).unwrap();
        let r = reading_from_node_exporter(&s);
        let cpu = r.cpu.unwrap();
        assert_eq!(
            (cpu.user, cpu.system, cpu.idle, cpu.iowait),
            (11.0, 5.0, 200.0, 2.0)
        );
        assert_eq!(r.ctxt, Some(1_234_000.0));
        assert_eq!(r.mem["dirty"], 4096.0);
        assert_eq!(r.disks["sda"].read_bytes, 1_048_576.0);
        assert_eq!(r.net["eth0"].0, 2048.0);
        let m = manifest_via_node_exporter(&s, Some("/run/pg/data"));
        assert_eq!(m["hostname"], "db-\"1\"");
        assert_eq!(m["kernel"], "6.1.0");
        assert_eq!(m["cpu"]["count"], 2);
        assert_eq!(m["memory_bytes"], 8_589_934_592u64);
        assert_eq!(m["data_directory"]["fstype"], "tmpfs");
        assert_eq!(m["data_directory"]["in_memory"], true);
    }

    #[test]
    fn proc_texts_parse_and_rates_follow() {
        let stat = |u: u64, i: u64| {
            format!("cpu  {u} 0 10 {i} 0 0 0 0 0 0\ncpu0 1 2 3 4\nctxt {}\nprocs_running 3\nprocs_blocked 1\n", u * 10)
        };
        let disk = |sectors: u64, io_ms: u64| {
            format!("   8       0 sda 10 0 {sectors} 5 20 0 40 5 0 {io_ms} 10 0 0 0 0\n   8       1 sda1 1 0 8 1 1 0 1 1 0 1 1\n   7       0 loop0 1 0 8 1 1 0 1 1 0 1 1\n")
        };
        let mem = "MemTotal: 1000 kB\nDirty: 2048 kB\nWriteback: 0 kB\n";
        let net = "Inter-|   Receive\n face |bytes packets\n  eth0: 1048576 1 0 0 0 0 0 0 2097152 1 0 0 0 0 0 0\n    lo: 5 1 0 0 0 0 0 0 5 1 0 0 0 0 0 0\n";
        let mk = |u, i, sectors, io_ms, rx: u64| {
            reading_from_proc(&[
                Some(stat(u, i)),
                Some(mem.into()),
                Some(disk(sectors, io_ms)),
                Some("0.50 0.40 0.30 1/100 42\n".into()),
                Some(net.replace("1048576", &rx.to_string())),
            ])
        };
        let mut rates = HostRates::default();
        let mut out = Vec::new();
        rates.push(
            100.0,
            mk(100, 880, 0, 0, 1_048_576),
            "os",
            &[],
            true,
            &mut out,
        );
        assert!(
            !out.iter().any(|m| m.metric.ends_with("_pct")),
            "no shares from one reading"
        );
        assert!(out
            .iter()
            .any(|m| m.metric == "os.mem.dirty_mb" && m.value == 2.0));
        assert!(out.iter().any(|m| m.metric == "os.load1" && m.value == 0.5));
        out.clear();
        rates.push(
            102.0,
            mk(130, 950, 4096, 500, 3_145_728),
            "os",
            &[],
            true,
            &mut out,
        );
        let get = |n: &str| out.iter().find(|m| m.metric == n).map(|m| m.value);
        assert_eq!(get("os.cpu.user_pct"), Some(30.0));
        assert_eq!(get("os.cpu.idle_pct"), Some(70.0));
        assert_eq!(get("os.ctxt_per_s"), Some(150.0));
        assert_eq!(
            get("os.disk.sda.read_mbps"),
            Some(4096.0 * 512.0 / 1_048_576.0 / 2.0)
        );
        assert_eq!(get("os.disk.sda.util_pct"), Some(25.0));
        assert_eq!(get("os.net.eth0.rx_mbps"), Some(1.0));
        assert_eq!(
            get("os.disk.sda1.read_mbps"),
            None,
            "partitions are left out"
        );
        assert_eq!(get("os.disk.loop0.read_mbps"), None);
        assert_eq!(get("os.net.lo.rx_mbps"), None);
    }

    #[test]
    fn whole_devices_drop_partitions_and_virtual_devices() {
        let names: Vec<String> = [
            "sda",
            "sda1",
            "nvme0n1",
            "nvme0n1p2",
            "dm-0",
            "loop3",
            "vdb",
            "md0",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            whole_devices(&names),
            ["dm-0", "md0", "nvme0n1", "sda", "vdb"]
        );
    }

    #[test]
    fn mount_lookup_takes_the_longest_prefix() {
        let mounts =
            "/dev/sda1 / ext4 rw 0 0\ntmpfs /tmp tmpfs rw 0 0\n/dev/sdb1 /tmpdata xfs rw 0 0\n";
        assert_eq!(mount_of(mounts, "/tmp/x/data").unwrap().1, "tmpfs");
        assert_eq!(mount_of(mounts, "/tmpdata/pg").unwrap().1, "xfs");
        assert_eq!(mount_of(mounts, "/var/lib/pg").unwrap().1, "ext4");
        assert_eq!(mount_of(mounts, "/tmp").unwrap().1, "tmpfs");
    }

    #[test]
    fn http_get_refuses_other_schemes() {
        let e = http_get("https://x:9100/metrics", Duration::from_millis(10)).unwrap_err();
        assert!(e.contains("only http://"), "{e}");
    }
}
