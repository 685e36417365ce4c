//! The index of a report of many sets: the sets, newest first, each linked to its own
//! page, and each cell's median tps across the sets in the order they were run, with
//! the change points the trend finds marked.

use super::matrix::{matrix_chart, single_repeat_note};
use super::set_page;
use crate::cells::{trim_float, Cell};
use crate::charts::chart_div;
use crate::charts::{Dash, LineChart, Marker};
use crate::html::{escape, page, table};
use pgsurge_store::Set;
use std::collections::BTreeMap;

/// The index of a report of many sets: the sets, newest first, each linked to its page,
/// and each cell's median tps across the sets in the order they were run (the view of
/// a nightly benchmark: where did it get slower?). Returns it and its number of charts.
pub(super) fn sets_index_page(sets: &[Set], cells: &[Cell]) -> (String, usize) {
    let mut body = String::new();
    let mut n = 0;
    body.push_str("<h2>Sets</h2>");
    let rows: Vec<Vec<String>> = sets
        .iter()
        .rev()
        .map(|s| {
            vec![
                format!(
                    "<a href=\"{}\">{}</a>",
                    set_page(s.id),
                    escape(&s.record.name)
                ),
                s.id.to_string(),
                escape(&s.record.kind),
                escape(&s.record.status),
                s.runs_ok.to_string(),
                s.runs_failed.to_string(),
                escape(&s.record.created_at),
            ]
        })
        .collect();
    body.push_str(&table(
        &[
            "set", "id", "kind", "status", "tests ok", "failed", "created",
        ]
        .map(String::from),
        &rows,
    ));
    // x: the set's place in the order the sets were run (their ids).
    let order: BTreeMap<i64, f64> = sets
        .iter()
        .enumerate()
        .map(|(k, s)| (s.id, (k + 1) as f64))
        .collect();
    let mut panels: BTreeMap<String, Vec<&Cell>> = BTreeMap::new();
    for c in cells.iter().filter(|c| !c.tps.is_empty()) {
        let mut panel = format!("{} s={}", c.key.script, c.key.scale);
        if let Some(r) = c.key.rate() {
            panel.push_str(&format!(" R={}", trim_float(r)));
        }
        if c.key.query_mode != "simple" {
            panel.push(' ');
            panel.push_str(&c.key.query_mode);
        }
        panels.entry(panel).or_default().push(c);
    }
    if !panels.is_empty() {
        body.push_str("<h2>Trends across sets</h2><div class=\"charts\">");
        for (panel, at) in &panels {
            let mut chart = matrix_chart(
                &format!("TPS across sets, {panel}"),
                "set, in the order run (1 = oldest)",
                "transactions per second (tps)",
                at,
                |c| {
                    let mut name = format!("c={}", c.key.clients);
                    if !c.target.is_empty() {
                        name = format!("{} · {name}", c.target);
                    }
                    if !c.key.extra.is_empty() {
                        name.push_str(&format!(" {}", c.key.extra));
                    }
                    name
                },
                |c| order.get(&c.set_id).copied().unwrap_or(f64::NAN),
                |c| (c.tps_median, Some((c.tps_min, c.tps_max))),
                &|_| 0,
            );
            for (k, s) in chart.series.iter_mut().enumerate() {
                s.color = Some(k);
                s.marker = Marker::nth(k);
                s.dash = Dash::Solid;
            }
            let changes = mark_change_points(&mut chart);
            chart.note = format!(
                "Median of each set's repeats; band: their min–max. Each set has its page \
                 (the list above).{}{changes}",
                single_repeat_note(at)
            );
            body.push_str(&chart_div(&chart, &mut n));
        }
        body.push_str("</div>");
    }
    (
        page(&format!("pgsurge report: {} sets", sets.len()), "", &body),
        n,
    )
}

/// Marks on `chart` (a chart of levels across sets) each series' change points
/// (`pgsurge_analysis::change_points`, as `results trend` finds them): a dashed line
/// between the last set of the old level and the first of the new. Returns them in
/// words, for the chart's note.
pub(super) fn mark_change_points(chart: &mut LineChart) -> String {
    let mut said = Vec::new();
    for s in &chart.series {
        let points: Vec<(f64, f64)> = s.segments().concat();
        let levels: Vec<f64> = points.iter().map(|p| p.1).collect();
        for c in pgsurge_analysis::change_points::change_points(&levels) {
            let x = points[c.index].0;
            chart.markers.push(x - 0.5);
            said.push(format!(
                "{}: from set {} on, {:+.1} % (p = {:.1e})",
                s.name,
                trim_float(x),
                c.change * 100.0,
                c.p_value
            ));
        }
    }
    if said.is_empty() {
        return String::new();
    }
    chart.marker_label = "level changed".into();
    format!(" Level changed (E-divisive means): {}.", said.join("; "))
}
