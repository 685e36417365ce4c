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

//!
//! | module | owns |
//! |---|---|
//! | this file | the page in its order, its summary (with the steady state) and the time axis every chart shares |
//! | `timeline` | the time base, the measured intervals as drawn, sampled metrics as points, checkpoint moments |
//! | `flushed` | how the rates of counters published in batches are drawn (moving average or steps) |
//! | `cpu` | the hosts' CPU: families from the names, who used the server host's CPU, CPU rows and charts |
//! | `limits` | "what limited this run?": its table, hints and charts |
//! | `waits` | "where the time goes": wait events and top statements, each wait event's colour |
//! | `all_metrics` | every sampled metric, one chart per family and unit |
//! | `tables` | options, scripts, per-transaction costs, counters, settings, environment |

mod all_metrics;
mod cpu;
mod flushed;
mod limits;
mod tables;
mod timeline;
mod waits;

use crate::cells::CellKey;
use crate::charts::{LineChart, Series};
use crate::html::{escape, kv_table, num, page};
use pgsurge_store::{LoadedRun, MetricInfo};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use all_metrics::all_metrics_section;
use cpu::{cpu_by_user, cpu_families, shared_host, HostCpus};
use flushed::drawn_points;
use limits::{limits_charts, limits_section};
use tables::{
    costs_section, counters_section, environment_section, options_section, scripts_section,
    settings_section,
};
use timeline::{checkpoint_moments, interval_view, metric_points, time_base, IntervalView};
use waits::where_time_goes;

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
