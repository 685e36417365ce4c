//! The environment manifest: what a result depends on besides the workload — kernel,
//! CPU (model, count, frequency governor), memory, transparent huge pages, vm dirty
//! settings, block device queue settings, mounts, and the server's version, build
//! options (`pg_config`) and non-default settings. Stored as JSON with every run.
//!
//! Host facts come from `/proc` and `/sys` of the machine pgsurge runs on; a missing
//! file is left out rather than an error (containers hide some of them).

use serde_json::{json, Map, Value};

use crate::pgstats;
use crate::sql_session::Pg;

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
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

/// Host part of the manifest.
pub fn host_manifest() -> Value {
    let cpu_model = cpu_model();
    let mem_total = procfs_mem_total();
    let mut vm = Map::new();
    for k in [
        "dirty_ratio",
        "dirty_background_ratio",
        "dirty_bytes",
        "dirty_background_bytes",
        "dirty_expire_centisecs",
        "dirty_writeback_centisecs",
        "swappiness",
        "overcommit_memory",
        "nr_hugepages",
    ] {
        if let Some(v) = read(&format!("/proc/sys/vm/{k}")) {
            vm.insert(k.into(), Value::String(v));
        }
    }
    let mut devices = Map::new();
    for dev in default_devices() {
        let mut q = Map::new();
        for k in [
            "scheduler",
            "read_ahead_kb",
            "rotational",
            "nr_requests",
            "max_sectors_kb",
            "logical_block_size",
            "physical_block_size",
            "write_cache",
        ] {
            if let Some(v) = read(&format!("/sys/block/{dev}/queue/{k}")) {
                q.insert(k.into(), Value::String(v));
            }
        }
        if let Some(size) = read(&format!("/sys/block/{dev}/size")) {
            q.insert("size_sectors".into(), Value::String(size));
        }
        devices.insert(dev, Value::Object(q));
    }
    let mounts: Vec<Value> = crate::hostmetrics::mount_entries(
        &read("/proc/mounts").unwrap_or_default(),
    )
    .filter(|m| {
        [
            "ext4", "xfs", "btrfs", "zfs", "ext3", "f2fs", "overlay", "tmpfs",
        ]
        .contains(&m.fstype.as_str())
    })
    .map(|m| json!({"device": m.device, "mount": m.dir, "fstype": m.fstype, "options": m.options}))
    .collect();
    json!({
        "hostname": read("/proc/sys/kernel/hostname"),
        "kernel": read("/proc/sys/kernel/osrelease"),
        "kernel_version": read("/proc/version"),
        "os_release": os_release(),
        "cpu": {
            "model": cpu_model,
            "count": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            "governor": read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            "max_freq_khz": read("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"),
            "turbo": turbo(),
        },
        "memory_bytes": mem_total,
        "swap_used_bytes": swap_used(),
        "thp": {
            "enabled": read("/sys/kernel/mm/transparent_hugepage/enabled"),
            "defrag": read("/sys/kernel/mm/transparent_hugepage/defrag"),
        },
        "vm": vm,
        "block_devices": devices,
        "mounts": mounts,
    })
}

/// `on` or `off` when the kernel tells (Intel's `no_turbo`, or cpufreq's `boost`).
fn turbo() -> Option<&'static str> {
    if let Some(v) = read("/sys/devices/system/cpu/intel_pstate/no_turbo") {
        return Some(if v == "0" { "on" } else { "off" });
    }
    read("/sys/devices/system/cpu/cpufreq/boost").map(|v| if v == "1" { "on" } else { "off" })
}

fn swap_used() -> Option<u64> {
    use procfs::Current;
    procfs::Meminfo::current()
        .ok()
        .map(|m| m.swap_total.saturating_sub(m.swap_free))
}

/// Dirty page cache a host may hold before background writeback starts, beyond which
/// writes reach the disk in bursts that show up as latency spikes and checkpoints
/// that take longer than they should.
const DIRTY_BACKGROUND_WARN_BYTES: f64 = 1024.0 * 1024.0 * 1024.0;

