//! Faults at chosen times beside a run, and what the failure cost it.
//!
//! A [`Scheduled`] fault is a throwaway topology's fault ([`pgsurge_server::Fault`]:
//! promote, pause or resume replay, immediate stop, kill), a network link's delay or
//! loss ([`LinkFault`], `tc netem`, removed again after the run; a kernel without
//! netem told before anything starts, [`LinkFault::kernel_lacks_netem`]) or a shell command
//! (the fault of a server pgsurge did not start). [`during`] applies each at its time after the
//! run's start while the run goes on, with the standbys' lag sampled on the primary
//! ([`pgsurge_observe::lag`]) beside every run on a topology with standbys, and the
//! moment of a failover that a promoted standby's or restarted primary's log gives; [`cost`] turns what happened into the run's
//! [`FailureCost`], with the outage the clients saw ([`outage`], over the run's commit
//! timeline, shared with `bench --reconnect`), and the acknowledged commits a server
//! lacks ([`lost_commits`]).
//!
//! The crate has one module, this one.

use std::fmt::Write as _;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use pgsurge_engine::stop::StopFlag;
use pgsurge_observe::lag::LagSampler;
use pgsurge_results::failure::{
    AckRange, CommitTimeline, FailureCost, FaultApplied, LagSample, OutageAnchor, OutageWindow,
    COMMIT_BUCKET_US,
};
use pgsurge_server::{Cluster, Fault};
use pgsurge_wire::ConnConfig;

/// How long a fault given as a shell command may run.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

/// What a fault does.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// A fault of the throwaway topology.
    Server(Fault),
    /// A shell command (`sh -c`).
    Command(String),
    /// Packets leaving a network device delayed or lost.
    Link(LinkFault),
}

/// `tc netem` on a network device: each packet it sends held `delay_us`, and
/// `loss_pct` percent of them dropped; both 0 removes it. A device of a network
/// namespace (`netns`) is reached through `ip netns exec`.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkFault {
    /// The namespace that holds the device, if not this process's.
    pub netns: Option<String>,
    /// The device (`veth0`…).
    pub device: String,
    /// How long each packet is held, µs.
    pub delay_us: u64,
    /// The share of packets dropped, percent.
    pub loss_pct: f64,
}

impl LinkFault {
    /// The fault, or what is wrong with its names or figures.
    pub fn new(
        netns: Option<String>,
        device: String,
        delay_s: f64,
        loss_pct: f64,
    ) -> Result<LinkFault, String> {
        let name_ok = |n: &str, max: usize| {
            !n.is_empty()
                && n.len() <= max
                && !n.starts_with('-')
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        };
        if !name_ok(&device, 15) {
            return Err(format!(
                "\"{device}\" is not a network device name (up to 15 letters, digits, _ - .)"
            ));
        }
        if let Some(ns) = netns.as_deref().filter(|ns| !name_ok(ns, 64)) {
            return Err(format!(
                "\"{ns}\" is not a network namespace name (letters, digits, _ - .)"
            ));
        }
        if !(delay_s.is_finite() && (0.0..=60.0).contains(&delay_s)) {
            return Err(format!("a delay of {delay_s} s: give one from 0 to 60 s"));
        }
        if !(loss_pct.is_finite() && (0.0..=100.0).contains(&loss_pct)) {
            return Err(format!(
                "a loss of {loss_pct}%: give a percentage from 0 to 100"
            ));
        }
        Ok(LinkFault {
            netns,
            device,
            delay_us: (delay_s * 1e6).round() as u64,
            loss_pct,
        })
    }

    /// Sets the device's netem (replacing what it had), or removes it when both
    /// figures are 0.
    pub fn apply(&self) -> Result<(), String> {
        if self.delay_us == 0 && self.loss_pct == 0.0 {
            return self.clear();
        }
        let delay = format!("{}us", self.delay_us);
        let loss = format!("{}%", self.loss_pct);
        self.tc(&[
            "qdisc",
            "replace",
            "dev",
            &self.device,
            "root",
            "netem",
            "delay",
            &delay,
            "loss",
            &loss,
        ])
        .map(drop)
    }

