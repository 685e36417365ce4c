//! The page of one test. It opens with "what limited this run?": throughput and
//! latency over time, server and client CPU, commits and WAL per second, checkpoints
//! and a table of those numbers; then where the time went (active sessions by wait
//! event, the top statements when `pg_stat_statements` was read), every sampled metric
//! (one chart per family and unit), and the tables of options, scripts, server counters, non-default settings and
//! the environment manifest.
//!
//! Every chart of the page shares one time base: seconds since the test's measured
//! start (a warm-up left out of the measured run is not drawn; one detected inside it
//! is shaded, and the summary states the steady window's figures), with checkpoint
//! moments marked and a run's outage marked in red (its figures in the summary).
//! Per-interval
//! values are rates over the interval's own length (a partial last or first interval
//! is scaled to its length; one shorter than half the nominal interval is left out
//! and the chart says so); a missing interval or sample breaks the line.
//!
//! Metric families are found from the names (data-driven): any `PREFIX.cpu.user_pct`,
//! `…system_pct`, `…iowait_pct` triple is a CPU chart for the host PREFIX names (`os` =
//! the server's host, `client` = the client's host, as the campaign's samplers name them),
//! so metrics another sampler adds show up without a change here.

use crate::cells::CellKey;
use crate::charts::{Dash, LineChart, Series};
use crate::html::{escape, kv_table, num, page, table, text_list};
use crate::pages::chart_div;
use pgsurge_analysis::{describe, limits};
use pgsurge_store::activity::{self, Statements};
use pgsurge_store::{IntervalRecord, LoadedRun, MetricInfo, MetricSample};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// Epoch second of the measured start: the first measured interval's start minus its
/// offset (intervals count from the measured start), else the run's start.
pub(crate) fn time_base(intervals: &[IntervalRecord], start_epoch: Option<f64>) -> f64 {
    intervals
        .iter()
        .find(|i| !i.warmup)
        .map(|i| i.ts - i.elapsed_s)
        .or(start_epoch)
        .or_else(|| intervals.first().map(|i| i.ts))
        .unwrap_or(0.0)
}

/// Intervals shorter than this share of the nominal interval are left out.
const MIN_INTERVAL_SHARE: f64 = 0.5;

/// The measured intervals as drawn: x is the middle of the interval (seconds since the
/// measured start), None is a break (an interval missing from the store).
pub(crate) struct IntervalView<'a> {
    /// Drawn intervals and breaks.
    pub slots: Vec<Option<(f64, &'a IntervalRecord)>>,
    /// Starts of the intervals left out as too short, with their lengths.
    pub left_out: Vec<(f64, f64)>,
    /// Warm-up intervals not drawn.
    pub warmup: usize,
}

pub(crate) fn interval_view(intervals: &[IntervalRecord]) -> IntervalView<'_> {
    let measured: Vec<&IntervalRecord> = intervals
        .iter()
        .filter(|i| !i.warmup && i.duration_s > 0.0)
        .collect();
    let mut durations: Vec<f64> = measured.iter().map(|i| i.duration_s).collect();
    let nominal = if durations.is_empty() {
        1.0
    } else {
        durations.sort_by(f64::total_cmp);
        durations[durations.len() / 2]
    };
    let mut slots = Vec::new();
    let mut left_out = Vec::new();
    let mut prev_end: Option<f64> = None;
    for i in measured {
        if i.duration_s < MIN_INTERVAL_SHARE * nominal {
            left_out.push((i.elapsed_s, i.duration_s));
            prev_end = Some(i.elapsed_s + i.duration_s);
            continue;
        }
        if prev_end.is_some_and(|e| i.elapsed_s - e > 0.5 * nominal) {
            slots.push(None);
        }
        slots.push(Some((i.elapsed_s + i.duration_s / 2.0, i)));
        prev_end = Some(i.elapsed_s + i.duration_s);
    }
    IntervalView {
        slots,
        left_out,
        warmup: intervals.iter().filter(|i| i.warmup).count(),
    }
}

impl IntervalView<'_> {
    /// A series of `f` over the drawn intervals (NaN at breaks and where `f` has no value).
    pub fn series(&self, name: &str, f: impl Fn(&IntervalRecord) -> Option<f64>) -> Series {
        Series::line(
            name,
            self.slots
                .iter()
                .map(|s| match s {
                    Some((x, i)) => (*x, f(i).unwrap_or(f64::NAN)),
                    None => (f64::NAN, f64::NAN),
                })
                .collect(),
        )
    }

    /// Transactions per second of each interval over its own length.
    pub fn tps(&self) -> Series {
        self.series("tps", |i| Some(i.transactions as f64 / i.duration_s))
    }

    /// The note every per-interval chart carries.
    pub fn note(&self) -> String {
        let mut parts =
            vec!["x: middle of each interval; rates over the interval's own length".to_string()];
        for (start, len) in &self.left_out {
            parts.push(format!(
                "interval at {start:.2} s left out: {len:.3} s long, under half an interval"
            ));
        }
        if self.warmup > 0 {
            parts.push(format!("{} warm-up intervals not drawn", self.warmup));
        }
        parts.join("; ")
    }
}

/// Unit of a metric: from `metrics_info` when stored, else from its name's suffix.
pub(crate) fn metric_unit(name: &str, info: &BTreeMap<String, MetricInfo>) -> String {
    if let Some(i) = info.get(name) {
        if !i.unit.is_empty() {
            return i.unit.clone();
        }
    }
    let rate = name.ends_with("_per_s");
    let base = name.trim_end_matches("_per_s");
    let unit = if base.ends_with("_pct") {
        "%"
    } else if base.ends_with("_mbps") {
        "MB/s"
    } else if base.ends_with("_mb") {
        "MB"
    } else if base.ends_with("_ms") {
        "ms"
    } else if base.ends_with("_bytes") || base.ends_with(".bytes") {
        "bytes"
    } else {
        "count"
    };
    match (rate, unit) {
        (true, "count") => "1/s".into(),
        (true, u) => format!("{u}/s"),
        (false, u) => u.into(),
    }
}

/// Family (chart) of a metric: its stored category, else its name up to the last dot.
fn metric_family(name: &str, info: &BTreeMap<String, MetricInfo>) -> String {
    match info.get(name) {
        Some(i) if !i.category.is_empty() => i.category.clone(),
        _ => name.rsplit_once('.').map(|(c, _)| c).unwrap_or(name).into(),
    }
}

/// Samples of each metric, sorted by time, on the time base `t0`; a gap longer than
/// 1.5 times the metric's usual spacing is a break (NaN).
pub(crate) fn metric_points(metrics: &[MetricSample], t0: f64) -> BTreeMap<&str, Vec<(f64, f64)>> {
    let mut by: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    for m in metrics {
        by.entry(m.metric.as_str())
            .or_default()
            .push((m.ts - t0, m.value));
    }
    for pts in by.values_mut() {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut steps: Vec<f64> = pts.windows(2).map(|w| w[1].0 - w[0].0).collect();
        if steps.len() < 2 {
            continue;
        }
        steps.sort_by(f64::total_cmp);
        let usual = steps[steps.len() / 2];
        let mut out = Vec::with_capacity(pts.len());
        for (k, p) in pts.iter().enumerate() {
            if k > 0 && p.0 - pts[k - 1].0 > 1.5 * usual {
                out.push((f64::NAN, f64::NAN));
            }
            out.push(*p);
        }
        *pts = out;
    }
    by
}

