//! `compare` as a typed function: the two sides of a comparison as values ([`Side`]),
//! resolved against a store into cells and compared ([`compare_sides`]). `pgsurge
//! compare` parses its command line into a [`CompareRequest`]; `bisect` and the report
//! build one directly from run ids and dimensions. Nothing here prints.

use crate::cells::{build_cells, builtin_name, is_ok, Cell, CellKey};
use crate::compare::{compare, compare_with_margin, Along, Comparison, Dimension};
use crate::pages::without_impossible;
use pgsurge_analysis::verdict::Margin;
use pgsurge_store::{Run, RunFilter, Store, StoreError};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What one side of a comparison selects.
#[derive(Debug, Clone, PartialEq)]
pub enum Side {
    /// These runs of the store.
    Runs(Vec<i64>),
    /// The successful runs of the store that pass every filter.
    Filter(SideFilter),
    /// All the successful runs of another store file.
    StoreFile(PathBuf),
}

/// Filters of a [`Side::Filter`]; a filter left `None` selects everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SideFilter {
    /// A set, by id or name.
    pub set: Option<String>,
    /// A target, by name (within the set, if one is given; else the newest of that name).
    pub target: Option<String>,
    /// `simple`, `extended` or `prepared`.
    pub mode: Option<String>,
    /// A workload (`select-only`, a file name, a mix; pgbench's `<builtin: …>` names too).
    pub script: Option<String>,
    /// A scale factor.
    pub scale: Option<f64>,
    /// A client count.
    pub clients: Option<f64>,
    /// A `-R` rate (0: unthrottled).
    pub rate: Option<f64>,
    /// These runs only (not with `set` or `target`).
    pub runs: Option<Vec<i64>>,
}

/// One comparison: sides, the dimensions compared along besides those the sides
/// differ in, and an optional A/A pair whose spread is the noise floor.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareRequest {
    /// Side A (the baseline).
    pub a: Side,
    /// Side B (the candidate).
    pub b: Side,
    /// Dimensions compared along in addition to those the sides differ in.
    pub along: Vec<Dimension>,
    /// The A/A pair.
    pub aa: Option<(Side, Side)>,
    /// The equivalence margin of the verdicts (0.02 = ±2 %); the default when None.
    /// An A/A noise floor wider than it replaces it.
    pub margin: Option<f64>,
}

/// Why a comparison could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// The store could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Another store file named as a side could not be opened.
    #[error("cannot open results store \"{path}\": {source}")]
    OtherStore {
        /// Its path.
        path: String,
        /// Why.
        source: StoreError,
    },
    /// A side names something the store does not hold, or holds no successful run.
    #[error("{0}")]
    Side(String),
    /// The sides have no matrix cell in common.
    #[error(
        "A ({a}) and B ({b}) have no matrix cell in common (a cell is: {dimensions})\n  cells of A: {only_in_a}\n  cells of B: {only_in_b}\n  (compare along a dimension with --along, e.g. --along clients, or filter the sides with mode:, script:, scale:, clients:, rate:)"
    )]
    NothingInCommon {
        /// Label of A.
        a: String,
        /// Label of B.
        b: String,
        /// What makes a cell.
        dimensions: String,
        /// A's cells.
        only_in_a: String,
        /// B's cells.
        only_in_b: String,
    },
}