    /// Removes the device's netem (its root queueing discipline); a device whose root
    /// is not a netem (never set, or already removed) is left as it is.
    pub fn clear(&self) -> Result<(), String> {
        let root = self.tc(&["qdisc", "show", "dev", &self.device, "root"])?;
        if !root_is_netem(&root) {
            return Ok(());
        }
        self.tc(&["qdisc", "del", "dev", &self.device, "root"])
            .map(drop)
    }

    /// Whether this machine's kernel lacks the netem queueing discipline a link fault
    /// needs (no `sch_netem`, built in or as a module): netem cannot be added to the
    /// loopback device of a new, empty network namespace while a plain FIFO can. False
    /// when that cannot be told (not root, no `unshare` or `tc`): the fault then says
    /// why it failed when it is applied.
    pub fn kernel_lacks_netem() -> bool {
        lacks_netem(|qdisc| {
            let mut cmd = Command::new("unshare");
            cmd.args(["--net", "tc", "qdisc", "add", "dev", "lo", "root"])
                .args(qdisc)
                .stdin(std::process::Stdio::null());
            pgsurge_supervisor::run(cmd, PROBE_TIMEOUT, 0)
                .is_ok_and(|f| matches!(f.ending, pgsurge_supervisor::Ending::Exited(0)))
        })
    }

