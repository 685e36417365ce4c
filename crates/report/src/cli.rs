//! Command lines of `pgsurge report` and `pgsurge compare`; both open the store
//! read-only.
//!
//! A side of a comparison is a list of filters joined by `/` (`set:ID|NAME`,
//! `target:NAME`, `mode:MODE`, `script:NAME`), or `run:ID[,ID…]`, or the path of another
//! store file (all its successful runs). The dimensions the two sides' filters differ in
//! are compared along (left out of the cells); `--along` adds more. With no sides,
//! `compare` picks the obvious pair: the first two targets (file order) of the newest set
//! that has several, else the last two sets. Exit status: 0, 1 error, 2 usage,
//! [`EXIT_REGRESSION`] (3) when `--fail-on` finds a regression.

use crate::cells::{build_cells, builtin_name, is_ok, Cell, CellKey};
use crate::compare::{compare, render_markdown, render_text, Along, Comparison, Dimension};
use crate::pages::{without_impossible, write_report, ReportRequest};
use clap::{Parser, ValueEnum};
use pgsurge_store::{Run, RunFilter, Store};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;

/// Arguments of `pgsurge report`.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "pgsurge report",
    about = "Write the static HTML report of a results store",
    after_help = "A run that cannot be read (a damaged stored value or histogram), or that holds values no run \
                  can have (a negative or non-finite rate, latency or count), is left out and named on stderr.\n\
                  EXIT STATUS: 0 written (also when some runs were left out); 1 error, or none of the runs could \
                  be read; 2 usage error."
)]
pub struct ReportArgs {
    /// Results store: SQLite file or postgresql:// URL [default: $PGSURGE_STORE or ./pgsurge-results.db]
    #[arg(long)]
    pub store: Option<String>,
    /// Only these sets (id or name); repeatable
    #[arg(long = "set")]
    pub sets: Vec<String>,
    /// Output directory
    #[arg(short = 'o', long = "output", default_value = "pgsurge-report")]
    pub output: PathBuf,
}

/// Output format of `pgsurge compare`.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Format {
    /// A table for people.
    Text,
    /// The versioned JSON document `pgsurge schema compare` prints the JSON Schema of.
    Json,
    /// A Markdown table of each side's repeats (n, mean, median, min, max, standard
    /// deviation) beside the verdict, ready to paste.
    Markdown,
}

/// A dimension given to `--along`.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum AlongArg {
    /// Result sets.
    Set,
    /// Targets.
    Target,
    /// Settings: compared through targets (a target is one set of settings).
    Settings,
    /// Query mode.
    QueryMode,
    /// Workload.
    Script,
    /// Scale factor.
    Scale,
    /// Number of clients.
    Clients,
    /// Target rate (`-R`).
    Rate,
}

/// Exit status of `pgsurge compare --fail-on` when a regression is found.
pub const EXIT_REGRESSION: i32 = 3;

/// `--fail-on=slower[:THRESHOLD%]`: the threshold as a fraction (0.05 = 5 %).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FailOn(pub f64);

impl std::str::FromStr for FailOn {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("expected slower or slower:THRESHOLD% (e.g. slower:5%), got \"{s}\"");
        let rest = s.trim().strip_prefix("slower").ok_or_else(bad)?;
        if rest.is_empty() {
            return Ok(FailOn(0.0));
        }
        let t = rest.strip_prefix(':').ok_or_else(bad)?;
        let t = t.strip_suffix('%').unwrap_or(t).trim();
        match t.parse::<f64>() {
            Ok(v) if v.is_finite() && (0.0..100.0).contains(&v) => Ok(FailOn(v / 100.0)),
            _ => Err(bad()),
        }
    }
}

