//! The matrix charts and tables of the index: throughput and latency against clients
//! and scale, against the target rate, and the scale × clients tables, each line with
//! the look its target (or workload) keeps across the report.

use crate::cells::{trim_float, Cell};
use crate::charts::{chart_div, Dash, LineChart, Marker, Series, XScale};
use crate::html::{escape, num, table};
use pgsurge_store::Set;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// A point of a matrix line: x, y, and the optional (low, high) band around y.
pub(super) type BandPoint = (f64, f64, Option<(f64, f64)>);

/// Series grouping of the matrix charts: one line per (set, target, workload, extra).
pub(super) fn line_name(sets: &[Set], c: &Cell, extra: &str) -> String {
    let set = sets
        .iter()
        .find(|s| s.id == c.set_id)
        .map(|s| s.record.name.as_str())
        .unwrap_or("?");
    let mut parts = vec![];
    if sets.len() > 1 {
        parts.push(set.to_string());
    }
    if !c.target.is_empty() {
        parts.push(c.target.clone());
    }
    parts.push(c.key.script.clone());
    if c.key.query_mode != "simple" {
        parts.push(c.key.query_mode.clone());
    }
    if !extra.is_empty() {
        parts.push(extra.to_string());
    }
    parts.join(" · ")
}

/// Builds a chart whose lines group cells by `group` and place them at x = `x`. Each
/// line gets its colour and marker from `style_of` (of its cells), so a target keeps
/// its look across the charts of a page; lines of one look in a chart (one target's
/// client counts) differ by their dash.
#[allow(clippy::too_many_arguments)]
pub(super) fn matrix_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    cells: &[&Cell],
    group: impl Fn(&Cell) -> String,
    x: impl Fn(&Cell) -> f64,
    y: impl Fn(&Cell) -> (f64, Option<(f64, f64)>),
    style_of: StyleOf<'_>,
) -> LineChart {
    let mut lines: BTreeMap<String, (usize, Vec<BandPoint>)> = BTreeMap::new();
    for c in cells {
        let (v, band) = y(c);
        lines
            .entry(group(c))
            .or_insert_with(|| (style_of(c), Vec::new()))
            .1
            .push((x(c), v, band));
    }
    let mut same_look: BTreeMap<usize, usize> = BTreeMap::new();
    let series = lines
        .into_iter()
        .map(|(name, (k, mut pts))| {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let nth = same_look.entry(k).or_default();
            let dash = Dash::nth(*nth);
            *nth += 1;
            Series {
                points: pts.iter().map(|p| (p.0, p.1)).collect(),
                band: pts
                    .iter()
                    .filter_map(|p| p.2.map(|(lo, hi)| (p.0, lo, hi)))
                    .collect(),
                name,
                color: Some(k),
                marker: Marker::nth(k),
                dash,
            }
        })
        .collect();
    LineChart {
        title: title.into(),
        x_label: x_label.into(),
        y_label: y_label.into(),
        series,
        y_from_zero: true,
        ..Default::default()
    }
}

/// The look (colour and marker number) of a cell's line.
pub(super) type StyleOf<'a> = &'a dyn Fn(&Cell) -> usize;

/// One colour and marker per target (per set and target when the report holds several
/// sets), the same in every chart of the report. With a single target the lines are
/// told apart instead (one look per workload and query mode).
pub(super) struct LineStyles {
    /// The looks' keys, in order of first appearance: the n-th key has look n.
    keys: Vec<String>,
    by_target: bool,
    several_sets: bool,
}

impl LineStyles {
    pub(super) fn of(sets: &[Set], cells: &[Cell]) -> LineStyles {
        let targets: BTreeSet<(i64, &str)> = cells
            .iter()
            .map(|c| (c.set_id, c.target.as_str()))
            .collect();
        let mut styles = LineStyles {
            keys: Vec::new(),
            by_target: targets.len() > 1,
            several_sets: sets.len() > 1,
        };
        for c in cells {
            let k = styles.key(sets, c);
            if !styles.keys.contains(&k) {
                styles.keys.push(k);
            }
        }
        styles
    }

    fn key(&self, sets: &[Set], c: &Cell) -> String {
        if self.by_target {
            if self.several_sets {
                format!("{}\u{1f}{}", c.set_id, c.target)
            } else {
                c.target.clone()
            }
        } else {
            line_name(sets, c, "")
        }
    }

    /// The look of the line of cell `c`.
    pub(super) fn index(&self, sets: &[Set], c: &Cell) -> usize {
        let k = self.key(sets, c);
        self.keys.iter().position(|n| *n == k).unwrap_or(0)
    }
}