    /// Runs `tc ARGS` (in the device's namespace): what it printed, or why it failed.
    fn tc(&self, args: &[&str]) -> Result<String, String> {
        let mut cmd = match &self.netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns, "tc"]);
                c
            }
            None => Command::new("tc"),
        };
        cmd.args(args).stdin(std::process::Stdio::null());
        let out = cmd
            .output()
            .map_err(|e| format!("tc could not run: {e} (it comes with iproute2)"))?;
        if out.status.success() {
            return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
        }
        Err(format!(
            "tc {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Whether `tc qdisc show dev D root` printed a netem (`qdisc netem 8001: root …`).
fn root_is_netem(shown: &str) -> bool {
    shown.lines().any(|l| {
        let words: Vec<&str> = l.split_whitespace().collect();
        words.len() >= 4 && words[..2] == ["qdisc", "netem"] && words[3] == "root"
    })
}

/// How long a probe of the kernel's queueing disciplines may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// Whether a kernel lacks netem, by `add_qdisc` (whether a root qdisc of the given kind
/// and parameters could be added to a new namespace's loopback device): netem refused
/// where the always-present FIFO is taken. Both refused says nothing of netem.
fn lacks_netem(add_qdisc: impl Fn(&[&str]) -> bool) -> bool {
    !add_qdisc(&["netem", "delay", "1ms"]) && add_qdisc(&["pfifo", "limit", "10"])
}

/// A fault at its time.
#[derive(Debug, Clone, PartialEq)]
pub struct Scheduled {
    /// Seconds after the run's start.
    pub at_s: f64,
    /// Its name as recorded (`promote`, `stop`, `command`…).
    pub name: String,
    /// What it does.
    pub action: Action,
}

/// The servers faults act on.
pub struct Servers<'a> {
    /// The throwaway primary (None: an existing server, faults are commands).
    pub primary: Option<&'a Cluster>,
    /// Its standbys, `replica1` first.
    pub replicas: &'a [Cluster],
    /// Where the standbys' lag is read (the primary's monitoring connection).
    pub monitor: &'a ConnConfig,
    /// The target's name, `PGSURGE_TARGET` in a command's environment.
    pub target: &'a str,
}

/// What happened beside a run: the faults as applied, the lag samples, and when the
/// run started.
pub struct Beside {
    /// Whether the run had faults to apply (else only the lag was sampled).
    pub faulted: bool,
    /// The faults, in the order applied.
    pub faults: Vec<FaultApplied>,
    /// The standbys' lag per second.
    pub lag: Vec<LagSample>,
    /// The run's start, Unix epoch µs.
    pub start_unix_us: i64,
    /// Moments of the failovers the faults made, when no server took a commit, Unix
    /// epoch µs, as the servers' own logs give them ([`logged_end`]): a promoted
    /// standby's end of archive recovery (before it takes a write), a restarted
    /// primary's readiness for connections (before it takes one). Those a log did not
    /// give are left out.
    pub failover_unix_us: Vec<i64>,
}

/// Runs `run` with the faults of `schedule` applied at their times and the standbys'
/// lag sampled beside it (with standbys, faults or not); nothing beside it without
/// either. A fault whose time comes after the run ended, or after `stop` was raised, is
/// not applied.
pub fn during<T>(
    schedule: &[Scheduled],
    servers: &Servers<'_>,
    stop: &StopFlag,
    run: impl FnOnce() -> T,
) -> (T, Option<Beside>) {
    if schedule.is_empty() && servers.replicas.is_empty() {
        return (run(), None);
    }
    let done = AtomicBool::new(false);
    let start = Instant::now();
    let start_unix_us = unix_us();
    let lag = (!servers.replicas.is_empty()).then(|| LagSampler::start(servers.monitor));
    std::thread::scope(|scope| {
        let applier = scope.spawn(|| apply_all(schedule, servers, start, &done, stop));
        let out = run();
        done.store(true, Ordering::SeqCst);
        let (faults, logged) = applier.join().unwrap_or_default();
        clear_links(schedule, &faults);
        let beside = Beside {
            faulted: !schedule.is_empty(),
            faults,
            lag: lag.map(LagSampler::finish).unwrap_or_default(),
            start_unix_us,
            failover_unix_us: logged
                .into_iter()
                .filter_map(|(server, line, from)| logged_time(server, line, from))
                .collect(),
        };
        (out, Some(beside))
    })
}

impl Beside {
    /// A run without faults keeps its standbys' lag as its `cost` (when any was read)
    /// and gives None; a run with faults gives itself back for [`cost`].
    pub fn with_faults(self, cost: &mut Option<FailureCost>) -> Option<Beside> {
        if self.faulted {
            return Some(self);
        }
        if !self.lag.is_empty() {
            *cost = Some(FailureCost {
                lag: self.lag,
                ..Default::default()
            });
        }
        None
    }
}

/// Removes the netem of every link a fault of `schedule` set (as `applied` says):
/// the next run starts on the links as they were.
fn clear_links(schedule: &[Scheduled], applied: &[FaultApplied]) {
    let mut cleared: Vec<&LinkFault> = Vec::new();
    for f in schedule {
        let Action::Link(link) = &f.action else {
            continue;
        };
        let set = applied
            .iter()
            .any(|a| a.at_s == f.at_s && a.action == f.name && a.error.is_none());
        let same = |l: &&LinkFault| l.netns == link.netns && l.device == link.device;
        if set && !cleared.iter().any(same) {
            let _ = link.clear();
            cleared.push(link);
        }
    }
}

fn unix_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// Sleeps until `until` unless the run ends first; false when it ended.
fn wait_until(until: Instant, done: &AtomicBool, stop: &StopFlag) -> bool {
    loop {
        if done.load(Ordering::SeqCst) || stop.is_raised() {
            return false;
        }
        let now = Instant::now();
        if now >= until {
            return true;
        }
        std::thread::sleep((until - now).min(Duration::from_millis(20)));
    }
}

/// Applies the faults of `schedule` at their times; returns them as applied, and for
/// each that ended a failover ([`logged_end`]) the server, the line its log tells the
/// moment by, and the length its log had before the fault (for [`logged_time`]).
fn apply_all<'a>(
    schedule: &[Scheduled],
    servers: &Servers<'a>,
    start: Instant,
    done: &AtomicBool,
    stop: &StopFlag,
) -> (Vec<FaultApplied>, Vec<(&'a Cluster, &'static str, u64)>) {
    let mut order: Vec<&Scheduled> = schedule.iter().collect();
    order.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
    let (mut applied, mut logged) = (Vec::new(), Vec::new());
    for f in order {
        if !wait_until(start + Duration::from_secs_f64(f.at_s.max(0.0)), done, stop) {
            break;
        }
        let end = logged_end(&f.action, servers);
        let log_from = end.and_then(|(c, _)| std::fs::metadata(c.log_file()).ok());
        let error = apply(&f.action, servers).err();
        if let (Some((server, line)), Some(log), None) = (end, log_from, &error) {
            logged.push((server, line, log.len()));
        }
        applied.push(FaultApplied {
            at_s: f.at_s,
            action: f.name.clone(),
            done_unix_us: unix_us(),
            error,
        });
    }
    (applied, logged)
}

