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
use crate::html::{escape, num, page, table, text_table};
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
    let mut flames = crate::flames::Flames::load(store, &runs, out)?;
    let info: BTreeMap<String, pgsurge_store::MetricInfo> = store
        .metrics_info()?
        .into_iter()
        .map(|i| (i.metric.clone(), i))
        .collect();
    let mut files = Vec::new();
    let mut charts = 0;
    // The run pages first: a run whose rows do not load is left out of the index too.
    let mut readable = Vec::with_capacity(runs.len());
    let mut set_hosts: BTreeMap<i64, BTreeSet<String>> = BTreeMap::new();
    for run in runs {
        let loaded = match store.load_run(run.id) {
            Ok(l) => l,
            Err(StoreError::UnreadableRun(_)) => continue,
            Err(e) => return Err(e.into()),
        };
        if let Some(cpus) = loaded.environment.as_ref().and_then(host_cpus) {
            set_hosts.entry(run.record.set_id).or_default().insert(cpus);
        }
        let set_name = sets
            .iter()
            .find(|s| s.id == run.record.set_id)
            .map(|s| s.record.name.clone());
        let profiles = flames.run_section(run.id)?;
        let (html, n) = crate::run_page::run_page(
            &loaded,
            set_name.as_deref().unwrap_or("?"),
            &info,
            &profiles,
        );
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
    let hosts: BTreeMap<i64, String> = set_hosts
        .into_iter()
        .map(|(set, texts)| (set, texts.into_iter().collect::<Vec<_>>().join("; ")))
        .collect();
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
            &hosts,
            "",
            &mut flames,
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
                &hosts,
                "<a href=\"index.html\">← all sets</a>",
                &mut flames,
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
    files.append(&mut flames.files);
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
/// line gets its colour and marker from `style_of` (of its cells), so a target keeps
/// its look across the charts of a page; lines of one look in a chart (one target's
/// client counts) differ by their dash.
#[allow(clippy::too_many_arguments)]
fn matrix_chart(
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
type StyleOf<'a> = &'a dyn Fn(&Cell) -> usize;

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
fn mark_change_points(chart: &mut LineChart) -> String {
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

/// The index page (or a set's page, when `nav` leads back to the index), section by
/// section; returns it and its number of charts. With comparisons (two targets or
/// more, or several sets) the page leads with the answer: the comparisons beside the
/// targets' provenance, then the warnings, charts and tables.
#[allow(clippy::too_many_arguments)]
fn index_page(
    store: &mut Store,
    sets: &[Set],
    runs: &[Run],
    cells: &[Cell],
    target_names: &BTreeMap<i64, String>,
    target_order: &BTreeMap<i64, Vec<String>>,
    hosts: &BTreeMap<i64, String>,
    nav: &str,
    flames: &mut crate::flames::Flames,
) -> Result<(String, usize), ReportError> {
    let mut body = String::new();
    let mut n = 0;
    body.push_str(&sets_section(sets, runs, hosts));
    let targets = targets_section(store, sets)?;
    let comparisons = comparisons_section(sets, cells, target_order, flames)?;
    if comparisons.is_empty() {
        body.push_str(&targets);
    } else {
        let _ = write!(
            body,
            "<h2>Comparison</h2><div class=\"answer\"><div class=\"verdicts\">{comparisons}</div>\
             <div class=\"provenance\">{}</div></div>",
            targets.replacen("<h2>Targets</h2>", "<h3>Targets</h3>", 1)
        );
    }
    body.push_str(&warnings_section(store, sets, runs, target_names)?);
    let styles = LineStyles::of(sets, cells);
    let style_of = |c: &Cell| styles.index(sets, c);
    body.push_str(&client_and_scale_charts(sets, cells, &style_of, &mut n));
    body.push_str(&rate_charts(sets, cells, &style_of, &mut n));
    body.push_str(&scale_clients_tables(sets, cells));
    body.push_str(&tests_section(sets, runs, target_names));
    let title = match sets {
        [one] if !nav.is_empty() => format!("pgsurge report: set {}", one.record.name),
        _ => "pgsurge report".to_string(),
    };
    Ok((page(&title, nav, &body), n))
}

/// What a test's environment manifest says of the CPUs it ran on: the server's host
/// and the client's, once when they are the same machine.
pub(crate) fn host_cpus(env: &serde_json::Value) -> Option<String> {
    let cpus = |host: &serde_json::Value| {
        let count = host["cpu"]["count"].as_u64()?;
        let model = host["cpu"]["model"].as_str().unwrap_or("").trim();
        Some(if model.is_empty() {
            format!("{count} CPUs")
        } else {
            format!("{count} CPUs ({model})")
        })
    };
    let client = &env["client"];
    let same =
        client.is_null() || (env["hostname"].is_string() && env["hostname"] == client["hostname"]);
    match (cpus(env), cpus(client)) {
        (Some(s), _) if same => Some(format!("server and client: {s}")),
        (Some(s), Some(c)) => Some(format!("server: {s}; client: {c}")),
        (Some(s), None) => Some(format!("server: {s}")),
        (None, Some(c)) => Some(format!("client: {c}")),
        (None, None) => None,
    }
}

/// The measured lengths of `runs`, as `4 s` or `4–5 s` (rounded to 0.1 s).
fn test_lengths(runs: &[&Run]) -> String {
    let lengths: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.record.measured_s.or(r.record.duration_s))
        .filter(|s| s.is_finite())
        .collect();
    let lo = lengths.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = lengths.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if lengths.is_empty() {
        "–".into()
    } else if format!("{lo:.1}") == format!("{hi:.1}") {
        format!("{} s", trim_float((lo * 10.0).round() / 10.0))
    } else {
        format!(
            "{}–{} s",
            trim_float((lo * 10.0).round() / 10.0),
            trim_float((hi * 10.0).round() / 10.0)
        )
    }
}

/// The sets: name, id, kind, status, test counts and lengths, the host's CPUs,
/// creation, description.
fn sets_section(sets: &[Set], runs: &[Run], hosts: &BTreeMap<i64, String>) -> String {
    let mut body = String::new();
    body.push_str("<h2>Sets</h2>");
    let rows: Vec<Vec<String>> = sets
        .iter()
        .map(|s| {
            let of_set: Vec<&Run> = runs.iter().filter(|r| r.record.set_id == s.id).collect();
            vec![
                escape(&s.record.name),
                s.id.to_string(),
                escape(&s.record.kind),
                escape(&s.record.status),
                s.runs_ok.to_string(),
                s.runs_failed.to_string(),
                test_lengths(&of_set),
                escape(hosts.get(&s.id).map(String::as_str).unwrap_or("–")),
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
            "each test",
            "host CPUs",
            "created",
            "description",
        ]
        .map(String::from),
        &rows,
    ));
    body
}

/// The targets of every set and where each server came from (passwords redacted):
/// its version, its binaries or connection, what it was built from (source and
/// patches, commit, configure arguments), and its settings.
fn targets_section(store: &mut Store, sets: &[Set]) -> Result<String, StoreError> {
    let mut body = String::new();
    let mut trows = Vec::new();
    let several_sets = sets.len() > 1;
    for s in sets {
        let builds = target_builds(store, s.id)?;
        for t in store.targets(s.id)? {
            let build = builds.get(&t.id);
            let mut name = escape(&t.record.name);
            if several_sets {
                let _ = write!(name, "<br><small>set {}</small>", escape(&s.record.name));
            }
            let server = format!(
                "{}<br><small>{}</small>",
                escape(t.record.server_version.as_deref().unwrap_or("")),
                escape(&t.record.kind)
            );
            let origin = match build {
                Some(b) => {
                    let mut o = escape(&b.source);
                    if let Some(c) = &b.commit {
                        let _ = write!(o, "<br><small>commit {}</small>", escape(c));
                    }
                    if !b.configure.is_empty() {
                        let _ = write!(o, "<br><small>configure {}</small>", escape(&b.configure));
                    }
                    if !b.hazards.is_empty() {
                        let _ = write!(
                            o,
                            "<br><span class=\"warn\">with {}: NOT FOR TIMING</span>",
                            escape(&b.hazards)
                        );
                    }
                    o
                }
                None => escape(&pgsurge_store::redact_text(
                    t.record
                        .bin_dir
                        .as_deref()
                        .or(t.record.conninfo.as_deref())
                        .unwrap_or(""),
                )),
            };
            trows.push(vec![
                name,
                server,
                origin,
                settings_text(t.record.settings.as_ref()),
            ]);
        }
    }
    if !trows.is_empty() {
        body.push_str("<h2>Targets</h2>");
        body.push_str(&text_table(
            &[
                "target",
                "server",
                "built from / binaries / conninfo",
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

/// What a target built from source was built from, as its runs' build facts say.
#[derive(Debug, Default)]
struct TargetBuild {
    /// The source, with its patches (`tarball + fix.patch (1a2b3c4d)`).
    source: String,
    /// The commit, for a git source.
    commit: Option<String>,
    /// The configure arguments (pgsurge's own prefix left out).
    configure: String,
    /// Build options that make timings meaningless.
    hazards: String,
}

/// What each target of a set built from source was built from (its runs' build
/// facts), by target id.
fn target_builds(store: &mut Store, set_id: i64) -> Result<BTreeMap<i64, TargetBuild>, StoreError> {
    let runs = store.readable_runs(&RunFilter {
        set_id: Some(set_id),
        ..Default::default()
    })?;
    let target_of: BTreeMap<i64, i64> = runs
        .iter()
        .filter_map(|r| Some((r.id, r.record.target_id?)))
        .collect();
    let mut out: BTreeMap<i64, TargetBuild> = BTreeMap::new();
    for (run_id, fact) in store.set_facts(set_id)? {
        let (Some(target), Some(value)) = (target_of.get(&run_id), fact.value) else {
            continue;
        };
        let e = out.entry(*target).or_default();
        match fact.name.as_str() {
            facts::BUILD_SOURCE => e.source = value,
            facts::BUILD_COMMIT => e.commit = Some(value),
            facts::BUILD_CONFIGURE => e.configure = configure_without_prefix(&value),
            facts::TIMING_HAZARDS => e.hazards = value,
            _ => {}
        }
    }
    out.retain(|_, b| !b.source.is_empty() || !b.hazards.is_empty());
    Ok(out)
}

/// `pg_config --configure` without the prefix every build of the cache shares.
fn configure_without_prefix(configure: &str) -> String {
    configure
        .split("' '")
        .map(|a| a.trim_matches('\''))
        .filter(|a| !a.is_empty() && !a.starts_with("--prefix="))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The warnings of `sets`, when there are any. A warning stored with each test of a
/// target is listed once, with how many tests it concerns; one that several targets
/// share (the host's settings, named per target) is listed once, naming the targets.
fn warnings_section(
    store: &mut Store,
    sets: &[Set],
    runs: &[Run],
    target_names: &BTreeMap<i64, String>,
) -> Result<String, StoreError> {
    let mut body = String::new();
    let mut warnings = Vec::new();
    for s in sets {
        warnings.extend(store.warnings(Some(s.id))?);
    }
    if warnings.is_empty() {
        return Ok(body);
    }
    let target_of_run: BTreeMap<i64, &str> = runs
        .iter()
        .filter_map(|r| Some((r.id, target_names.get(&r.record.target_id?)?.as_str())))
        .collect();
    // (code, text after the target's name, targets, tests).
    let mut seen: Vec<(&str, String, Vec<&str>, usize)> = Vec::new();
    for w in &warnings {
        let (code, message) = (w.record.code.as_str(), w.record.message.as_str());
        let target = w
            .record
            .run_id
            .and_then(|id| target_of_run.get(&id).copied());
        let (target, rest) = match target
            .and_then(|t| Some((t, message.strip_prefix(&format!("target \"{t}\""))?)))
        {
            Some((t, rest)) => (Some(t), rest.to_string()),
            None => (None, message.to_string()),
        };
        match seen
            .iter_mut()
            .find(|s| s.0 == code && s.1 == rest && (s.2.is_empty() == target.is_none()))
        {
            Some(s) => {
                s.3 += 1;
                if let Some(t) = target.filter(|t| !s.2.contains(t)) {
                    s.2.push(t);
                }
            }
            None => seen.push((code, rest, target.into_iter().collect(), 1)),
        }
    }
    body.push_str("<h2>Warnings</h2><ul>");
    for (code, rest, targets, times) in &seen {
        let named: Vec<String> = targets.iter().map(|t| format!("\"{t}\"")).collect();
        let message = match named.len() {
            0 => rest.clone(),
            1 => format!("target {}{rest}", named[0]),
            _ => format!("targets {}{rest}", named.join(", ")),
        };
        let _ = write!(
            body,
            "<li class=\"warn\">{}: {}{}</li>",
            escape(code),
            escape(&message),
            if *times > 1 {
                format!(" <span class=\"muted\">({times} tests)</span>")
            } else {
                String::new()
            }
        );
    }
    body.push_str("</ul>");
    Ok(body)
}

/// One colour and marker per target (per set and target when the report holds several
/// sets), the same in every chart of the report. With a single target the lines are
/// told apart instead (one look per workload and query mode).
struct LineStyles {
    /// The looks' keys, in order of first appearance: the n-th key has look n.
    keys: Vec<String>,
    by_target: bool,
    several_sets: bool,
}

impl LineStyles {
    fn of(sets: &[Set], cells: &[Cell]) -> LineStyles {
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
    fn index(&self, sets: &[Set], c: &Cell) -> usize {
        let k = self.key(sets, c);
        self.keys.iter().position(|n| *n == k).unwrap_or(0)
    }
}

/// Unthrottled cells: throughput and latency percentiles against clients, one pair of
/// charts per scale and workload, and throughput against scale when there are several.
fn client_and_scale_charts(
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
fn rate_charts(sets: &[Set], cells: &[Cell], style_of: StyleOf<'_>, n: &mut usize) -> String {
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

/// Comparisons: targets within a set, and sets against the first set (empty when there
/// is nothing to compare).
fn comparisons_section(
    sets: &[Set],
    cells: &[Cell],
    target_order: &BTreeMap<i64, Vec<String>>,
    flames: &mut crate::flames::Flames,
) -> Result<String, ReportError> {
    let mut body = String::new();
    for c in &comparisons(sets, cells, target_order) {
        body.push_str(&comparison_html(c));
        body.push_str(&flames.comparison_html(c)?);
    }
    Ok(body)
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
                num(rec.measured_s.or(rec.duration_s).unwrap_or(f64::NAN), 1),
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
            "s",
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
            "<p class=\"muted\">Repeats of each side: arithmetic mean, median, min, max and \
             standard deviation of tps and of average latency (ms).</p>",
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
    if let Some(rows) = crate::compare::costs_table(c) {
        s.push_str(
            "<p class=\"muted\">Per-transaction costs (lower is better; geometric means of \
             the repeats, compared as tps).</p>",
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
    if !c.cells.is_empty() {
        let _ = write!(
            s,
            "<p class=\"muted\">How each tps verdict was reached ({}):</p><ul class=\"basis\">",
            escape(c.verdict_rule)
        );
        for r in &c.cells {
            let _ = write!(
                s,
                "<li>{}: {}</li>",
                escape(&r.label),
                escape(&r.tps.basis_text())
            );
        }
        s.push_str("</ul>");
    }
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
