//! Command lines of `pgsurge report` and `pgsurge compare`.
//!
//! A side of a comparison is written as `set:ID|NAME`, `target:NAME` (optionally
//! `set:X/target:NAME`), `run:ID[,ID…]`, or the path of another store file (all its
//! successful runs). With no sides, `compare` picks the obvious pair: the first two
//! targets of a set that has several, else the last two sets.

use crate::cells::{build_cells, is_ok, Cell};
use crate::compare::{compare, render_text, Comparison};
use crate::pages::{write_report, ReportRequest};
use clap::{Parser, ValueEnum};
use pgsurge_store::{Run, RunFilter, Store};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "pgsurge report",
    about = "Write the static HTML report of a results store"
)]
struct ReportArgs {
    /// Results store: SQLite file or postgresql:// URL [default: $PGSURGE_STORE or ./pgsurge-results.db]
    #[arg(long)]
    store: Option<String>,
    /// Only these sets (id or name); repeatable
    #[arg(long = "set")]
    sets: Vec<String>,
    /// Output directory
    #[arg(short = 'o', long = "output", default_value = "pgsurge-report")]
    output: PathBuf,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Format {
    Text,
    Json,
}

#[derive(Parser, Debug)]
#[command(
    name = "pgsurge compare",
    about = "Is B faster than A? Per matrix cell: medians, relative change with a 95 % confidence interval, Mann-Whitney p, verdict",
    after_help = "SIDES: set:ID|NAME, target:NAME, set:X/target:NAME, run:ID[,ID...], or the path of another store file.\n\
                  Without sides: the first two targets of a set that has several (its A/A twin, if any, gives the noise floor), else the last two sets."
)]
struct CompareArgs {
    /// Side A (the baseline)
    a: Option<String>,
    /// Side B (the candidate)
    b: Option<String>,
    /// Results store [default: $PGSURGE_STORE or ./pgsurge-results.db]
    #[arg(long)]
    store: Option<String>,
    /// An A/A pair (two sides separated by a comma) whose spread is reported as the noise floor
    #[arg(long)]
    aa: Option<String>,
    /// Output format
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

fn parse<T: Parser>(name: &str, args: &[OsString]) -> Result<T, i32> {
    let argv = std::iter::once(OsString::from(name)).chain(args.iter().cloned());
    T::try_parse_from(argv).map_err(|e| {
        let _ = e.print();
        if e.use_stderr() {
            2
        } else {
            0
        }
    })
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
    let a: ReportArgs = match parse("pgsurge report", args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let run = || -> Result<(), String> {
        let mut store = open(a.store.as_deref())?;
        let mut sets = Vec::new();
        for s in &a.sets {
            sets.push(resolve_set(&mut store, s)?);
        }
        let files = write_report(&mut store, &ReportRequest { sets }, &a.output)
            .map_err(|e| e.to_string())?;
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

/// Entry point of `pgsurge compare`.
pub fn compare_main(args: &[OsString]) -> i32 {
    let a: CompareArgs = match parse("pgsurge compare", args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    match run_compare(&a) {
        Ok(c) => {
            match a.format {
                Format::Text => print!("{}", render_text(&c)),
                Format::Json => match serde_json::to_string_pretty(&c) {
                    Ok(s) => println!("{s}"),
                    Err(e) => {
                        eprintln!("pgsurge: error: {e}");
                        return 1;
                    }
                },
            }
            0
        }
        Err(e) => {
            eprintln!("pgsurge: error: {e}");
            1
        }
    }
}

fn run_compare(a: &CompareArgs) -> Result<Comparison, String> {
    let mut store = open(a.store.as_deref())?;
    let mut aa = a.aa.clone();
    let (sa, sb) = match (&a.a, &a.b) {
        (Some(x), Some(y)) => (x.clone(), y.clone()),
        (None, None) => {
            let (x, y, twin) = default_sides(&mut store)?;
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
    let (la, ca) = side_cells(&mut store, &sa)?;
    let (lb, cb) = side_cells(&mut store, &sb)?;
    let mut c = compare(&la, &ca, &lb, &cb);
    if c.rows.is_empty() {
        return Err(format!(
            "A ({la}) and B ({lb}) have no matrix cell in common"
        ));
    }
    if let Some(aa) = &aa {
        let (x, y) = aa
            .split_once(',')
            .ok_or_else(|| format!("--aa wants two sides separated by a comma, got \"{aa}\""))?;
        let (lx, cx) = side_cells(&mut store, x)?;
        let (ly, cy) = side_cells(&mut store, y)?;
        c = c.with_noise_floor(&compare(&lx, &cx, &ly, &cy));
    }
    Ok(c)
}

fn resolve_set(store: &mut Store, s: &str) -> Result<i64, String> {
    let sets = store.list_sets().map_err(|e| e.to_string())?;
    if let Ok(id) = s.parse::<i64>() {
        if sets.iter().any(|x| x.id == id) {
            return Ok(id);
        }
    }
    sets.iter()
        .rev()
        .find(|x| x.record.name == s)
        .map(|x| x.id)
        .ok_or_else(|| {
            let known: Vec<String> = sets
                .iter()
                .map(|x| format!("{} ({})", x.id, x.record.name))
                .collect();
            format!(
                "no set \"{s}\" in the store; sets: {}",
                if known.is_empty() {
                    "none".into()
                } else {
                    known.join(", ")
                }
            )
        })
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

fn runs_where(store: &mut Store, filter: RunFilter) -> Result<Vec<Run>, String> {
    Ok(store
        .list_runs(&filter)
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(is_ok)
        .collect())
}

/// Resolves one side to its label and its cells.
fn side_cells(store: &mut Store, spec: &str) -> Result<(String, Vec<Cell>), String> {
    let spec = spec.trim();
    let names = target_names(store)?;
    let runs: Vec<Run> = if let Some(ids) = spec.strip_prefix("run:") {
        let mut runs = Vec::new();
        for id in ids.split(',') {
            let id: i64 = id
                .trim()
                .parse()
                .map_err(|_| format!("bad run id \"{id}\" in \"{spec}\""))?;
            runs.push(store.run(id).map_err(|e| e.to_string())?);
        }
        runs
    } else if let Some(rest) = spec.strip_prefix("set:") {
        let (set, target) = match rest.split_once("/target:") {
            Some((s, t)) => (s, Some(t)),
            None => (rest, None),
        };
        let set_id = resolve_set(store, set)?;
        let target_id = match target {
            Some(t) => Some(
                store
                    .targets(set_id)
                    .map_err(|e| e.to_string())?
                    .into_iter()
                    .find(|x| x.record.name == t)
                    .map(|x| x.id)
                    .ok_or_else(|| format!("set \"{set}\" has no target \"{t}\""))?,
            ),
            None => None,
        };
        runs_where(
            store,
            RunFilter {
                set_id: Some(set_id),
                target_id,
                ..Default::default()
            },
        )?
    } else if let Some(t) = spec.strip_prefix("target:") {
        let ids: Vec<i64> = names
            .iter()
            .filter(|(_, n)| *n == t)
            .map(|(id, _)| *id)
            .collect();
        let Some(&id) = ids.last() else {
            return Err(format!("no target \"{t}\" in the store"));
        };
        runs_where(
            store,
            RunFilter {
                target_id: Some(id),
                ..Default::default()
            },
        )?
    } else if std::path::Path::new(spec).is_file() {
        let mut other = Store::open_read_only(spec)
            .map_err(|e| format!("cannot open results store \"{spec}\": {e}"))?;
        let other_names = target_names(&mut other)?;
        let runs = runs_where(&mut other, RunFilter::default())?;
        let cells = build_cells(&mut other, &runs, &other_names).map_err(|e| e.to_string())?;
        return Ok((spec.to_string(), cells));
    } else {
        return Err(format!(
            "cannot understand side \"{spec}\": use set:ID|NAME, target:NAME, set:X/target:NAME, run:ID[,ID...] or a store file path"
        ));
    };
    if runs.is_empty() {
        return Err(format!("side \"{spec}\" has no successful run"));
    }
    let cells = build_cells(store, &runs, &names).map_err(|e| e.to_string())?;
    Ok((spec.to_string(), cells))
}

fn default_sides(store: &mut Store) -> Result<(String, String, Option<String>), String> {
    let sets = store.list_sets().map_err(|e| e.to_string())?;
    for s in sets.iter().rev() {
        let targets = store.targets(s.id).map_err(|e| e.to_string())?;
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