/// What in a host part of the manifest is known to move benchmark numbers from run to
/// run: a CPU clock that follows the load or the temperature, transparent huge pages
/// always on, swap in use, and a page cache that lets gigabytes of writes pile up.
/// Each as a sentence that says what to do.
pub fn noise_warnings(host: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(g) = host["cpu"]["governor"]
        .as_str()
        .filter(|g| *g != "performance")
    {
        out.push(format!(
            "the CPU frequency governor is \"{g}\": the clock follows the load, so throughput \
             moves with it; set \"performance\" for benchmarks (cpupower frequency-set -g performance)"
        ));
    }
    if host["cpu"]["turbo"].as_str() == Some("on") {
        out.push(
            "turbo/boost is on: the clock depends on temperature and on how many cores are busy; \
             turn it off for repeatable numbers"
                .to_string(),
        );
    }
    if host["thp"]["enabled"]
        .as_str()
        .is_some_and(|t| t.contains("[always]"))
    {
        out.push(
            "transparent huge pages are always on: compaction stalls add latency spikes; \
             \"madvise\" or \"never\" is steadier"
                .to_string(),
        );
    }
    if let Some(used) = host["swap_used_bytes"].as_u64().filter(|u| *u > 0) {
        out.push(format!(
            "{:.0} MB of swap in use: the server's or the client's memory may be read back \
             from swap during a run",
            used as f64 / 1e6
        ));
    }
    let vm = &host["vm"];
    let num = |k: &str| vm[k].as_str().and_then(|v| v.parse::<f64>().ok());
    if let (Some(0.0), Some(ratio), Some(mem)) = (
        num("dirty_background_bytes"),
        num("dirty_background_ratio"),
        host["memory_bytes"].as_f64(),
    ) {
        let dirty = mem * ratio / 100.0;
        if dirty > DIRTY_BACKGROUND_WARN_BYTES {
            out.push(format!(
                "vm.dirty_background_ratio = {ratio} % of {:.1} GB lets {:.1} GB of writes pile \
                 up before writeback starts: they reach the disk in bursts; set \
                 vm.dirty_background_bytes (e.g. 256 MB) for steadier writes",
                mem / 1e9,
                dirty / 1e9
            ));
        }
    }
    if let Some(device) = host["data_directory"]["device"].as_str() {
        out.extend(disk_warnings(&host["block_devices"], device));
    }
    out
}

/// What about the disk under a data directory moves I/O-bound numbers: a disk the kernel
/// reports as rotational (seeks make random I/O slow and uneven), or an I/O scheduler
/// that idles between requests on a fast device. `device` is the mount's source
/// (`/dev/vda1`); `block_devices` is the manifest's entry of the same host, whose
/// names are whole disks (`vda`), so the longest name the partition starts with wins.
pub fn disk_warnings(block_devices: &Value, device: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Some(name) = device.strip_prefix("/dev/") else {
        return out;
    };
    let Some((disk, queue)) = block_devices.as_object().and_then(|d| {
        d.iter()
            .filter(|(disk, _)| name.starts_with(disk.as_str()))
            .max_by_key(|(disk, _)| disk.len())
    }) else {
        return out;
    };
    let rotational = queue["rotational"].as_str() == Some("1");
    if rotational {
        let whole = if name == disk.as_str() {
            String::new()
        } else {
            format!(" ({disk})")
        };
        out.push(format!(
            "the data directory is on {device}, which the kernel reports as a rotational \
             disk{whole}: on a spinning disk seeks make random I/O slow and uneven; on a virtual \
             disk the flag is often set without meaning it, check what backs it"
        ));
    }
    let active = queue["scheduler"]
        .as_str()
        .and_then(|s| s.split_whitespace().find(|w| w.starts_with('[')))
        .map(|w| w.trim_matches(|c| c == '[' || c == ']'));
    if let Some(sched @ ("bfq" | "cfq")) = active.filter(|_| !rotational) {
        out.push(format!(
            "the data directory's disk {disk} uses the \"{sched}\" I/O scheduler, which idles \
             between requests to share the disk fairly: on a fast device that adds latency; \
             \"none\" or \"mq-deadline\" is steadier"
        ));
    }
    out
}

/// PRETTY_NAME of /etc/os-release.
pub fn os_release() -> Option<String> {
    read("/etc/os-release")?.lines().find_map(|l| {
        l.strip_prefix("PRETTY_NAME=")
            .map(|v| v.trim_matches('"').to_string())
    })
}

fn procfs_mem_total() -> Option<u64> {
    use procfs::Current;
    procfs::Meminfo::current().ok().map(|m| m.mem_total)
}

/// CPU model name from /proc/cpuinfo.
pub fn cpu_model() -> Option<String> {
    use procfs::Current;
    procfs::CpuInfo::current()
        .ok()
        .and_then(|ci| ci.model_name(0).map(str::to_string))
}

