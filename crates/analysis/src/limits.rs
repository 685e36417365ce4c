//! "What limited this run?": the rules that name a saturated resource from a run's
//! sampled means (CPU, I/O wait, disks, the client's threads, the server's wait
//! events), and whether the client was the bottleneck.
//!
//! The rules are stated thresholds, printed with the hints, so a reader can judge them:
//! CPU busier than [`CPU_BUSY_PCT`], iowait above [`IOWAIT_PCT`], a disk busier than
//! [`DISK_BUSY_PCT`], a kind of wait holding at least [`WAIT_HINT_PCT`] of the active
//! session time. Owns no I/O and no rendering: pages print the words it returns.

/// CPU (user + system, mean %) above which a host is named saturated.
pub const CPU_BUSY_PCT: f64 = 90.0;
/// iowait (mean %) above which a host is named waiting on I/O.
pub const IOWAIT_PCT: f64 = 20.0;
/// Disk utilisation (max %) above which a disk is named busy.
pub const DISK_BUSY_PCT: f64 = 90.0;
/// Part of active session time from which a kind of wait is named.
pub const WAIT_HINT_PCT: f64 = 20.0;
/// A driver thread busier than this (percent of one core, mean over the test) makes
/// the test client-bound.
pub const THREAD_BOUND_PCT: f64 = 90.0;
/// A client host busier than this (percent of all its CPUs, mean over the test) makes
/// the test client-bound, when the server runs elsewhere (on the same host the
/// server's own work would count).
pub const HOST_BOUND_PCT: f64 = 95.0;

/// The rules as one line, for the table that shows the hints.
pub const RULES: &str =
    "CPU > 90 %, iowait > 20 %, disk util > 90 %, a kind of wait ≥ 20 % of active session time";

/// One host's CPU over a run (means of its samples).
#[derive(Debug, Clone, PartialEq)]
pub struct HostCpu {
    /// What the host is (`server host (os.*)`).
    pub role: String,
    /// user + system, mean %.
    pub busy_pct: f64,
    /// iowait, mean %.
    pub iowait_pct: Option<f64>,
    /// Who used the CPU (`postgres 61.0 %, pgsurge 30.2 %`), named with a saturated
    /// CPU so that a neighbour's load is not read as the server's.
    pub used_by: Option<String>,
}

/// What was sampled of a run, reduced to the figures the rules read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunLoad {
    /// Each host's CPU.
    pub hosts: Vec<HostCpu>,
    /// The busiest pgsurge driver thread's CPU, mean % of one core.
    pub busiest_thread_pct: Option<f64>,
    /// Each disk's utilisation, max % (name, value).
    pub disks: Vec<(String, f64)>,
    /// Wait events (`Type:Event` or `CPU`) with their share of active session time (%),
    /// largest first.
    pub waits: Vec<(String, f64)>,
    /// The wait events of a WAL flush, as the server's version spells them
    /// (`IO:WALSync` before 17, `IO:WalSync` from 17).
    pub wal_events: Vec<String>,
}

/// The hints for a run: each saturated resource in words; when none was saturated,
/// one line that says so (or that nothing was sampled).
pub fn hints(load: &RunLoad) -> Vec<String> {
    let mut hints = Vec::new();
    for h in &load.hosts {
        if h.busy_pct > CPU_BUSY_PCT {
            let who = h
                .used_by
                .as_ref()
                .map(|u| format!(": {u}"))
                .unwrap_or_default();
            hints.push(format!(
                "CPU of the {} was saturated (user + system {:.0} %{who})",
                h.role, h.busy_pct
            ));
        }
        if let Some(iow) = h.iowait_pct.filter(|v| *v > IOWAIT_PCT) {
            hints.push(format!("the {} waited on I/O (iowait {iow:.0} %)", h.role));
        }
    }
    if let Some(t) = load.busiest_thread_pct.filter(|t| *t > THREAD_BOUND_PCT) {
        hints.push(format!(
            "the client was the bottleneck (busiest pgsurge thread {t:.0} % CPU)"
        ));
    }
    for (name, util) in &load.disks {
        if *util > DISK_BUSY_PCT {
            hints.push(format!("a disk was busy ({name} up to {util:.0} %)"));
        }
    }
    hints.extend(wait_hints(&load.waits, &load.wal_events));
    if load.hosts.is_empty() && load.waits.is_empty() {
        hints.push("no CPU metrics or wait events stored for this test (sampling off?)".into());
    } else if hints.is_empty() {
        hints.push(
            "no sampled resource was saturated (CPU < 90 %, iowait < 20 %, disk < 90 % busy, \
             no kind of wait over 20 % of active session time): look at latency and client count"
                .into(),
        );
    }
    hints
}

