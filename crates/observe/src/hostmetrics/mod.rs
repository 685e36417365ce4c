//! Server-host OS metrics from the server's own machine, whatever the client's.
//!
//! A [`HostReading`] holds a host's cumulative counters and gauges at one instant. It
//! comes from one of three sources ([`HostSource`]):
//!
//! * `local`: `/proc` of the machine pgsurge runs on — right only when the server runs
//!   here too (throwaway servers, servers reached through a local socket or loopback);
//! * `node_exporter`: a Prometheus node_exporter endpoint of the server's host, read
//!   over `http://` or `https://` (basic auth, a private CA: [`Exporter`]) and parsed
//!   from the text exposition format ([`parse_exposition`]);
//! * `pg_read_file`: `/proc` of the server's host read through the server itself
//!   (superuser or `pg_read_server_files`), parsed exactly as the local files.
//!
//! Otherwise the source is `none` and no server-host metric is stored: the client's
//! figures are never stored under the server's name. [`HostRates`] turns two readings
//! into the per-second rates and percentages of the `os.*` names (see
//! [`crate::sampler`]); the same code, with the `client.*` prefix, measures the client.
//!
//! | module | owns |
//! |---|---|
//! | [`local`] | `/proc` text: its parsers, and the readings of this machine |
//! | [`node_exporter`] | a node_exporter endpoint: the scrape (http or https, basic auth), its reading and manifest |
//! | [`exposition`] | the Prometheus text exposition format node_exporter serves |
//! | [`server_files`] | the server's host through `pg_read_file`: its `/proc` and its manifest |
//! | [`rates`] | per-second rates and percentages from successive readings |

use std::collections::BTreeMap;
use std::time::Duration;

use pgsurge_wire::ConnConfig;
use serde_json::{json, Value};

use crate::sql_session::Pg;

pub mod exposition;
pub mod local;
pub mod node_exporter;
pub mod rates;
pub mod server_files;

pub use exposition::{parse_exposition, PromSample};
pub use local::{
    local_reading, parse_diskstats, parse_loadavg, parse_meminfo, parse_net_dev, parse_proc_stat,
    reading_from_proc, PROC_FILES,
};
pub use node_exporter::{
    manifest_via_node_exporter, reading_from_node_exporter, Exporter, ScrapeError, Scraper,
};
pub use rates::{whole_devices, HostRates};
pub use server_files::{can_read_server_files, manifest_via_server, read_server_files};

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

/// Where a target's server-host metrics come from.
#[derive(Debug, Clone, PartialEq)]
pub enum HostSource {
    /// This machine's `/proc` (the server runs here).
    Local,
    /// A node_exporter endpoint of the server's host.
    NodeExporter(Exporter),
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

/// How long a scrape of node_exporter may take while sampling.
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(3);
/// How long the scrape of the manifest may take.
const MANIFEST_SCRAPE_TIMEOUT: Duration = Duration::from_secs(5);

/// The open connections of a source, kept from one reading to the next: the session
/// of a `pg_read_file` source and the client of a node_exporter, each made on first use.
#[derive(Default)]
pub struct SourceConn {
    pg: Option<Pg>,
    scraper: Option<Scraper>,
}

/// Reads a host through a source, with the connections kept in `conn`.
pub fn read(source: &HostSource, conn: &mut SourceConn) -> Result<HostReading, String> {
    match source {
        HostSource::Local => local_reading(),
        HostSource::NodeExporter(exporter) => {
            if conn.scraper.is_none() {
                conn.scraper =
                    Some(Scraper::new(exporter, SCRAPE_TIMEOUT).map_err(|e| e.to_string())?);
            }
            let scraper = conn.scraper.as_ref().ok_or("no node_exporter client")?;
            let samples = scraper.samples().map_err(|e| e.to_string())?;
            Ok(reading_from_node_exporter(&samples))
        }
        HostSource::PgReadFile(config) => {
            if conn.pg.is_none() {
                conn.pg = Some(Pg::connect(config).map_err(|e| e.to_string())?);
            }
            let pg = conn.pg.as_mut().ok_or("no connection")?;
            let texts = read_server_files(pg, &PROC_FILES)?;
            Ok(reading_from_proc(&texts))
        }
        HostSource::None(reason) => Err(reason.clone()),
    }
}

/// One line of `/proc/mounts`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountEntry {
    /// The mounted device (or the filesystem's source name).
    pub device: String,
    /// The mount point, its octal escapes (`\040` for a space) decoded.
    pub dir: String,
    /// The filesystem type.
    pub fstype: String,
    /// The mount options.
    pub options: String,
}

/// The entries of a `/proc/mounts` text (a line with fewer than four fields is left
/// out). The kernel writes a space, tab, newline or backslash in a field as a
/// three-digit octal escape.
pub fn mount_entries(mounts: &str) -> impl Iterator<Item = MountEntry> + '_ {
    mounts.lines().filter_map(|line| {
        let mut f = line.split_whitespace().map(unescape_octal);
        Some(MountEntry {
            device: f.next()?,
            dir: f.next()?,
            fstype: f.next()?,
            options: f.next()?,
        })
    })
}

/// `field` with each `\NNN` octal escape turned into its byte.
fn unescape_octal(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let digits = bytes.get(i + 1..i + 4);
        let code = digits
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)))
            .and_then(|d| u8::from_str_radix(std::str::from_utf8(d).ok()?, 8).ok());
        match code {
            Some(b) => {
                out.push(b);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Longest mount point containing `path` in `/proc/mounts` text: (mount, fstype, device).
pub fn mount_of(mounts: &str, path: &str) -> Option<(String, String, String)> {
    let mut best: Option<(String, String, String)> = None;
    for m in mount_entries(mounts) {
        let dir = m.dir;
        let inside = path == dir
            || dir == "/"
            || path.starts_with(&format!("{}/", dir.trim_end_matches('/')));
        if inside && best.as_ref().is_none_or(|b| dir.len() >= b.0.len()) {
            best = Some((dir, m.fstype, m.device));
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
        HostSource::NodeExporter(exporter) => {
            match Scraper::new(exporter, MANIFEST_SCRAPE_TIMEOUT).and_then(|s| s.samples()) {
                Ok(samples) => manifest_via_node_exporter(&samples, data_dir),
                Err(e) => json!({"error": e.to_string()}),
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
    fn mount_fields_have_their_octal_escapes_decoded() {
        let mounts = "/dev/sdc1 /mnt/my\\040disk\\134x ext4 rw,noatime 0 0\nshort line\n";
        let all: Vec<MountEntry> = mount_entries(mounts).collect();
        assert_eq!(all.len(), 1, "{all:?}");
        assert_eq!(all[0].dir, "/mnt/my disk\\x");
        assert_eq!(all[0].options, "rw,noatime");
        assert_eq!(
            mount_of(mounts, "/mnt/my disk\\x/pg").unwrap().0,
            "/mnt/my disk\\x"
        );
        // A backslash not followed by three octal digits is kept as it is.
        assert_eq!(unescape_octal("a\\09b\\"), "a\\09b\\");
    }
}
