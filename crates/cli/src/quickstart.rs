//! `pgsurge quickstart`: a throwaway server (local binaries, else a fetched version),
//! `-i -s 10`, select-only and tpcb-like at 1, 2, 4 and 8 clients, three rounds of 4 s
//! tests (so the report shows this machine's run-to-run noise as a band beside every
//! point), a summary table (one line per cell: the median and spread of its repeats),
//! the results in a store file, and the HTML report — in under three minutes on two
//! cores, leaving nothing running. It joins crates that do not know each other's side:
//! the campaign writes the store, the report's cells summarize it, the report reads it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::Parser;
use pgsurge_engine::StopFlag;
use pgsurge_store::{set_kind, RunFilter, Store};

use pgsurge_campaign::runner::{run_campaign, RunOptions};
use pgsurge_campaign::spec::{
    Campaign, CampaignSection, CampaignSpec, DurationValue, HygieneSection, InitSection,
    MatrixSpec, RunSection, SamplingSection, ScriptSpec, TargetSpec, ThreadsValue,
};

#[derive(Parser, Debug)]
#[command(
    name = "pgsurge quickstart",
    about = "Start a throwaway PostgreSQL, run a short benchmark matrix, store and report it"
)]
struct Cli {
    /// Seconds per test.
    #[arg(long, default_value_t = 4)]
    duration: u32,
    /// Rounds over every cell: their spread is the noise a difference must exceed.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    repeats: u32,
    /// Scale factor of `-i`.
    #[arg(long, default_value_t = 10)]
    scale: u32,
    /// Client counts, comma-separated.
    #[arg(long, default_value = "1,2,4,8", value_delimiter = ',')]
    clients: Vec<u32>,
    /// Results store (SQLite file or postgresql:// URL)
    /// [default: $PGSURGE_STORE or ./pgsurge-results.db].
    #[arg(long)]
    store: Option<String>,
    /// Directory for the HTML report [default: ./pgsurge-report].
    #[arg(long)]
    report_dir: Option<PathBuf>,
    /// PostgreSQL binaries directory.
    #[arg(long, conflicts_with = "pg_version")]
    pg_bin: Option<PathBuf>,
    /// PostgreSQL version to use (local binaries of that major, else fetched).
    #[arg(long)]
    pg_version: Option<String>,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

/// The clap definition (for the top-level command tree).
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// Major version fetched when no local PostgreSQL binaries are found.
const FALLBACK_VERSION: &str = "17";

/// The quickstart's campaign, built from typed values.
fn campaign_spec(cli: &Cli) -> CampaignSpec {
    let mut target = TargetSpec::throwaway("local");
    target.pg_bin = cli.pg_bin.clone();
    target.pg_version = cli.pg_version.clone();
    if cli.pg_bin.is_none()
        && cli.pg_version.is_none()
        && pgsurge_server::PgBinaries::discover().is_err()
    {
        // No local PostgreSQL: fetch a release (cached for next time) instead of failing.
        target.pg_version = Some(FALLBACK_VERSION.to_owned());
    }
    let mut campaign = CampaignSection::named("quickstart");
    campaign.description = Some("pgsurge quickstart".to_owned());
    campaign.shuffle = false;
    let scripts = ["select-only", "tpcb-like"]
        .map(|b| ScriptSpec::Builtin(b.to_owned()))
        .to_vec();
    let mut matrix = MatrixSpec::new(vec![cli.scale], cli.clients.clone(), scripts);
    matrix.repeats = cli.repeats;
    CampaignSpec {
        campaign,
        targets: vec![target],
        matrix,
        run: RunSection {
            duration: Some(DurationValue::Seconds(f64::from(cli.duration))),
            threads: Some(ThreadsValue::Auto("auto".to_owned())),
            ..RunSection::default()
        },
        init: InitSection {
            method: Some("client".to_owned()),
            ..InitSection::default()
        },
        sampling: SamplingSection::default(),
        hygiene: HygieneSection::default(),
        thresholds: Default::default(),
        hooks: Default::default(),
        capacity: None,
        distributed: None,
        pinning: Default::default(),
        profile: None,
        faults: Vec::new(),
        repeats: None,
    }
}

/// Writes the HTML report of one set of `store` into `dir` and returns the path of its
/// index page, or the error as text.
fn write_report(store: &mut Store, set_id: i64, dir: &Path) -> Result<PathBuf, String> {
    let request = pgsurge_report::ReportRequest { sets: vec![set_id] };
    pgsurge_report::write_report(store, &request, dir)
        .map(|files| files.index)
        .map_err(|e| e.to_string())
}

/// Entry point of `pgsurge quickstart`.
pub fn main(args: &[OsString]) -> i32 {
    let cli = match pgsurge_command::parse::<Cli>("pgsurge quickstart", args) {
        Ok(c) => c,
        Err(status) => return status,
    };
    let campaign = match Campaign::from_spec(campaign_spec(&cli), "quickstart", Path::new(".")) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pgsurge: error: {e}");
            return 1;
        }
    };
    let location = cli
        .store
        .clone()
        .unwrap_or_else(pgsurge_store::default_location);
    let mut store = match Store::open(&location) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("pgsurge: error: {e}");
            return 1;
        }
    };
    if !cli.quiet {
        eprintln!(
            "pgsurge quickstart: throwaway server, scale {}, select-only and tpcb-like at {:?} clients, {} round{} of {} s tests",
            cli.scale,
            cli.clients,
            cli.repeats,
            if cli.repeats == 1 { "" } else { "s" },
            cli.duration
        );
    }
    let stop = StopFlag::new();
    let _watcher = pgsurge_engine::stop::SignalWatcher::install(stop.clone()).ok();
    let opts = RunOptions {
        new_set: true,
        retry_failed: false,
        quiet: cli.quiet,
        kind: Some(set_kind::QUICKSTART.into()),
        into_set: None,
    };
    let outcome = match run_campaign(&campaign, &mut store, &opts, &stop) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("pgsurge: error: {e}");
            return 1;
        }
    };
    let runs = match store.list_runs(&RunFilter {
        set_id: Some(outcome.set_id),
        ..Default::default()
    }) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("pgsurge: error: {e}");
            return 1;
        }
    };
    let cells = match pgsurge_report::cells::build_cells(&mut store, &runs, &Default::default()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pgsurge: error: {e}");
            return 1;
        }
    };
    println!();
    print!("{}", cells_table(&cells));
    // Those said as they came are not repeated.
    for w in outcome
        .warnings
        .iter()
        .filter(|w| !outcome.said_warnings.contains(w))
    {
        println!("warning: {w}");
    }
    println!();
    println!(
        "results stored in {} (set {})",
        store.location(),
        outcome.set_id
    );
    let report_dir = cli
        .report_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("pgsurge-report"));
    match write_report(&mut store, outcome.set_id, &report_dir) {
        Ok(index) => {
            println!("report: {}", index.display());
            print!("{}", next_steps(&location, outcome.set_id, &index));
        }
        Err(e) => eprintln!("pgsurge: warning: the report could not be written: {e}"),
    }
    if outcome.remaining > 0 {
        eprintln!("quickstart interrupted");
        130
    } else if outcome.failed > 0 {
        3
    } else {
        0
    }
}