/// Unthrottled cells: throughput and latency percentiles against clients, one pair of
/// charts per scale and workload, and throughput against scale when there are several.
pub(super) fn client_and_scale_charts(
    sets: &[Set],
    cells: &[Cell],
    style_of: StyleOf<'_>,
    n: &mut usize,
) -> String {
    let mut body = String::new();
    let plain: Vec<&Cell> = cells
        .iter()
        .filter(|c| c.key.rate_milli == 0 && !c.tps.is_empty())
        .collect();
    let scales: BTreeSet<i64> = plain.iter().map(|c| c.key.scale).collect();
    if !plain.is_empty() {
        body.push_str("<h2>Throughput and latency against clients</h2><div class=\"charts\">");
        // One panel per scale and workload: workloads differ by orders of magnitude in
        // tps, and on one axis the slower ones would lie flat along the bottom.
        let panels: BTreeSet<(i64, &str)> = plain
            .iter()
            .map(|c| (c.key.scale, c.key.script.as_str()))
            .collect();
        let several_workloads = panels.iter().map(|(_, w)| w).collect::<BTreeSet<_>>().len() > 1;
        for &(scale, workload) in &panels {
            let at: Vec<&Cell> = plain
                .iter()
                .copied()
                .filter(|c| c.key.scale == scale && c.key.script == workload)
                .collect();
            let panel = if several_workloads {
                format!("scale {scale}, {workload}")
            } else {
                format!("scale {scale}")
            };
            let mut chart = matrix_chart(
                &format!("TPS against clients, {panel}"),
                "clients (log₂ axis)",
                "transactions per second (tps)",
                &at,
                |c| line_name(sets, c, ""),
                |c| c.key.clients as f64,
                |c| (c.tps_median, Some((c.tps_min, c.tps_max))),
                style_of,
            );
            chart.x_scale = XScale::Log2;
            chart.note = format!(
                "Points: median of the repeats; band: min–max of the repeats; markers only at \
                 measured client counts.{}",
                single_repeat_note(&at)
            );
            body.push_str(&chart_div(&chart, n));
            let mut lat = LineChart {
                title: format!("Latency percentiles against clients, {panel}"),
                x_label: "clients (log₂ axis)".into(),
                y_label: "latency (ms)".into(),
                y_from_zero: true,
                x_scale: XScale::Log2,
                note: "Exact percentiles over all repeats (merged HDR histograms). Line style: p50 solid, p90 dashed, p99 dotted; colour and marker: the line.".into(),
                ..Default::default()
            };
            for (pick, label) in ["p50", "p90", "p99"].into_iter().enumerate() {
                let mut lines: BTreeMap<String, (usize, Vec<(f64, f64)>)> = BTreeMap::new();
                for c in &at {
                    let p = &c.latency_ms;
                    let v = [p.p50, p.p90, p.p99][pick];
                    lines
                        .entry(line_name(sets, c, ""))
                        .or_insert_with(|| (style_of(c), Vec::new()))
                        .1
                        .push((c.key.clients as f64, v));
                }
                for (name, (k, mut points)) in lines {
                    points.sort_by(|a, b| a.0.total_cmp(&b.0));
                    lat.series.push(Series {
                        name: format!("{name} · {label}"),
                        points,
                        color: Some(k),
                        marker: Marker::nth(k),
                        dash: Dash::nth(pick),
                        ..Default::default()
                    });
                }
            }
            body.push_str(&chart_div(&lat, n));
        }
        body.push_str("</div>");
        if scales.len() > 1 {
            body.push_str("<h2>Throughput against scale</h2><div class=\"charts\">");
            let mut chart = matrix_chart(
                "TPS against scale",
                "scale (log₂ axis)",
                "transactions per second (tps)",
                &plain,
                |c| line_name(sets, c, &format!("c={}", c.key.clients)),
                |c| c.key.scale as f64,
                |c| (c.tps_median, Some((c.tps_min, c.tps_max))),
                style_of,
            );
            chart.x_scale = XScale::Log2;
            chart.note = format!(
                "Median of the repeats; band: min–max.{}",
                single_repeat_note(&plain)
            );
            body.push_str(&chart_div(&chart, n));
            body.push_str("</div>");
        }
    }

    body
}

/// What a chart of cells measured once cannot tell: with a single repeat there is no
/// band, and nothing on the page says how far this machine's numbers move from run to
/// run. Empty when every cell has several repeats.
pub(super) fn single_repeat_note(cells: &[&Cell]) -> &'static str {
    if cells.iter().any(|c| c.tps.len() < 2) {
        " Some points are a single run: no band shows their noise, and a difference \
         between them smaller than this machine's run-to-run spread (measure it with \
         repeats, or an A/A twin) is not a finding."
    } else {
        ""
    }
}

/// Rate-limited cells: p99 latency and achieved throughput against the target rate.
pub(super) fn rate_charts(
    sets: &[Set],
    cells: &[Cell],
    style_of: StyleOf<'_>,
    n: &mut usize,
) -> String {
    let mut body = String::new();
    let rated: Vec<&Cell> = cells
        .iter()
        .filter(|c| c.key.rate_milli != 0 && !c.tps.is_empty())
        .collect();
    if !rated.is_empty() {
        body.push_str("<h2>Latency against target rate</h2><div class=\"charts\">");
        let chart = matrix_chart(
            "p99 latency against target rate",
            "target rate (tps)",
            "p99 latency (ms)",
            &rated,
            |c| line_name(sets, c, &format!("s={} c={}", c.key.scale, c.key.clients)),
            |c| c.key.rate().unwrap_or(0.0),
            |c| (c.latency_ms.p99, None),
            style_of,
        );
        body.push_str(&chart_div(&chart, n));
        let chart = matrix_chart(
            "Achieved TPS against target rate",
            "target rate (tps)",
            "transactions per second",
            &rated,
            |c| line_name(sets, c, &format!("s={} c={}", c.key.scale, c.key.clients)),
            |c| c.key.rate().unwrap_or(0.0),
            |c| (c.tps_median, Some((c.tps_min, c.tps_max))),
            style_of,
        );
        body.push_str(&chart_div(&chart, n));
        body.push_str("</div>");
    }

    body
}

