//! `/proc` text, of this machine or of the server's host (read through the server):
//! the parsers, and the reading of this machine.

use super::{CpuModes, DiskCounters, HostReading};

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