/// Whether a metric is the rate of a counter that backends publish to the cumulative
/// statistics system in batches, about once a second while busy (and when they exit),
/// rather than as it happens: `pg_stat_database` (`pg.db.*`), `pg_stat_io`
/// (`pg.io.*`) and `pg_stat_wal` (`pg.wal.*`, but not the WAL position, which is read
/// as it is).
pub(crate) fn is_flushed_counter_rate(name: &str) -> bool {
    name.ends_with("_per_s")
        && (name.starts_with("pg.db.") || name.starts_with("pg.io.") || name.starts_with("pg.wal."))
        && !name.starts_with("pg.wal.lsn_bytes")
}

/// Width of the moving average drawn for counters published in batches.
pub(crate) const FLUSH_SMOOTHING_S: f64 = 3.0;

/// What the charts of batch-published counters say about how they are drawn.
pub(crate) const FLUSH_NOTE: &str = "PostgreSQL counters that backends publish about once a \
     second: drawn as a 3-second moving average, the first and last samples (a partial \
     batch, and what the backends publish as the test ends) left out; the tables give the \
     exact totals";

/// A rate sampled from counters published in batches, as it can honestly be drawn: a
/// centred moving average over [`FLUSH_SMOOTHING_S`], without the first and last
/// samples. A gap (NaN) stays a gap.
pub(crate) fn smooth_flushed(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let finite: Vec<usize> = (0..points.len())
        .filter(|&i| points[i].0.is_finite() && points[i].1.is_finite())
        .collect();
    let (Some(&first), Some(&last)) = (finite.first(), finite.last()) else {
        return Vec::new();
    };
    let half = FLUSH_SMOOTHING_S / 2.0;
    points
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != first && *i != last)
        .map(|(_, &(x, v))| {
            if !x.is_finite() || !v.is_finite() {
                return (x, v);
            }
            let near: Vec<f64> = finite
                .iter()
                .filter(|&&j| j != first && j != last && (points[j].0 - x).abs() <= half + 1e-9)
                .map(|&j| points[j].1)
                .collect();
            (x, near.iter().sum::<f64>() / near.len() as f64)
        })
        .collect()
}

/// What the charts of batch-published counters say when the test was too short for
/// the moving average.
pub(crate) const FLUSH_NOTE_SHORT: &str = "PostgreSQL counters that backends publish about \
     once a second: this test is too short for a 3-second moving average, so each sample \
     is drawn over the interval it covers, and a single second swings between zero and \
     twice the rate; the tables give the exact totals";

/// The least number of points a moving average must leave to be drawn instead of the
/// samples: fewer would draw a short test as one flat stretch of its middle.
const MIN_SMOOTHED_POINTS: usize = 4;

/// A sampled rate drawn as steps: each sample's value over the interval it covers,
/// from the previous sample (the first one's interval as long as the usual spacing),
/// so the line spans the whole sampled time. A gap (NaN) stays a gap.
pub(crate) fn as_steps(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut steps: Vec<f64> = points
        .windows(2)
        .map(|w| w[1].0 - w[0].0)
        .filter(|d| d.is_finite() && *d > 0.0)
        .collect();
    steps.sort_by(f64::total_cmp);
    let usual = steps.get(steps.len() / 2).copied().unwrap_or(1.0);
    let mut out = Vec::with_capacity(points.len() * 2);
    let mut prev: Option<f64> = None;
    for &(x, v) in points {
        if !x.is_finite() || !v.is_finite() {
            out.push((f64::NAN, f64::NAN));
            prev = None;
            continue;
        }
        let from = prev.unwrap_or(x - usual).max(0.0);
        out.push((from, v));
        out.push((x, v));
        prev = Some(x);
    }
    out
}

/// The points as drawn, and the batch-published counters drawn as sampled: those
/// counters' rates smoothed ([`smooth_flushed`]) when the test is long enough to
/// leave [`MIN_SMOOTHED_POINTS`], else as steps ([`as_steps`]); the other metrics as
/// sampled.
pub(crate) fn drawn_points<'a>(points: &BTreeMap<&'a str, Vec<(f64, f64)>>) -> Drawn<'a> {
    let mut as_sampled = BTreeSet::new();
    let drawn = points
        .iter()
        .map(|(name, pts)| {
            let drawn = if is_flushed_counter_rate(name) {
                let smoothed = smooth_flushed(pts);
                if smoothed.iter().filter(|p| p.1.is_finite()).count() >= MIN_SMOOTHED_POINTS {
                    smoothed
                } else {
                    as_sampled.insert(*name);
                    as_steps(pts)
                }
            } else {
                pts.clone()
            };
            (*name, drawn)
        })
        .collect();
    Drawn {
        points: drawn,
        as_sampled,
    }
}

/// The samples as the charts draw them.
pub(crate) struct Drawn<'a> {
    /// The points of each metric.
    pub points: BTreeMap<&'a str, Vec<(f64, f64)>>,
    /// The batch-published counters drawn as sampled (the test too short to smooth).
    pub as_sampled: BTreeSet<&'a str>,
}

impl Drawn<'_> {
    /// The note of the batch-published counter `name`, as it was drawn.
    fn flush_note(&self, name: &str) -> &'static str {
        flush_note(self.as_sampled.contains(name))
    }
}

/// The note of a chart of batch-published counters, as they were drawn.
fn flush_note(as_sampled: bool) -> &'static str {
    if as_sampled {
        FLUSH_NOTE_SHORT
    } else {
        FLUSH_NOTE
    }
}

/// Vertical markers: the moments a checkpoint was counted. A campaign stores the
/// checkpointer's counters (`pg.checkpointer.timed` / `.requested`, whichever view the
/// server version has) as per-second rates (`…_per_s`): a sample with a positive rate
/// marks a checkpoint; a cumulative counter marks where it increased.
pub(crate) fn checkpoint_moments(metrics: &[MetricSample], t0: f64) -> Vec<f64> {
    const COUNTERS: [&str; 2] = ["pg.checkpointer.timed", "pg.checkpointer.requested"];
    let mut out = BTreeSet::new();
    let mut cumulative: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    for m in metrics {
        let name = m.metric.as_str();
        if let Some(base) = name.strip_suffix("_per_s") {
            if COUNTERS.contains(&base) && m.value > 0.0 {
                out.insert(((m.ts - t0) * 1000.0).round() as i64);
            }
        } else if COUNTERS.contains(&name) {
            cumulative.entry(name).or_default().push((m.ts, m.value));
        }
    }
    for (_, mut series) in cumulative {
        series.sort_by(|a, b| a.0.total_cmp(&b.0));
        for w in series.windows(2) {
            if w[1].1 > w[0].1 {
                out.insert(((w[1].0 - t0) * 1000.0).round() as i64);
            }
        }
    }
    out.into_iter().map(|ms| ms as f64 / 1000.0).collect()
}

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
fn shared_host(run: &LoadedRun) -> bool {
    run.facts.iter().any(|f| {
        f.name == pgsurge_store::facts::SERVER_HOST_METRICS_SOURCE
            && f.value.as_deref() == Some("local")
    })
}

