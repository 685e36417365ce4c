//! The report's pages, built from the store: `index.html` (sets, targets, matrix charts
//! and tables, comparisons) and one `run-<id>.html` per test (per-second series, OS and
//! PostgreSQL metrics with checkpoint markers, options, script, settings, environment).
//!
//! Owns the content and arrangement of the pages; charts come from [`crate::charts`],
//! markup helpers from [`crate::html`], statistics from [`crate::compare`].

use crate::cells::{build_cells, trim_float, Cell, CellKey};
use crate::charts::{Dash, LineChart, Marker, Series, XScale};
use crate::compare::{
    compare, preamble, repeat_rows, row_cells, workload_table, Along, Comparison, Dimension,
    Verdict, COLUMNS, REPEAT_COLUMNS,
};
use crate::html::{escape, num, page, table};
use pgsurge_store::{facts, Run, RunFilter, Set, Store, StoreError, UnreadableRun};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// A point of a matrix line: x, y, and the optional (low, high) band around y.
type BandPoint = (f64, f64, Option<(f64, f64)>);

/// What to put in the report.
#[derive(Debug, Clone, Default)]
pub struct ReportRequest {
    /// Only these set ids (all sets when empty).
    pub sets: Vec<i64>,
}

/// A generated report: its files and what it contains.
#[derive(Debug, Clone)]
pub struct ReportFiles {
    /// Path of index.html.
    pub index: PathBuf,
    /// Every file written.
    pub files: Vec<PathBuf>,
    /// Number of chart SVGs embedded.
    pub charts: usize,
    /// Runs left out: they could not be read, or hold values no run can have.
    pub skipped: Vec<UnreadableRun>,
}

/// Errors of report generation.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Reading the store failed.
    #[error("reading the results store: {0}")]
    Store(#[from] StoreError),
    /// Writing a file failed.
    #[error("writing {path}: {source}")]
    Write {
        /// The report file that could not be written.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// Nothing to report.
    #[error("the results store {0} holds no runs{1}")]
    Empty(String, String),
    /// Every run was left out (each is in the list, with why).
    #[error("none of the {} run(s) of the results store {location} could be read", .skipped.len())]
    NoneReadable {
        /// The store (redacted).
        location: String,
        /// The runs left out.
        skipped: Vec<UnreadableRun>,
    },
}

/// Writes the report for `req` from `store` into directory `out` (created).
pub fn write_report(
    store: &mut Store,
    req: &ReportRequest,
    out: &Path,
) -> Result<ReportFiles, ReportError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ReportError::Write { path, source }
    };
    std::fs::create_dir_all(out).map_err(io(out))?;
    let sets: Vec<Set> = store
        .list_sets()?
        .into_iter()
        .filter(|s| req.sets.is_empty() || req.sets.contains(&s.id))
        .collect();
    let mut target_names = BTreeMap::new();
    let mut target_order: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    let mut runs: Vec<Run> = Vec::new();
    for s in &sets {
        let mut targets = store.targets(s.id)?;
        targets.sort_by_key(|t| t.id);
        for t in targets {
            target_names.insert(t.id, t.record.name.clone());
            target_order.entry(s.id).or_default().push(t.record.name);
        }
        runs.extend(store.readable_runs(&RunFilter {
            set_id: Some(s.id),
            ..Default::default()
        })?);
    }
    let runs = without_impossible(store, runs);
    let info: BTreeMap<String, pgsurge_store::MetricInfo> = store
        .metrics_info()?
        .into_iter()
        .map(|i| (i.metric.clone(), i))
        .collect();
    let mut files = Vec::new();
    let mut charts = 0;
    // The run pages first: a run whose rows do not load is left out of the index too.
    let mut readable = Vec::with_capacity(runs.len());
    for run in runs {
        let loaded = match store.load_run(run.id) {
            Ok(l) => l,
            Err(StoreError::UnreadableRun(_)) => continue,
            Err(e) => return Err(e.into()),
        };
        let set_name = sets
            .iter()
            .find(|s| s.id == run.record.set_id)
            .map(|s| s.record.name.clone());
        let (html, n) =
            crate::run_page::run_page(&loaded, set_name.as_deref().unwrap_or("?"), &info);
        charts += n;
        let path = out.join(format!("run-{}.html", run.id));
        pgsurge_store::write_output(&path, html.as_bytes()).map_err(io(&path))?;
        files.push(path);
        readable.push(run);
    }
    let runs = readable;
    let skipped = store.skipped_runs();
    if runs.is_empty() && !skipped.is_empty() {
        return Err(ReportError::NoneReadable {
            location: store.location().to_string(),
            skipped,
        });
    }
    if runs.is_empty() {
        let which = if req.sets.is_empty() {
            String::new()
        } else {
            format!(" in sets {:?}", req.sets)
        };
        return Err(ReportError::Empty(store.location().to_string(), which));
    }
    let cells = build_cells(store, &runs, &target_names)?;
    let index = out.join("index.html");
    if sets.len() <= SETS_ON_ONE_PAGE {
        let (index_html, n) = index_page(
            store,
            &sets,
            &runs,
            &cells,
            &target_names,
            &target_order,
            "",
        )?;
        charts += n;
        pgsurge_store::write_output(&index, index_html.as_bytes()).map_err(io(&index))?;
    } else {
        // A grown store: a page per set, and an index of the sets (newest first) with
        // each cell's trend across them.
        for set in &sets {
            let one = std::slice::from_ref(set);
            let set_runs: Vec<Run> = runs
                .iter()
                .filter(|r| r.record.set_id == set.id)
                .cloned()
                .collect();
            let set_cells: Vec<Cell> = cells
                .iter()
                .filter(|c| c.set_id == set.id)
                .cloned()
                .collect();
            if set_runs.is_empty() {
                continue;
            }
            let (html, n) = index_page(
                store,
                one,
                &set_runs,
                &set_cells,
                &target_names,
                &target_order,
                "<a href=\"index.html\">← all sets</a>",
            )?;
            charts += n;
            let path = out.join(set_page(set.id));
            pgsurge_store::write_output(&path, html.as_bytes()).map_err(io(&path))?;
            files.push(path);
        }
        let (index_html, n) = sets_index_page(&sets, &cells);
        charts += n;
        pgsurge_store::write_output(&index, index_html.as_bytes()).map_err(io(&index))?;
    }
    files.insert(0, index.clone());
    Ok(ReportFiles {
        index,
        files,
        charts,
        skipped,
    })
}

