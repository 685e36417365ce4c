//! Command lines of `pgsurge report` and `pgsurge compare`; both open the store
//! read-only.
//!
//! A side of a comparison is a list of filters joined by `/` (`set:ID|NAME`,
//! `target:NAME`, `mode:MODE`, `script:NAME`), or `run:ID[,ID…]`, or the path of another
//! store file (all its successful runs). The dimensions the two sides' filters differ in
//! are compared along (left out of the cells); `--along` adds more. With no sides,
//! `compare` picks the obvious pair: the first two targets (file order) of the newest set
//! that has several, else the last two sets. Exit status: 0, 1 error, 2 usage,
//! [`EXIT_REGRESSION`] (3) when `--fail-on` finds a regression; `report` gives
//! [`EXIT_NOTHING`] (3) when the store holds no run to report.

use crate::compare::{render_markdown, render_text, Comparison, Dimension};
use crate::pages::{write_report, ReportRequest};
use crate::sides::{compare_sides, parse_side, CompareRequest, Side, SideFilter};
use clap::{Parser, ValueEnum};
use pgsurge_command::EXIT_NOTHING;
use pgsurge_store::Store;
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

/// `--fail-on=CONDITION[,CONDITION…]`: what makes `pgsurge compare` exit with
/// [`EXIT_REGRESSION`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FailOn {
    /// `slower[:THRESHOLD%]`: a cell slower by more than the threshold (0.05 = 5 %).
    pub slower: Option<f64>,
    /// `invalid`: a cell whose verdict carries a reason it may not hold.
    pub invalid: bool,
    /// `inconclusive`: a cell whose TPS verdict is inconclusive.
    pub inconclusive: bool,
}

impl std::str::FromStr for FailOn {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "expected a comma-separated list of slower, slower:THRESHOLD%, invalid, inconclusive (e.g. slower:3%,invalid), got \"{s}\""
            )
        };
        let mut f = FailOn::default();
        for part in s.split(',') {
            let part = part.trim();
            match part {
                "invalid" => f.invalid = true,
                "inconclusive" => f.inconclusive = true,
                _ => {
                    let rest = part.strip_prefix("slower").ok_or_else(bad)?;
                    if f.slower.is_some() {
                        return Err(bad());
                    }
                    if rest.is_empty() {
                        f.slower = Some(0.0);
                        continue;
                    }
                    let t = rest.strip_prefix(':').ok_or_else(bad)?;
                    let t = t.strip_suffix('%').unwrap_or(t).trim();
                    match t.parse::<f64>() {
                        Ok(v) if v.is_finite() && (0.0..100.0).contains(&v) => {
                            f.slower = Some(v / 100.0)
                        }
                        _ => return Err(bad()),
                    }
                }
            }
        }
        Ok(f)
    }
}

