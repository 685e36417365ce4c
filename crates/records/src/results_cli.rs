//! `pgsurge results list|show|export|import`: reading the store from the command line.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use pgsurge_store::{now_rfc3339, set_kind, set_status, Run, RunFilter, SetRecord, Store};

use pgsurge_command::terminal_safe as safe;
use pgsurge_store::facts;

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

fn f(v: Option<f64>, prec: usize) -> String {
    v.map(|x| format!("{x:.prec$}"))
        .unwrap_or_else(|| "-".into())
}

/// The text table of runs (also used by quickstart).
pub fn runs_table(runs: &[Run]) -> String {
    let mut s = format!(
        "{:>5}  {:<34} {:>6} {:>5} {:>8} {:>11} {:>9} {:>9} {:>9}  {}\n",
        "run", "test", "scale", "cli", "rate", "tps", "lat avg", "lat p99", "commit Δ%", "status"
    );
    for r in runs {
        let d = &r.record;
        let impossible = d.impossible_values();
        let flag = if impossible.is_empty() {
            String::new()
        } else {
            format!(" [IMPOSSIBLE: {}]", impossible.join(", "))
        };
        s.push_str(&format!(
            "{:>5}  {:<34} {:>6} {:>5} {:>8} {:>11} {:>9} {:>9} {:>9}  {}{flag}{}\n",
            r.id,
            safe(&d.test_key),
            d.scale.map(|v| v.to_string()).unwrap_or_else(|| "-".into()),
            d.clients
                .map(|v| v.to_string())
                .unwrap_or_else(|| "-".into()),
            f(d.rate, 0),
            f(d.tps, 1),
            f(d.latency_mean_ms, 3),
            f(d.latency_p99_ms, 3),
            f(d.commit_mismatch_pct, 1),
            safe(&d.status),
            d.error
                .as_deref()
                .map(|e| format!(": {}", safe(&first_line(e))))
                .unwrap_or_default()
        ));
    }
    s
}

