//! The CPU of a test's hosts: which hosts were sampled (found from the metric names),
//! whether server and client shared one, who used the server host's CPU, the CPU rows
//! of "what limited this run?" and the CPU charts.

use super::limits::mean_of;
use super::timeline::metric_series;
use crate::charts::{chart_div, ChartMaker};
use crate::charts::{Dash, Series};
use pgsurge_analysis::limits;
use pgsurge_store::LoadedRun;
use std::collections::{BTreeMap, BTreeSet};

/// A CPU family: the prefix before `.cpu.` and what it is. When the server's host
/// metrics were read on the client's machine (`shared`), `os` and `client` are the
/// same host: it is one family, the server and client host.
pub(crate) fn cpu_families(names: &BTreeSet<&str>, shared: bool) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for n in names {
        if let Some(prefix) = n.strip_suffix(".cpu.user_pct") {
            let role = if prefix == "os" && shared {
                "server and client host (os.*)".to_string()
            } else if prefix == "os" {
                "server host (os.*)".to_string()
            } else if prefix == "client" && shared {
                continue;
            } else if prefix.contains("client") {
                format!("client host ({prefix})")
            } else if prefix.contains("server")
                || prefix.contains("target")
                || prefix.contains("host")
            {
                format!("server host ({prefix})")
            } else {
                prefix.to_string()
            };
            out.push((prefix.to_string(), role));
        }
    }
    out
}

/// Whether the test's server and client shared one host: the server's host metrics
/// were read from this machine's `/proc` (`local`), where the client ran.
pub(super) fn shared_host(run: &LoadedRun) -> bool {
    run.facts.iter().any(|f| {
        f.name == pgsurge_store::facts::SERVER_HOST_METRICS_SOURCE
            && f.value.as_deref() == Some("local")
    })
}

/// The CPUs of a test's hosts: their families (prefix, role) and who used the server
/// host's CPU.
pub(super) struct HostCpus {
    pub(super) families: Vec<(String, String)>,
    pub(super) by_user: Option<CpuByUser>,
}

/// The CPU states drawn, each in its own palette colour and dash on every chart.
pub(super) const CPU_STATES: [(&str, usize, Dash); 4] = [
    ("user", 0, Dash::Solid),
    ("system", 1, Dash::Dashed),
    ("iowait", 2, Dash::Dotted),
    ("steal", 4, Dash::LongDash),
];

/// The colour and dash of a CPU state's metric (`….cpu.user_pct`, …), the same on every
/// chart; idle time, drawn only among all the sampled metrics, has its own.
pub(super) fn cpu_state_style(name: &str) -> Option<(usize, Dash)> {
    let (_, state) = name.rsplit_once(".cpu.")?;
    let state = state.strip_suffix("_pct")?;
    if state == "idle" {
        return Some((7, Dash::Solid));
    }
    CPU_STATES
        .into_iter()
        .find(|(part, _, _)| *part == state)
        .map(|(_, colour, dash)| (colour, dash))
}

/// Who used the server host's CPU, per sample, in percent of all its CPUs: the
/// target's PostgreSQL processes (`os.postgres.cpu_pct`), pgsurge (its process, when it
/// ran on that host) and everything else (the host's user + system time less those
/// two). None without the server's processes sampled or the host's CPU count.
pub(crate) struct CpuByUser {
    /// Series: PostgreSQL, pgsurge (when on the host), everything else.
    pub series: Vec<Series>,
    /// Their means, in the same order, with their names.
    pub means: Vec<(String, f64)>,
    /// The host's CPUs.
    pub cpus: u64,
}

pub(crate) fn cpu_by_user(
    run: &LoadedRun,
    points: &BTreeMap<&str, Vec<(f64, f64)>>,
    shared: bool,
) -> Option<CpuByUser> {
    let cpus = run.environment.as_ref()?["cpu"]["count"]
        .as_u64()
        .filter(|n| *n > 0)?;
    let per_host = |v: f64| v / cpus as f64;
    let at = |name: &str| -> BTreeMap<u64, f64> {
        points
            .get(name)
            .into_iter()
            .flatten()
            .filter(|p| p.0.is_finite() && p.1.is_finite())
            .map(|p| (p.0.to_bits(), p.1))
            .collect()
    };
    let server = at("os.postgres.cpu_pct");
    if server.is_empty() {
        return None;
    }
    let client = if shared {
        at("client.process.cpu_pct")
    } else {
        BTreeMap::new()
    };
    let (user, system) = (at("os.cpu.user_pct"), at("os.cpu.system_pct"));
    let mut pg_pts = Vec::new();
    let mut me_pts = Vec::new();
    let mut rest_pts = Vec::new();
    for (&x, &pg) in &server {
        let t = f64::from_bits(x);
        let pg = per_host(pg);
        pg_pts.push((t, pg));
        let me = client.get(&x).map(|v| per_host(*v));
        if let Some(me) = me {
            me_pts.push((t, me));
        }
        if let (Some(u), Some(s)) = (user.get(&x), system.get(&x)) {
            rest_pts.push((t, (u + s - pg - me.unwrap_or(0.0)).max(0.0)));
        }
    }
    let mean = |p: &[(f64, f64)]| p.iter().map(|v| v.1).sum::<f64>() / p.len().max(1) as f64;
    let mut series = Vec::new();
    let mut means = Vec::new();
    for (name, pts, colour, dash) in [
        (
            "PostgreSQL (the target's processes)",
            pg_pts,
            0,
            Dash::Solid,
        ),
        ("pgsurge", me_pts, 3, Dash::Dashed),
        ("everything else", rest_pts, 5, Dash::Dotted),
    ] {
        if pts.is_empty() {
            continue;
        }
        means.push((name.to_string(), mean(&pts)));
        let mut s = Series::line(name, pts);
        (s.color, s.dash) = (Some(colour), dash);
        series.push(s);
    }
    Some(CpuByUser {
        series,
        means,
        cpus,
    })
}