/// `--margin PCT`: the equivalence margin as a fraction.
fn parse_margin(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let t = t.strip_suffix('%').unwrap_or(t).trim();
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v < 100.0 => Ok(v / 100.0),
        _ => Err(format!(
            "expected a percentage above 0 and below 100 (e.g. 2% or 1.5), got \"{s}\""
        )),
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
    /// Exit with status 3 when: slower[:THRESHOLD%] a cell's verdict is slower by more than THRESHOLD (TPS lower, or p99 latency higher); invalid a cell's verdict carries a reason it may not hold; inconclusive a cell's TPS verdict is inconclusive. Comma-separated, e.g. slower:3%,invalid
    #[arg(long = "fail-on", value_name = "CONDITION[,CONDITION...]")]
    pub fail_on: Option<FailOn>,
    /// Equivalence margin of the verdicts: no-difference only when the whole interval lies within +-PCT (an A/A noise floor wider than it replaces it) [default: 2%]
    #[arg(long, value_name = "PCT", value_parser = parse_margin)]
    pub margin: Option<f64>,
    /// Under the verdicts, the functions whose cost per transaction changed most in the profiles stored with the repeats (self and inclusive, with their intervals)
    #[arg(long)]
    pub explain: bool,
    /// Write a differential flame graph (B against A, repeats pooled) of every compared cell whose sides were profiled into DIR
    #[arg(long = "profile-diff", value_name = "DIR")]
    pub profile_diff: Option<std::path::PathBuf>,
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

/// Runs `pgsurge report` with parsed arguments; returns the exit status: 0, 1 on an
/// error, [`EXIT_NOTHING`] when there is no run to report.
pub fn report_with(a: &ReportArgs) -> i32 {
    let mut nothing = false;
    let mut run = || -> Result<(), String> {
        let mut store = open(a.store.as_deref())?;
        let mut sets = Vec::new();
        for s in &a.sets {
            sets.push(store.resolve_set(s).map_err(|e| e.to_string())?);
        }
        let files = write_report(&mut store, &ReportRequest { sets }, &a.output).map_err(|e| {
            if let crate::pages::ReportError::NoneReadable { skipped, .. } = &e {
                warn_left_out(skipped.iter().map(|u| u.to_string()));
            }
            nothing = matches!(e, crate::pages::ReportError::Empty(..));
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
        Err(e) if nothing => {
            eprintln!("pgsurge: nothing to report: {e}");
            EXIT_NOTHING
        }
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
    if let Some(code) = compare_replays(a) {
        return code;
    }
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
    match a.fail_on {
        Some(fail_on) => gate(&c, fail_on),
        None => 0,
    }
}

/// The exit status of `--fail-on`: [`EXIT_REGRESSION`] with the cells named on stderr
/// when one of its conditions holds, else 0.
fn gate(c: &Comparison, fail_on: FailOn) -> i32 {
    let mut failed = false;
    if let Some(threshold) = fail_on.slower {
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
            failed = true;
        }
    }
    if fail_on.invalid || fail_on.inconclusive {
        let found = c.invalid(fail_on.inconclusive);
        if !found.is_empty() {
            eprintln!(
                "pgsurge: {} cell(s) of {} cannot pass the gate:",
                found.len(),
                c.title
            );
            for f in &found {
                eprintln!("  {f}");
            }
            failed = true;
        }
    }
    if failed {
        EXIT_REGRESSION
    } else {
        0
    }
}

/// Two stored replays of one log: their own comparison ([`crate::replay_compare`]);
/// `None` when the sides are not two replay runs.
fn compare_replays(a: &CompareArgs) -> Option<i32> {
    let mut store = open(a.store.as_deref()).ok()?;
    let json = matches!(a.format, Format::Json);
    match crate::replay_compare::compare_sides(&mut store, a.a.as_deref(), a.b.as_deref(), json)? {
        Ok(text) => {
            print!("{text}");
            Some(0)
        }
        Err(e) => {
            eprintln!("pgsurge: error: {e}");
            Some(1)
        }
    }
}

/// Runs a comparison as `pgsurge compare` would, without printing. Runs that cannot be
/// read, or hold values no run can have, are left out.
pub fn run_compare(a: &CompareArgs) -> Result<Comparison, String> {
    run_compare_noting(a, &mut Vec::new())
}

/// [`run_compare`], adding to `skipped` each run left out (which, and why).
fn run_compare_noting(a: &CompareArgs, skipped: &mut Vec<String>) -> Result<Comparison, String> {
    let mut store = open(a.store.as_deref())?;
    let compared = request_of(&mut store, a)
        .and_then(|request| {
            compare_sides(&mut store, &request, skipped).map_err(|e| e.to_string())
        })
        .and_then(|mut c| {
            if a.explain {
                crate::explain::attach(&mut store, &mut c)?;
            }
            if let Some(dir) = &a.profile_diff {
                let written = crate::explain::write_diffs(&mut store, &c, dir)?;
                if written.is_empty() {
                    eprintln!(
                        "pgsurge: warning: --profile-diff: no compared cell has profiles on both sides"
                    );
                }
                for w in written {
                    eprintln!("pgsurge: differential flame graph written: {}", w.display());
                }
            }
            Ok(c)
        });
    skipped.extend(store.skipped_runs().iter().map(|u| u.to_string()));
    compared
}

/// The typed request of a command line: its sides parsed (or the obvious pair picked),
/// its `--along` and `--aa`.
fn request_of(store: &mut Store, a: &CompareArgs) -> Result<CompareRequest, String> {
    let mut aa = match &a.aa {
        Some(aa) => {
            let (x, y) = aa.split_once(',').ok_or_else(|| {
                format!("--aa wants two sides separated by a comma, got \"{aa}\"")
            })?;
            Some((parse_side(x)?, parse_side(y)?))
        }
        None => None,
    };
    let (sa, sb) = match (&a.a, &a.b) {
        (Some(x), Some(y)) => (parse_side(x)?, parse_side(y)?),
        (None, None) => {
            let (x, y, twin) = default_sides(store)?;
            if aa.is_none() {
                aa = twin.map(|t| (x.clone(), t));
            }
            (x, y)
        }
        _ => {
            return Err(
                "give two sides to compare (A and B), or none to compare the obvious pair".into(),
            )
        }
    };
    let along = a
        .along
        .iter()
        .map(|d| match d {
            AlongArg::Set => Dimension::Set,
            AlongArg::Target | AlongArg::Settings => Dimension::Target,
            AlongArg::QueryMode => Dimension::QueryMode,
            AlongArg::Script => Dimension::Script,
            AlongArg::Scale => Dimension::Scale,
            AlongArg::Clients => Dimension::Clients,
            AlongArg::Rate => Dimension::Rate,
        })
        .collect();
    Ok(CompareRequest {
        a: sa,
        b: sb,
        along,
        aa,
        margin: a.margin,
    })
}

/// The obvious pair of a store: the first two targets (file order) of the newest set
/// that has several, with the first one's A/A twin; else the last two sets.
fn default_sides(store: &mut Store) -> Result<(Side, Side, Option<Side>), String> {
    let sets = store.list_sets().map_err(|e| e.to_string())?;
    let side = |set: i64, target: Option<&str>| {
        Side::Filter(SideFilter {
            set: Some(set.to_string()),
            target: target.map(str::to_string),
            ..SideFilter::default()
        })
    };
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
            let twin_name = format!("{} (A-A)", real[0]);
            let twin = targets
                .iter()
                .any(|t| t.record.name == twin_name)
                .then(|| side(s.id, Some(&twin_name)));
            return Ok((side(s.id, Some(real[0])), side(s.id, Some(real[1])), twin));
        }
    }
    if sets.len() >= 2 {
        let n = sets.len();
        return Ok((side(sets[n - 2].id, None), side(sets[n - 1].id, None), None));
    }
    Err("nothing to compare: the store has no set with two targets and fewer than two sets; name the sides A and B".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fail_on_parses_the_threshold() {
        let slower = |t: f64| FailOn {
            slower: Some(t),
            ..FailOn::default()
        };
        assert_eq!("slower".parse::<FailOn>(), Ok(slower(0.0)));
        assert_eq!("slower:5%".parse::<FailOn>(), Ok(slower(0.05)));
        assert_eq!("slower:2.5".parse::<FailOn>(), Ok(slower(0.025)));
        assert_eq!(
            "slower:3%,invalid".parse::<FailOn>(),
            Ok(FailOn {
                slower: Some(0.03),
                invalid: true,
                inconclusive: false
            })
        );
        assert_eq!(
            "invalid, inconclusive".parse::<FailOn>(),
            Ok(FailOn {
                slower: None,
                invalid: true,
                inconclusive: true
            })
        );
        assert!(parse_margin("2%").is_ok_and(|m| (m - 0.02).abs() < 1e-12));
        assert!(parse_margin("0").is_err() && parse_margin("x").is_err());
        for bad in [
            "faster",
            "slower:",
            "slower:x%",
            "slower5",
            "slower:-1%",
            "slower:100%",
            "slower,slower:2%",
            "invalid,",
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