/// Arguments of `pgsurge compare` (self-contained: the `cli` crate may flatten it into
/// its own command tree and call [`compare_with`]).
#[derive(Parser, Debug, Clone)]
#[command(
    name = "pgsurge compare",
    about = "Is B faster than A? Per matrix cell: geometric means of the repeats, change with a 95 % confidence interval, Mann-Whitney p, verdict",
    after_help = "SIDES: filters joined by '/': set:ID|NAME, target:NAME, mode:simple|extended|prepared, script:NAME, scale:N, clients:N, rate:TPS \
                  (e.g. set:ab/target:pg17/mode:prepared), or run:ID[,ID...], or the path of another store file.\n\
                  The dimensions the two sides differ in are compared along and left out of the cells; --along adds more.\n\
                  Without sides: the first two targets of the newest set that has several (its A/A twin, if any, gives the noise floor), else the last two sets.\n\
                  A run that cannot be read (a damaged stored value or histogram), or that holds values no run can have (a negative or non-finite rate, latency or count), is left out and named on stderr.\n\
                  EXIT STATUS: 0 compared; 1 error (including no cell in common); 2 usage error; 3 --fail-on found a regression."
)]
pub struct CompareArgs {
    /// Side A (the baseline)
    pub a: Option<String>,
    /// Side B (the candidate)
    pub b: Option<String>,
    /// Results store [default: $PGSURGE_STORE or ./pgsurge-results.db]
    #[arg(long)]
    pub store: Option<String>,
    /// An A/A pair (two sides separated by a comma) whose spread is reported as the noise floor
    #[arg(long)]
    pub aa: Option<String>,
    /// Compare along these dimensions (left out of the cells), besides those the sides differ in
    #[arg(long, value_enum, value_delimiter = ',')]
    pub along: Vec<AlongArg>,
    /// Output format
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Exit with status 3 when a cell's verdict is slower by more than THRESHOLD (TPS lower, or p99 latency higher) [format: slower[:THRESHOLD%]]
    #[arg(long = "fail-on", value_name = "slower[:THRESHOLD%]")]
    pub fail_on: Option<FailOn>,
}

fn parse<T: Parser>(name: &str, args: &[OsString]) -> Result<T, i32> {
    pgsurge_command::parse(name, args)
}

fn open(location: Option<&str>) -> Result<Store, String> {
    let loc = location
        .map(str::to_string)
        .unwrap_or_else(pgsurge_store::default_location);
    if !pgsurge_store::is_postgres_location(&loc)
        && loc != ":memory:"
        && !std::path::Path::new(&loc).exists()
    {
        let loc = pgsurge_store::redact_location(&loc);
        return Err(format!("results store \"{loc}\" does not exist (use --store, or run a campaign or quickstart first)"));
    }
    // Read-only (works on read-only media, changes nothing); passwords masked in messages.
    let opened = if loc == ":memory:" {
        Store::open(&loc)
    } else {
        Store::open_read_only(&loc)
    };
    let loc = pgsurge_store::redact_location(&loc);
    opened.map_err(|e| format!("cannot open results store \"{loc}\": {e}"))
}

/// Entry point of `pgsurge report`.
pub fn report_main(args: &[OsString]) -> i32 {
    match parse::<ReportArgs>("pgsurge report", args) {
        Ok(a) => report_with(&a),
        Err(code) => code,
    }
}

/// Runs `pgsurge report` with parsed arguments; returns the exit status.
pub fn report_with(a: &ReportArgs) -> i32 {
    let run = || -> Result<(), String> {
        let mut store = open(a.store.as_deref())?;
        let mut sets = Vec::new();
        for s in &a.sets {
            sets.push(store.resolve_set(s).map_err(|e| e.to_string())?);
        }
        let files = write_report(&mut store, &ReportRequest { sets }, &a.output).map_err(|e| {
            if let crate::pages::ReportError::NoneReadable { skipped, .. } = &e {
                warn_left_out(skipped.iter().map(|u| u.to_string()));
            }
            e.to_string()
        })?;
        warn_left_out(files.skipped.iter().map(|u| u.to_string()));
        println!(
            "report written: {} ({} pages, {} charts)",
            files.index.display(),
            files.files.len(),
            files.charts
        );
        Ok(())
    };
    match run() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("pgsurge: error: {e}");
            1
        }
    }
}

/// Names on stderr the runs a report or comparison left out, with why.
fn warn_left_out(lines: impl IntoIterator<Item = String>) {
    for l in lines {
        eprintln!("pgsurge: warning: left out {l}");
    }
}

/// Entry point of `pgsurge compare`.
pub fn compare_main(args: &[OsString]) -> i32 {
    match parse::<CompareArgs>("pgsurge compare", args) {
        Ok(a) => compare_with(&a),
        Err(code) => code,
    }
}

/// Runs `pgsurge compare` with parsed arguments; returns the exit status: 0, 1 on an
/// error, [`EXIT_REGRESSION`] when `--fail-on` finds a regression.
pub fn compare_with(a: &CompareArgs) -> i32 {
    let mut skipped = Vec::new();
    let compared = run_compare_noting(a, &mut skipped);
    warn_left_out(skipped);
    let c = match compared {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pgsurge: error: {e}");
            return 1;
        }
    };
    match a.format {
        Format::Text => print!("{}", render_text(&c)),
        Format::Markdown => print!("{}", render_markdown(&c)),
        Format::Json => match serde_json::to_string_pretty(&c) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("pgsurge: error: {e}");
                return 1;
            }
        },
    }
    if let Some(FailOn(threshold)) = a.fail_on {
        let found = c.regressions(threshold);
        if !found.is_empty() {
            eprintln!(
                "pgsurge: regression beyond {:.1} % in {} cell(s) of {}:",
                threshold * 100.0,
                found.len(),
                c.title
            );
            for f in &found {
                eprintln!("  {f}");
            }
            return EXIT_REGRESSION;
        }
    }
    0
}

