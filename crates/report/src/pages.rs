//! The report's pages, built from the store: `index.html` (sets, targets, matrix charts
//! and tables, comparisons) and one `run-<id>.html` per test (per-second series, OS and
//! PostgreSQL metrics with checkpoint markers, options, script, settings, environment).
//!
//! Owns the content and arrangement of the pages; charts come from [`crate::charts`],
//! markup helpers from [`crate::html`], statistics from [`crate::compare`].

//!
//! | module | owns |
//! |---|---|
//! | this file | writing the report: the run pages, then the index (or a page per set and an index of the sets) |
//! | `provenance` | the sets, targets, warnings and tests of the index |
//! | `comparisons` | the index's comparisons, in `compare`'s words and columns |
//! | `matrix` | the matrix charts and tables, each target's line look |
//! | `many_sets` | the index of a report of many sets and the trends across them |

mod comparisons;
mod many_sets;
mod matrix;
mod provenance;

pub use comparisons::comparison_html;

use crate::cells::{build_cells, Cell};
use crate::html::page;
use comparisons::comparisons_section;
use many_sets::sets_index_page;
use matrix::{client_and_scale_charts, rate_charts, scale_clients_tables, LineStyles};
use pgsurge_store::{Run, RunFilter, Set, Store, StoreError, UnreadableRun};
use provenance::{host_cpus, sets_section, targets_section, tests_section, warnings_section};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::{Path, PathBuf};

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

/// Sets a report shows on one index page; beyond, each set has a page of its own and
/// the index lists the sets and the trends across them.
pub const SETS_ON_ONE_PAGE: usize = 12;

/// The file of a set's page in a report of many sets.
fn set_page(set_id: i64) -> String {
    format!("set-{set_id}.html")
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
    body.push_str(&crate::capacity::capacity_section(store, sets)?);
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