/// Compares two sides of `store` (and measures the noise floor of `request.aa`). Runs
/// that cannot be read, or hold values no run can have, are left out and recorded in
/// the store's skipped runs; those of another store file are added to `skipped`.
pub fn compare_sides(
    store: &mut Store,
    request: &CompareRequest,
    skipped: &mut Vec<String>,
) -> Result<Comparison, CompareError> {
    let side_a = resolve(store, &request.a, skipped)?;
    let side_b = resolve(store, &request.b, skipped)?;
    let mut along = differences(&request.a, &request.b);
    for d in &request.along {
        if !along.contains(d) {
            along.push(*d);
        }
    }
    along.sort();
    let along = Along(along);
    let margin = request.margin.map_or_else(Margin::default, Margin::given);
    let mut c = compare_with_margin(
        &side_a.label,
        &side_a.cells,
        &side_b.label,
        &side_b.cells,
        &along,
        margin,
    );
    if c.cells.is_empty() {
        let list = |v: &[String]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            }
        };
        return Err(CompareError::NothingInCommon {
            a: side_a.label,
            b: side_b.label,
            dimensions: c.cell_dimensions.join(", "),
            only_in_a: list(&c.only_in_a),
            only_in_b: list(&c.only_in_b),
        });
    }
    if let Some((x, y)) = &request.aa {
        let sx = resolve(store, x, skipped)?;
        let sy = resolve(store, y, skipped)?;
        let mut aa_along = differences(x, y);
        aa_along.extend(along.0.iter().filter(|d| {
            matches!(
                d,
                Dimension::QueryMode
                    | Dimension::Script
                    | Dimension::Scale
                    | Dimension::Clients
                    | Dimension::Rate
            )
        }));
        c = c.with_noise_floor(&compare(
            &sx.label,
            &sx.cells,
            &sy.label,
            &sy.cells,
            &Along(aa_along),
        ));
    }
    Ok(c)
}

/// The dimensions in which two sides' selections differ (compared along).
fn differences(a: &Side, b: &Side) -> Vec<Dimension> {
    let none = SideFilter::default();
    let filter = |s: &Side| match s {
        Side::Filter(f) => f.clone(),
        _ => none.clone(),
    };
    let (fa, fb) = (filter(a), filter(b));
    let mut d = Vec::new();
    let store_differs = match (a, b) {
        (Side::StoreFile(x), Side::StoreFile(y)) => x != y,
        (Side::StoreFile(_), _) | (_, Side::StoreFile(_)) => true,
        _ => false,
    };
    if store_differs || fa.set != fb.set {
        d.push(Dimension::Set);
    }
    for (differs, dim) in [
        (fa.target != fb.target, Dimension::Target),
        (fa.mode != fb.mode, Dimension::QueryMode),
        (fa.script != fb.script, Dimension::Script),
        (fa.scale != fb.scale, Dimension::Scale),
        (fa.clients != fb.clients, Dimension::Clients),
        (fa.rate != fb.rate, Dimension::Rate),
    ] {
        if differs {
            d.push(dim);
        }
    }
    d
}

/// One resolved side.
struct Resolved {
    label: String,
    cells: Vec<Cell>,
}

/// Target names by id, over every set of the store.
pub(crate) fn target_names(store: &mut Store) -> Result<BTreeMap<i64, String>, StoreError> {
    let mut names = BTreeMap::new();
    for s in store.list_sets()? {
        for t in store.targets(s.id)? {
            names.insert(t.id, t.record.name);
        }
    }
    Ok(names)
}

/// The successful runs matching `filter` that can be read and hold possible values
/// (the others are recorded in the store's skipped runs).
fn runs_where(store: &mut Store, filter: RunFilter) -> Result<Vec<Run>, StoreError> {
    let runs = store
        .readable_runs(&filter)?
        .into_iter()
        .filter(is_ok)
        .collect();
    Ok(without_impossible(store, runs))
}

fn resolve(
    store: &mut Store,
    side: &Side,
    skipped: &mut Vec<String>,
) -> Result<Resolved, CompareError> {
    match side {
        Side::StoreFile(path) => resolve_other_store(path, skipped),
        Side::Runs(ids) => {
            let f = SideFilter {
                runs: Some(ids.clone()),
                ..SideFilter::default()
            };
            resolve_filter(store, &f, side)
        }
        Side::Filter(f) => resolve_filter(store, f, side),
    }
}