/// Runs a comparison as `pgsurge compare` would, without printing. Runs that cannot be
/// read, or hold values no run can have, are left out.
pub fn run_compare(a: &CompareArgs) -> Result<Comparison, String> {
    run_compare_noting(a, &mut Vec::new())
}

/// [`run_compare`], adding to `skipped` each run left out (which, and why).
fn run_compare_noting(a: &CompareArgs, skipped: &mut Vec<String>) -> Result<Comparison, String> {
    let mut store = open(a.store.as_deref())?;
    let compared = compare_in(&mut store, a, skipped);
    skipped.extend(store.skipped_runs().iter().map(|u| u.to_string()));
    compared
}

fn compare_in(
    store: &mut Store,
    a: &CompareArgs,
    skipped: &mut Vec<String>,
) -> Result<Comparison, String> {
    let mut aa = a.aa.clone();
    let (sa, sb) = match (&a.a, &a.b) {
        (Some(x), Some(y)) => (x.clone(), y.clone()),
        (None, None) => {
            let (x, y, twin) = default_sides(store)?;
            if aa.is_none() {
                aa = twin.map(|t| format!("{x},{t}"));
            }
            (x, y)
        }
        _ => {
            return Err(
                "give two sides to compare (A and B), or none to compare the obvious pair".into(),
            )
        }
    };
    let side_a = side_cells(store, &sa, skipped)?;
    let side_b = side_cells(store, &sb, skipped)?;
    let mut along = side_a.selector.differences(&side_b.selector);
    for d in &a.along {
        let d = match d {
            AlongArg::Set => Dimension::Set,
            AlongArg::Target | AlongArg::Settings => Dimension::Target,
            AlongArg::QueryMode => Dimension::QueryMode,
            AlongArg::Script => Dimension::Script,
            AlongArg::Scale => Dimension::Scale,
            AlongArg::Clients => Dimension::Clients,
            AlongArg::Rate => Dimension::Rate,
        };
        if !along.contains(&d) {
            along.push(d);
        }
    }
    along.sort();
    let along = Along(along);
    let mut c = compare(
        &side_a.label,
        &side_a.cells,
        &side_b.label,
        &side_b.cells,
        &along,
    );
    if c.cells.is_empty() {
        let list = |v: &[String]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            }
        };
        return Err(format!(
            "A ({}) and B ({}) have no matrix cell in common (a cell is: {})\n  cells of A: {}\n  cells of B: {}\n  (compare along a dimension with --along, e.g. --along clients, or filter the sides with mode:, script:, scale:, clients:, rate:)",
            side_a.label,
            side_b.label,
            c.cell_dimensions.join(", "),
            list(&c.only_in_a),
            list(&c.only_in_b)
        ));
    }
    if let Some(aa) = &aa {
        let (x, y) = aa
            .split_once(',')
            .ok_or_else(|| format!("--aa wants two sides separated by a comma, got \"{aa}\""))?;
        let sx = side_cells(store, x, skipped)?;
        let sy = side_cells(store, y, skipped)?;
        let mut aa_along = sx.selector.differences(&sy.selector);
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

fn target_names(store: &mut Store) -> Result<BTreeMap<i64, String>, String> {
    let mut names = BTreeMap::new();
    for s in store.list_sets().map_err(|e| e.to_string())? {
        for t in store.targets(s.id).map_err(|e| e.to_string())? {
            names.insert(t.id, t.record.name);
        }
    }
    Ok(names)
}

/// The successful runs matching `filter` that can be read and hold possible values
/// (the others are recorded in the store's skipped runs).
fn runs_where(store: &mut Store, filter: RunFilter) -> Result<Vec<Run>, String> {
    let runs = store
        .readable_runs(&filter)
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(is_ok)
        .collect();
    Ok(without_impossible(store, runs))
}

/// What a side selects, as written.
#[derive(Debug, Default, Clone, PartialEq)]
struct Selector {
    store: Option<String>,
    set: Option<String>,
    target: Option<String>,
    mode: Option<String>,
    script: Option<String>,
    scale: Option<String>,
    clients: Option<String>,
    rate: Option<String>,
    runs: Option<String>,
}

impl Selector {
    /// The dimensions in which two sides differ.
    fn differences(&self, other: &Selector) -> Vec<Dimension> {
        let mut d = Vec::new();
        if self.store != other.store || self.set != other.set {
            d.push(Dimension::Set);
        }
        if self.target != other.target {
            d.push(Dimension::Target);
        }
        if self.mode != other.mode {
            d.push(Dimension::QueryMode);
        }
        if self.script != other.script {
            d.push(Dimension::Script);
        }
        if self.scale != other.scale {
            d.push(Dimension::Scale);
        }
        if self.clients != other.clients {
            d.push(Dimension::Clients);
        }
        if self.rate != other.rate {
            d.push(Dimension::Rate);
        }
        d
    }
}

/// One resolved side.
struct Side {
    label: String,
    selector: Selector,
    cells: Vec<Cell>,
}

fn side_syntax_error(spec: &str) -> String {
    format!(
        "cannot understand side \"{spec}\": use filters joined by '/' (set:ID|NAME, target:NAME, mode:MODE, script:NAME, scale:N, clients:N, rate:TPS), run:ID[,ID...] or a store file path"
    )
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

/// Resolves one side to its label, its selector and its cells. The runs left out of
/// another store file are added to `skipped`.
fn side_cells(store: &mut Store, spec: &str, skipped: &mut Vec<String>) -> Result<Side, String> {
    let spec = spec.trim();
    if !spec.contains(':') && std::path::Path::new(spec).is_file() {
        let mut other = Store::open_read_only(spec)
            .map_err(|e| format!("cannot open results store \"{spec}\": {e}"))?;
        let other_names = target_names(&mut other)?;
        let runs = runs_where(&mut other, RunFilter::default());
        skipped.extend(
            other
                .skipped_runs()
                .iter()
                .map(|u| format!("{u} (in {spec})")),
        );
        let runs = runs?;
        let cells = build_cells(&mut other, &runs, &other_names).map_err(|e| e.to_string())?;
        return Ok(Side {
            label: spec.to_string(),
            selector: Selector {
                store: Some(spec.to_string()),
                ..Default::default()
            },
            cells,
        });
    }
    let mut sel = Selector::default();
    for part in side_parts(spec) {
        let (k, v) = part
            .split_once(':')
            .ok_or_else(|| side_syntax_error(spec))?;
        let v = v.trim().to_string();
        let slot = match k.trim() {
            "set" => &mut sel.set,
            "target" => &mut sel.target,
            "mode" => &mut sel.mode,
            "script" => &mut sel.script,
            "scale" => &mut sel.scale,
            "clients" => &mut sel.clients,
            "rate" => &mut sel.rate,
            "run" => &mut sel.runs,
            _ => return Err(side_syntax_error(spec)),
        };
        if v.is_empty() || slot.replace(v).is_some() {
            return Err(side_syntax_error(spec));
        }
    }
    if let Some(m) = &sel.mode {
        if !["simple", "extended", "prepared"].contains(&m.as_str()) {
            return Err(format!(
                "unknown query mode \"{m}\" in side \"{spec}\" (simple, extended or prepared)"
            ));
        }
    }
    let names = target_names(store)?;
    let mut label_parts: Vec<String> = Vec::new();
    let mut runs: Vec<Run> = if let Some(ids) = &sel.runs {
        if sel.set.is_some() || sel.target.is_some() {
            return Err(format!(
                "side \"{spec}\": run: cannot be combined with set: or target:"
            ));
        }
        let mut runs = Vec::new();
        for id in ids.split(',') {
            let id: i64 = id
                .trim()
                .parse()
                .map_err(|_| format!("bad run id \"{id}\" in \"{spec}\""))?;
            match store.run(id) {
                Ok(run) => runs.push(run),
                // Recorded in the store's skipped runs.
                Err(pgsurge_store::StoreError::UnreadableRun(_)) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        label_parts.push(format!("runs {ids}"));
        let runs = store.keep_readable(runs).map_err(|e| e.to_string())?;
        without_impossible(store, runs)
    } else {
        let set_id = match &sel.set {
            Some(s) => {
                let id = store.resolve_set(s).map_err(|e| e.to_string())?;
                label_parts.push(store.set(id).map_err(|e| e.to_string())?.record.name);
                Some(id)
            }
            None => None,
        };
        let target_id = match (&sel.target, set_id) {
            (Some(t), Some(set_id)) => Some(
                store
                    .targets(set_id)
                    .map_err(|e| e.to_string())?
                    .into_iter()
                    .find(|x| &x.record.name == t)
                    .map(|x| x.id)
                    .ok_or_else(|| {
                        format!(
                            "set \"{}\" has no target \"{t}\"",
                            sel.set.as_deref().unwrap_or("")
                        )
                    })?,
            ),
            (Some(t), None) => Some(
                names
                    .iter()
                    .filter(|(_, n)| *n == t)
                    .map(|(id, _)| *id)
                    .next_back()
                    .ok_or_else(|| format!("no target \"{t}\" in the store"))?,
            ),
            (None, _) => None,
        };
        if let Some(t) = &sel.target {
            label_parts.push(t.clone());
        }
        runs_where(
            store,
            RunFilter {
                set_id,
                target_id,
                ..Default::default()
            },
        )?
    };
    if let Some(m) = &sel.mode {
        runs.retain(|r| CellKey::of(r).query_mode == *m);
        label_parts.push(m.clone());
    }
    if let Some(sc) = &sel.script {
        let want = builtin_name(sc);
        runs.retain(|r| CellKey::of(r).script == want);
        label_parts.push(want);
    }
    keep_numeric_filters(&mut runs, &sel, spec, &mut label_parts)?;
    if runs.is_empty() {
        return Err(format!("side \"{spec}\" has no successful run"));
    }
    let cells = build_cells(store, &runs, &names).map_err(|e| e.to_string())?;
    Ok(Side {
        label: label_parts.join(" · "),
        selector: sel,
        cells,
    })
}

/// Keeps the runs a side's `scale:`, `clients:` and `rate:` filters select, and names
/// the filters in its label.
fn keep_numeric_filters(
    runs: &mut Vec<Run>,
    sel: &Selector,
    spec: &str,
    label_parts: &mut Vec<String>,
) -> Result<(), String> {
    for (value, what) in [
        (&sel.scale, "scale"),
        (&sel.clients, "clients"),
        (&sel.rate, "rate"),
    ] {
        let Some(v) = value else { continue };
        let want: f64 = v
            .parse()
            .ok()
            .filter(|n: &f64| n.is_finite() && *n >= 0.0)
            .ok_or_else(|| format!("{what}:{v} in side \"{spec}\" is not a number"))?;
        runs.retain(|r| {
            let k = CellKey::of(r);
            match what {
                "scale" => k.scale as f64 == want,
                "clients" => k.clients as f64 == want,
                _ => k.rate().unwrap_or(0.0) == want,
            }
        });
        label_parts.push(format!("{what} {v}"));
    }
    Ok(())
}

fn default_sides(store: &mut Store) -> Result<(String, String, Option<String>), String> {
    let sets = store.list_sets().map_err(|e| e.to_string())?;
    for s in sets.iter().rev() {
        // Targets in the campaign file's order (their ids): the first is A.
        let mut targets = store.targets(s.id).map_err(|e| e.to_string())?;
        targets.sort_by_key(|t| t.id);
        // A campaign's A/A twin ("NAME (A-A)") is the noise check, not a side.
        let real: Vec<&str> = targets
            .iter()
            .map(|t| t.record.name.as_str())
            .filter(|n| !n.ends_with(" (A-A)"))
            .collect();
        if real.len() >= 2 {
            let side = |t: &str| format!("set:{}/target:{t}", s.id);
            let twin_name = format!("{} (A-A)", real[0]);
            let twin = targets
                .iter()
                .any(|t| t.record.name == twin_name)
                .then(|| side(&twin_name));
            return Ok((side(real[0]), side(real[1]), twin));
        }
    }
    if sets.len() >= 2 {
        let n = sets.len();
        return Ok((
            format!("set:{}", sets[n - 2].id),
            format!("set:{}", sets[n - 1].id),
            None,
        ));
    }
    Err("nothing to compare: the store has no set with two targets and fewer than two sets; name the sides A and B".into())
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
    fn fail_on_parses_the_threshold() {
        assert_eq!("slower".parse::<FailOn>(), Ok(FailOn(0.0)));
        assert_eq!("slower:5%".parse::<FailOn>(), Ok(FailOn(0.05)));
        assert_eq!("slower:2.5".parse::<FailOn>(), Ok(FailOn(0.025)));
        for bad in [
            "faster",
            "slower:",
            "slower:x%",
            "slower5",
            "slower:-1%",
            "slower:100%",
        ] {
            assert!(bad.parse::<FailOn>().is_err(), "{bad}");
        }
    }

    #[test]
    fn args_are_embeddable_in_another_clap_tree() {
        fn is_args<T: clap::Args>() {}
        is_args::<CompareArgs>();
        is_args::<ReportArgs>();
    }
}
