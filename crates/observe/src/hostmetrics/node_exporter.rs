//! A Prometheus node_exporter endpoint of the server's host: the scrape over HTTP, the
//! text exposition format, and the reading and manifest made of its samples.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use serde_json::{json, Value};

use super::{data_dir_entry, CpuModes, HostReading};

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
    fn http_get_refuses_other_schemes() {
        let e = http_get("https://x:9100/metrics", Duration::from_millis(10)).unwrap_err();
        assert!(e.contains("only http://"), "{e}");
    }
}