/// Scale × clients tables of median TPS, one per (set, target, workload, rate, mode),
/// each entry linking to its tests.
pub(super) fn scale_clients_tables(sets: &[Set], cells: &[Cell]) -> String {
    let mut body = String::new();
    body.push_str("<h2>Scale × clients (median TPS of repeats)</h2>");
    let all: Vec<&Cell> = cells.iter().collect();
    let note = single_repeat_note(&all);
    if !note.is_empty() {
        let _ = write!(body, "<p class=\"muted\">{}</p>", escape(note.trim()));
    }
    let mut groups: BTreeMap<String, Vec<&Cell>> = BTreeMap::new();
    for c in cells {
        let rate = c
            .key
            .rate()
            .map(|r| format!("R={}", trim_float(r)))
            .unwrap_or_default();
        groups.entry(line_name(sets, c, &rate)).or_default().push(c);
    }
    for (name, group) in &groups {
        let clients: BTreeSet<i64> = group.iter().map(|c| c.key.clients).collect();
        let scales: BTreeSet<i64> = group.iter().map(|c| c.key.scale).collect();
        let _ = write!(body, "<h3>{}</h3>", escape(name));
        let mut header = vec!["scale \\ clients".to_string()];
        header.extend(clients.iter().map(|c| c.to_string()));
        let rows: Vec<Vec<String>> = scales
            .iter()
            .map(|s| {
                let mut row = vec![s.to_string()];
                for cl in &clients {
                    let cell = group
                        .iter()
                        .find(|c| c.key.scale == *s && c.key.clients == *cl);
                    row.push(cell.map(table_entry).unwrap_or_default());
                }
                row
            })
            .collect();
        body.push_str(&table(&header, &rows));
    }

    body
}

/// One entry of a scale × clients table: the median TPS, links to the tests, and how
/// many failed or were client-bound.
pub(super) fn table_entry(c: &&Cell) -> String {
    // Repeats far from the cell's others (median absolute deviation rule), flagged and kept.
    let with_tps: Vec<(i64, f64)> = c
        .samples
        .iter()
        .filter_map(|s| Some((s.run_id, s.tps?)))
        .collect();
    let values: Vec<f64> = with_tps.iter().map(|(_, t)| *t).collect();
    let outliers: BTreeSet<i64> = pgsurge_analysis::outliers::outliers(&values)
        .into_iter()
        .map(|i| with_tps[i].0)
        .collect();
    let links: Vec<String> = c
        .run_ids
        .iter()
        .map(|id| {
            if outliers.contains(id) {
                format!(
                    "<a href=\"run-{id}.html\">#{id}</a><span class=\"warn\" title=\"outlier: \
                     its tps is far from the other repeats (|modified z-score| > {}); kept in \
                     every figure\">(outlier)</span>",
                    pgsurge_analysis::outliers::THRESHOLD
                )
            } else {
                format!("<a href=\"run-{id}.html\">#{id}</a>")
            }
        })
        .collect();
    let mut failed = if c.failed > 0 {
        format!(" <span class=\"warn\">({} failed)</span>", c.failed)
    } else {
        String::new()
    };
    if c.client_bound > 0 {
        let _ = write!(
            failed,
            " <span class=\"warn\" title=\"the client was the \
             bottleneck: these figures measure the client\">\
             (client-bound {} of {})</span>",
            c.client_bound,
            c.run_ids.len()
        );
    }
    if let Some(p) = &c.repeats_until {
        let class = if p.reached() { "muted" } else { "warn" };
        let _ = write!(
            failed,
            "<br><span class=\"{class} until\" title=\"[repeats] until: the 95 % interval's \
             half-width the campaign reached for this cell when it stopped repeating it\">{}</span>",
            escape(&p.until_text())
        );
    }
    // A workload pack's throughput metrics (NOPM) beside the tps.
    let metrics: String = c
        .workload_metrics
        .iter()
        .filter(|m| m.is_throughput())
        .map(|m| {
            format!(
                "<br><span class=\"metric\" title=\"{}\">{} {}</span>",
                escape(&format!("{} ({})", m.description, m.unit)),
                escape(&m.name),
                num(pgsurge_analysis::describe::median(&m.values), 1)
            )
        })
        .collect();
    let unit = if metrics.is_empty() { "" } else { " tps" };
    format!(
        "{}{unit}{metrics}<br><span class=\"muted\">{}</span>{failed}",
        num(c.tps_median, 1),
        links.join(" ")
    )
}