/// The first line of a (possibly multi-line) error, marked when lines follow.
fn first_line(text: &str) -> String {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("");
    if lines.next().is_some() {
        format!("{first} …")
    } else {
        first.to_string()
    }
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
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

/// `results show --run ID`: one run in detail (or its stored record as JSON).
fn show_run(store: &mut Store, id: i64, json: bool) -> CliResult {
    let loaded = store.load_run(id).map_err(|e| e.to_string())?;
    if json {
        return write_stdout(
            format!(
                "{}\n",
                serde_json::to_string_pretty(&loaded.run).map_err(|e| e.to_string())?
            )
            .as_bytes(),
        );
    }
    let record = &loaded.run.record;
    let mut text = format!(
        "run {} ({}), set {}, target {}\n",
        loaded.run.id,
        record.test_key,
        record.set_id,
        loaded
            .target
            .as_ref()
            .map(|t| t.record.name.as_str())
            .unwrap_or("-")
    );
    let impossible = record.impossible_values();
    warn_impossible(std::slice::from_ref(&loaded.run));
    let fields = serde_json::to_value(record).map_err(|e| e.to_string())?;
    if let serde_json::Value::Object(map) = fields {
        for (k, v) in map {
            if matches!(k.as_str(), "result_json" | "scripts" | "options" | "error") || v.is_null()
            {
                continue;
            }
            let v = match v {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            let flag = if impossible.iter().any(|i| i.starts_with(&format!("{k} = "))) {
                " (IMPOSSIBLE)"
            } else {
                ""
            };
            text.push_str(&format!("  {k}: {v}{flag}\n"));
        }
    }
    // A workload pack's metrics (NOPM…), as the bench report prints them.
    for m in loaded.run.workload_metrics() {
        text.push_str(&format!("  {} = {:.1} ({})\n", m.name, m.value, m.unit));
    }
    text.push_str(&format!(
        "intervals: {}, metric samples: {}, histograms: {}, settings: {}, counters: {}\n",
        loaded.intervals.len(),
        loaded.metrics.len(),
        loaded.histograms.len(),
        loaded.settings.len(),
        loaded.counters.len()
    ));
    if let Some(e) = &record.error {
        text.push_str(&format!("error:\n{}\n", indent(e)));
    }
    for f in &loaded.facts {
        if f.name == facts::STATEMENTS_TOP {
            continue; // shown as a table below
        }
        text.push_str(&format!(
            "{}: {}\n",
            f.name,
            f.value.as_deref().unwrap_or("-")
        ));
    }
    if !loaded
        .facts
        .iter()
        .any(|f| f.name == facts::SERVER_HOST_METRICS_SOURCE)
    {
        text.push_str(&format!(
            "{}: not recorded\n",
            facts::SERVER_HOST_METRICS_SOURCE
        ));
    }
    text.push_str(&where_time_goes(&loaded.metrics, &loaded.facts));
    for w in &loaded.warnings {
        text.push_str(&format!("warning: {}\n", w.message));
    }
    text.push_str(&format!(
        "(the stored record as JSON: pgsurge results show --run {} --json)\n",
        loaded.run.id
    ));
    write_stdout(safe(&text).as_bytes())
}

fn show(
    store: &mut Store,
    set: Option<String>,
    target: Option<String>,
    run: Option<i64>,
    json: bool,
) -> CliResult {
    if let Some(id) = run {
        return show_run(store, id, json);
    }
    let set_id = match set {
        Some(s) => store.resolve_set(&s).map_err(|e| e.to_string())?,
        None => store
            .list_sets()
            .map_err(|e| e.to_string())?
            .last()
            .map(|s| s.id)
            .ok_or("the store holds no set")?,
    };
    let s = store.set(set_id).map_err(|e| e.to_string())?;
    let mut text = format!(
        "set {} \"{}\" ({}, {}), created {}\n",
        s.id, s.record.name, s.record.kind, s.record.status, s.record.created_at
    );
    let (runs, _) = select_runs(
        store,
        &Selection {
            set: Some(set_id.to_string()),
            target,
        },
    )?;
    text.push_str(&runs_table(&runs));
    for loaded in &runs {
        if let Some(e) = loaded.record.error.as_deref().filter(|e| e.contains('\n')) {
            text.push_str(&format!(
                "run {} ({}) error:\n{}\n",
                loaded.id,
                loaded.record.test_key,
                indent(e)
            ));
        }
    }
    let facts = store.set_facts(set_id).map_err(|e| e.to_string())?;
    text.push_str(&facts_lines(&runs, &facts));
    if s.record.kind == pgsurge_store::set_kind::GROUP {
        // A distributed run: the merge of its generators, as `dist wait` printed it.
        text.push_str(&format!(
            "merged result of the group's {} generator(s):\n",
            runs.len()
        ));
        match pgsurge_generators::group::merge_group(store, set_id) {
            Ok(m) => {
                let mut out = Vec::new();
                pgsurge_generators::write_merged_report(&m, &mut out).map_err(|e| e.to_string())?;
                text.push_str(&String::from_utf8_lossy(&out));
            }
            Err(e) => text.push_str(&format!("(cannot merge: {e})\n")),
        }
    }
    if let Some(cap) = s.record.spec.as_deref().and_then(capacity_section) {
        for r in capacity_of_set(store, set_id, &cap.objective()).map_err(|e| e.to_string())? {
            text.push_str(&format!("capacity: {}\n", r.line()));
        }
    }
    // A target's warning is stored with each of its tests; it is said once.
    let mut said = std::collections::HashSet::new();
    for w in store.warnings(Some(set_id)).map_err(|e| e.to_string())? {
        if said.insert(w.record.message.clone()) {
            text.push_str(&format!("warning: {}\n", w.record.message));
        }
    }
    write_stdout(safe(&text).as_bytes())?;
    warn_impossible(&runs);
    warn_skipped(store, !runs.is_empty())
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

/// The `[capacity]` table of a stored campaign spec, if it has one.
pub fn capacity_section(spec: &str) -> Option<pgsurge_plan::spec::CapacitySection> {
    let value: toml::Value = toml::from_str(spec).ok()?;
    value.get("capacity")?.clone().try_into().ok()
}

/// Every cell's capacity search, recomputed from the runs stored in `set_id`: the same
/// steps the campaign took, judged the same way. A run that cannot be read is left out
/// ([`Store::skipped_runs`] names it).
pub fn capacity_of_set(
    store: &mut Store,
    set_id: i64,
    objective: &pgsurge_analysis::capacity::Objective,
) -> pgsurge_store::Result<Vec<pgsurge_analysis::capacity::CapacityResult>> {
    use pgsurge_analysis::capacity::{results_of_runs, StepRun, StoredRun};
    let runs = store.readable_runs(&pgsurge_store::RunFilter {
        set_id: Some(set_id),
        ..Default::default()
    })?;
    let runs: Vec<StoredRun> = runs
        .iter()
        .map(|r| StoredRun {
            test_key: r.record.test_key.clone(),
            rate: r.record.rate,
            run: StepRun {
                status: r.record.status.clone(),
                error: r.record.error.clone(),
                percentile_ms: r.record.latency_percentile_ms(objective.percentile),
                tps: r.record.tps,
            },
        })
        .collect();
    Ok(results_of_runs(&runs, objective))
}

/// Where a test's time went, as `results show --run` prints it: its wait events by
/// share of active session time, and its top statements when `pg_stat_statements`
/// was read. Empty when neither was recorded.
pub fn where_time_goes(
    metrics: &[pgsurge_store::MetricSample],
    facts: &[pgsurge_store::FactRecord],
) -> String {
    use pgsurge_store::activity::{self, Statements};
    let mut s = String::new();
    let shares = activity::wait_shares(metrics);
    if !shares.is_empty() {
        s.push_str(&format!(
            "wait events (share of active session time; pg_stat_activity every {} ms):\n",
            pgsurge_observe::waits::SAMPLE_EVERY.as_millis()
        ));
        let width = shares.iter().map(|w| w.label.len()).max().unwrap_or(0);
        for w in shares.iter().take(10) {
            s.push_str(&format!(
                "  {:<width$}  {:>5.1} %  mean {:.2} sessions\n",
                w.label, w.share_pct, w.mean_sessions
            ));
        }
        if shares.len() > 10 {
            s.push_str(&format!("  (and {} more)\n", shares.len() - 10));
        }
    }
    if let Statements::Top { source, top } = activity::statements(facts) {
        s.push_str(&format!(
            "top statements by execution time during the test ({source}):\n"
        ));
        if top.is_empty() {
            s.push_str("  none executed\n");
        } else {
            s.push_str(&format!(
                "  {:>10} {:>12} {:>10} {:>10} {:>6}  query\n",
                "calls", "total ms", "mean ms", "rows", "time %"
            ));
        }
        for t in &top {
            s.push_str(&format!(
                "  {:>10} {:>12.1} {:>10.3} {:>10} {:>6}  {}\n",
                t.calls,
                t.total_ms,
                t.mean_ms,
                t.rows,
                t.share_pct.map(|p| format!("{p:.1}")).unwrap_or_default(),
                t.query
            ));
        }
    }
    s
}

/// Where each run's server-host metrics came from, whether the client was the
/// bottleneck and whether the test initialized the data: one line for the runs that
/// say the same (`runs 2-5, 9: …`), one per run that says something of its own.
pub fn facts_lines(runs: &[Run], facts: &[(i64, pgsurge_store::FactRecord)]) -> String {
    let mut groups: Vec<(String, Vec<&Run>)> = Vec::new();
    for (r, line) in run_facts(runs, facts) {
        match groups.iter_mut().find(|(l, _)| *l == line) {
            Some((_, rs)) => rs.push(r),
            None => groups.push((line, vec![r])),
        }
    }
    let mut s = String::new();
    for (line, rs) in groups {
        match rs.as_slice() {
            [r] => s.push_str(&format!("run {} ({}): {line}\n", r.id, r.record.test_key)),
            _ => {
                let ids: Vec<i64> = rs.iter().map(|r| r.id).collect();
                s.push_str(&format!("runs {}: {line}\n", id_ranges(&ids)));
            }
        }
    }
    s
}

/// `1-4, 7, 9-10`: run ids (ascending) as ranges.
fn id_ranges(ids: &[i64]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        parts.push(if j == i {
            ids[i].to_string()
        } else {
            format!("{}-{}", ids[i], ids[j])
        });
        i = j + 1;
    }
    parts.join(", ")
}

/// Each run's facts line (without the run), for the runs that have facts.
fn run_facts<'a>(
    runs: &'a [Run],
    facts: &[(i64, pgsurge_store::FactRecord)],
) -> Vec<(&'a Run, String)> {
    use pgsurge_store::facts as f;
    let mut out = Vec::new();
    for r in runs {
        let get = |name: &str| {
            facts
                .iter()
                .find(|(id, x)| *id == r.id && x.name == name)
                .and_then(|(_, x)| x.value.as_deref())
        };
        let Some(source) = get(f::SERVER_HOST_METRICS_SOURCE) else {
            continue;
        };
        let source = if source == "none" {
            "none (the server's host was not measured)".to_string()
        } else {
            source.to_string()
        };
        let client = match get(f::CLIENT_BOUND) {
            Some("true") => format!(
                "CLIENT-BOUND ({})",
                get(f::CLIENT_BOUND_REASON).unwrap_or("no reason recorded")
            ),
            Some(_) => "no".into(),
            None => "not measured".into(),
        };
        let init = match (get(f::INIT_PERFORMED), get(f::INIT_DURATION_S)) {
            (Some("true"), d) => format!(
                "initialized ({}, {} s, {})",
                get(f::INIT_METHOD).unwrap_or("?"),
                d.unwrap_or("?"),
                get(f::INIT_REASON).unwrap_or("")
            ),
            (Some(_), _) => format!("reused ({})", get(f::INIT_REASON).unwrap_or("")),
            (None, _) => "-".into(),
        };
        let mut line =
            format!("server host metrics: {source}; client-bound: {client}; init: {init}");
        if let Some(fs) = get(f::DATA_DIR_FSTYPE) {
            line.push_str(&format!("; data directory on {fs}"));
            if get(f::DATA_DIR_IN_MEMORY) == Some("true") {
                line.push_str(" (IN MEMORY: no real I/O)");
            }
        }
        if let Some(build) = get(f::BUILD_SOURCE) {
            line.push_str(&format!("; built from {build}"));
        }
        if let Some(h) = get(f::TIMING_HAZARDS) {
            line.push_str(&format!("; built with {h}: NOT FOR TIMING"));
        }
        out.push((r, line));
    }
    out
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

/// Version of the `results export --format json` document (`pgsurge schema export`).
pub const EXPORT_VERSION: u32 = 1;

/// JSON Schema of the `results export --format json` document.
pub const EXPORT_SCHEMA: &str = include_str!("../schema/export.v1.json");

/// Columns of the per-run CSV after `run_id,set,target`, each a stored run field
/// (`repeat` is `repeat_no`).
const CSV_COLUMNS: &[&str] = &[
    "set_id",
    "test_key",
    "repeat",
    "status",
    "started_at",
    "finished_at",
    "script",
    "scale",
    "clients",
    "threads",
    "rate",
    "rate_per_client",
    "latency_limit_ms",
    "duration_s",
    "transactions_per_client",
    "query_mode",
    "init_method",
    "warmup_s",
    "measured_s",
    "seed",
    "tps",
    "transactions",
    "failures",
    "serialization_failures",
    "deadlock_failures",
    "retried",
    "retries",
    "skipped",
    "late",
    "latency_mean_ms",
    "latency_stddev_ms",
    "latency_min_ms",
    "latency_p50_ms",
    "latency_p90_ms",
    "latency_p95_ms",
    "latency_p99_ms",
    "latency_p999_ms",
    "latency_max_ms",
    "lag_mean_ms",
    "lag_max_ms",
    "server_commits",
    "server_rollbacks",
    "commit_mismatch_pct",
    "wal_bytes",
    "db_size_start",
    "db_size_end",
    "server_version",
    "command_line",
    "error",
];

/// Columns of the per-second CSV after `run_id,set,target,test_key,repeat`: stored
/// interval fields.
const INTERVAL_COLUMNS: &[&str] = &[
    "elapsed_s",
    "ts",
    "duration_s",
    "warmup",
    "transactions",
    "tps",
    "failures",
    "retried",
    "skipped",
    "latency_mean_ms",
    "latency_min_ms",
    "latency_max_ms",
    "latency_p50_ms",
    "latency_p90_ms",
    "latency_p99_ms",
    "lag_mean_ms",
    "lag_max_ms",
];

fn csv_field(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn run_field<'a>(v: &'a serde_json::Value, column: &str) -> &'a serde_json::Value {
    &v[if column == "repeat" {
        "repeat_no"
    } else {
        column
    }]
}

/// The per-run CSV: one header row, then one row per run (RFC 4180 quoting by the `csv`
/// crate, so commas, quotes, `\n` and `\r` in errors survive).
fn runs_csv(runs: &[Run], names: &Names) -> Result<Vec<u8>, String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let header = ["run_id", "set", "target"]
        .iter()
        .chain(CSV_COLUMNS)
        .copied();
    w.write_record(header).map_err(|e| e.to_string())?;
    for r in runs {
        let v = serde_json::to_value(&r.record).map_err(|e| e.to_string())?;
        let mut row = vec![
            r.id.to_string(),
            names.set(r).unwrap_or_default().to_string(),
            names.target(r).unwrap_or_default().to_string(),
        ];
        row.extend(CSV_COLUMNS.iter().map(|c| csv_field(run_field(&v, c))));
        w.write_record(&row).map_err(|e| e.to_string())?;
    }
    w.into_inner().map_err(|e| e.to_string())
}