/// The kinds of wait that say what the server's sessions were held up by, each with
/// what it means for the run.
const WAL_FLUSH: &str = "commits waited for the WAL to reach the disk (fsync/write of WAL: \
     the disk's flush latency set the pace; a faster WAL device, commit_delay, or \
     synchronous_commit = off if losing the last commits on a crash is acceptable)";
const ROW_LOCKS: &str = "sessions waited for row or table locks held by others (contention \
     on the same rows: few pgbench branches, or TPC-C warehouses, for many clients; a larger \
     scale spreads them)";
const CLIENT: &str = "sessions waited for the client to send the next message (the client, \
     or the network, was slower than the server)";
const DATA_IO: &str = "sessions waited on data file I/O (the working set is larger than \
     shared_buffers and the page cache, or the disk is slow)";
const INTERNAL_LOCKS: &str = "sessions waited for internal locks (LWLock contention: a hot \
     buffer, lock manager or other shared structure)";

/// The kind of a wait event (`Type:Event`): a WAL flush when it is one of `wal_events`,
/// then by type; None for the events no kind names (CPU, the WAL's other I/O,
/// timeouts…).
pub fn wait_kind(label: &str, wal_events: &[String]) -> Option<&'static str> {
    if wal_events.iter().any(|w| w == label) {
        return Some(WAL_FLUSH);
    }
    let (kind, event) = label.split_once(':')?;
    match kind {
        "Lock" => Some(ROW_LOCKS),
        "Client" => Some(CLIENT),
        // WAL I/O off the commit path (reads, segment copies) is not data file I/O.
        "IO" if !event.to_ascii_lowercase().starts_with("wal") => Some(DATA_IO),
        "LWLock" | "BufferPin" => Some(INTERNAL_LOCKS),
        _ => None,
    }
}

/// Whether the waits say the client was the limit: the `Client:*` kind holds at least
/// [`WAIT_HINT_PCT`] of the active session time.
pub fn client_waits_dominate(waits: &[(String, f64)]) -> bool {
    waits
        .iter()
        .filter(|(l, _)| l.starts_with("Client:"))
        .map(|(_, s)| s)
        .sum::<f64>()
        >= WAIT_HINT_PCT
}

/// The kinds of wait that held the sessions for at least [`WAIT_HINT_PCT`] of their
/// active time, largest first, each naming its events and their shares.
pub fn wait_hints(waits: &[(String, f64)], wal_events: &[String]) -> Vec<String> {
    // Per kind: its total share, what it means, its events.
    type Kind<'a> = (f64, &'static str, Vec<&'a (String, f64)>);
    let mut kinds: Vec<Kind<'_>> = Vec::new();
    for w in waits {
        let Some(what) = wait_kind(&w.0, wal_events) else {
            continue;
        };
        match kinds.iter_mut().find(|k| k.1 == what) {
            Some(k) => {
                k.0 += w.1;
                k.2.push(w);
            }
            None => kinds.push((w.1, what, vec![w])),
        }
    }
    kinds.retain(|k| k.0 >= WAIT_HINT_PCT);
    kinds.sort_by(|a, b| b.0.total_cmp(&a.0));
    kinds
        .into_iter()
        .map(|(total, what, events)| {
            let named: Vec<String> = events
                .iter()
                .take(3)
                .map(|(label, share)| format!("{label} {share:.0} %"))
                .collect();
            format!(
                "{what}: {} of active session time ({total:.0} % in all)",
                named.join(", ")
            )
        })
        .collect()
}