/// `runs` without those holding values no run can have (a negative rate, a NaN
/// latency): statistics over them would be meaningless. Each is recorded in the
/// store's skipped runs, with the values.
pub fn without_impossible(store: &mut Store, runs: Vec<Run>) -> Vec<Run> {
    runs.into_iter()
        .filter(|r| {
            let impossible = r.record.impossible_values();
            if !impossible.is_empty() {
                store.skip_run(r, format!("impossible values: {}", impossible.join(", ")));
            }
            impossible.is_empty()
        })
        .collect()
}

/// Series grouping of the matrix charts: one line per (set, target, workload, extra).
fn line_name(sets: &[Set], c: &Cell, extra: &str) -> String {
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
/// line gets its colour and marker from `style_of(line name)`, so a target keeps its
/// look across the charts of a page.
#[allow(clippy::too_many_arguments)]
fn matrix_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    cells: &[&Cell],
    group: impl Fn(&Cell) -> String,
    x: impl Fn(&Cell) -> f64,
    y: impl Fn(&Cell) -> (f64, Option<(f64, f64)>),
    style_of: &dyn Fn(&str) -> usize,
) -> LineChart {
    let mut lines: BTreeMap<String, Vec<BandPoint>> = BTreeMap::new();
    for c in cells {
        let (v, band) = y(c);
        lines.entry(group(c)).or_default().push((x(c), v, band));
    }
    let series = lines
        .into_iter()
        .map(|(name, mut pts)| {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let k = style_of(&name);
            Series {
                points: pts.iter().map(|p| (p.0, p.1)).collect(),
                band: pts
                    .iter()
                    .filter_map(|p| p.2.map(|(lo, hi)| (p.0, lo, hi)))
                    .collect(),
                name,
                color: Some(k),
                marker: Marker::nth(k),
                ..Default::default()
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

pub(crate) fn chart_div(c: &LineChart, count: &mut usize) -> String {
    *count += 1;
    format!("<div class=\"chart\">{}</div>", c.to_html())
}

/// Sets a report shows on one index page; beyond, each set has a page of its own and
/// the index lists the sets and the trends across them.
pub const SETS_ON_ONE_PAGE: usize = 12;

/// The file of a set's page in a report of many sets.
fn set_page(set_id: i64) -> String {
    format!("set-{set_id}.html")
}

/// The index of a report of many sets: the sets, newest first, each linked to its page,
/// and each cell's median tps across the sets in the order they were run (the view of
/// a nightly benchmark: where did it get slower?). Returns it and its number of charts.
fn sets_index_page(sets: &[Set], cells: &[Cell]) -> (String, usize) {
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
            }
            chart.note = format!(
                "Median of each set's repeats; band: their min–max. Each set has its page \
                 (the list above).{}",
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

/// The index page (or a set's page, when `nav` leads back to the index), section by
/// section; returns it and its number of charts.
fn index_page(
    store: &mut Store,
    sets: &[Set],
    runs: &[Run],
    cells: &[Cell],
    target_names: &BTreeMap<i64, String>,
    target_order: &BTreeMap<i64, Vec<String>>,
    nav: &str,
) -> Result<(String, usize), StoreError> {
    let mut body = String::new();
    let mut n = 0;
    body.push_str(&sets_section(sets));
    body.push_str(&targets_section(store, sets)?);
    body.push_str(&warnings_section(store, sets)?);
    let styles = LineStyles::of(sets, cells);
    let style_of = |name: &str| styles.index(name);
    body.push_str(&client_and_scale_charts(sets, cells, &style_of, &mut n));
    body.push_str(&rate_charts(sets, cells, &style_of, &mut n));
    body.push_str(&scale_clients_tables(sets, cells));
    body.push_str(&comparisons_section(sets, cells, target_order));
    body.push_str(&tests_section(sets, runs, target_names));
    let title = match sets {
        [one] if !nav.is_empty() => format!("pgsurge report: set {}", one.record.name),
        _ => "pgsurge report".to_string(),
    };
    Ok((page(&title, nav, &body), n))
}

/// The sets: name, id, kind, status, test counts, creation, description.
fn sets_section(sets: &[Set]) -> String {
    let mut body = String::new();
    body.push_str("<h2>Sets</h2>");
    let rows: Vec<Vec<String>> = sets
        .iter()
        .map(|s| {
            vec![
                escape(&s.record.name),
                s.id.to_string(),
                escape(&s.record.kind),
                escape(&s.record.status),
                s.runs_ok.to_string(),
                s.runs_failed.to_string(),
                escape(&s.record.created_at),
                escape(s.record.description.as_deref().unwrap_or("")),
            ]
        })
        .collect();
    body.push_str(&table(
        &[
            "set",
            "id",
            "kind",
            "status",
            "tests ok",
            "failed",
            "created",
            "description",
        ]
        .map(String::from),
        &rows,
    ));
    body
}

/// The targets of every set (passwords redacted), when there are any.
fn targets_section(store: &mut Store, sets: &[Set]) -> Result<String, StoreError> {
    let mut body = String::new();
    let mut trows = Vec::new();
    for s in sets {
        let builds = target_builds(store, s.id)?;
        for t in store.targets(s.id)? {
            let mut kind = escape(&t.record.kind);
            if let Some(b) = builds.get(&t.id) {
                kind.push_str(&format!("<br><small>built from {}</small>", escape(b)));
            }
            trows.push(vec![
                escape(&t.record.name),
                escape(&s.record.name),
                kind,
                escape(t.record.server_version.as_deref().unwrap_or("")),
                escape(&pgsurge_store::redact_text(
                    t.record
                        .bin_dir
                        .as_deref()
                        .or(t.record.conninfo.as_deref())
                        .unwrap_or(""),
                )),
                settings_text(t.record.settings.as_ref()),
            ]);
        }
    }
    if !trows.is_empty() {
        body.push_str("<h2>Targets</h2>");
        body.push_str(&table(
            &[
                "target",
                "set",
                "kind",
                "server",
                "binaries / conninfo",
                "settings",
            ]
            .map(String::from),
            &trows,
        ));
    }

    Ok(body)
}

/// A target's settings as `name = value` lines (passwords masked), `–` for none.
fn settings_text(settings: Option<&serde_json::Value>) -> String {
    let Some(v) = settings.map(pgsurge_store::redact_json) else {
        return "–".into();
    };
    match v.as_object() {
        Some(map) if map.is_empty() => "–".into(),
        Some(map) => map
            .iter()
            .map(|(name, value)| {
                let value = value
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| value.to_string());
                escape(&format!("{name} = {value}"))
            })
            .collect::<Vec<_>>()
            .join("<br>"),
        None => escape(&v.to_string()),
    }
}

/// What each target of a set built from source was built from (its runs' build facts),
/// with the options that make its timings meaningless, by target id.
fn target_builds(store: &mut Store, set_id: i64) -> Result<BTreeMap<i64, String>, StoreError> {
    let runs = store.readable_runs(&RunFilter {
        set_id: Some(set_id),
        ..Default::default()
    })?;
    let target_of: BTreeMap<i64, i64> = runs
        .iter()
        .filter_map(|r| Some((r.id, r.record.target_id?)))
        .collect();
    let mut out: BTreeMap<i64, (String, String)> = BTreeMap::new();
    for (run_id, fact) in store.set_facts(set_id)? {
        let (Some(target), Some(value)) = (target_of.get(&run_id), fact.value) else {
            continue;
        };
        let e = out.entry(*target).or_default();
        match fact.name.as_str() {
            facts::BUILD_SOURCE => e.0 = value,
            facts::TIMING_HAZARDS => e.1 = value,
            _ => {}
        }
    }
    Ok(out
        .into_iter()
        .filter(|(_, (source, hazards))| !source.is_empty() || !hazards.is_empty())
        .map(|(id, (source, hazards))| {
            let text = match (source.is_empty(), hazards.is_empty()) {
                (false, true) => source,
                (true, false) => format!("binaries with {hazards}: NOT FOR TIMING"),
                _ => format!("{source}; with {hazards}: NOT FOR TIMING"),
            };
            (id, text)
        })
        .collect())
}

/// The warnings of `sets`, when there are any.
fn warnings_section(store: &mut Store, sets: &[Set]) -> Result<String, StoreError> {
    let mut body = String::new();
    let mut warnings = Vec::new();
    for s in sets {
        warnings.extend(store.warnings(Some(s.id))?);
    }
    if !warnings.is_empty() {
        // A warning about a target is stored with each of its tests: listed once, with
        // how many tests it concerns.
        let mut seen: Vec<(&str, &str, usize)> = Vec::new();
        for w in &warnings {
            let (code, message) = (w.record.code.as_str(), w.record.message.as_str());
            match seen.iter_mut().find(|s| s.0 == code && s.1 == message) {
                Some(s) => s.2 += 1,
                None => seen.push((code, message, 1)),
            }
        }
        body.push_str("<h2>Warnings</h2><ul>");
        for (code, message, times) in &seen {
            let _ = write!(
                body,
                "<li class=\"warn\">{}: {}{}</li>",
                escape(code),
                escape(message),
                if *times > 1 {
                    format!(" <span class=\"muted\">({times} tests)</span>")
                } else {
                    String::new()
                }
            );
        }
        body.push_str("</ul>");
    }

    Ok(body)
}

/// One colour and marker per line (set · target · workload), the same in every chart.
struct LineStyles(Vec<String>);

impl LineStyles {
    fn of(sets: &[Set], cells: &[Cell]) -> LineStyles {
        let mut line_names: Vec<String> = Vec::new();
        for c in cells {
            let n = line_name(sets, c, "");
            if !line_names.contains(&n) {
                line_names.push(n);
            }
        }
        LineStyles(line_names)
    }

    /// The style of the line named `name` (or of a line name it extends).
    fn index(&self, name: &str) -> usize {
        self.0
            .iter()
            .position(|n| name.starts_with(n.as_str()))
            .unwrap_or(0)
    }
}

/// Unthrottled cells: throughput and latency percentiles against clients, one pair of
/// charts per scale and workload, and throughput against scale when there are several.
fn client_and_scale_charts(
    sets: &[Set],
    cells: &[Cell],
    style_of: &dyn Fn(&str) -> usize,
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
                let mut lines: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
                for c in &at {
                    let p = &c.latency_ms;
                    let v = [p.p50, p.p90, p.p99][pick];
                    lines
                        .entry(line_name(sets, c, ""))
                        .or_default()
                        .push((c.key.clients as f64, v));
                }
                for (name, mut points) in lines {
                    points.sort_by(|a, b| a.0.total_cmp(&b.0));
                    let k = style_of(&name);
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
fn single_repeat_note(cells: &[&Cell]) -> &'static str {
    if cells.iter().any(|c| c.tps.len() < 2) {
        " Some points are a single run: no band shows their noise, and a difference \
         between them smaller than this machine's run-to-run spread (measure it with \
         repeats, or an A/A twin) is not a finding."
    } else {
        ""
    }
}

/// Rate-limited cells: p99 latency and achieved throughput against the target rate.
fn rate_charts(
    sets: &[Set],
    cells: &[Cell],
    style_of: &dyn Fn(&str) -> usize,
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
fn scale_clients_tables(sets: &[Set], cells: &[Cell]) -> String {
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
fn table_entry(c: &&Cell) -> String {
    let links: Vec<String> = c
        .run_ids
        .iter()
        .map(|id| format!("<a href=\"run-{id}.html\">#{id}</a>"))
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
                num(m.median(), 1)
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

/// Comparisons: targets within a set, and sets against the first set.
fn comparisons_section(
    sets: &[Set],
    cells: &[Cell],
    target_order: &BTreeMap<i64, Vec<String>>,
) -> String {
    let mut body = String::new();
    let comparisons = comparisons(sets, cells, target_order);
    if !comparisons.is_empty() {
        body.push_str("<h2>Comparisons</h2>");
        for c in &comparisons {
            body.push_str(&comparison_html(c));
        }
    }

    body
}

/// Every test, linking to its page.
fn tests_section(sets: &[Set], runs: &[Run], target_names: &BTreeMap<i64, String>) -> String {
    let mut body = String::new();
    body.push_str("<h2>Tests</h2>");
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let rec = &r.record;
            vec![
                format!("<a href=\"run-{}.html\">#{}</a>", r.id, r.id),
                escape(
                    sets.iter()
                        .find(|s| s.id == rec.set_id)
                        .map(|s| s.record.name.as_str())
                        .unwrap_or(""),
                ),
                escape(
                    rec.target_id
                        .and_then(|t| target_names.get(&t))
                        .map(String::as_str)
                        .unwrap_or(""),
                ),
                escape(&CellKey::of(r).label()),
                rec.repeat_no.to_string(),
                escape(&rec.status),
                num(rec.tps.unwrap_or(f64::NAN), 1),
                num(rec.latency_mean_ms.unwrap_or(f64::NAN), 3),
                num(rec.latency_p99_ms.unwrap_or(f64::NAN), 3),
                escape(rec.error.as_deref().unwrap_or("")),
            ]
        })
        .collect();
    body.push_str(&table(
        &[
            "test",
            "set",
            "target",
            "cell",
            "repeat",
            "status",
            "tps",
            "lat avg ms",
            "p99 ms",
            "error",
        ]
        .map(String::from),
        &rows,
    ));
    body
}

/// Comparisons the index shows: every further target of a set against its first target
/// (targets in the campaign file's order: A is the first), and (when several sets exist)
/// every set against the first one. A target whose name ends in " (A-A)" (as `aa_check`
/// names it) is the A/A noise check of the target it repeats. Labels are those `pgsurge
/// compare` gives the same sides (`SET · TARGET`, `SET`).
pub(crate) fn comparisons(
    sets: &[Set],
    cells: &[Cell],
    target_order: &BTreeMap<i64, Vec<String>>,
) -> Vec<Comparison> {
    let mut out = Vec::new();
    for s in sets {
        let in_set: Vec<&Cell> = cells.iter().filter(|c| c.set_id == s.id).collect();
        let mut targets: Vec<String> = target_order.get(&s.id).cloned().unwrap_or_default();
        for c in &in_set {
            if !targets.contains(&c.target) {
                targets.push(c.target.clone());
            }
        }
        targets.retain(|t| in_set.iter().any(|c| &c.target == t));
        let of = |t: &str| -> Vec<Cell> {
            in_set
                .iter()
                .filter(|c| c.target == t)
                .map(|c| (*c).clone())
                .collect()
        };
        let label = |t: &str| format!("{} · {t}", s.record.name);
        let real: Vec<&String> = targets.iter().filter(|t| !t.ends_with(" (A-A)")).collect();
        if let Some(first) = real.first() {
            let aa_name = format!("{first} (A-A)");
            let aa = targets.contains(&aa_name).then(|| {
                compare(
                    &label(first),
                    &of(first),
                    &label(&aa_name),
                    &of(&aa_name),
                    &Along::targets(),
                )
            });
            for other in real.iter().skip(1) {
                let mut c = compare(
                    &label(first),
                    &of(first),
                    &label(other),
                    &of(other),
                    &Along::targets(),
                );
                if let Some(aa) = &aa {
                    c = c.with_noise_floor(aa);
                }
                out.push(c);
            }
            if let Some(aa) = aa {
                out.push(aa);
            }
        }
    }
    if sets.len() > 1 {
        let first = &sets[0];
        let a: Vec<Cell> = cells
            .iter()
            .filter(|c| c.set_id == first.id)
            .cloned()
            .collect();
        for s in &sets[1..] {
            let b: Vec<Cell> = cells.iter().filter(|c| c.set_id == s.id).cloned().collect();
            let c = compare(
                &first.record.name,
                &a,
                &s.record.name,
                &b,
                &Along(vec![Dimension::Set]),
            );
            if !c.cells.is_empty() {
                out.push(c);
            }
        }
    }
    out
}

/// The HTML section of one comparison: the same title, notes, columns, summary and
/// noise floor as `pgsurge compare`'s text.
pub fn comparison_html(c: &Comparison) -> String {
    let mut s = format!("<h3 class=\"comparison\">{}</h3>", escape(&c.title));
    s.push_str("<p class=\"muted\">");
    s.push_str(
        &preamble(c)
            .iter()
            .map(|l| escape(l))
            .collect::<Vec<_>>()
            .join("<br>"),
    );
    s.push_str("</p>");
    let rows: Vec<Vec<String>> = c
        .cells
        .iter()
        .map(|r| {
            let text = row_cells(r);
            let verdict = |v: Option<Verdict>, t: &str| match v {
                Some(v) => format!(
                    "<span class=\"{}\">{}</span>",
                    match v {
                        Verdict::Faster => "faster",
                        Verdict::Slower => "slower",
                        _ => "same",
                    },
                    escape(t)
                ),
                None => String::new(),
            };
            let mut row: Vec<String> = text.iter().map(|t| escape(t)).collect();
            row[7] = verdict(Some(r.tps.verdict), &text[7]);
            row[12] = verdict(r.p99_ms.as_ref().map(|p| p.verdict), &text[12]);
            row.push(format!(
                "<span class=\"warn\">{}</span>",
                escape(&r.warnings.join("; "))
            ));
            row
        })
        .collect();
    let mut header: Vec<String> = COLUMNS.iter().map(|h| h.to_string()).collect();
    header.push("warnings".into());
    s.push_str(&table(&header, &rows));
    if !c.cells.is_empty() {
        // Each side's repeats as plain statistics: the table a patch's author posts.
        s.push_str(
            "<p class=\"muted\">Repeats of each side: mean, median, min, max and standard \
             deviation of tps and of average latency (ms).</p>",
        );
        let repeats: Vec<Vec<String>> = c
            .cells
            .iter()
            .flat_map(repeat_rows)
            .map(|r| r.iter().map(|t| escape(t)).collect())
            .collect();
        s.push_str(&table(&REPEAT_COLUMNS.map(String::from), &repeats));
    }
    if let Some(rows) = workload_table(c) {
        s.push_str(
            "<p class=\"muted\">Workload metrics (higher is better; geometric means of the \
             repeats, compared as tps).</p>",
        );
        let body: Vec<Vec<String>> = rows[1..]
            .iter()
            .map(|r| r.iter().map(|t| escape(t)).collect())
            .collect();
        s.push_str(&table(rows[0].as_ref(), &body));
    }
    let _ = write!(s, "<p class=\"summary\">{}", escape(&c.summary_text()));
    if let Some(n) = c.noise_floor_text() {
        let _ = write!(s, "<br>{}", escape(&n));
    }
    s.push_str("</p>");
    if !c.only_in_a.is_empty() || !c.only_in_b.is_empty() {
        let _ = write!(
            s,
            "<p class=\"muted\">Not compared: only in A: {}; only in B: {}</p>",
            escape(&c.only_in_a.join(", ")),
            escape(&c.only_in_b.join(", "))
        );
    }
    s
}