/// The per-second CSV: one row per stored interval of every run.
fn per_second_csv(store: &mut Store, runs: &[Run], names: &Names) -> Result<Vec<u8>, String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let header = ["run_id", "set", "target", "test_key", "repeat"]
        .iter()
        .chain(INTERVAL_COLUMNS)
        .copied();
    w.write_record(header).map_err(|e| e.to_string())?;
    for r in runs {
        let loaded = match store.load_run(r.id) {
            Ok(l) => l,
            // Named by the caller with the other runs left out.
            Err(pgsurge_store::StoreError::UnreadableRun(_)) => continue,
            Err(e) => return Err(e.to_string()),
        };
        for i in &loaded.intervals {
            let v = serde_json::to_value(i).map_err(|e| e.to_string())?;
            let mut row = vec![
                r.id.to_string(),
                names.set(r).unwrap_or_default().to_string(),
                names.target(r).unwrap_or_default().to_string(),
                r.record.test_key.clone(),
                r.record.repeat_no.to_string(),
            ];
            row.extend(INTERVAL_COLUMNS.iter().map(|c| csv_field(&v[*c])));
            w.write_record(&row).map_err(|e| e.to_string())?;
        }
    }
    w.into_inner().map_err(|e| e.to_string())
}

/// The versioned JSON export document.
fn export_json(
    store: &mut Store,
    runs: &[Run],
    names: &Names,
    full: bool,
) -> Result<serde_json::Value, String> {
    let mut items = Vec::new();
    for r in runs {
        let mut v = if full {
            match store.load_run(r.id) {
                Ok(l) => serde_json::to_value(l),
                // Named by the caller with the other runs left out.
                Err(pgsurge_store::StoreError::UnreadableRun(_)) => continue,
                Err(e) => return Err(e.to_string()),
            }
        } else {
            serde_json::to_value(r)
        }
        .map_err(|e| e.to_string())?;
        v["set"] = names.set(r).into();
        v["target"] = names.target(r).into();
        items.push(v);
    }
    let set_ids: std::collections::BTreeSet<i64> = runs.iter().map(|r| r.record.set_id).collect();
    let mut sets = Vec::new();
    for id in set_ids {
        let s = store.set(id).map_err(|e| e.to_string())?;
        sets.push(serde_json::json!({
            "id": s.id,
            "name": s.record.name,
            "kind": s.record.kind,
            "status": s.record.status,
            "created_at": s.record.created_at,
        }));
    }
    Ok(serde_json::json!({
        "format": "pgsurge-export",
        "version": EXPORT_VERSION,
        "full": full,
        "exported_at": now_rfc3339(),
        "sets": sets,
        "runs": items,
    }))
}

