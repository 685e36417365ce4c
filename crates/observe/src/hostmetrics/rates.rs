//! Per-second rates and percentages from successive [`HostReading`]s, under the
//! `os.*` names (the server's host) or `client.*` (the client's).

use std::collections::BTreeSet;

use pgsurge_store::MetricSample;

use super::HostReading;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hostmetrics::reading_from_proc;

    #[test]
    fn proc_texts_parse_and_rates_follow() {
        let stat = |u: u64, i: u64| {
            format!("cpu  {u} 0 10 {i} 0 0 0 0 0 0\ncpu0 1 2 3 4\nctxt {}\nbtime 1700000000\nprocesses 9\nprocs_running 3\nprocs_blocked 1\n", u * 10)
        };
        let disk = |sectors: u64, io_ms: u64| {
            format!("   8       0 sda 10 0 {sectors} 5 20 0 40 5 0 {io_ms} 10 0 0 0 0\n   8       1 sda1 1 0 8 1 1 0 1 1 0 1 1\n   7       0 loop0 1 0 8 1 1 0 1 1 0 1 1\n")
        };
        let mem = include_str!("testdata/proc_meminfo")
            .lines()
            .map(|l| {
                if l.starts_with("Dirty:") {
                    "Dirty: 2048 kB"
                } else {
                    l
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        let net = "Inter-|   Receive\n face |bytes packets\n  eth0: 1048576 1 0 0 0 0 0 0 2097152 1 0 0 0 0 0 0\n    lo: 5 1 0 0 0 0 0 0 5 1 0 0 0 0 0 0\n";
        let mk = |u, i, sectors, io_ms, rx: u64| {
            reading_from_proc(&[
                Some(stat(u, i)),
                Some(mem.clone()),
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
}