/// What a promoted standby logs once its recovery is over, before it takes a write
/// (PostgreSQL's startup process, before it ends recovery for every backend).
/// Throwaway servers log in English (initdb's locale `C`).
const RECOVERY_DONE_LINE: &str = "archive recovery complete";

/// What a server logs once it accepts connections as a primary, before it accepts one.
const READY_LINE: &str = "database system is ready to accept connections";

/// The server whose log tells the moment a fault ended a failover by, and the line that
/// tells it: the standby a promote ends the recovery of ([`RECOVERY_DONE_LINE`]), the
/// primary a restart starts again ([`READY_LINE`]).
fn logged_end<'a>(action: &Action, servers: &Servers<'a>) -> Option<(&'a Cluster, &'static str)> {
    match action {
        Action::Server(Fault::Promote(n)) => servers
            .replicas
            .get(n.wrapping_sub(1))
            .map(|c| (c, RECOVERY_DONE_LINE)),
        Action::Server(Fault::Restart) => servers.primary.map(|c| (c, READY_LINE)),
        _ => None,
    }
}

/// The time, Unix epoch µs, of the first line of `server`'s log after byte `from` that
/// says `line`, by its `%m` stamp (PostgreSQL's default `log_line_prefix` starts with
/// it) in the server's `log_timezone`, which the server converts. None when the log has
/// no such line, its prefix gives no stamp with milliseconds, or the server cannot be
/// asked (a later fault stopped it).
fn logged_time(server: &Cluster, line: &str, from: u64) -> Option<i64> {
    let log = std::fs::read(server.log_file()).ok()?;
    let after = log.get(usize::try_from(from).ok()?..)?;
    let stamp = stamp_of(&String::from_utf8_lossy(after), line)?;
    let sql = format!(
        "SELECT (extract(epoch FROM timestamp '{stamp}' AT TIME ZONE \
         current_setting('log_timezone')) * 1000000)::bigint"
    );
    server.psql("postgres", &sql).ok()?.trim().parse().ok()
}

/// The local time of the first line of `log` that says `says`, `2026-01-02
/// 03:04:05.678`, from the `%m` stamp that starts it; None when there is no such line
/// or it starts with something else.
fn stamp_of(log: &str, says: &str) -> Option<String> {
    let line = log.lines().find(|l| l.contains(says))?;
    let mut words = line.split(' ');
    let (date, time) = (words.next()?, words.next()?);
    let shaped = |text: &str, shape: &str| {
        text.len() == shape.len()
            && text.chars().zip(shape.chars()).all(|(c, s)| match s {
                '9' => c.is_ascii_digit(),
                _ => c == s,
            })
    };
    (shaped(date, "9999-99-99") && shaped(time, "99:99:99.999")).then(|| format!("{date} {time}"))
}

/// Applies one fault; the error says why it failed.
fn apply(action: &Action, servers: &Servers<'_>) -> Result<(), String> {
    match action {
        Action::Server(fault) => {
            let primary = servers
                .primary
                .ok_or("the target is not a throwaway server")?;
            fault
                .apply(primary, servers.replicas)
                .map_err(|e| e.to_string())
        }
        Action::Link(link) => link.apply(),
        Action::Command(command) => {
            let mut cmd = Command::new("sh");
            cmd.arg("-c").arg(command);
            cmd.env("PGSURGE_TARGET", servers.target);
            let finished = pgsurge_supervisor::run(cmd, COMMAND_TIMEOUT, 0)
                .map_err(|e| format!("the command could not run: {e}"))?;
            // Its output stays out of the record: it may hold a password.
            match finished.ending {
                pgsurge_supervisor::Ending::Exited(0) => Ok(()),
                pgsurge_supervisor::Ending::Exited(code) => {
                    Err(format!("the command exited with status {code}"))
                }
                pgsurge_supervisor::Ending::Signaled => {
                    Err("the command was killed by a signal".to_string())
                }
                pgsurge_supervisor::Ending::TimedOut => Err(format!(
                    "the command ran past {} s and was killed",
                    COMMAND_TIMEOUT.as_secs()
                )),
            }
        }
    }
}