fn export(
    store: &mut Store,
    sel: &Selection,
    format: Format,
    full: bool,
    per_second: bool,
    output: Option<PathBuf>,
) -> CliResult {
    if full && format != Format::Json {
        return Err("--full goes with --format json".into());
    }
    if per_second && format != Format::Csv {
        return Err("--per-second goes with --format csv".into());
    }
    let (runs, names) = select_runs(store, sel)?;
    let bytes = match format {
        Format::Text => runs_table(&runs).into_bytes(),
        Format::Csv if per_second => per_second_csv(store, &runs, &names)?,
        Format::Csv => runs_csv(&runs, &names)?,
        Format::Json => {
            let value = export_json(store, &runs, &names, full)?;
            let mut s = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?;
            s.push('\n');
            s.into_bytes()
        }
    };
    let skipped: Vec<i64> = store.skipped_runs().iter().map(|u| u.run_id).collect();
    warn_impossible(&runs);
    warn_skipped(store, runs.iter().any(|r| !skipped.contains(&r.id)))?;
    match output {
        // Whole or not at all: a failed export leaves no partial file (and an error).
        Some(p) => pgsurge_store::write_output(&p, &bytes)
            .map_err(|e| format!("writing {}: {e}", p.display())),
        None => write_stdout(&bytes),
    }
}