/// The CPUs of a test's hosts: their families (prefix, role) and who used the server
/// host's CPU.
struct HostCpus {
    families: Vec<(String, String)>,
    by_user: Option<CpuByUser>,
}

/// The CPU states drawn, each in its own palette colour and dash on every chart.
const CPU_STATES: [(&str, usize, Dash); 4] = [
    ("user", 0, Dash::Solid),
    ("system", 1, Dash::Dashed),
    ("iowait", 2, Dash::Dotted),
    ("steal", 4, Dash::LongDash),
];

/// The colour and dash of a CPU state's metric (`….cpu.user_pct`, …), the same on every
/// chart; idle time, drawn only among all the sampled metrics, has its own.
fn cpu_state_style(name: &str) -> Option<(usize, Dash)> {
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

/// `1.23 MB/s` style (decimal units), for byte rates.
fn human_rate(bytes_per_s: f64) -> String {
    let (v, u) = if bytes_per_s >= 1e9 {
        (bytes_per_s / 1e9, "GB/s")
    } else if bytes_per_s >= 1e6 {
        (bytes_per_s / 1e6, "MB/s")
    } else if bytes_per_s >= 1e3 {
        (bytes_per_s / 1e3, "kB/s")
    } else {
        (bytes_per_s, "B/s")
    };
    format!("{v:.2} {u}")
}

/// The finite values of a series.
fn finite_values(points: Option<&Vec<(f64, f64)>>) -> Option<Vec<f64>> {
    let v: Vec<f64> = points?
        .iter()
        .map(|p| p.1)
        .filter(|v| v.is_finite())
        .collect();
    (!v.is_empty()).then_some(v)
}

fn mean_of(points: Option<&Vec<(f64, f64)>>) -> Option<f64> {
    finite_values(points).map(|v| describe::mean(&v))
}

fn min_of(points: Option<&Vec<(f64, f64)>>) -> Option<f64> {
    finite_values(points).map(|v| describe::min(&v))
}

fn max_of(points: Option<&Vec<(f64, f64)>>) -> Option<f64> {
    finite_values(points).map(|v| describe::max(&v))
}

/// A test's page, section by section; returns it and its number of charts.
pub(crate) fn run_page(
    run: &LoadedRun,
    set_name: &str,
    info: &BTreeMap<String, MetricInfo>,
    profiles: &str,
) -> (String, usize) {
    let rec = &run.run.record;
    let mut n = 0;
    let mut body = String::new();
    let t0 = time_base(&run.intervals, rec.start_epoch);
    let markers = checkpoint_moments(&run.metrics, t0);
    let view = interval_view(&run.intervals);
    let points = metric_points(&run.metrics, t0);
    let names: BTreeSet<&str> = points.keys().copied().collect();
    let end = time_axis_end(run, &points);
    let shade = detected_warmup(run, &view);
    let outage = crate::failure::outage_range(run, t0);
    let mk = |title: &str, y: &str, series: Vec<Series>, note: String| LineChart {
        x_bounds: Some((0.0, end)),
        shade: shade.clone(),
        outage: outage.clone(),
        title: title.into(),
        x_label: "seconds since the measured start".into(),
        y_label: y.into(),
        series,
        markers: markers.clone(),
        marker_label: "checkpoint".into(),
        y_from_zero: true,
        note,
        ..Default::default()
    };
    let shared = shared_host(run);
    let cpus = HostCpus {
        families: cpu_families(&names, shared),
        by_user: cpu_by_user(run, &points, shared),
    };
    let wal_name = ["pg.wal.lsn_bytes_per_s", "pg.wal.bytes_per_s"]
        .into_iter()
        .find(|n| points.contains_key(n));
    body.push_str(&summary_section(run, set_name, t0));
    body.push_str(&limits_section(
        run, &view, &points, &names, &markers, &cpus, wal_name,
    ));
    // The tables read the samples as stored; the charts draw what the samples can show.
    let drawn = drawn_points(&points);
    body.push_str(&limits_charts(
        run, &view, &drawn, &cpus, wal_name, &mk, &mut n,
    ));
    body.push_str(&crate::failure::lag_section(run, &mk, &mut n));
    body.push_str(&where_time_goes(run, &points, &mk, &mut n));
    body.push_str(profiles);
    body.push_str(&all_metrics_section(
        rec.server_version_num,
        &names,
        shared,
        &drawn,
        info,
        &mk,
        &mut n,
    ));
    body.push_str(&crate::replay_compare::run_page_section(run));
    body.push_str(&options_section(run));
    body.push_str(&scripts_section(run));
    body.push_str(&costs_section(run));
    body.push_str(&counters_section(run));
    body.push_str(&settings_section(run));
    body.push_str(&environment_section(run));
    let title = format!("Test #{} — {}", run.run.id, CellKey::of(&run.run).label());
    (
        page(
            &title,
            "<a href=\"index.html\">← report index</a>",
            &crate::html::with_contents(&body),
        ),
        n,
    )
}

/// The run's steady state as stored in its result document, if judged.
fn stored_steady_state(run: &LoadedRun) -> Option<pgsurge_results::result::SteadyState> {
    let doc = run.run.record.result_json.as_ref()?.get("steady_state")?;
    serde_json::from_value(doc.clone()).ok()
}

/// The warm-up detected inside the drawn window, shaded on every time chart: from the
/// start to where the steady window begins. A warm-up already left out of the
/// measured run (a fixed one, or `warmup = "auto"`) is not drawn, so not shaded.
fn detected_warmup(run: &LoadedRun, view: &IntervalView<'_>) -> Option<(f64, f64, String)> {
    let st = stored_steady_state(run)?;
    (view.warmup == 0 && st.warmup_s > 0.0).then(|| {
        (
            0.0,
            st.warmup_s,
            format!(
                "detected warm-up ({:.0} s, MSER-5): in the raw figures, not in the steady window's",
                st.warmup_s
            ),
        )
    })
}

/// The summary's line on the steady state: the warm-up, the window's figures, or why
/// the run is not steady.
fn steady_line(run: &LoadedRun) -> Option<String> {
    let st = stored_steady_state(run)?;
    let p99 = st
        .percentiles
        .iter()
        .find(|p| p.percentile == 99.0)
        .map(|p| format!(", p99 {} ms", num(p.latency_ms, 3)))
        .unwrap_or_default();
    let mut line = format!(
        "warm-up {:.0} s (MSER-5); steady window {:.0} s: {} tps{p99}",
        st.warmup_s,
        st.window_s,
        num(st.tps, 3)
    );
    if !st.steady {
        line.push_str(&format!("; not steady: {}", st.reasons.join("; ")));
    }
    Some(line)
}

/// The end of every time axis: the whole measured test, whatever a chart's samples
/// cover.
fn time_axis_end(run: &LoadedRun, points: &BTreeMap<&str, Vec<(f64, f64)>>) -> f64 {
    run.intervals
        .iter()
        .filter(|i| !i.warmup)
        .map(|i| i.elapsed_s + i.duration_s)
        .chain(run.run.record.measured_s)
        .chain(
            points
                .values()
                .flatten()
                .map(|p| p.0)
                .filter(|x| x.is_finite()),
        )
        .fold(0.0, f64::max)
}

/// A sampled metric as a series named `label`, when it was sampled.
fn metric_series(
    points: &BTreeMap<&str, Vec<(f64, f64)>>,
    name: &str,
    label: &str,
) -> Option<Series> {
    points.get(name).map(|p| Series::line(label, p.clone()))
}

/// The summary: what the test was and its headline numbers, and its warnings.
fn summary_section(run: &LoadedRun, set_name: &str, t0: f64) -> String {
    let rec = &run.run.record;
    let mut body = String::new();
    let mut summary = vec![
        ("set".to_string(), set_name.to_string()),
        (
            "target".into(),
            run.target
                .as_ref()
                .map(|t| t.record.name.clone())
                .unwrap_or_default(),
        ),
        ("cell".into(), CellKey::of(&run.run).label()),
        ("repeat".into(), rec.repeat_no.to_string()),
        ("status".into(), rec.status.clone()),
        ("error".into(), rec.error.clone().unwrap_or_default()),
        ("started".into(), rec.started_at.clone().unwrap_or_default()),
        (
            "server".into(),
            rec.server_version.clone().unwrap_or_default(),
        ),
        ("tps".into(), num(rec.tps.unwrap_or(f64::NAN), 3)),
    ];
    summary.extend(steady_line(run).map(|l| ("steady state".to_string(), l)));
    // A workload pack's metrics (NOPM…) right under the tps.
    for m in run.run.workload_metrics() {
        let note = if m.description.is_empty() {
            m.unit.clone()
        } else {
            format!("{}; {}", m.unit, m.description)
        };
        summary.push((m.name.clone(), format!("{} ({note})", num(m.value, 1))));
    }
    summary.extend([
        (
            "transactions".into(),
            rec.transactions.map(|v| v.to_string()).unwrap_or_default(),
        ),
        (
            "failures".into(),
            rec.failures.map(|v| v.to_string()).unwrap_or_default(),
        ),
        (
            "latency avg / p50 / p99 / max ms".into(),
            [
                rec.latency_mean_ms,
                rec.latency_p50_ms,
                rec.latency_p99_ms,
                rec.latency_max_ms,
            ]
            .map(|v| num(v.unwrap_or(f64::NAN), 3))
            .join(" / "),
        ),
        (
            "server commits (client count)".into(),
            format!(
                "{} ({}){}",
                rec.server_commits
                    .map(|v| v.to_string())
                    .unwrap_or_default(),
                rec.transactions.map(|v| v.to_string()).unwrap_or_default(),
                rec.commit_mismatch_pct
                    .map(|p| format!(", mismatch {p:.1} %"))
                    .unwrap_or_default()
            ),
        ),
    ]);
    summary.extend(crate::failure::summary_rows(run, t0));
    summary.push((
        "command line".into(),
        rec.command_line.clone().unwrap_or_default(),
    ));
    body.push_str("<h2>Summary</h2>");
    body.push_str(&kv_table(&summary));
    if !run.warnings.is_empty() {
        body.push_str("<ul>");
        for w in &run.warnings {
            let _ = write!(body, "<li class=\"warn\">{}</li>", escape(&w.message));
        }
        body.push_str("</ul>");
    }

    body
}

/// The CPU rows of "What limited this run?" (each host's busy and iowait time, who
/// used the server host's CPU) and their hints.
fn cpu_glance(
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

/// "What limited this run?": throughput spread, CPU, client threads, commits, WAL,
/// checkpoints, disks and waits at a glance, with the hints the rules give.
fn limits_section(
    run: &LoadedRun,
    view: &IntervalView<'_>,
    points: &BTreeMap<&str, Vec<(f64, f64)>>,
    names: &BTreeSet<&str>,
    markers: &[f64],
    cpus: &HostCpus,
    wal_name: Option<&str>,
) -> String {
    let mut body = String::new();
    let mut glance: Vec<(String, String)> = Vec::new();
    let tps_pts: Vec<(f64, f64)> = view.tps().points;
    glance.push((
        "tps per interval: mean / min / max".into(),
        match (
            mean_of(Some(&tps_pts)),
            min_of(Some(&tps_pts)),
            max_of(Some(&tps_pts)),
        ) {
            (Some(m), Some(lo), Some(hi)) => format!("{m:.1} / {lo:.1} / {hi:.1}"),
            _ => "no intervals stored".into(),
        },
    ));
    let mut load = limits::RunLoad {
        wal_events: activity::wal_wait_events(run.run.record.server_version_num)
            .iter()
            .map(|e| e.to_string())
            .collect(),
        ..limits::RunLoad::default()
    };
    cpu_glance(cpus, points, &mut glance, &mut load);
    for (name, what) in [
        ("client.process.cpu_pct", "pgsurge process CPU (mean %)"),
        (
            "client.thread.max_cpu_pct",
            "busiest pgsurge thread CPU (mean %)",
        ),
    ] {
        if let Some(v) = mean_of(points.get(name)) {
            glance.push((what.into(), format!("{v:.1}")));
            if name == "client.thread.max_cpu_pct" {
                load.busiest_thread_pct = Some(v);
            }
        }
    }
    if let Some(c) = mean_of(points.get("pg.db.xact_commit_per_s")) {
        glance.push(("server commits/s (mean)".into(), format!("{c:.1}")));
    }
    if let Some(w) = wal_name.and_then(|n| mean_of(points.get(n))) {
        glance.push(("WAL written (mean)".into(), human_rate(w)));
    }
    glance.push((
        "checkpoints during the test".into(),
        if run
            .metrics
            .iter()
            .any(|m| m.metric.starts_with("pg.checkpointer."))
        {
            format!(
                "{}{}",
                markers.len(),
                if markers.is_empty() {
                    String::new()
                } else {
                    format!(
                        " (at {} s)",
                        markers
                            .iter()
                            .map(|m| format!("{m:.1}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            )
        } else {
            "not sampled".into()
        },
    ));
    let disk_util: Vec<(&str, f64)> = names
        .iter()
        .filter(|n| n.ends_with(".util_pct"))
        .filter_map(|n| Some((*n, max_of(points.get(n))?)))
        .collect();
    for (n, u) in &disk_util {
        glance.push((format!("{n} (max %)"), format!("{u:.0}")));
        load.disks.push((n.to_string(), *u));
    }
    let waits = activity::wait_shares(&run.metrics);
    if !waits.is_empty() {
        glance.push((
            "top wait events (share of active session time)".into(),
            waits
                .iter()
                .take(3)
                .map(|w| format!("{} {:.0} %", w.label, w.share_pct))
                .collect::<Vec<_>>()
                .join(", "),
        ));
    }
    load.waits = waits
        .iter()
        .map(|w| (w.label.clone(), w.share_pct))
        .collect();
    let hints = limits::hints(&load);
    body.push_str("<h2>What limited this run?</h2>");
    body.push_str(&kv_table(&glance));
    let _ = write!(
        body,
        "<h3>Hints</h3><p class=\"muted\">Rules: {}.</p>",
        escape(limits::RULES)
    );
    body.push_str(&text_list("hints", &hints));
    body
}

/// The palette colour and line of a wait event (`Type:Event`, or `CPU`) of a server of
/// `version_num`, the same on every chart and page, whatever the version calls it
/// (`IO:WalSync` on 17 and later has the colour of `IO:WALSync`): the common events
/// have a colour of their own and a solid line; the others a colour derived from the
/// name and a dashed line, so that one never looks like a common one.
fn wait_style(label: &str, version_num: Option<i64>) -> (usize, Dash) {
    const KNOWN: [&str; 8] = [
        "CPU",
        "IO:WALSync",
        "Lock:transactionid",
        "Client:ClientRead",
        "LWLock:WALWrite",
        "IO:DataFileRead",
        "Lock:tuple",
        "LWLock:BufferContent",
    ];
    let label = activity::wait_label_before_17(label, version_num);
    match KNOWN.iter().position(|k| *k == label) {
        Some(i) => (i, Dash::Solid),
        None => {
            // FNV-1a: stable across runs and builds, unlike the standard hasher.
            let h = label.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
            ((h % KNOWN.len() as u64) as usize, Dash::Dashed)
        }
    }
}

/// WAL written per second (MB/s) from the metric `name`, with why it falls after the
/// test's start.
fn wal_chart(drawn: &Drawn<'_>, name: &str, mk: ChartMaker<'_>) -> LineChart {
    let s = Series::line(
        "WAL",
        drawn.points[name]
            .iter()
            .map(|(x, v)| (*x, v / 1e6))
            .collect(),
    );
    mk(
        "WAL written",
        "MB/s",
        vec![s],
        format!(
            "from {name}{}; after the checkpoint that precedes the test, the first change to \
             each page writes the whole page to the WAL (full_page_writes), so WAL per second \
             starts high and falls as pages are changed again",
            if is_flushed_counter_rate(name) {
                format!(" ({})", drawn.flush_note(name))
            } else {
                String::new()
            }
        ),
    )
}

/// The CPU charts of a test: each host's CPU by state, and who used the server host's.
fn cpu_charts(
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

/// The charts of what limited the run: throughput, latency percentiles, CPU, commit
/// rates, WAL, schedule lag, failures.
fn limits_charts(
    run: &LoadedRun,
    view: &IntervalView<'_>,
    drawn: &Drawn<'_>,
    cpus: &HostCpus,
    wal_name: Option<&str>,
    mk: ChartMaker<'_>,
    n: &mut usize,
) -> String {
    let points = &drawn.points;
    let rec = &run.run.record;
    let tps_series = view.tps();
    let mut body = String::new();
    body.push_str("<div class=\"charts\">");
    let note = view.note();
    body.push_str(&chart_div(
        &mk(
            "Throughput",
            "transactions per second (tps)",
            vec![tps_series.clone()],
            note.clone(),
        ),
        n,
    ));
    body.push_str(&chart_div(
        &mk(
            "Latency percentiles per interval",
            "latency (ms)",
            latency_series(view),
            note.clone(),
        ),
        n,
    ));
    body.push_str(&cpu_charts(cpus, points, mk, n));
    let mut rates: Vec<Series> = Vec::new();
    if let Some(s) = metric_series(points, "pg.db.xact_commit_per_s", "server commits/s") {
        rates.push(s);
    }
    if let Some(mut s) = metric_series(points, "pg.db.xact_rollback_per_s", "server rollbacks/s") {
        s.dash = Dash::Dotted;
        rates.push(s);
    }
    if !rates.is_empty() {
        let mut t = tps_series.clone();
        t.name = "client tps".into();
        t.dash = Dash::Dashed;
        rates.insert(0, t);
        body.push_str(&chart_div(
            &mk(
                "Commits per second, server and client",
                "transactions per second (1/s)",
                rates,
                format!(
                    "server: pg_stat_database, {}; client: per interval",
                    drawn.flush_note("pg.db.xact_commit_per_s")
                ),
            ),
            n,
        ));
    }
    if let Some(name) = wal_name {
        body.push_str(&chart_div(&wal_chart(drawn, name, mk), n));
    }
    if rec.rate.is_some() {
        let mut max = view.series("max", |i| i.lag_max_ms);
        max.dash = Dash::Dashed;
        body.push_str(&chart_div(
            &mk(
                "Schedule lag",
                "lag (ms)",
                vec![view.series("mean", |i| i.lag_mean_ms), max],
                note.clone(),
            ),
            n,
        ));
    }
    let failures_seen = view.slots.iter().flatten().any(|(_, i)| {
        i.failures.unwrap_or(0) + i.retried.unwrap_or(0) + i.skipped.unwrap_or(0) > 0
    });
    if failures_seen {
        let per_s = |v: Option<i64>, i: &IntervalRecord| v.map(|v| v as f64 / i.duration_s);
        let mut retried = view.series("retried", |i| per_s(i.retried, i));
        retried.dash = Dash::Dashed;
        let mut skipped = view.series("skipped", |i| per_s(i.skipped, i));
        skipped.dash = Dash::Dotted;
        body.push_str(&chart_div(
            &mk(
                "Failures, retries and skips",
                "transactions per second (1/s)",
                vec![
                    view.series("failed", |i| per_s(i.failures, i)),
                    retried,
                    skipped,
                ],
                note.clone(),
            ),
            n,
        ));
    }
    body.push_str("</div>");
    if !failures_seen {
        body.push_str(
            "<p class=\"muted\">No failed, retried or skipped transaction in any interval.</p>",
        );
    }

    body
}

/// The latency percentiles per interval that were stored (p50, p90, p99, max), one line
/// style each.
fn latency_series(view: &IntervalView<'_>) -> Vec<Series> {
    let mut lat: Vec<Series> = ["p50", "p90", "p99", "max"]
        .into_iter()
        .enumerate()
        .map(|(k, label)| {
            let mut s = view.series(label, |i| match k {
                0 => i.latency_p50_ms,
                1 => i.latency_p90_ms,
                2 => i.latency_p99_ms,
                _ => i.latency_max_ms,
            });
            s.dash = Dash::nth(k);
            s
        })
        .collect();
    lat.retain(|s| s.is_drawn());
    lat
}

/// Every sampled metric: one chart per family and unit. When server and client share a
/// host (`shared`), its CPU is drawn once (`os.cpu`, not again as `client.cpu`); a CPU
/// state keeps the colour and dash it has on the CPU charts above.
fn all_metrics_section(
    version_num: Option<i64>,
    names: &BTreeSet<&str>,
    shared: bool,
    drawn: &Drawn<'_>,
    info: &BTreeMap<String, MetricInfo>,
    mk: ChartMaker<'_>,
    n: &mut usize,
) -> String {
    let points = &drawn.points;
    let mut body = String::new();
    let mut families: BTreeMap<(String, String), Vec<&str>> = BTreeMap::new();
    for name in names {
        if shared && name.starts_with("client.cpu.") {
            continue;
        }
        families
            .entry((metric_family(name, info), metric_unit(name, info)))
            .or_default()
            .push(name);
    }
    // A family whose every sample is zero draws nothing worth a chart: one line names them.
    let is_zero = |name: &&str| points[*name].iter().all(|p| !p.1.is_finite() || p.1 == 0.0);
    let mut all_zero: Vec<&str> = Vec::new();
    families.retain(|_, members| {
        if members.iter().all(is_zero) {
            all_zero.extend(members.iter());
            false
        } else {
            true
        }
    });
    if !families.is_empty() || !all_zero.is_empty() {
        body.push_str("<h2>All sampled metrics</h2>");
        if !all_zero.is_empty() {
            let _ = write!(
                body,
                "<p class=\"muted\">Zero throughout the test (not drawn): {}.</p>",
                escape(&all_zero.join(", "))
            );
        }
        body.push_str("<div class=\"charts\">");
        for ((family, unit), members) in &families {
            let series: Vec<Series> = members
                .iter()
                .enumerate()
                .map(|(k, name)| {
                    // A wait event is spelled and coloured as in "where the time goes".
                    if let Some(label) = activity::wait_label(name) {
                        let mut s = Series::line(&label, points[name].clone());
                        let (colour, dash) = wait_style(&label, version_num);
                        (s.color, s.dash) = (Some(colour), dash);
                        return s;
                    }
                    let short = name
                        .strip_prefix(family.as_str())
                        .map(|s| s.trim_start_matches('.'))
                        .filter(|s| !s.is_empty())
                        .unwrap_or(name);
                    let mut s = Series::line(short, points[name].clone());
                    s.dash = Dash::nth(k / 8);
                    if let Some((colour, dash)) = cpu_state_style(name) {
                        (s.color, s.dash) = (Some(colour), dash);
                    }
                    s
                })
                .collect();
            let note = if let Some(m) = members.iter().find(|m| is_flushed_counter_rate(m)) {
                format!("rates of {}", drawn.flush_note(m))
            } else {
                String::new()
            };
            body.push_str(&chart_div(
                &mk(&format!("{family} ({unit})"), unit, series, note),
                n,
            ));
        }
        body.push_str("</div>");
    }

    body
}

/// The options the test ran with.
fn options_section(run: &LoadedRun) -> String {
    let rec = &run.run.record;
    let mut body = String::new();
    if let Some(opts) = rec.options.as_ref().and_then(|o| o.as_object()) {
        body.push_str("<h2>Options</h2>");
        let rows: Vec<(String, String)> = opts
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| v.to_string()),
                )
            })
            .collect();
        body.push_str(&kv_table(&rows));
    }
    body
}

/// The scripts, with their weights.
fn scripts_section(run: &LoadedRun) -> String {
    let rec = &run.run.record;
    let mut body = String::new();
    if let Some(scripts) = rec.scripts.as_ref().and_then(|s| s.as_array()) {
        body.push_str("<h2>Scripts</h2>");
        for sc in scripts {
            let name = sc.get("name").and_then(|v| v.as_str()).unwrap_or("?");
            let weight = sc.get("weight").map(|v| v.to_string()).unwrap_or_default();
            let text = sc.get("text").and_then(|v| v.as_str()).unwrap_or("");
            let _ = write!(
                body,
                "<h3>{} (weight {})</h3><pre>{}</pre>",
                escape(name),
                escape(&weight),
                escape(text)
            );
        }
    }
    body
}

/// The server counters sampled before and after the test.
fn counters_section(run: &LoadedRun) -> String {
    let mut body = String::new();
    if !run.counters.is_empty() {
        body.push_str("<h2>Server counters (before → after)</h2>");
        let rows: Vec<Vec<String>> = run
            .counters
            .iter()
            .map(|c| {
                vec![
                    escape(&c.name),
                    num(c.before_value.unwrap_or(f64::NAN), 0),
                    num(c.after_value.unwrap_or(f64::NAN), 0),
                    num(c.delta.unwrap_or(f64::NAN), 0),
                ]
            })
            .collect();
        body.push_str(&table(
            &["counter", "before", "after", "delta"].map(String::from),
            &rows,
        ));
    }
    body
}

/// The server's non-default settings (masked again on display).
fn settings_section(run: &LoadedRun) -> String {
    let mut body = String::new();
    if !run.settings.is_empty() {
        body.push_str("<h2>Non-default settings</h2>");
        let rows: Vec<Vec<String>> = run
            .settings
            .iter()
            .map(|s| {
                // Masked again on display: a store written elsewhere may hold a
                // credential in a setting.
                let shown = |v: &Option<String>| {
                    escape(&pgsurge_store::redact_text(v.as_deref().unwrap_or("")))
                };
                vec![
                    escape(&s.name),
                    shown(&s.setting),
                    escape(s.unit.as_deref().unwrap_or("")),
                    escape(s.source.as_deref().unwrap_or("")),
                    shown(&s.boot_val),
                ]
            })
            .collect();
        body.push_str(&table(
            &["name", "setting", "unit", "source", "boot value"].map(String::from),
            &rows,
        ));
    }
    body
}

/// What each transaction of the test cost (server and client CPU, context switches,
/// WAL, buffers, temporary bytes), and what could not be measured.
fn costs_section(run: &LoadedRun) -> String {
    let Some(costs) = run.run.txn_costs() else {
        return String::new();
    };
    let mut body = format!(
        "<h2>Per-transaction costs</h2><p class=\"muted\">Over the measured window's {} \
         transactions.</p>",
        costs.transactions
    );
    let rows: Vec<Vec<String>> = costs
        .costs
        .iter()
        .map(|c| {
            let kind = pgsurge_results::costs::cost_kind(&c.name);
            vec![
                escape(&c.name),
                num(c.per_txn, 3),
                escape(kind.map_or("", |k| k.unit)),
                num(c.total, 0),
                escape(kind.map_or("", |k| k.description)),
            ]
        })
        .collect();
    body.push_str(&table(
        &["cost", "per transaction", "unit", "total", "what"].map(String::from),
        &rows,
    ));
    if !costs.unavailable.is_empty() {
        body.push_str(&text_list("not measured", &costs.unavailable));
    }
    body
}

/// The environment the test ran in (redacted).
fn environment_section(run: &LoadedRun) -> String {
    let mut body = String::new();
    if let Some(env) = &run.environment {
        body.push_str("<h2>Environment</h2>");
        let mut rows = Vec::new();
        flatten_json("", &pgsurge_store::redact_json(env), &mut rows);
        body.push_str(&kv_table(&rows));
    }
    body
}

/// Builds a chart on the page's time axis: (title, y label, series, note).
pub(crate) type ChartMaker<'a> = &'a dyn Fn(&str, &str, Vec<Series>, String) -> LineChart;

/// Wait events drawn on the page's chart (the rest are in the table).
const WAIT_SERIES: usize = 6;

/// "Where the time goes": the test's active sessions by wait event (table and chart,
/// from the `pg.wait.*` samples) and its top statements (from `pg_stat_statements`,
/// stored as facts); each says so when it was not recorded.
fn where_time_goes(
    run: &LoadedRun,
    points: &BTreeMap<&str, Vec<(f64, f64)>>,
    mk: ChartMaker<'_>,
    n: &mut usize,
) -> String {
    let mut body = String::from("<h2>Where the time goes</h2><h3>Wait events</h3>");
    let shares = activity::wait_shares(&run.metrics);
    if shares.is_empty() {
        body.push_str(
            "<p class=\"muted\">No wait events were sampled for this test (PostgreSQL \
             sampling off, no active session seen, or recorded before wait sampling).</p>",
        );
    } else {
        body.push_str(
            "<p class=\"muted\">Active sessions of the benchmark database by \
             <code>wait_event_type:wait_event</code>, from <code>pg_stat_activity</code> \
             sampled several times a second; CPU = active without a wait event (running, or \
             waiting for a CPU). Share = part of all active session time.</p>",
        );
        let rows: Vec<Vec<String>> = shares
            .iter()
            .map(|w| {
                vec![
                    escape(&w.label),
                    num(w.mean_sessions, 2),
                    num(w.session_s, 1),
                    format!("{} %", num(w.share_pct, 1)),
                ]
            })
            .collect();
        body.push_str(&table(
            &[
                "wait event",
                "mean active sessions",
                "session-seconds",
                "share of active time",
            ]
            .map(String::from),
            &rows,
        ));
        let series: Vec<Series> = shares
            .iter()
            .take(WAIT_SERIES)
            .filter_map(|w| {
                let mut s = Series::line(&w.label, points.get(w.metric.as_str())?.clone());
                let (colour, dash) = wait_style(&w.label, run.run.record.server_version_num);
                (s.color, s.dash) = (Some(colour), dash);
                Some(s)
            })
            .collect();
        let note = if shares.len() > WAIT_SERIES {
            format!(
                "the {WAIT_SERIES} largest of {} wait events; mean over each second",
                shares.len()
            )
        } else {
            "mean over each second".to_string()
        };
        body.push_str("<div class=\"charts\">");
        body.push_str(&chart_div(
            &mk("Active sessions by wait event", "sessions", series, note),
            n,
        ));
        body.push_str("</div>");
    }
    body.push_str("<h3>Top statements</h3>");
    match activity::statements(&run.facts) {
        Statements::NotRecorded => body.push_str(
            "<p class=\"muted\">Statement statistics were not recorded for this test.</p>",
        ),
        Statements::None(why) => {
            let _ = write!(
                body,
                "<p class=\"muted\">No statement statistics: {}.</p>",
                escape(&why)
            );
        }
        Statements::Top { source, top } => {
            let _ = write!(
                body,
                "<p class=\"muted\">The benchmark database's statements with the most \
                 execution time during the test (deltas of {}).</p>",
                escape(&source)
            );
            let rows: Vec<Vec<String>> = top
                .iter()
                .map(|t| {
                    vec![
                        format!("<code>{}</code>", escape(&t.query)),
                        t.calls.to_string(),
                        num(t.total_ms, 1),
                        num(t.mean_ms, 3),
                        t.rows.to_string(),
                        t.share_pct
                            .map(|p| format!("{} %", num(p, 1)))
                            .unwrap_or_else(|| "–".into()),
                    ]
                })
                .collect();
            if rows.is_empty() {
                body.push_str("<p class=\"muted\">No statement ran during the test.</p>");
            } else {
                body.push_str(&table(
                    &[
                        "query",
                        "calls",
                        "total ms",
                        "mean ms",
                        "rows",
                        "share of time",
                    ]
                    .map(String::from),
                    &rows,
                ));
            }
        }
    }
    body
}

/// Flattens a JSON document into dotted-key rows for a table.
fn flatten_json(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten_json(&key, v, out);
            }
        }
        serde_json::Value::Array(a) if a.iter().any(|x| x.is_object()) => {
            for (i, v) in a.iter().enumerate() {
                flatten_json(&format!("{prefix}[{i}]"), v, out);
            }
        }
        serde_json::Value::String(s) => out.push((prefix.to_string(), s.clone())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(elapsed: f64, dur: f64, tx: i64, warmup: bool) -> IntervalRecord {
        IntervalRecord {
            ts: 1000.0 + elapsed,
            elapsed_s: elapsed,
            duration_s: dur,
            warmup,
            transactions: tx,
            // What the engine stores: a rate over the nominal second, wrong for a
            // partial interval; the page must not use it.
            tps: tx as f64,
            latency_p99_ms: (tx > 0).then_some(2.0),
            ..Default::default()
        }
    }

    fn same(a: &[(f64, f64)], b: &[(f64, f64)]) -> bool {
        a.len() == b.len()
            && a.iter().zip(b).all(|(p, q)| {
                (p.0.is_nan() && q.0.is_nan() || (p.0 - q.0).abs() < 1e-9)
                    && (p.1.is_nan() && q.1.is_nan() || (p.1 - q.1).abs() < 1e-9)
            })
    }

    #[test]
    fn intervals_are_scaled_to_their_length_and_short_ones_left_out() {
        let intervals = vec![
            iv(-2.0, 1.0, 50, true),
            iv(-1.0, 1.0, 60, true),
            iv(0.0, 1.0, 100, false),
            iv(1.0, 1.0, 0, false),
            iv(2.0, 1.0, 120, false),
            // 3.0..4.0 missing from the store
            iv(4.0, 1.0, 110, false),
            iv(5.0, 0.6, 66, false),
            iv(5.6, 0.041, 4, false),
        ];
        assert_eq!(time_base(&intervals, Some(990.0)), 1000.0);
        let view = interval_view(&intervals);
        let tps = view.tps();
        let nan = f64::NAN;
        let expected = [
            (0.5, 100.0),
            (1.5, 0.0),
            (2.5, 120.0),
            (nan, nan),
            (4.5, 110.0),
            (5.3, 110.0),
        ];
        assert!(same(&tps.points, &expected), "{:?}", tps.points);
        assert_eq!(view.left_out, [(5.6, 0.041)]);
        assert_eq!(view.warmup, 2);
        let note = view.note();
        assert!(
            note.contains("5.60 s left out") && note.contains("2 warm-up"),
            "{note}"
        );
        // A zero-transaction interval has no latency: missing, not zero.
        let p99 = view.series("p99", |i| i.latency_p99_ms);
        assert!(p99.points[1].1.is_nan() && p99.points[0].1 == 2.0);
        // What is drawn equals what is stored: the chart's polylines hold exactly the
        // finite points, split at the gaps.
        let chart = LineChart {
            title: "t".into(),
            y_label: "tps".into(),
            series: vec![tps],
            ..Default::default()
        };
        assert_eq!(crate::charts::tests::polylines(&chart.to_svg()), [3, 2]);
    }

    #[test]
    fn metrics_share_the_time_base_and_gaps_break_lines() {
        let m = |ts: f64, metric: &str, value: f64| MetricSample {
            ts,
            metric: metric.into(),
            value,
        };
        let metrics = vec![
            m(1000.5, "os.cpu.user_pct", 0.0),
            m(1001.0, "os.cpu.user_pct", 50.0),
            m(1001.5, "os.cpu.user_pct", 0.0),
            m(1002.5, "os.cpu.user_pct", 40.0),
            m(1003.0, "os.cpu.user_pct", 45.0),
            m(1002.0, "pg.checkpointer.requested_per_s", 0.0),
            m(1003.0, "pg.checkpointer.requested_per_s", 1.0),
        ];
        let pts = metric_points(&metrics, 1000.0);
        let nan = f64::NAN;
        assert!(same(
            &pts["os.cpu.user_pct"],
            &[
                (0.5, 0.0),
                (1.0, 50.0),
                (1.5, 0.0),
                (nan, nan),
                (2.5, 40.0),
                (3.0, 45.0)
            ]
        ));
        assert_eq!(checkpoint_moments(&metrics, 1000.0), [3.0]);
    }

    #[test]
    fn cpu_families_and_units_come_from_the_names() {
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
        let none = BTreeMap::new();
        assert_eq!(metric_unit("pg.db.size_bytes", &none), "bytes");
        assert_eq!(metric_unit("pg.wal.lsn_bytes_per_s", &none), "bytes/s");
        assert_eq!(metric_unit("pg.db.xact_commit_per_s", &none), "1/s");
        assert_eq!(metric_unit("os.disk.vda.await_ms", &none), "ms");
        assert_eq!(metric_unit("os.disk.vda.write_mbps", &none), "MB/s");
        assert_eq!(metric_unit("os.ctxt_per_s", &none), "1/s");
    }

    #[test]
    fn batch_published_counters_are_drawn_as_a_moving_average_without_their_ends() {
        assert!(is_flushed_counter_rate("pg.db.xact_commit_per_s"));
        assert!(is_flushed_counter_rate("pg.wal.bytes_per_s"));
        assert!(!is_flushed_counter_rate("pg.wal.lsn_bytes_per_s"));
        assert!(!is_flushed_counter_rate("pg.db.size_bytes"));
        assert!(!is_flushed_counter_rate("os.cpu.user_pct"));
        // A steady 100/s published in batches: nothing in the first second, two
        // seconds' worth every other second, and a burst when the backends exit.
        let sampled = [
            (1.0, 0.0),
            (2.0, 200.0),
            (3.0, 0.0),
            (4.0, 200.0),
            (5.0, 0.0),
            (6.0, 200.0),
            (7.0, 0.0),
            (8.0, 300.0),
        ];
        let drawn = smooth_flushed(&sampled);
        let xs: Vec<f64> = drawn.iter().map(|p| p.0).collect();
        assert_eq!(xs, [2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
        // Inside, each point is the mean of its neighbours within 1.5 s (the ends
        // left out): at most a third away from the steady rate, where the samples
        // swing from 0 to twice of it.
        for (x, v) in &drawn[1..drawn.len() - 1] {
            assert!((v - 100.0).abs() <= 100.0 / 3.0 + 1e-9, "{x}: {v}");
        }
        // A gap stays a gap.
        let gap = smooth_flushed(&[
            (1.0, 1.0),
            (2.0, 5.0),
            (f64::NAN, f64::NAN),
            (4.0, 5.0),
            (5.0, 9.0),
        ]);
        assert_eq!(gap.len(), 3);
        assert!(gap[1].0.is_nan());
        assert_eq!((gap[0].1, gap[2].1), (5.0, 5.0));
        assert!(smooth_flushed(&[]).is_empty());
    }

    #[test]
    fn a_short_test_s_server_counters_are_drawn_over_the_whole_test() {
        // Four samples of a 4-second test: a 3-second average would leave its middle
        // as one flat stretch; drawn as steps, each sample covers its own second.
        let short = vec![(1.0, 0.0), (2.0, 1800.0), (3.0, 200.0), (4.0, 1600.0)];
        let points: BTreeMap<&str, Vec<(f64, f64)>> = [
            ("pg.db.xact_commit_per_s", short),
            ("os.cpu.user_pct", vec![(1.0, 5.0)]),
        ]
        .into_iter()
        .collect();
        let drawn = drawn_points(&points);
        assert!(drawn.as_sampled.contains("pg.db.xact_commit_per_s"));
        let commits = &drawn.points["pg.db.xact_commit_per_s"];
        assert_eq!(commits.first(), Some(&(0.0, 0.0)));
        assert_eq!(commits.last(), Some(&(4.0, 1600.0)));
        assert_eq!(commits.len(), 8, "{commits:?}");
        assert_eq!(
            drawn.flush_note("pg.db.xact_commit_per_s"),
            FLUSH_NOTE_SHORT
        );
        assert_eq!(drawn.points["os.cpu.user_pct"], [(1.0, 5.0)]);
        // A long test keeps the moving average.
        let long: Vec<(f64, f64)> = (1..=20).map(|i| (f64::from(i), 100.0)).collect();
        let points: BTreeMap<&str, Vec<(f64, f64)>> =
            [("pg.db.xact_commit_per_s", long)].into_iter().collect();
        let drawn = drawn_points(&points);
        assert!(drawn.as_sampled.is_empty());
        assert_eq!(drawn.points["pg.db.xact_commit_per_s"].len(), 18);
        assert_eq!(drawn.flush_note("pg.db.xact_commit_per_s"), FLUSH_NOTE);
    }

    #[test]
    fn the_wal_flush_has_one_colour_whatever_the_version_calls_it() {
        assert_eq!(
            wait_style("IO:WalSync", Some(180001)),
            wait_style("IO:WALSync", Some(150001))
        );
        assert_eq!(wait_style("IO:WALSync", Some(150001)), (1, Dash::Solid));
    }
}