/// The outage in `timeline` and the recovery after it, by
/// [`pgsurge_analysis::outage::failure_outage`]'s one rule for `bench --reconnect` and a
/// campaign: the stretch that holds the moment the run's first transaction failed with
/// its connection lost (the failure's own gap, not a later stall of the server that
/// took over), found through the first of `failover_unix_us` (moments of the faults'
/// failovers, by the servers' logs) that is this failure's when there is one; when none
/// was lost, the longest from `first_fault_unix_us` (a campaign's first
/// fault) on, or the longest of the run without faults.
pub fn outage(
    timeline: &CommitTimeline,
    first_fault_unix_us: Option<i64>,
    failover_unix_us: &[i64],
) -> Option<OutageWindow> {
    use pgsurge_analysis::outage::{failure_outage, Anchor};
    let seconds = |unix_us: i64| (unix_us - timeline.origin_unix_us) as f64 / 1e6;
    let bucket_s = COMMIT_BUCKET_US as f64 / 1e6;
    let lost = timeline.first_connection_lost_unix_us;
    let mut failovers = failover_unix_us.to_vec();
    failovers.sort_unstable();
    let failovers_s: Vec<f64> = failovers.iter().map(|&f| seconds(f)).collect();
    let (o, anchor) = failure_outage(
        &timeline.counts,
        bucket_s,
        lost.map(seconds),
        first_fault_unix_us.map(seconds),
        &failovers_s,
    )?;
    let stored = match anchor {
        Anchor::FirstConnectionLost | Anchor::Failover(_) => OutageAnchor::FirstConnectionLost,
        Anchor::FirstFault => OutageAnchor::FirstFault,
        Anchor::Longest => OutageAnchor::Longest,
    };
    let mut window = OutageWindow::from_seconds(
        timeline.origin_unix_us,
        o.last_commit_before_s,
        o.first_commit_after_s,
        o.steady_tps,
        o.recovery_s,
        stored,
    );
    if stored == OutageAnchor::FirstConnectionLost {
        window.connection_lost_unix_us = lost;
    }
    if let Anchor::Failover(i) = anchor {
        window.failover_unix_us = failovers.get(i).copied();
    }
    Some(window)
}

/// The run's failure cost: the outage the clients saw ([`outage`], the first fault's
/// time given for a run that lost no connection), the faults and the lag; with `check_table`, the acknowledged commits of the timeline
/// looked for in it on the server `conn` reaches ([`lost_commits`]).
pub fn cost(
    beside: Beside,
    timeline: Option<&CommitTimeline>,
    (conn, check_table): (&ConnConfig, Option<&str>),
) -> FailureCost {
    let first_fault_us = beside
        .faults
        .first()
        .map(|f| beside.start_unix_us + (f.at_s * 1e6) as i64);
    let mut cost = FailureCost {
        outage: timeline.and_then(|t| outage(t, first_fault_us, &beside.failover_unix_us)),
        faults: beside.faults,
        lag: beside.lag,
        ..Default::default()
    };
    if let Some(table) = check_table {
        let acked = timeline.map_or(&[][..], |t| &t.acknowledged[..]);
        match lost_commits(conn, table, acked) {
            Ok(c) => {
                (cost.acknowledged_checked, cost.acknowledged_lost) =
                    (Some(c.checked), Some(c.lost))
            }
            Err(e) => cost.acknowledged_error = Some(e),
        }
    }
    cost
}

/// Acknowledged commits, looked for after the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LostCommits {
    /// The acknowledged transactions looked for.
    pub checked: u64,
    /// Those the server lacks.
    pub lost: u64,
}

