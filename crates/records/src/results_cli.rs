//! `pgsurge results list|show|export|import|trend`: reading the store from the command
//! line.
//!
//! | module | owns |
//! |---|---|
//! | this file | the command line, opening the store, `list` and `trend`, which runs a command selects |
//! | `show` | `results show`: the runs table, facts, capacity, one run in detail |
//! | `export` | `results export`: CSV and the versioned JSON document |
//! | `importing` | `results import`: pgbench reports and logs, pgbench-tools databases |

mod export;
mod importing;
mod show;

pub use export::{EXPORT_SCHEMA, EXPORT_VERSION};
pub use show::{runs_table, where_time_goes};

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use pgsurge_store::{Run, RunFilter, Store};

use pgsurge_command::terminal_safe as safe;

use export::export;
use importing::{import, import_pgbench_tools};
use show::show;

#[derive(Parser, Debug)]
#[command(
    name = "pgsurge results",
    about = "Read the results store",
    after_help = "A run that cannot be read (a damaged stored value or histogram) is left out and named \
                  on stderr; values no run can have (a negative or non-finite rate, latency or count) are \
                  flagged in the table and on stderr.\n\
                  EXIT STATUS: 0 done (also when some runs were left out); 1 error, or none of the selected \
                  runs could be read; 2 usage error."
)]
struct Cli {
    /// Results store: a SQLite file or a postgresql:// URL
    /// [default: $PGSURGE_STORE or ./pgsurge-results.db].
    #[arg(long, global = true)]
    store: Option<String>,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
    Csv,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// List the sets (campaigns, quickstarts, imports).
    List,
    /// Show a set's tests, or one run in detail (`--run`). Runs that cannot be read
    /// are named on stderr and left out; exit status 1 when none could be read.
    ///
    /// The test column holds each test's key, e.g. `target/s10/tpcb-like/c1/r-/1`:
    /// the target's name, `s` and the scale, the workload, `c` and the clients, the
    /// rate (`r-` unthrottled, `r500` for 500 transactions/s, `rpc50` for 50 per
    /// client), then the repeat number last. When the campaign sweeps them, the
    /// query mode (`/Mprepared`), the threads (`/j4`) and each swept setting
    /// (`/shared_buffers=1GB`) come before the repeat.
    ///
    /// `commit Δ%` compares the server's committed transactions during the test
    /// (the `pg_stat_database.xact_commit` delta) with the transactions the client
    /// counted: 100 × |server − client| / client. Near 0 means the server did the
    /// work the client reports; other sessions' commits on the same database, or
    /// transactions the client did not count, raise it. Above the campaign's
    /// `[hygiene] commit_tolerance_pct` (5 by default) the run gets a warning.
    /// `-` when the server's counter was not sampled.
    Show {
        /// Set: id or name (default: the newest set).
        set: Option<String>,
        /// Only the runs of this target (name).
        #[arg(long)]
        target: Option<String>,
        /// Show this run (id) instead.
        #[arg(long)]
        run: Option<i64>,
        /// With --run: print only the stored run as JSON.
        #[arg(long, requires = "run")]
        json: bool,
    },
    /// Export runs as JSON (versioned: `pgsurge schema export`), CSV or text. Runs
    /// that cannot be read are named on stderr and left out; exit status 1 (and no
    /// output) when none could be read.
    Export {
        /// Only this set: id or name (default: every set).
        #[arg(long)]
        set: Option<String>,
        /// Only the runs of this target (name).
        #[arg(long)]
        target: Option<String>,
        /// Output format.
        #[arg(long, value_enum, default_value = "json")]
        format: Format,
        /// Include intervals, metrics, histograms and manifests (JSON only).
        #[arg(long)]
        full: bool,
        /// CSV of the per-second intervals (one row per run and second) instead of
        /// one row per run.
        #[arg(long)]
        per_second: bool,
        /// Write here instead of stdout.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Per cell of a campaign run again and again (its sets, oldest first): the sets
    /// where its level (the median tps of its repeats in a set) changed, with the size
    /// of the change and the evidence (E-divisive means; Welch's t p-value between the
    /// levels before and after, kept below 0.001). Where the sets are builds of commits,
    /// the `pgsurge bisect` command for the range.
    Trend {
        /// Only the cells whose `campaign · target · cell` label contains this.
        filter: Option<String>,
        /// Print one JSON document instead (versioned: `pgsurge schema trend`).
        #[arg(long)]
        json: bool,
    },
    /// Import pgbench text reports (stdout of runs), each optionally with its log; or,
    /// with `--from pgbench-tools CONNINFO`, a pgbench-tools results database: every
    /// testset becomes a set named `<name>-<server>-set<set>`, every test a run (its
    /// initialization tests become the facts of the run after them). Importing the
    /// same database again adds only the tests not yet stored.
    Import {
        /// pgbench report files; with --from pgbench-tools, the results database's
        /// connection string (conninfo or URL; give the password by PGPASSWORD or
        /// .pgpass, not here).
        #[arg(required = true)]
        reports: Vec<PathBuf>,
        /// What the input is: pgbench reports (default) or a pgbench-tools database.
        #[arg(long, value_enum)]
        from: Option<ImportFrom>,
        /// With --from pgbench-tools: its `results/` directory, whose
        /// `<server>/<test>/results.txt` supply figures the database holds as NULL.
        #[arg(long, requires = "from")]
        results_dir: Option<PathBuf>,
        /// `-l` or `--aggregate-interval` log of the (single) report.
        #[arg(long, conflicts_with = "from")]
        log: Option<PathBuf>,
        /// Name of the set to create [default: import; with --from pgbench-tools, the
        /// prefix of the set names, default pgbench-tools].
        #[arg(long)]
        name: Option<String>,
    },
}

/// Sources `results import` reads.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum ImportFrom {
    /// A pgbench-tools results database.
    PgbenchTools,
}