/// One line per cell: its repeats, the median tps and their spread (lowest to highest,
/// and that range as a share of the median), the 99th percentile latency over all
/// repeats, and the failed repeats.
fn cells_table(cells: &[pgsurge_report::cells::Cell]) -> String {
    let labels: Vec<String> = cells.iter().map(|c| c.key.label()).collect();
    let width = labels
        .iter()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut s = format!(
        "{:<width$}  {:>7}  {:>10}  {:>25}  {:>9}  {}\n",
        "cell", "repeats", "tps median", "spread (min–max, range)", "p99 ms", "failed"
    );
    for (c, label) in cells.iter().zip(&labels) {
        let (median, spread) = if c.tps.is_empty() {
            ("-".to_string(), "-".to_string())
        } else {
            let range = if c.tps_median > 0.0 {
                format!("{:.1} %", (c.tps_max - c.tps_min) / c.tps_median * 100.0)
            } else {
                "-".to_string()
            };
            (
                format!("{:.1}", c.tps_median),
                format!("{:.1}–{:.1}, {range}", c.tps_min, c.tps_max),
            )
        };
        let p99 = if c.tps.is_empty() {
            "-".to_string()
        } else {
            format!("{:.3}", c.latency_ms.p99)
        };
        s.push_str(&format!(
            "{label:<width$}  {:>7}  {median:>10}  {spread:>25}  {p99:>9}  {}\n",
            c.tps.len() + c.failed,
            c.failed
        ));
    }
    s
}