fn resolve_other_store(
    path: &std::path::Path,
    skipped: &mut Vec<String>,
) -> Result<Resolved, CompareError> {
    let shown = path.display().to_string();
    let mut other = Store::open_read_only(&shown).map_err(|source| CompareError::OtherStore {
        path: shown.clone(),
        source,
    })?;
    let names = target_names(&mut other)?;
    let runs = runs_where(&mut other, RunFilter::default());
    skipped.extend(
        other
            .skipped_runs()
            .iter()
            .map(|u| format!("{u} (in {shown})")),
    );
    let cells = build_cells(&mut other, &runs?, &names)?;
    Ok(Resolved {
        label: shown,
        cells,
    })
}

/// These runs, as far as they can be read and hold possible values.
fn runs_by_id(store: &mut Store, ids: &[i64]) -> Result<Vec<Run>, CompareError> {
    let mut runs = Vec::new();
    for id in ids {
        match store.run(*id) {
            Ok(run) => runs.push(run),
            // Recorded in the store's skipped runs.
            Err(StoreError::UnreadableRun(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let runs = store.keep_readable(runs)?;
    Ok(without_impossible(store, runs))
}

fn resolve_filter(
    store: &mut Store,
    f: &SideFilter,
    side: &Side,
) -> Result<Resolved, CompareError> {
    let mut label_parts: Vec<String> = Vec::new();
    let mut runs = match &f.runs {
        Some(ids) => {
            if f.set.is_some() || f.target.is_some() {
                return Err(CompareError::Side(format!(
                    "side \"{}\": run: cannot be combined with set: or target:",
                    describe(side)
                )));
            }
            let shown: Vec<String> = ids.iter().map(i64::to_string).collect();
            label_parts.push(format!("runs {}", shown.join(",")));
            runs_by_id(store, ids)?
        }
        None => runs_of_set_and_target(store, f, &mut label_parts)?,
    };
    keep_cell_filters(&mut runs, f, &mut label_parts);
    cells_of(store, runs, label_parts.join(" · "), side)
}

/// The runs of the side's set and target (all the store's when it names neither).
fn runs_of_set_and_target(
    store: &mut Store,
    f: &SideFilter,
    label_parts: &mut Vec<String>,
) -> Result<Vec<Run>, CompareError> {
    let names = target_names(store)?;
    let set_id = match &f.set {
        Some(s) => {
            let id = store.resolve_set(s)?;
            label_parts.push(store.set(id)?.record.name);
            Some(id)
        }
        None => None,
    };
    let target_id = match (&f.target, set_id) {
        (Some(t), Some(set_id)) => Some(
            store
                .targets(set_id)?
                .into_iter()
                .find(|x| &x.record.name == t)
                .map(|x| x.id)
                .ok_or_else(|| {
                    CompareError::Side(format!(
                        "set \"{}\" has no target \"{t}\"",
                        f.set.as_deref().unwrap_or("")
                    ))
                })?,
        ),
        (Some(t), None) => Some(
            names
                .iter()
                .filter(|(_, n)| *n == t)
                .map(|(id, _)| *id)
                .next_back()
                .ok_or_else(|| CompareError::Side(format!("no target \"{t}\" in the store")))?,
        ),
        (None, _) => None,
    };
    if let Some(t) = &f.target {
        label_parts.push(t.clone());
    }
    Ok(runs_where(
        store,
        RunFilter {
            set_id,
            target_id,
            ..Default::default()
        },
    )?)
}

/// The runs a side's filters on the matrix cell keep, each filter named in the label.
fn keep_cell_filters(runs: &mut Vec<Run>, f: &SideFilter, label_parts: &mut Vec<String>) {
    if let Some(m) = &f.mode {
        runs.retain(|r| CellKey::of(r).query_mode == *m);
        label_parts.push(m.clone());
    }
    if let Some(sc) = &f.script {
        let want = builtin_name(sc);
        runs.retain(|r| CellKey::of(r).script == want);
        label_parts.push(want);
    }
    for (value, what) in [(f.scale, "scale"), (f.clients, "clients"), (f.rate, "rate")] {
        let Some(want) = value else { continue };
        runs.retain(|r| {
            let k = CellKey::of(r);
            match what {
                "scale" => k.scale as f64 == want,
                "clients" => k.clients as f64 == want,
                _ => k.rate().unwrap_or(0.0) == want,
            }
        });
        label_parts.push(format!("{what} {}", crate::cells::trim_float(want)));
    }
}

fn cells_of(
    store: &mut Store,
    runs: Vec<Run>,
    label: String,
    side: &Side,
) -> Result<Resolved, CompareError> {
    if runs.is_empty() {
        return Err(CompareError::Side(format!(
            "side \"{}\" has no successful run",
            describe(side)
        )));
    }
    let names = target_names(store)?;
    let cells = build_cells(store, &runs, &names)?;
    Ok(Resolved { label, cells })
}

/// A side as `pgsurge compare` writes it.
pub fn describe(side: &Side) -> String {
    match side {
        Side::Runs(ids) => {
            let ids: Vec<String> = ids.iter().map(i64::to_string).collect();
            format!("run:{}", ids.join(","))
        }
        Side::StoreFile(p) => p.display().to_string(),
        Side::Filter(f) => {
            let mut parts = Vec::new();
            if let Some(ids) = &f.runs {
                let ids: Vec<String> = ids.iter().map(i64::to_string).collect();
                parts.push(format!("run:{}", ids.join(",")));
            }
            let text = [
                ("set", &f.set),
                ("target", &f.target),
                ("mode", &f.mode),
                ("script", &f.script),
            ];
            for (k, v) in text {
                if let Some(v) = v {
                    parts.push(format!("{k}:{v}"));
                }
            }
            for (k, v) in [("scale", f.scale), ("clients", f.clients), ("rate", f.rate)] {
                if let Some(v) = v {
                    parts.push(format!("{k}:{}", crate::cells::trim_float(v)));
                }
            }
            parts.join("/")
        }
    }
}

/// The filter keys of a side.
const SIDE_KEYS: [&str; 8] = [
    "set", "target", "mode", "script", "scale", "clients", "rate", "run",
];

/// A side's filters: split at each `/` that a filter key and its `:` follow, so a
/// name holding a `/` (`target:eu/db1`, `set:pgbench-tools-eu/db1-set1`) stays whole.
fn side_parts(spec: &str) -> Vec<&str> {
    let starts_filter = |rest: &str| {
        rest.split_once(':')
            .is_some_and(|(k, _)| SIDE_KEYS.contains(&k.trim()))
    };
    let mut parts = Vec::new();
    let mut start = 0;
    for (i, _) in spec.match_indices('/') {
        if starts_filter(&spec[i + 1..]) {
            parts.push(&spec[start..i]);
            start = i + 1;
        }
    }
    parts.push(&spec[start..]);
    parts
}

/// Parses a side as `pgsurge compare` takes it: filters joined by `/` (`set:ID|NAME`,
/// `target:NAME`, `mode:MODE`, `script:NAME`, `scale:N`, `clients:N`, `rate:TPS`), or
/// `run:ID[,ID…]`, or the path of an existing store file.
pub fn parse_side(spec: &str) -> Result<Side, String> {
    let spec = spec.trim();
    if !spec.contains(':') && std::path::Path::new(spec).is_file() {
        return Ok(Side::StoreFile(PathBuf::from(spec)));
    }
    let syntax = || {
        format!(
            "cannot understand side \"{spec}\": use filters joined by '/' (set:ID|NAME, target:NAME, mode:MODE, script:NAME, scale:N, clients:N, rate:TPS), run:ID[,ID...] or a store file path"
        )
    };
    let mut f = SideFilter::default();
    let mut runs: Option<String> = None;
    let mut seen = std::collections::BTreeSet::new();
    for part in side_parts(spec) {
        let (k, v) = part.split_once(':').ok_or_else(syntax)?;
        let (k, v) = (k.trim(), v.trim().to_string());
        if v.is_empty() || !seen.insert(k.to_string()) {
            return Err(syntax());
        }
        let number = |what: &str| -> Result<Option<f64>, String> {
            v.parse()
                .ok()
                .filter(|n: &f64| n.is_finite() && *n >= 0.0)
                .map(Some)
                .ok_or_else(|| format!("{what}:{v} in side \"{spec}\" is not a number"))
        };
        match k {
            "set" => f.set = Some(v),
            "target" => f.target = Some(v),
            "mode" => f.mode = Some(v),
            "script" => f.script = Some(v),
            "scale" => f.scale = number("scale")?,
            "clients" => f.clients = number("clients")?,
            "rate" => f.rate = number("rate")?,
            "run" => runs = Some(v),
            _ => return Err(syntax()),
        }
    }
    if let Some(m) = &f.mode {
        if !["simple", "extended", "prepared"].contains(&m.as_str()) {
            return Err(format!(
                "unknown query mode \"{m}\" in side \"{spec}\" (simple, extended or prepared)"
            ));
        }
    }
    let Some(ids) = runs else {
        return Ok(Side::Filter(f));
    };
    if f.set.is_some() || f.target.is_some() {
        return Err(format!(
            "side \"{spec}\": run: cannot be combined with set: or target:"
        ));
    }
    let ids = ids
        .split(',')
        .map(|id| {
            id.trim()
                .parse::<i64>()
                .map_err(|_| format!("bad run id \"{id}\" in \"{spec}\""))
        })
        .collect::<Result<Vec<i64>, String>>()?;
    if f == SideFilter::default() {
        return Ok(Side::Runs(ids));
    }
    f.runs = Some(ids);
    Ok(Side::Filter(f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_side_splits_before_filter_keys_only() {
        assert_eq!(
            side_parts("set:pgbench-tools-eu/db1-set1/target:eu/db1/clients:4"),
            [
                "set:pgbench-tools-eu/db1-set1",
                "target:eu/db1",
                "clients:4"
            ]
        );
        assert_eq!(side_parts("target:a/b:c"), ["target:a/b:c"]);
        assert_eq!(side_parts("set:1/ target:x"), ["set:1", " target:x"]);
    }

    #[test]
    fn sides_parse_into_typed_values_and_print_back() {
        let s = parse_side("set:ab/target:pg17/mode:prepared/clients:8").unwrap();
        let Side::Filter(f) = &s else { panic!("{s:?}") };
        assert_eq!(f.set.as_deref(), Some("ab"));
        assert_eq!(f.clients, Some(8.0));
        assert_eq!(describe(&s), "set:ab/target:pg17/mode:prepared/clients:8");
        assert_eq!(parse_side("run:3, 4").unwrap(), Side::Runs(vec![3, 4]));
        let s = parse_side("run:5/mode:simple").unwrap();
        assert_eq!(describe(&s), "run:5/mode:simple");
        for bad in [
            "set:",
            "bogus:1",
            "set:a/set:b",
            "mode:fast",
            "clients:x",
            "run:1/set:a",
            "target:t/run:2",
            "run:x",
            "plain",
        ] {
            assert!(parse_side(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sides_differ_in_the_dimensions_their_filters_differ_in() {
        let f = |s: &str| parse_side(s).unwrap();
        assert_eq!(
            differences(&f("set:a/mode:simple"), &f("set:a/mode:prepared")),
            vec![Dimension::QueryMode]
        );
        assert_eq!(
            differences(&f("set:a/target:x"), &f("set:b/target:y")),
            vec![Dimension::Set, Dimension::Target]
        );
        assert!(differences(&f("run:1"), &f("run:2")).is_empty());
    }
}