/// Entry point of `pgsurge results`.
pub fn main(args: &[OsString]) -> i32 {
    let cli = match pgsurge_command::parse::<Cli>("pgsurge results", args) {
        Ok(c) => c,
        Err(status) => return status,
    };
    let location = cli
        .store
        .clone()
        .unwrap_or_else(pgsurge_store::default_location);
    if !matches!(cli.cmd, Cmd::Import { .. })
        && !pgsurge_store::is_postgres_location(&location)
        && !std::path::Path::new(&location).exists()
    {
        eprintln!(
            "pgsurge: error: results store {} does not exist (give --store or set PGSURGE_STORE)",
            pgsurge_store::redact_location(&location)
        );
        return 1;
    }
    // Readers open read-only: a store on read-only media can be read, and nothing in
    // the file changes.
    let opened = if matches!(cli.cmd, Cmd::Import { .. }) || location == ":memory:" {
        Store::open(&location)
    } else {
        Store::open_read_only(&location)
    };
    let mut store = match opened {
        Ok(s) => s,
        Err(e) => {
            eprintln!("pgsurge: error: {e}");
            return 1;
        }
    };
    let r = match cli.cmd {
        Cmd::List => list(&mut store),
        Cmd::Trend { filter, json } => trend(&mut store, filter.as_deref(), json),
        Cmd::Show {
            set,
            target,
            run,
            json,
        } => show(&mut store, set, target, run, json),
        Cmd::Export {
            set,
            target,
            format,
            full,
            per_second,
            output,
        } => export(
            &mut store,
            &Selection { set, target },
            format,
            full,
            per_second,
            output,
        ),
        Cmd::Import {
            reports,
            from: Some(ImportFrom::PgbenchTools),
            results_dir,
            name,
            ..
        } => import_pgbench_tools(&mut store, &reports, results_dir, name),
        Cmd::Import {
            reports, log, name, ..
        } => import(
            &mut store,
            &reports,
            log,
            name.as_deref().unwrap_or("import"),
        ),
    };
    match r {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("pgsurge: error: {e}");
            1
        }
    }
}

type CliResult = Result<(), String>;