/// Why a test was client-bound, from the means of its client samples: the busiest
/// driver thread (% of one core) and the client host's busy CPUs (% of all), the latter
/// only when the server runs on another host. None when neither was sampled; an empty
/// list when sampled and not bound.
pub fn client_bound(
    busiest_thread_pct: Option<f64>,
    client_host_busy_pct: Option<f64>,
    server_is_local: bool,
) -> Option<Vec<String>> {
    if busiest_thread_pct.is_none() && client_host_busy_pct.is_none() {
        return None;
    }
    let mut reasons = Vec::new();
    if let Some(t) = busiest_thread_pct.filter(|t| *t >= THREAD_BOUND_PCT) {
        reasons.push(format!(
            "the busiest driver thread used {t:.0} % of a core (limit {THREAD_BOUND_PCT:.0} %)"
        ));
    }
    if let Some(h) = client_host_busy_pct.filter(|h| *h >= HOST_BOUND_PCT && !server_is_local) {
        reasons.push(format!(
            "the client host's CPUs were {h:.0} % busy (limit {HOST_BOUND_PCT:.0} %)"
        ));
    }
    Some(reasons)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waits(list: &[(&str, f64)]) -> Vec<(String, f64)> {
        list.iter().map(|(l, s)| (l.to_string(), *s)).collect()
    }

    /// The WAL flush events of PostgreSQL 13 to 16, and of 17 and later.
    fn wal(modern: bool) -> Vec<String> {
        let sync = if modern { "IO:WalSync" } else { "IO:WALSync" };
        let write = if modern { "IO:WalWrite" } else { "IO:WALWrite" };
        [sync, write, "LWLock:WALWrite", "LWLock:WALInsert"]
            .map(String::from)
            .to_vec()
    }

    #[test]
    fn waits_over_a_fifth_of_session_time_are_named_by_kind() {
        let w = waits(&[
            ("IO:WALSync", 43.0),
            ("CPU", 30.0),
            ("LWLock:WALWrite", 9.0),
            ("Lock:transactionid", 12.0),
            ("Lock:tuple", 8.0),
            ("IO:DataFileRead", 5.0),
        ]);
        let hints = wait_hints(&w, &wal(false));
        assert_eq!(hints.len(), 2, "{hints:#?}");
        assert!(
            hints[0].starts_with("commits waited for the WAL"),
            "{hints:#?}"
        );
        assert!(
            hints[0].contains("IO:WALSync 43 %, LWLock:WALWrite 9 %")
                && hints[0].contains("(52 % in all)"),
            "{hints:#?}"
        );
        assert!(hints[1].starts_with("sessions waited for row or table locks"));
        assert!(hints[1].contains("(20 % in all)"), "{hints:#?}");
        // CPU is not a wait; data file reads at 10 % are below the line.
        assert!(wait_hints(
            &waits(&[("CPU", 90.0), ("IO:DataFileRead", 10.0)]),
            &wal(false)
        )
        .is_empty());
        assert!(client_waits_dominate(&waits(&[(
            "Client:ClientRead",
            25.0
        )])));
        assert!(!client_waits_dominate(&waits(&[(
            "Client:ClientRead",
            5.0
        )])));
    }

    #[test]
    fn wal_waits_are_read_in_the_spelling_of_the_server_version() {
        // PostgreSQL 17 and later: `IO:WalSync` is the WAL flush, not data file I/O.
        let w = waits(&[("IO:WalSync", 45.0), ("IO:WalWrite", 5.0), ("CPU", 50.0)]);
        let v18 = wait_hints(&w, &wal(true));
        assert_eq!(v18.len(), 1, "{v18:#?}");
        assert!(
            v18[0].starts_with("commits waited for the WAL")
                && v18[0].contains("IO:WalSync 45 %, IO:WalWrite 5 %"),
            "{v18:#?}"
        );
        // A WAL read is I/O of neither kind.
        assert_eq!(wait_kind("IO:WalRead", &wal(true)), None);
        assert_eq!(wait_kind("IO:WALRead", &wal(false)), None);
        assert_eq!(wait_kind("IO:DataFileRead", &wal(true)), Some(DATA_IO));
    }

    #[test]
    fn saturated_resources_are_named_and_an_idle_run_says_so() {
        let busy = RunLoad {
            hosts: vec![HostCpu {
                role: "server host (os.*)".into(),
                busy_pct: 97.0,
                iowait_pct: Some(25.0),
                used_by: Some("postgres 80.0 %".into()),
            }],
            busiest_thread_pct: Some(95.0),
            disks: vec![("os.disk.sda.util_pct".into(), 99.0)],
            waits: Vec::new(),
            wal_events: Vec::new(),
        };
        let h = hints(&busy);
        assert_eq!(h.len(), 4, "{h:#?}");
        assert!(h[0].contains("97 %: postgres 80.0 %") && h[1].contains("iowait 25 %"));
        let idle = RunLoad {
            hosts: vec![HostCpu {
                role: "server host".into(),
                busy_pct: 20.0,
                iowait_pct: None,
                used_by: None,
            }],
            ..RunLoad::default()
        };
        assert!(hints(&idle)[0].starts_with("no sampled resource was saturated"));
        assert!(hints(&RunLoad::default())[0].starts_with("no CPU metrics"));
    }

    #[test]
    fn client_bound_by_a_saturated_thread_or_a_busy_remote_host() {
        assert_eq!(client_bound(None, None, true), None);
        assert_eq!(client_bound(Some(50.0), Some(99.0), true), Some(vec![]));
        assert_eq!(client_bound(Some(95.0), None, true).unwrap().len(), 1);
        assert_eq!(client_bound(None, Some(99.0), false).unwrap().len(), 1);
    }
}