/// The closing lines: where the report is and which commands come next.
fn next_steps(store: &str, set_id: i64, index: &std::path::Path) -> String {
    let store_arg = if store == pgsurge_store::default_location() {
        String::new()
    } else {
        format!(" --store {store}")
    };
    let steps = [
        (
            format!("open {}", index.display()),
            "the HTML report (works offline)",
        ),
        (
            format!("pgsurge results show {set_id}{store_arg}"),
            "this run's table",
        ),
        (
            format!("pgsurge results export --set {set_id} --format csv{store_arg}"),
            "the numbers as CSV",
        ),
        (
            "pgsurge campaign new my.toml".to_string(),
            "a campaign of your own (then `campaign plan`, `campaign run`)",
        ),
        (
            "pgsurge server start".to_string(),
            "a server of your own; `eval \"$(pgsurge server env)\"`, then `pgsurge bench`",
        ),
    ];
    let steps: Vec<(String, String)> = steps
        .into_iter()
        .map(|(command, what)| (command, what.to_string()))
        .collect();
    format!("\n{}", pgsurge_command::next_lines(&steps))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_steps_name_the_report_and_the_set() {
        let t = next_steps("/tmp/x.db", 7, std::path::Path::new("r/index.html"));
        assert!(t.contains("open r/index.html"), "{t}");
        assert!(
            t.contains("pgsurge results show 7 --store /tmp/x.db"),
            "{t}"
        );
        assert!(t.contains("pgsurge campaign new"), "{t}");
    }

    #[test]
    fn next_steps_explanations_start_in_one_column() {
        for store in ["/tmp/x.db", pgsurge_store::default_location().as_str()] {
            let t = next_steps(store, 12, std::path::Path::new("reports/q/index.html"));
            let lines: Vec<&str> = t.lines().skip_while(|l| *l != "next:").skip(1).collect();
            assert_eq!(lines.len(), 5, "{t}");
            // Where each explanation starts: after the command and at least three spaces.
            let starts: Vec<usize> = lines
                .iter()
                .map(|l| {
                    assert!(l.starts_with("  ") && !l.starts_with("   "), "{t}");
                    let gap = l.find("   ").expect("a command and its explanation");
                    gap + l[gap..].len() - l[gap..].trim_start().len()
                })
                .collect();
            assert!(starts.windows(2).all(|w| w[0] == w[1]), "{t}");
        }
    }

    #[test]
    fn quickstart_campaign_is_valid_and_has_three_rounds_of_eight_cells() {
        let cli = Cli::try_parse_from(["q"]).unwrap();
        let c = Campaign::from_spec(campaign_spec(&cli), "q", Path::new(".")).unwrap();
        let m = pgsurge_campaign::matrix::expand(&c).unwrap();
        assert_eq!(m.tests.len(), 24);
        assert_eq!(c.limit(), pgsurge_campaign::spec::Limit::Duration(4));
        assert!(Cli::try_parse_from(["q", "--repeats", "0"]).is_err());
        let cli =
            Cli::try_parse_from(["q", "--duration", "2", "--clients", "1,2", "--repeats", "1"])
                .unwrap();
        let c = Campaign::from_spec(campaign_spec(&cli), "q", Path::new(".")).unwrap();
        assert_eq!(pgsurge_campaign::matrix::expand(&c).unwrap().tests.len(), 4);
    }

    #[test]
    fn the_stored_text_of_a_built_campaign_reads_back_as_the_same_spec() {
        let cli = Cli::try_parse_from(["q", "--scale", "3", "--clients", "2,4"]).unwrap();
        let built = Campaign::from_spec(campaign_spec(&cli), "q", Path::new(".")).unwrap();
        let parsed = Campaign::parse(&built.text, "q", Path::new(".")).unwrap();
        assert_eq!(parsed.spec, built.spec);
        assert_eq!(built.spec.matrix.scales, vec![3]);
        assert!(!built.spec.campaign.shuffle);
    }

    #[test]
    fn an_invalid_built_campaign_is_refused_like_a_file() {
        let cli = Cli::try_parse_from(["q"]).unwrap();
        let mut spec = campaign_spec(&cli);
        spec.targets[0].name = "a/b".into();
        let e = Campaign::from_spec(spec, "q", Path::new(".")).unwrap_err();
        assert!(e.to_string().contains("target[0].name"), "{e}");
    }
}