/// `results trend`: each cell's trend, or a line saying there is none; with `json`,
/// the versioned document.
fn trend(store: &mut Store, filter: Option<&str>, json: bool) -> CliResult {
    let trends = crate::trend::trends(store, filter).map_err(|e| e.to_string())?;
    if json {
        let doc = crate::trend::document(&trends, filter);
        let mut text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
        text.push('\n');
        return write_stdout(text.as_bytes());
    }
    let mut text: String = trends
        .iter()
        .map(|t| safe(&t.text()).into_owned())
        .collect();
    if trends.is_empty() {
        text = "no campaign cell matches\n".into();
    }
    write_stdout(text.as_bytes())
}

fn list(store: &mut Store) -> CliResult {
    let sets = store.list_sets().map_err(|e| e.to_string())?;
    let mut text = format!(
        "{:>4}  {:<10}  {:<24}  {:<10}  {:>5}  {:>6}  created\n",
        "set", "kind", "name", "status", "ok", "failed"
    );
    for s in sets {
        let planned = s
            .record
            .planned_tests
            .map(|p| format!("/{p}"))
            .unwrap_or_default();
        text.push_str(&format!(
            "{:>4}  {:<10}  {:<24}  {:<10}  {:>5}  {:>6}  {}\n",
            s.id,
            safe(&s.record.kind),
            safe(&s.record.name),
            safe(&s.record.status),
            format!("{}{planned}", s.runs_ok),
            s.runs_failed,
            s.record.created_at
        ));
    }
    write_stdout(text.as_bytes())
}

/// Which runs a command applies to: a set (id or name) and a target (name).
struct Selection {
    set: Option<String>,
    target: Option<String>,
}

/// Set and target names of the runs' ids.
struct Names {
    sets: std::collections::BTreeMap<i64, String>,
    targets: std::collections::BTreeMap<i64, String>,
}

impl Names {
    fn load(store: &mut Store) -> Result<Names, String> {
        let mut names = Names {
            sets: Default::default(),
            targets: Default::default(),
        };
        for s in store.list_sets().map_err(|e| e.to_string())? {
            for t in store.targets(s.id).map_err(|e| e.to_string())? {
                names.targets.insert(t.id, t.record.name.clone());
            }
            names.sets.insert(s.id, s.record.name);
        }
        Ok(names)
    }

    fn set(&self, r: &Run) -> Option<&str> {
        self.sets.get(&r.record.set_id).map(String::as_str)
    }

    fn target(&self, r: &Run) -> Option<&str> {
        r.record
            .target_id
            .and_then(|t| self.targets.get(&t))
            .map(String::as_str)
    }
}

/// The selected runs, in store order, with the names of their sets and targets.
fn select_runs(store: &mut Store, sel: &Selection) -> Result<(Vec<Run>, Names), String> {
    let set_id = match &sel.set {
        Some(s) => Some(store.resolve_set(s).map_err(|e| e.to_string())?),
        None => None,
    };
    let names = Names::load(store)?;
    let mut runs = store
        .readable_runs(&RunFilter {
            set_id,
            ..Default::default()
        })
        .map_err(|e| e.to_string())?;
    if let Some(t) = &sel.target {
        if !names.targets.values().any(|n| n == t) {
            let mut known: Vec<&str> = names.targets.values().map(String::as_str).collect();
            known.sort_unstable();
            known.dedup();
            return Err(format!(
                "no target \"{t}\" in the store; targets: {}",
                if known.is_empty() {
                    "none".into()
                } else {
                    known.join(", ")
                }
            ));
        }
        runs.retain(|r| names.target(r) == Some(t.as_str()));
    }
    Ok((runs, names))
}

/// Names on stderr each run that was left out because it could not be read; an
/// error when nothing could be read (`any_read` false) and something was left out.
fn warn_skipped(store: &Store, any_read: bool) -> CliResult {
    let skipped = store.skipped_runs();
    for u in &skipped {
        eprintln!("pgsurge: warning: left out {}", safe(&u.to_string()));
    }
    if !any_read && !skipped.is_empty() {
        return Err(format!(
            "none of the selected runs could be read ({} left out)",
            skipped.len()
        ));
    }
    Ok(())
}

