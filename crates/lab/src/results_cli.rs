//! `pgsurge results list|show|export|import`: reading the store from the command line.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use pgsurge_store::{now_rfc3339, set_kind, set_status, Run, RunFilter, SetRecord, Store};

#[derive(Parser, Debug)]
#[command(name = "pgsurge results", about = "Read the results store")]
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
    /// Show a set's tests, or one run in detail (`--run`).
    Show {
        /// Set id (default: the newest set).
        set: Option<i64>,
        /// Show this run instead.
        #[arg(long)]
        run: Option<i64>,
    },
    /// Export runs as text, JSON or CSV.
    Export {
        /// Only this set (default: every set).
        #[arg(long)]
        set: Option<i64>,
        /// Output format.
        #[arg(long, value_enum, default_value = "json")]
        format: Format,
        /// Include intervals, metrics, histograms and manifests (JSON only).
        #[arg(long)]
        full: bool,
        /// Write here instead of stdout.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Import pgbench text reports (stdout of runs), each optionally with its log.
    Import {
        /// pgbench report files.
        #[arg(required = true)]
        reports: Vec<PathBuf>,
        /// `-l` or `--aggregate-interval` log of the (single) report.
        #[arg(long)]
        log: Option<PathBuf>,
        /// Name of the set to create.
        #[arg(long, default_value = "import")]
        name: String,
    },
}

