//! The page of one test: per-second throughput, latency percentiles, lag and failures,
//! OS and PostgreSQL metrics with checkpoint moments marked, and the tables of options,
//! scripts, server counters, non-default settings and the environment manifest.

use crate::cells::CellKey;
use crate::charts::{LineChart, Series};
use crate::html::{escape, kv_table, num, page, table};
use crate::pages::{chart_div, MetricSeries};
use pgsurge_store::LoadedRun;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// Vertical markers: the moments a checkpoint was counted. The lab stores the
/// checkpointer's counters (`pg.checkpointer.timed` / `.requested`, whichever view the
/// server version has) as per-second rates (`…_per_s`): a sample with a positive rate
/// marks a checkpoint; a cumulative counter marks where it increased.
fn checkpoint_moments(run: &LoadedRun, t0: f64) -> Vec<f64> {
    const COUNTERS: [&str; 2] = ["pg.checkpointer.timed", "pg.checkpointer.requested"];
    let mut out = BTreeSet::new();
    let mut cumulative: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    for m in &run.metrics {
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

pub(crate) fn run_page(run: &LoadedRun, set_name: &str) -> (String, usize) {
    let rec = &run.run.record;
    let mut n = 0;
    let mut body = String::new();
    let t0 = rec
        .start_epoch
        .or_else(|| run.intervals.first().map(|i| i.ts))
        .or_else(|| run.metrics.first().map(|m| m.ts))
        .unwrap_or(0.0);
    let markers = checkpoint_moments(run, t0);
    let summary = vec![
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
        (
            "command line".into(),
            rec.command_line.clone().unwrap_or_default(),
        ),
    ];
    body.push_str("<h2>Summary</h2>");
    body.push_str(&kv_table(&summary));
    if !run.warnings.is_empty() {
        body.push_str("<ul>");
        for w in &run.warnings {
            let _ = write!(body, "<li class=\"warn\">{}</li>", escape(&w.message));
        }
        body.push_str("</ul>");
    }

    body.push_str("<h2>Per second</h2><div class=\"charts\">");
    let iv = &run.intervals;
    let pts = |f: &dyn Fn(&pgsurge_store::IntervalRecord) -> Option<f64>| -> Vec<(f64, f64)> {
        iv.iter()
            .filter_map(|i| f(i).map(|v| (i.elapsed_s, v)))
            .collect()
    };
    let mk = |title: &str, y: &str, series: Vec<Series>| LineChart {
        title: title.into(),
        x_label: "seconds".into(),
        y_label: y.into(),
        series,
        markers: markers.clone(),
        marker_label: "checkpoint".into(),
        y_from_zero: true,
    };
    let s = |name: &str, points: Vec<(f64, f64)>| Series {
        name: name.into(),
        points,
        band: vec![],
    };
    body.push_str(&chart_div(
        &mk("Throughput", "tps", vec![s("tps", pts(&|i| Some(i.tps)))]),
        &mut n,
    ));
    body.push_str(&chart_div(
        &mk(
            "Latency percentiles",
            "ms",
            vec![
                s("p50", pts(&|i| i.latency_p50_ms)),
                s("p90", pts(&|i| i.latency_p90_ms)),
                s("p99", pts(&|i| i.latency_p99_ms)),
                s("max", pts(&|i| i.latency_max_ms)),
            ],
        ),
        &mut n,
    ));
    if rec.rate.is_some() {
        body.push_str(&chart_div(
            &mk(
                "Schedule lag",
                "ms",
                vec![
                    s("mean", pts(&|i| i.lag_mean_ms)),
                    s("max", pts(&|i| i.lag_max_ms)),
                ],
            ),
            &mut n,
        ));
    }
    body.push_str(&chart_div(
        &mk(
            "Failures, retries and skips",
            "transactions",
            vec![
                s("failed", pts(&|i| i.failures.map(|v| v as f64))),
                s("retried", pts(&|i| i.retried.map(|v| v as f64))),
                s("skipped", pts(&|i| i.skipped.map(|v| v as f64))),
            ],
        ),
        &mut n,
    ));
    body.push_str("</div>");

    // OS and PostgreSQL metrics, one chart per category.
    let mut by_category: BTreeMap<String, MetricSeries> = BTreeMap::new();
    for m in &run.metrics {
        let category = m
            .metric
            .rsplit_once('.')
            .map(|(c, _)| c)
            .unwrap_or(&m.metric)
            .to_string();
        by_category
            .entry(category)
            .or_default()
            .entry(m.metric.as_str())
            .or_default()
            .push((m.ts - t0, m.value));
    }
    if !by_category.is_empty() {
        body.push_str("<h2>System and server metrics</h2><div class=\"charts\">");
        for (category, metrics) in &by_category {
            let series = metrics
                .iter()
                .map(|(name, points)| {
                    let mut points = points.clone();
                    points.sort_by(|a, b| a.0.total_cmp(&b.0));
                    Series {
                        name: name.rsplit('.').next().unwrap_or(name).to_string(),
                        points,
                        band: vec![],
                    }
                })
                .collect();
            body.push_str(&chart_div(&mk(category, "", series), &mut n));
        }
        body.push_str("</div>");
    }

    // Options, scripts, settings, environment.
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
    if !run.settings.is_empty() {
        body.push_str("<h2>Non-default settings</h2>");
        let rows: Vec<Vec<String>> = run
            .settings
            .iter()
            .map(|s| {
                vec![
                    escape(&s.name),
                    escape(s.setting.as_deref().unwrap_or("")),
                    escape(s.unit.as_deref().unwrap_or("")),
                    escape(s.source.as_deref().unwrap_or("")),
                    escape(s.boot_val.as_deref().unwrap_or("")),
                ]
            })
            .collect();
        body.push_str(&table(
            &["name", "setting", "unit", "source", "boot value"].map(String::from),
            &rows,
        ));
    }
    if let Some(env) = &run.environment {
        body.push_str("<h2>Environment</h2>");
        let mut rows = Vec::new();
        flatten_json("", env, &mut rows);
        body.push_str(&kv_table(&rows));
    }
    let title = format!("Test #{} — {}", run.run.id, CellKey::of(&run.run).label());
    (
        page(&title, "<a href=\"index.html\">← report index</a>", &body),
        n,
    )
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