/// Names on stderr each run holding values no run can have.
fn warn_impossible(runs: &[Run]) {
    for r in runs {
        let impossible = r.record.impossible_values();
        if !impossible.is_empty() {
            eprintln!(
                "pgsurge: warning: run {} (set {}, test \"{}\") holds impossible values: {}",
                r.id,
                r.record.set_id,
                safe(&r.record.test_key),
                impossible.join(", ")
            );
        }
    }
}

/// Writes to stdout; a reader that went away (`| head`) ends the output quietly.
fn write_stdout(bytes: &[u8]) -> CliResult {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(format!("writing to stdout: {e}")),
    }
}

/// The clap definition of `pgsurge results` (top-level help, completions, man page).
pub(crate) fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgsurge_store::{now_rfc3339, set_kind, set_status, SetRecord};
    use pgsurge_store::{IntervalRecord, RunRecord, RunWrite, TargetRecord};

    /// A store with one set, one target and two runs (one failed with an error that
    /// holds a comma, a quote, `\r\n` and `\n`), the first with two intervals.
    pub(super) fn store() -> Store {
        let mut store = Store::open(":memory:").unwrap();
        let set_id = store
            .create_set(&SetRecord {
                name: "nightly, \"main\"".into(),
                kind: set_kind::CAMPAIGN.into(),
                status: set_status::COMPLETE.into(),
                created_at: now_rfc3339(),
                ..Default::default()
            })
            .unwrap();
        let target_id = store
            .upsert_target(&TargetRecord {
                set_id,
                name: "pg17".into(),
                kind: "throwaway".into(),
                ..Default::default()
            })
            .unwrap();
        let interval = |s: f64| IntervalRecord {
            ts: 1000.0 + s,
            elapsed_s: s,
            duration_s: 1.0,
            transactions: 10,
            tps: 10.0,
            latency_p99_ms: Some(2.5),
            ..Default::default()
        };
        store
            .write_run(&RunWrite {
                run: RunRecord {
                    set_id,
                    target_id: Some(target_id),
                    test_key: "pg17/s1/tpcb-like/c4/r100/2".into(),
                    repeat_no: 2,
                    status: "ok".into(),
                    rate: Some(100.0),
                    tps: Some(99.5),
                    skipped: Some(3),
                    late: Some(4),
                    lag_mean_ms: Some(0.25),
                    ..Default::default()
                },
                intervals: vec![interval(0.0), interval(1.0)],
                ..Default::default()
            })
            .unwrap();
        store
            .write_run(&RunWrite {
                run: RunRecord {
                    set_id,
                    target_id: Some(target_id),
                    test_key: "pg17/s1/tpcb-like/c8/r-/1".into(),
                    repeat_no: 1,
                    status: "failed".into(),
                    error: Some("boom, \"quoted\"\r\nsecond line\nthird".into()),
                    ..Default::default()
                },
                ..Default::default()
            })
            .unwrap();
        store
    }

    pub(super) fn all() -> Selection {
        Selection {
            set: None,
            target: None,
        }
    }

    #[test]
    fn sets_and_targets_are_chosen_by_name_or_id() {
        let mut s = store();
        assert_eq!(s.resolve_set("nightly, \"main\"").unwrap(), 1);
        assert_eq!(s.resolve_set("1").unwrap(), 1);
        let e = s.resolve_set("weekly").unwrap_err().to_string();
        assert!(
            e.contains("no set \"weekly\"") && e.contains("1 (nightly"),
            "{e}"
        );
        let sel = Selection {
            set: Some("nightly, \"main\"".into()),
            target: Some("pg17".into()),
        };
        assert_eq!(select_runs(&mut s, &sel).unwrap().0.len(), 2);
        let sel = Selection {
            set: None,
            target: Some("pg18".into()),
        };
        let e = select_runs(&mut s, &sel).err().unwrap();
        assert!(
            e.contains("no target \"pg18\"") && e.contains("pg17"),
            "{e}"
        );
    }
}