/// The clap definition of `pgsurge results` (top-level help, completions, man page).
pub(crate) fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

fn import(store: &mut Store, reports: &[PathBuf], log: Option<PathBuf>, name: &str) -> CliResult {
    if log.is_some() && reports.len() != 1 {
        return Err("--log goes with exactly one report".into());
    }
    let mut parsed = Vec::new();
    for p in reports {
        let text =
            std::fs::read_to_string(p).map_err(|e| format!("reading {}: {e}", p.display()))?;
        let r = crate::import::parse_report(&text).ok_or_else(|| {
            format!(
                "{}: no pgbench report found (no \"tps =\" line)",
                p.display()
            )
        })?;
        r.check().map_err(|e| format!("{}: {e}", p.display()))?;
        parsed.push((p, r));
    }
    let log = match log {
        Some(p) => {
            let text =
                std::fs::read_to_string(&p).map_err(|e| format!("reading {}: {e}", p.display()))?;
            let log =
                crate::import::parse_log(&text).map_err(|e| format!("{}: {e}", p.display()))?;
            if log.intervals.is_empty() {
                // pgbench writes an aggregated interval only once it has ended: the log
                // of a run that ended inside its first interval holds no line.
                eprintln!(
                    "pgsurge: note: the log {} holds no line (as pgbench leaves the \
                     --aggregate-interval log of a run that ended inside its first \
                     interval); the report is imported without it",
                    p.display()
                );
                None
            } else {
                // --log goes with exactly one report.
                if let Some((report_path, report)) = parsed.first() {
                    crate::import::check_log(report, &log, &p.display().to_string())
                        .map_err(|e| format!("{}: {e}", report_path.display()))?;
                }
                Some(log)
            }
        }
        None => None,
    };
    let set_id = store
        .create_set(&SetRecord {
            name: name.to_string(),
            kind: set_kind::IMPORT.into(),
            description: Some(format!("imported from {} file(s)", reports.len())),
            planned_tests: Some(reports.len() as i64),
            status: set_status::COMPLETE.into(),
            created_at: now_rfc3339(),
            finished_at: Some(now_rfc3339()),
            ..Default::default()
        })
        .map_err(|e| e.to_string())?;
    let mut log = log;
    for (i, (p, r)) in parsed.iter().enumerate() {
        let key = format!("{}#{}", p.display(), i + 1);
        let w = crate::import::to_run_write(
            set_id,
            &key,
            i as i64 + 1,
            r,
            log.take(),
            &p.display().to_string(),
        )?;
        store.write_run(&w).map_err(|e| e.to_string())?;
    }
    println!("imported {} run(s) into set {set_id}", parsed.len());
    Ok(())
}