/// Looks for each acknowledged transaction of `acked` in `table` on the server `conn`
/// reaches (after a failover: the primary that took over), by the table's columns
/// `client_id` and `txn_seq`, and counts those missing. `table` is a name, optionally
/// schema-qualified (`acks`, `bench.acks`); each part is quoted as an identifier.
pub fn lost_commits(
    conn: &ConnConfig,
    table: &str,
    acked: &[AckRange],
) -> Result<LostCommits, String> {
    let checked: u64 = acked.iter().map(|r| (r.last - r.first + 1) as u64).sum();
    if acked.is_empty() {
        return Ok(LostCommits { checked, lost: 0 });
    }
    let quoted: Vec<String> = table
        .split('.')
        .map(pgsurge_wire::quote_identifier)
        .collect();
    let mut values = String::with_capacity(acked.len() * 24);
    for (i, r) in acked.iter().enumerate() {
        let sep = if i == 0 { "" } else { "," };
        let _ = write!(values, "{sep}({},{},{})", r.client, r.first, r.last);
    }
    let sql = format!(
        "SELECT count(*) FROM (VALUES {values}) AS r(client_id, first, last) \
         CROSS JOIN LATERAL generate_series(r.first::bigint, r.last::bigint) AS s(txn_seq) \
         WHERE NOT EXISTS (SELECT 1 FROM {} AS t \
         WHERE t.client_id = r.client_id AND t.txn_seq = s.txn_seq)",
        quoted.join(".")
    );
    let mut pg = pgsurge_observe::Pg::connect(conn).map_err(|e| e.to_string())?;
    let lost = pg
        .value(&sql)
        .map_err(|e| e.to_string())?
        .and_then(|v| v.parse().ok())
        .ok_or("the count of missing transactions could not be read")?;
    Ok(LostCommits { checked, lost })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(at_s: f64, command: &str) -> Scheduled {
        Scheduled {
            at_s,
            name: "command".to_string(),
            action: Action::Command(command.to_string()),
        }
    }

    #[test]
    fn faults_are_applied_in_time_order_while_the_run_goes_on_and_not_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let (mark, last) = (dir.path().join("mark"), dir.path().join("last"));
        let monitor = ConnConfig::parse("host=/nonexistent dbname=x").unwrap();
        let servers = Servers {
            primary: None,
            replicas: &[],
            monitor: &monitor,
            target: "pg",
        };
        let schedule = [
            command(3600.0, "exit 0"),
            command(0.4, &format!("touch '{}'", last.display())),
            command(0.2, "exit 3"),
            command(
                0.0,
                &format!("echo \"$PGSURGE_TARGET\" > '{}'", mark.display()),
            ),
            Scheduled {
                at_s: 0.3,
                name: "promote".to_string(),
                action: Action::Server(Fault::Promote(1)),
            },
        ];
        // The run ends once the fault at 0.4 s was applied.
        let (out, beside) = during(&schedule, &servers, &StopFlag::new(), || {
            while !last.exists() {
                std::thread::sleep(Duration::from_millis(10));
            }
            "ran"
        });
        assert_eq!(out, "ran");
        let faults = beside.expect("faults were scheduled").faults;
        let at: Vec<f64> = faults.iter().map(|f| f.at_s).collect();
        assert_eq!(at, [0.0, 0.2, 0.3, 0.4], "{faults:?}");
        assert_eq!(std::fs::read_to_string(&mark).unwrap().trim(), "pg");
        let errors: Vec<Option<&str>> = faults.iter().map(|f| f.error.as_deref()).collect();
        assert_eq!(errors[0], None);
        assert_eq!(errors[1], Some("the command exited with status 3"));
        assert!(
            errors[2].unwrap().contains("not a throwaway server"),
            "{errors:?}"
        );
        assert_eq!(errors[3], None);
        assert!(faults
            .windows(2)
            .all(|w| w[0].done_unix_us <= w[1].done_unix_us));
    }

    #[test]
    fn a_link_fault_takes_device_and_namespace_names_and_figures_in_range_only() {
        let ok = LinkFault::new(Some("db".into()), "vs0".into(), 0.05, 1.5).unwrap();
        assert_eq!((ok.delay_us, ok.loss_pct), (50_000, 1.5));
        for (netns, device, delay, loss, says) in [
            (None, "", 0.0, 0.0, "device name"),
            (None, "a-name-past-15-chars", 0.0, 0.0, "device name"),
            (None, "v 0", 0.0, 0.0, "device name"),
            (Some("-x"), "v0", 0.0, 0.0, "namespace name"),
            (None, "v0", 61.0, 0.0, "from 0 to 60 s"),
            (None, "v0", f64::NAN, 0.0, "from 0 to 60 s"),
            (None, "v0", 0.0, 100.5, "percentage"),
        ] {
            let e =
                LinkFault::new(netns.map(String::from), device.into(), delay, loss).unwrap_err();
            assert!(e.contains(says), "{device}: {e}");
        }
    }

    /// A campaign test's commits, 100 a second: the primary stopped by a fault at
    /// 3 s, its clients' connections lost at once and no commit until the standby was
    /// promoted 0.3 s later; then a 1.2 s stall at 6 s (the promoted server's first
    /// checkpoint on a busy machine), longer than the failover's own gap.
    fn failover_then_a_longer_stall(origin_unix_us: i64) -> CommitTimeline {
        let mut counts = vec![1; 300];
        counts.extend(vec![0; 30]);
        counts.extend(vec![1; 270]);
        counts.extend(vec![0; 120]);
        counts.extend(vec![1; 300]);
        CommitTimeline {
            origin_unix_us,
            counts,
            acknowledged: Vec::new(),
            first_connection_lost_unix_us: Some(origin_unix_us + 3_004_000),
        }
    }

    #[test]
    fn a_campaigns_outage_is_the_stretch_at_the_first_lost_connection_not_a_later_stall() {
        let origin = 1_800_000_000_000_000;
        let timeline = failover_then_a_longer_stall(origin);
        let beside = |timeline: &CommitTimeline| Beside {
            faulted: true,
            faults: vec![FaultApplied {
                at_s: 3.0,
                action: "stop".to_string(),
                done_unix_us: timeline.origin_unix_us + 3_002_000,
                error: None,
            }],
            lag: Vec::new(),
            start_unix_us: timeline.origin_unix_us,
            failover_unix_us: Vec::new(),
        };
        let conn = ConnConfig::parse("host=/nonexistent dbname=x").unwrap();
        let cost = cost(beside(&timeline), Some(&timeline), (&conn, None));
        let o = cost.outage.expect("an outage");
        assert_eq!(o.anchor, Some(OutageAnchor::FirstConnectionLost), "{o:?}");
        assert_eq!(o.last_commit_before_unix_us, origin + 3_000_000, "{o:?}");
        assert_eq!(o.first_commit_after_unix_us, origin + 3_300_000, "{o:?}");
        assert!((o.seconds - 0.3).abs() < 1e-9, "{o:?}");
        assert_eq!(o.connection_lost_unix_us, Some(origin + 3_004_000));
        assert_eq!(cost.faults.len(), 1);
        // A fault that broke no connection (a paused replay): the longest stretch from
        // the fault's time on, the later stall.
        let unbroken = CommitTimeline {
            first_connection_lost_unix_us: None,
            ..timeline
        };
        let o = cost_outage(&unbroken, beside(&unbroken), &conn);
        assert_eq!(o.anchor, Some(OutageAnchor::FirstFault), "{o:?}");
        assert_eq!(o.last_commit_before_unix_us, origin + 6_000_000, "{o:?}");
        assert!((o.seconds - 1.2).abs() < 1e-9, "{o:?}");
        assert_eq!(o.connection_lost_unix_us, None);
    }

    fn cost_outage(timeline: &CommitTimeline, beside: Beside, conn: &ConnConfig) -> OutageWindow {
        cost(beside, Some(timeline), (conn, None))
            .outage
            .expect("an outage")
    }

    #[test]
    fn a_logged_failover_moment_finds_the_campaigns_outage() {
        // The primary stopped at 3 s, its clients' connections lost from 3.004 s, its
        // last late commit at 3.4 s (past the fixed allowance); the standby, promoted,
        // logged the end of its archive recovery at 3.652 s and took commits from
        // 3.66 s.
        let origin = 1_800_000_000_000_000;
        let mut counts = vec![1; 300];
        counts.extend(vec![0; 300]);
        counts[340] = 1;
        counts[366..].fill(1);
        let timeline = CommitTimeline {
            origin_unix_us: origin,
            counts,
            acknowledged: Vec::new(),
            first_connection_lost_unix_us: Some(origin + 3_004_000),
        };
        let fault = Some(origin + 3_000_000);
        let fixed = outage(&timeline, fault, &[]).expect("an outage");
        assert_eq!(
            fixed.first_commit_after_unix_us,
            origin + 3_400_000,
            "{fixed:?}"
        );
        // A moment whose stretch ended before the lost connection (an earlier
        // restart's) is not this failure's; the first after it is.
        let moments = [origin + 1_000_000, origin + 3_652_000, origin + 5_000_000];
        let o = outage(&timeline, fault, &moments).expect("an outage");
        assert_eq!(o.anchor, Some(OutageAnchor::FirstConnectionLost), "{o:?}");
        assert_eq!(o.last_commit_before_unix_us, origin + 3_410_000, "{o:?}");
        assert_eq!(o.first_commit_after_unix_us, origin + 3_660_000, "{o:?}");
        assert_eq!(o.connection_lost_unix_us, Some(origin + 3_004_000));
        assert_eq!(o.failover_unix_us, Some(origin + 3_652_000));
        assert_eq!(fixed.failover_unix_us, None);
        assert_eq!(outage(&timeline, fault, &moments[..1]), Some(fixed));
    }

    #[test]
    fn a_logged_moment_is_read_from_a_default_log_line_prefix_only() {
        let log = "2026-11-30 02:27:01.100 UTC [41] LOG:  received promote request\n\
                   2026-11-30 02:27:01.123 UTC [41] LOG:  redo done at 0/3000060\n\
                   2026-11-30 02:27:01.652 CET [40] LOG:  database system is ready to \
                   accept connections\n\
                   2026-11-30 02:27:09.000 UTC [40] LOG:  database system is ready to \
                   accept connections\n";
        assert_eq!(
            stamp_of(log, READY_LINE).as_deref(),
            Some("2026-11-30 02:27:01.652")
        );
        assert_eq!(
            stamp_of(log, "received promote").as_deref(),
            Some("2026-11-30 02:27:01.100")
        );
        for other in [
            "",
            "2026-11-30 02:27:01.100 UTC [41] LOG:  received promote request\n",
            // %t: seconds only.
            "2026-11-30 02:27:01 UTC [40] LOG:  database system is ready to accept connections",
            "[40] 2026-11-30 02:27:01.652 LOG:  database system is ready to accept connections",
            "2026-11-30 02:27:01.65' [40] LOG:  database system is ready to accept connections",
        ] {
            assert_eq!(stamp_of(other, READY_LINE), None, "{other}");
        }
    }

    #[test]
    fn netem_is_missing_only_where_a_fifo_is_taken_and_netem_is_not() {
        let kernel =
            |netem: bool, fifo: bool| move |q: &[&str]| if q[0] == "netem" { netem } else { fifo };
        assert!(lacks_netem(kernel(false, true)));
        assert!(!lacks_netem(kernel(true, true)));
        // Nothing could be added (not root, no tc): netem's absence is not shown.
        assert!(!lacks_netem(kernel(false, false)));
    }

    #[test]
    fn only_a_netem_root_is_removed() {
        assert!(root_is_netem(
            "qdisc netem 8001: root refcnt 2 limit 1000 delay 100ms\n"
        ));
        for other in [
            "",
            "qdisc noqueue 0: root refcnt 2 \n",
            "qdisc pfifo_fast 0: root refcnt 2 bands 3\n",
            "qdisc tbf 1: root refcnt 2 rate 1Mbit\nqdisc netem 10: parent 1:1 delay 5ms\n",
        ] {
            assert!(!root_is_netem(other), "{other}");
        }
    }

    #[test]
    fn without_faults_the_run_is_only_run() {
        let monitor = ConnConfig::parse("dbname=x").unwrap();
        let servers = Servers {
            primary: None,
            replicas: &[],
            monitor: &monitor,
            target: "pg",
        };
        let (out, beside) = during(&[], &servers, &StopFlag::new(), || 7);
        assert_eq!((out, beside.is_none()), (7, true));
    }
}