/// Entry point of `pgsurge results`.
pub fn main(args: &[OsString]) -> i32 {
    let argv = std::iter::once(OsString::from("pgsurge results")).chain(args.iter().cloned());
    let cli = match Cli::try_parse_from(argv) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let location = cli
        .store
        .clone()
        .unwrap_or_else(pgsurge_store::default_location);
    if !matches!(cli.cmd, Cmd::Import { .. })
        && !pgsurge_store::is_postgres_location(&location)
        && !std::path::Path::new(&location).exists()
    {
        eprintln!("pgsurge: error: results store {location} does not exist (give --store or set PGSURGE_STORE)");
        return 1;
    }
    let mut store = match Store::open(&location) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("pgsurge: error: {e}");
            return 1;
        }
    };
    let r = match cli.cmd {
        Cmd::List => list(&mut store),
        Cmd::Show { set, run } => show(&mut store, set, run),
        Cmd::Export {
            set,
            format,
            full,
            output,
        } => export(&mut store, set, format, full, output),
        Cmd::Import { reports, log, name } => import(&mut store, &reports, log, &name),
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

fn list(store: &mut Store) -> CliResult {
    let sets = store.list_sets().map_err(|e| e.to_string())?;
    println!(
        "{:>4}  {:<10}  {:<24}  {:<10}  {:>5}  {:>6}  created",
        "set", "kind", "name", "status", "ok", "failed"
    );
    for s in sets {
        let planned = s
            .record
            .planned_tests
            .map(|p| format!("/{p}"))
            .unwrap_or_default();
        println!(
            "{:>4}  {:<10}  {:<24}  {:<10}  {:>5}  {:>6}  {}",
            s.id,
            s.record.kind,
            s.record.name,
            s.record.status,
            format!("{}{planned}", s.runs_ok),
            s.runs_failed,
            s.record.created_at
        );
    }
    Ok(())
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
        s.push_str(&format!(
            "{:>5}  {:<34} {:>6} {:>5} {:>8} {:>11} {:>9} {:>9} {:>9}  {}{}\n",
            r.id,
            d.test_key,
            d.scale.map(|v| v.to_string()).unwrap_or_else(|| "-".into()),
            d.clients
                .map(|v| v.to_string())
                .unwrap_or_else(|| "-".into()),
            f(d.rate, 0),
            f(d.tps, 1),
            f(d.latency_mean_ms, 3),
            f(d.latency_p99_ms, 3),
            f(d.commit_mismatch_pct, 1),
            d.status,
            d.error
                .as_deref()
                .map(|e| format!(": {}", first_line(e)))
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

fn show(store: &mut Store, set: Option<i64>, run: Option<i64>) -> CliResult {
    if let Some(id) = run {
        let r = store.load_run(id).map_err(|e| e.to_string())?;
        println!(
            "{}",
            serde_json::to_string_pretty(&r.run).map_err(|e| e.to_string())?
        );
        println!(
            "intervals: {}, metric samples: {}, histograms: {}, settings: {}, counters: {}",
            r.intervals.len(),
            r.metrics.len(),
            r.histograms.len(),
            r.settings.len(),
            r.counters.len()
        );
        if let Some(e) = &r.run.record.error {
            println!("error:\n{}", indent(e));
        }
        for f in &r.facts {
            println!("{}: {}", f.name, f.value.as_deref().unwrap_or("-"));
        }
        if !r
            .facts
            .iter()
            .any(|f| f.name == crate::facts::SERVER_HOST_METRICS_SOURCE)
        {
            println!("{}: not recorded", crate::facts::SERVER_HOST_METRICS_SOURCE);
        }
        for w in &r.warnings {
            println!("warning: {}", w.message);
        }
        return Ok(());
    }
    let set_id = match set {
        Some(s) => s,
        None => store
            .list_sets()
            .map_err(|e| e.to_string())?
            .last()
            .map(|s| s.id)
            .ok_or("the store holds no set")?,
    };
    let s = store.set(set_id).map_err(|e| e.to_string())?;
    println!(
        "set {} \"{}\" ({}, {}), created {}",
        s.id, s.record.name, s.record.kind, s.record.status, s.record.created_at
    );
    let runs = store
        .list_runs(&RunFilter {
            set_id: Some(set_id),
            ..Default::default()
        })
        .map_err(|e| e.to_string())?;
    print!("{}", runs_table(&runs));
    for r in &runs {
        if let Some(e) = r.record.error.as_deref().filter(|e| e.contains('\n')) {
            println!("run {} ({}) error:\n{}", r.id, r.record.test_key, indent(e));
        }
    }
    let facts = store.set_facts(set_id).map_err(|e| e.to_string())?;
    print!("{}", facts_lines(&runs, &facts));
    for w in store.warnings(Some(set_id)).map_err(|e| e.to_string())? {
        println!("warning: {}", w.record.message);
    }
    Ok(())
}

/// One line per run saying where its server-host metrics came from, whether the
/// client was the bottleneck and whether the test initialized the data.
pub fn facts_lines(runs: &[Run], facts: &[(i64, pgsurge_store::FactRecord)]) -> String {
    use crate::facts as f;
    let mut s = String::new();
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
        let mut line = format!(
            "run {} ({}): server host metrics: {source}; client-bound: {client}; init: {init}",
            r.id, r.record.test_key
        );
        if let Some(fs) = get(f::DATA_DIR_FSTYPE) {
            line.push_str(&format!("; data directory on {fs}"));
            if get(f::DATA_DIR_IN_MEMORY) == Some("true") {
                line.push_str(" (IN MEMORY: no real I/O)");
            }
        }
        s.push_str(&line);
        s.push('\n');
    }
    s
}

const CSV_COLUMNS: &[&str] = &[
    "set_id",
    "test_key",
    "status",
    "started_at",
    "script",
    "scale",
    "clients",
    "threads",
    "rate",
    "duration_s",
    "query_mode",
    "tps",
    "transactions",
    "failures",
    "latency_mean_ms",
    "latency_stddev_ms",
    "latency_p50_ms",
    "latency_p90_ms",
    "latency_p95_ms",
    "latency_p99_ms",
    "latency_p999_ms",
    "latency_max_ms",
    "server_commits",
    "commit_mismatch_pct",
    "wal_bytes",
    "server_version",
    "error",
];

fn csv_field(v: &serde_json::Value) -> String {
    let s = match v {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

fn export(
    store: &mut Store,
    set: Option<i64>,
    format: Format,
    full: bool,
    output: Option<PathBuf>,
) -> CliResult {
    let runs = store
        .list_runs(&RunFilter {
            set_id: set,
            ..Default::default()
        })
        .map_err(|e| e.to_string())?;
    let text = match format {
        Format::Text => runs_table(&runs),
        Format::Csv => {
            let mut s = format!("run_id,{}\n", CSV_COLUMNS.join(","));
            for r in &runs {
                let v = serde_json::to_value(&r.record).map_err(|e| e.to_string())?;
                let fields: Vec<String> = CSV_COLUMNS.iter().map(|c| csv_field(&v[*c])).collect();
                s.push_str(&format!("{},{}\n", r.id, fields.join(",")));
            }
            s
        }
        Format::Json => {
            let value = if full {
                let mut all = Vec::new();
                for r in &runs {
                    all.push(store.load_run(r.id).map_err(|e| e.to_string())?);
                }
                serde_json::to_value(&all)
            } else {
                serde_json::to_value(&runs)
            }
            .map_err(|e| e.to_string())?;
            let mut s = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?;
            s.push('\n');
            s
        }
    };
    match output {
        Some(p) => std::fs::write(&p, text).map_err(|e| format!("writing {}: {e}", p.display())),
        None => std::io::stdout()
            .write_all(text.as_bytes())
            .map_err(|e| e.to_string()),
    }
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
        parsed.push((p, r));
    }
    let log = match log {
        Some(p) => {
            let text =
                std::fs::read_to_string(&p).map_err(|e| format!("reading {}: {e}", p.display()))?;
            Some(crate::import::parse_log(&text).map_err(|e| format!("{}: {e}", p.display()))?)
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