fn import_pgbench_tools(
    store: &mut Store,
    args: &[PathBuf],
    results_dir: Option<PathBuf>,
    name: Option<String>,
) -> CliResult {
    let [conninfo] = args else {
        return Err("--from pgbench-tools takes exactly one connection string".into());
    };
    let conninfo = conninfo
        .to_str()
        .ok_or("the connection string is not valid UTF-8")?;
    if let Some(d) = &results_dir {
        if !d.is_dir() {
            return Err(format!("--results-dir {}: not a directory", d.display()));
        }
    }
    let s = crate::pgbench_tools::import(
        store,
        &crate::pgbench_tools::ImportOptions {
            conninfo: conninfo.to_string(),
            results_dir,
            name: name.unwrap_or_else(|| "pgbench-tools".into()),
        },
    )?;
    for l in &s.left_out {
        eprintln!("pgsurge: warning: left out {}", safe(&l.to_string()));
    }
    println!(
        "imported {} run(s) into {} new set(s); {} already stored; {} initialization test(s) \
         stored as facts; {} run(s) completed from result files; {} row(s) left out",
        s.runs_written,
        s.sets_created,
        s.runs_present,
        s.init_tests,
        s.filled_from_files,
        s.left_out.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgsurge_store::{IntervalRecord, RunRecord, RunWrite, TargetRecord};

    /// A store with one set, one target and two runs (one failed with an error that
    /// holds a comma, a quote, `\r\n` and `\n`), the first with two intervals.
    fn store() -> Store {
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

    fn all() -> Selection {
        Selection {
            set: None,
            target: None,
        }
    }

    #[test]
    fn runs_whose_facts_say_the_same_share_one_line() {
        use pgsurge_store::facts as f;
        use pgsurge_store::FactRecord;
        let mut s = store();
        let (runs, _) = select_runs(&mut s, &all()).unwrap();
        let (a, b) = (runs[0].id, runs[1].id);
        let same = |id: i64| {
            vec![
                (id, FactRecord::new(f::SERVER_HOST_METRICS_SOURCE, "local")),
                (id, FactRecord::new(f::CLIENT_BOUND, "false")),
            ]
        };
        let facts: Vec<_> = same(a).into_iter().chain(same(b)).collect();
        let text = facts_lines(&runs, &facts);
        assert_eq!(
            text,
            format!("runs {a}-{b}: server host metrics: local; client-bound: no; init: -\n")
        );
        // A run that says something of its own keeps its line.
        let mut facts = facts;
        facts.push((b, FactRecord::new(f::DATA_DIR_FSTYPE, "ext4")));
        let text = facts_lines(&runs, &facts);
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(
            text.contains(&format!("run {b} ({}): ", runs[1].record.test_key)),
            "{text}"
        );
        assert_eq!(id_ranges(&[1, 2, 3, 5, 7, 8]), "1-3, 5, 7-8");
    }

    #[test]
    fn per_run_csv_is_complete_and_quotes_carriage_returns() {
        let mut s = store();
        let (runs, names) = select_runs(&mut s, &all()).unwrap();
        let bytes = runs_csv(&runs, &names).unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(
            text.contains("\"boom, \"\"quoted\"\"\r\nsecond line\nthird\""),
            "{text:?}"
        );
        let mut r = csv::Reader::from_reader(&bytes[..]);
        let header = r.headers().unwrap().clone();
        for c in [
            "target",
            "set",
            "repeat",
            "rate",
            "lag_mean_ms",
            "skipped",
            "late",
        ] {
            assert!(header.iter().any(|h| h == c), "no column {c}");
        }
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(&rows[0][col("target")], "pg17");
        assert_eq!(&rows[0][col("set")], "nightly, \"main\"");
        assert_eq!(&rows[0][col("repeat")], "2");
        assert_eq!(&rows[0][col("rate")], "100.0");
        assert_eq!(&rows[0][col("skipped")], "3");
        assert_eq!(&rows[0][col("late")], "4");
        assert_eq!(&rows[0][col("lag_mean_ms")], "0.25");
        assert_eq!(
            &rows[1][col("error")],
            "boom, \"quoted\"\r\nsecond line\nthird"
        );
    }

    #[test]
    fn per_second_csv_has_one_row_per_interval() {
        let mut s = store();
        let (runs, names) = select_runs(&mut s, &all()).unwrap();
        let bytes = per_second_csv(&mut s, &runs, &names).unwrap();
        let mut r = csv::Reader::from_reader(&bytes[..]);
        let header = r.headers().unwrap().clone();
        let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
        assert_eq!(
            rows.len(),
            2,
            "two intervals of the first run, none of the second"
        );
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        assert_eq!(&rows[1][col("elapsed_s")], "1.0");
        assert_eq!(&rows[1][col("test_key")], "pg17/s1/tpcb-like/c4/r100/2");
        assert_eq!(&rows[1][col("latency_p99_ms")], "2.5");
    }

    #[test]
    fn json_export_is_versioned_and_validates_plain_and_full() {
        let schema: serde_json::Value = serde_json::from_str(EXPORT_SCHEMA).unwrap();
        let v = jsonschema::validator_for(&schema).unwrap();
        let mut s = store();
        let (runs, names) = select_runs(&mut s, &all()).unwrap();
        for full in [false, true] {
            let doc = export_json(&mut s, &runs, &names, full).unwrap();
            let errors: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "full={full}: {errors:?}");
            assert_eq!(doc["version"], EXPORT_VERSION);
            assert_eq!(doc["runs"][0]["target"], "pg17");
            let mut bad = doc.clone();
            bad["runs"][0].as_object_mut().unwrap().remove(if full {
                "intervals"
            } else {
                "test_key"
            });
            assert!(
                !v.is_valid(&bad),
                "full={full}: a run missing a field validated"
            );
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