/// The CPU rows of "What limited this run?" (each host's busy and iowait time, who
/// used the server host's CPU) and their hints.
pub(super) fn cpu_glance(
    cpus: &HostCpus,
    points: &BTreeMap<&str, Vec<(f64, f64)>>,
    glance: &mut Vec<(String, String)>,
    load: &mut limits::RunLoad,
) {
    // Who used the server host's CPU: named with a saturated CPU, so that a neighbour's
    // load is not read as the server's.
    let split = cpus.by_user.as_ref().map(|u| {
        u.means
            .iter()
            .map(|(who, v)| format!("{who} {v:.1} %"))
            .collect::<Vec<_>>()
            .join(", ")
    });
    if let (Some(u), Some(split)) = (&cpus.by_user, &split) {
        glance.push((
            format!(
                "CPU by who used it (mean % of the server host's {} CPUs)",
                u.cpus
            ),
            split.clone(),
        ));
    }
    for (prefix, role) in &cpus.families {
        let user = mean_of(points.get(format!("{prefix}.cpu.user_pct").as_str()));
        let sys = mean_of(points.get(format!("{prefix}.cpu.system_pct").as_str()));
        let iow = mean_of(points.get(format!("{prefix}.cpu.iowait_pct").as_str()));
        let busy = user.unwrap_or(0.0) + sys.unwrap_or(0.0);
        glance.push((
            format!("CPU of the {role}: user + system / iowait (mean %)"),
            format!(
                "{busy:.1} / {}",
                iow.map(|v| format!("{v:.1}")).unwrap_or_else(|| "–".into())
            ),
        ));
        load.hosts.push(limits::HostCpu {
            role: role.clone(),
            busy_pct: busy,
            iowait_pct: iow,
            used_by: split.clone().filter(|_| prefix == "os"),
        });
    }
}

/// The CPU charts of a test: each host's CPU by state, and who used the server host's.
pub(super) fn cpu_charts(
    cpus: &HostCpus,
    points: &BTreeMap<&str, Vec<(f64, f64)>>,
    mk: ChartMaker<'_>,
    n: &mut usize,
) -> String {
    let mut body = String::new();
    for (prefix, role) in &cpus.families {
        let series: Vec<Series> = CPU_STATES
            .into_iter()
            .filter_map(|(part, colour, dash)| {
                let mut s = metric_series(points, &format!("{prefix}.cpu.{part}_pct"), part)?;
                // Steal is drawn only when a hypervisor took some.
                if part == "steal" && !s.points.iter().any(|p| p.1 > 0.0) {
                    return None;
                }
                (s.color, s.dash) = (Some(colour), dash);
                Some(s)
            })
            .collect();
        body.push_str(&chart_div(
            &mk(
                &format!("CPU, {role}"),
                "CPU time (% of all CPUs)",
                series,
                String::new(),
            ),
            n,
        ));
    }
    if let Some(u) = &cpus.by_user {
        body.push_str(&chart_div(
            &mk(
                "CPU by who used it, server host",
                &format!("CPU time (% of all {} CPUs)", u.cpus),
                u.series.clone(),
                "PostgreSQL: the postmaster and its processes (those that exited included); \
                 everything else: the host's user + system time less PostgreSQL's and \
                 pgsurge's"
                    .into(),
            ),
            n,
        ));
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_families_come_from_the_names() {
        let names: BTreeSet<&str> = [
            "os.cpu.user_pct",
            "client.os.cpu.user_pct",
            "server.os.cpu.user_pct",
            "os.cpu.system_pct",
        ]
        .into_iter()
        .collect();
        let fam = cpu_families(&names, false);
        assert_eq!(fam.len(), 3);
        // Server and client on one host: its CPU once.
        let both: BTreeSet<&str> = ["os.cpu.user_pct", "client.cpu.user_pct"]
            .into_iter()
            .collect();
        assert_eq!(cpu_families(&both, false).len(), 2);
        assert_eq!(
            cpu_families(&both, true),
            [(
                "os".to_string(),
                "server and client host (os.*)".to_string()
            )]
        );
        assert!(fam
            .iter()
            .any(|(p, r)| p == "client.os" && r.starts_with("client host")));
        assert!(fam
            .iter()
            .any(|(p, r)| p == "server.os" && r.starts_with("server host")));
    }
}
