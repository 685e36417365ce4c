//! `/proc` text, of this machine or of the server's host (read through the server):
//! parsed by procfs's readers (`FromRead` on the text), and the reading of this
//! machine. A file whose text procfs refuses leaves its part of the reading empty.

use procfs::net::InterfaceDeviceStatus;
use procfs::{
    DiskStat, ExplicitSystemInfo, FromRead, FromReadSI, KernelStats, LoadAverage, Meminfo,
};

use super::{CpuModes, DiskCounters, HostReading};

/// Fills CPU, context switches and process counts from `/proc/stat` (procfs's
/// [`KernelStats`]); text procfs does not take leaves them unset.
pub fn parse_proc_stat(text: &str, r: &mut HostReading) {
    // Only tick counts are used, never converted to time: the tick rate is moot.
    let info = ExplicitSystemInfo {
        boot_time_secs: 0,
        ticks_per_second: 100,
        page_size: 4096,
        is_little_endian: cfg!(target_endian = "little"),
    };
    let Ok(k) = KernelStats::from_read(text.as_bytes(), &info) else {
        return;
    };
    let t = &k.total;
    let n = |v: Option<u64>| v.unwrap_or(0) as f64;
    // guest and guest_nice are inside user and nice.
    r.cpu = Some(CpuModes {
        user: (t.user + t.nice) as f64,
        system: t.system as f64 + n(t.irq) + n(t.softirq),
        idle: t.idle as f64,
        iowait: n(t.iowait),
        steal: n(t.steal),
    });
    r.ctxt = Some(k.ctxt as f64);
    r.procs_running = k.procs_running.map(f64::from);
    r.procs_blocked = k.procs_blocked.map(f64::from);
}

/// Fills memory gauges (bytes) from `/proc/meminfo` (procfs's [`Meminfo`]).
pub fn parse_meminfo(text: &str, r: &mut HostReading) {
    let Ok(m) = Meminfo::from_read(text.as_bytes()) else {
        return;
    };
    let gauges = [
        ("dirty", Some(m.dirty)),
        ("writeback", Some(m.writeback)),
        ("cached", Some(m.cached)),
        ("available", m.mem_available),
        ("total", Some(m.mem_total)),
    ];
    for (name, bytes) in gauges {
        if let Some(b) = bytes {
            r.mem.insert(name, b as f64);
        }
    }
}

/// Fills block devices from `/proc/diskstats` (procfs's [`DiskStat`], line by line so
/// that one odd line loses only its device; sectors are 512 bytes, times in ms).
pub fn parse_diskstats(text: &str, r: &mut HostReading) {
    for d in text.lines().filter_map(|l| DiskStat::from_line(l).ok()) {
        r.disks.insert(
            d.name,
            DiskCounters {
                reads: d.reads as f64,
                read_bytes: d.sectors_read as f64 * 512.0,
                read_time_s: d.time_reading as f64 / 1000.0,
                writes: d.writes as f64,
                written_bytes: d.sectors_written as f64 * 512.0,
                write_time_s: d.time_writing as f64 / 1000.0,
                io_time_s: d.time_in_progress as f64 / 1000.0,
            },
        );
    }
}

/// Fills the load averages from `/proc/loadavg` (procfs's [`LoadAverage`]).
pub fn parse_loadavg(text: &str, r: &mut HostReading) {
    if let Ok(l) = LoadAverage::from_read(text.as_bytes()) {
        r.load = Some([l.one, l.five, l.fifteen].map(f64::from));
    }
}

/// Fills network interfaces from `/proc/net/dev` (procfs's [`InterfaceDeviceStatus`]).
pub fn parse_net_dev(text: &str, r: &mut HostReading) {
    if let Ok(InterfaceDeviceStatus(devs)) = InterfaceDeviceStatus::from_read(text.as_bytes()) {
        for (name, d) in devs {
            r.net
                .insert(name, (d.recv_bytes as f64, d.sent_bytes as f64));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// This crate's testdata: the files of a real host (2 CPUs, a virtio disk).
    fn real_reading() -> HostReading {
        reading_from_proc(&[
            Some(include_str!("testdata/proc_stat").into()),
            Some(include_str!("testdata/proc_meminfo").into()),
            Some(include_str!("testdata/proc_diskstats").into()),
            Some(include_str!("testdata/proc_loadavg").into()),
            Some(include_str!("testdata/proc_net_dev").into()),
        ])
    }

    #[test]
    fn real_proc_files_parse_into_a_reading() {
        let r = real_reading();
        // cpu  2081547 45684 271475 354707 14041 0 4444 2928 0 0
        let cpu = r.cpu.unwrap();
        assert_eq!(cpu.user, 2_081_547.0 + 45_684.0);
        assert_eq!(cpu.system, 271_475.0 + 4_444.0);
        assert_eq!(
            (cpu.idle, cpu.iowait, cpu.steal),
            (354_707.0, 14_041.0, 2_928.0)
        );
        assert_eq!(r.ctxt, Some(154_940_938.0));
        assert_eq!((r.procs_running, r.procs_blocked), (Some(8.0), Some(0.0)));
        assert_eq!(r.mem["total"], 24_731_708.0 * 1024.0);
        assert_eq!(r.mem["available"], 23_562_344.0 * 1024.0);
        assert_eq!(r.mem["cached"], 22_453_612.0 * 1024.0);
        assert_eq!(r.mem["dirty"], 1_431_976.0 * 1024.0);
        assert_eq!(r.mem["writeback"], 0.0);
        // 254 0 vda 404670 46987 142411090 986380 2018061 744108 722852384 7057664 0 447908 ...
        let vda = r.disks["vda"];
        assert_eq!((vda.reads, vda.writes), (404_670.0, 2_018_061.0));
        assert_eq!(vda.read_bytes, 142_411_090.0 * 512.0);
        assert_eq!(vda.written_bytes, 722_852_384.0 * 512.0);
        assert_eq!((vda.read_time_s, vda.write_time_s), (986.38, 7057.664));
        assert_eq!(vda.io_time_s, 447.908);
        assert!(r.disks.contains_key("loop0"));
        let load = r.load.unwrap();
        assert!(
            (load[0] - 6.10).abs() < 1e-6 && (load[2] - 5.06).abs() < 1e-6,
            "{load:?}"
        );
        assert_eq!(r.net["eth0"], (428_770_204.0, 1_464_529.0));
        assert_eq!(r.net["lo"].0, 572_124_135.0);
        assert_eq!(r.net.len(), 4);
    }

    #[test]
    fn text_procfs_refuses_leaves_its_part_empty() {
        let r = reading_from_proc(&[
            Some("cpu  1 2\nno ctxt here\n".into()),
            Some("MemTotal: lots\n".into()),
            Some("   8 0 sda 1 2\n 254 0 vda 1 0 8 1 1 0 8 1 0 1 2 0 0 0 0\n".into()),
            Some("high\n".into()),
            None,
        ]);
        assert_eq!(r.cpu, None);
        assert_eq!(r.ctxt, None);
        assert!(r.mem.is_empty());
        assert_eq!(
            r.disks.keys().collect::<Vec<_>>(),
            ["vda"],
            "the short line is left out"
        );
        assert_eq!(r.load, None);
        assert!(r.net.is_empty());
    }

    #[test]
    fn this_machine_reads() {
        let r = local_reading().unwrap();
        assert!(r.cpu.is_some() && r.ctxt.is_some(), "{r:?}");
        assert!(r.mem.contains_key("total"), "{r:?}");
        assert!(r.load.is_some() && !r.net.is_empty(), "{r:?}");
    }
}
