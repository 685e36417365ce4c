//! "What limited this run?": the table of throughput spread, CPU, client threads,
//! commits, WAL, checkpoints, disks and waits with the hints of
//! `pgsurge_analysis::limits`, and the charts beneath it (throughput, latency
//! percentiles, CPU, commits, WAL, schedule lag, failures).

use super::cpu::{cpu_charts, cpu_glance, HostCpus};
use super::flushed::{is_flushed_counter_rate, Drawn};
use super::timeline::{latency_series, metric_series, IntervalView};
use crate::charts::{chart_div, ChartMaker};
use crate::charts::{Dash, LineChart, Series};
use crate::html::{escape, kv_table, text_list};
use pgsurge_analysis::{describe, limits};
use pgsurge_store::activity;
use pgsurge_store::{IntervalRecord, LoadedRun};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// `1.23 MB/s` style (decimal units), for byte rates.
pub(super) fn human_rate(bytes_per_s: f64) -> String {
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
pub(super) fn finite_values(points: Option<&Vec<(f64, f64)>>) -> Option<Vec<f64>> {
    let v: Vec<f64> = points?
        .iter()
        .map(|p| p.1)
        .filter(|v| v.is_finite())
        .collect();
    (!v.is_empty()).then_some(v)
}

pub(super) fn mean_of(points: Option<&Vec<(f64, f64)>>) -> Option<f64> {
    finite_values(points).map(|v| describe::mean(&v))
}

pub(super) fn min_of(points: Option<&Vec<(f64, f64)>>) -> Option<f64> {
    finite_values(points).map(|v| describe::min(&v))
}

pub(super) fn max_of(points: Option<&Vec<(f64, f64)>>) -> Option<f64> {
    finite_values(points).map(|v| describe::max(&v))
}

/// "What limited this run?": throughput spread, CPU, client threads, commits, WAL,
/// checkpoints, disks and waits at a glance, with the hints the rules give.
pub(super) fn limits_section(
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

/// WAL written per second (MB/s) from the metric `name`, with why it falls after the
/// test's start.
pub(super) fn wal_chart(drawn: &Drawn<'_>, name: &str, mk: ChartMaker<'_>) -> LineChart {
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

/// The charts of what limited the run: throughput, latency percentiles, CPU, commit
/// rates, WAL, schedule lag, failures.
pub(super) fn limits_charts(
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