/// Server part of the manifest (version, build options, non-default settings).
/// Queries that need privileges the role lacks are left out.
pub fn server_manifest(pg: &mut Pg) -> Value {
    let version = pg.value("SELECT version()").ok().flatten();
    let mut pg_config = Map::new();
    if let Ok(rows) = pg.rows("SELECT name, setting FROM pg_config") {
        for r in rows {
            if let (Some(Some(k)), Some(Some(v))) = (r.first(), r.get(1)) {
                pg_config.insert(k.clone(), Value::String(v.clone()));
            }
        }
    }
    let mut settings = Map::new();
    if let Ok(rows) = pg.rows(pgstats::SETTINGS_SQL) {
        for r in rows {
            if let (Some(Some(k)), Some(v)) = (r.first(), r.get(1)) {
                settings.insert(k.clone(), v.clone().map_or(Value::Null, Value::String));
            }
        }
    }
    json!({
        "version": version,
        "version_num": pg.version_num(),
        "data_directory": pg.value("SELECT setting FROM pg_settings WHERE name = 'data_directory'").ok().flatten(),
        "pg_config": pg_config,
        "non_default_settings": settings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_manifest_has_kernel_cpu_and_memory() {
        let m = host_manifest();
        assert!(m["kernel"].as_str().is_some_and(|k| !k.is_empty()));
        assert!(m["cpu"]["count"].as_u64().is_some_and(|n| n >= 1));
        assert!(m["memory_bytes"].as_u64().is_some_and(|n| n > 1 << 20));
        assert!(m["mounts"].is_array());
    }

    #[test]
    fn noisy_settings_are_named_and_quiet_ones_are_not() {
        let quiet = json!({
            "cpu": {"governor": "performance", "turbo": "off"},
            "thp": {"enabled": "always [madvise] never"},
            "swap_used_bytes": 0,
            "memory_bytes": 8_000_000_000u64,
            "vm": {"dirty_background_ratio": "10", "dirty_background_bytes": "0"},
        });
        assert!(
            noise_warnings(&quiet).is_empty(),
            "{:?}",
            noise_warnings(&quiet)
        );
        let noisy = json!({
            "cpu": {"governor": "powersave", "turbo": "on"},
            "thp": {"enabled": "[always] madvise never"},
            "swap_used_bytes": 300_000_000u64,
            "memory_bytes": 64_000_000_000u64,
            "vm": {"dirty_background_ratio": "10", "dirty_background_bytes": "0"},
        });
        let w = noise_warnings(&noisy);
        assert_eq!(w.len(), 5, "{w:#?}");
        assert!(w[0].contains("\"powersave\""));
        assert!(w[1].starts_with("turbo/boost is on"));
        assert!(w[2].contains("transparent huge pages are always on"));
        assert!(w[3].starts_with("300 MB of swap in use"));
        assert!(w[4].contains("lets 6.4 GB of writes pile up"));
        // A host that does not tell (a container, node_exporter without the files).
        assert!(noise_warnings(&json!({})).is_empty());
    }

    #[test]
    fn the_disk_under_the_data_directory_is_judged_by_its_whole_disk() {
        let host = |rotational: &str, scheduler: &str| {
            json!({
                "data_directory": {"path": "/srv/pg", "device": "/dev/nvme0n1p2"},
                "block_devices": {
                    "nvme0n1": {"rotational": rotational, "scheduler": scheduler},
                    "nvme0": {"rotational": "0", "scheduler": "[none]"},
                    "sda": {"rotational": "1", "scheduler": "[mq-deadline]"},
                },
            })
        };
        assert!(noise_warnings(&host("0", "[none] mq-deadline")).is_empty());
        let w = noise_warnings(&host("1", "[mq-deadline] bfq"));
        assert_eq!(w.len(), 1, "{w:#?}");
        assert!(
            w[0].contains("/dev/nvme0n1p2") && w[0].contains("rotational disk (nvme0n1)"),
            "{w:#?}"
        );
        let w = noise_warnings(&host("0", "none mq-deadline [bfq]"));
        assert_eq!(w.len(), 1, "{w:#?}");
        assert!(w[0].contains("\"bfq\" I/O scheduler"), "{w:#?}");
        // Not a disk (overlay, tmpfs) or a disk the manifest does not list: nothing.
        assert!(disk_warnings(&host("1", "")["block_devices"], "overlay").is_empty());
        assert!(disk_warnings(&host("1", "")["block_devices"], "/dev/vdb1").is_empty());
    }
}
