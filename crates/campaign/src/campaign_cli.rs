//! `pgsurge campaign run FILE.toml [--store S] [--new] [--retry-failed] [--quiet]
//! [--live[=ADDR]]`, `pgsurge campaign watch [STORE]` (the live view from a store),
//! `pgsurge campaign plan FILE.toml [--format text|json]` (the tests in order and a
//! time estimate, without running) and `pgsurge campaign new [FILE]` (a template).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use pgsurge_command::terminal_safe;
use pgsurge_engine::StopFlag;
use pgsurge_store::Store;

use crate::runner::{run_campaign_telling, RunOptions};
use crate::spec::Campaign;
use pgsurge_plan::estimate::Estimate;
use pgsurge_wire::redact::redact;

#[derive(Parser, Debug)]
#[command(
    name = "pgsurge campaign",
    about = "Run a benchmark campaign (a matrix of tests) into the results store"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run a campaign, or resume it: tests already stored are skipped.
    Run {
        /// The campaign file (TOML; see examples/ in the repository).
        file: PathBuf,
        /// Results store: a SQLite file or a postgresql:// URL
        /// [default: $PGSURGE_STORE or ./pgsurge-results.db].
        #[arg(long)]
        store: Option<String>,
        /// Start a new set even if this campaign already has one.
        #[arg(long)]
        new: bool,
        /// Run again the tests stored as failed.
        #[arg(long)]
        retry_failed: bool,
        /// No progress bar, no per-test lines.
        #[arg(long, short)]
        quiet: bool,
        /// Serve a live view of the run, read-only, on ADDR [default: 127.0.0.1:8642].
        #[arg(long, value_name = "ADDR", num_args = 0..=1, require_equals = true, default_missing_value = pgsurge_live::DEFAULT_ADDR)]
        live: Option<String>,
    },
    /// Serve the live view of a campaign running in another process, read-only, from
    /// its results store, until interrupted.
    Watch {
        /// The results store [default: $PGSURGE_STORE or ./pgsurge-results.db].
        store: Option<String>,
        /// The set, by id or name [default: the newest a campaign told anything].
        #[arg(long)]
        set: Option<String>,
        /// Where to serve the page.
        #[arg(long, value_name = "ADDR", default_value = pgsurge_live::DEFAULT_ADDR)]
        listen: String,
    },
    /// Print the tests of a campaign in the order they would run, and an estimate of
    /// the time the campaign takes.
    Plan {
        /// The campaign file.
        file: PathBuf,
        /// `text`, or `json` (versioned: `pgsurge schema plan`).
        #[arg(long, value_enum, default_value = "text")]
        format: PlanFormat,
        /// Results store holding earlier sets of the campaign, for `[repeats] until`'s
        /// estimate [default: $PGSURGE_STORE or ./pgsurge-results.db].
        #[arg(long)]
        store: Option<String>,
    },
    /// Write a commented campaign template to FILE (refuses to overwrite), or to stdout.
    New {
        /// Where to write it [default: stdout].
        file: Option<PathBuf>,
    },
    /// Write the campaign equivalent to another tool's configuration: with
    /// `--from pgbench-tools`, its `config` file (read, never executed: only its
    /// assignments are evaluated), the same tests in the order its runset runs them.
    /// Every setting not carried over gets a comment saying why.
    Convert {
        /// What CONFIG is.
        #[arg(long, value_enum, required = true)]
        from: ConvertFrom,
        /// The configuration file.
        config: PathBuf,
        /// Write the campaign here (refuses to overwrite) [default: stdout].
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
}

/// Configurations `campaign convert` reads.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
enum ConvertFrom {
    /// pgbench-tools' `config`.
    PgbenchTools,
}

/// Writes `text` to a new file at `path` (never replacing one), saying `then(path)`; or
/// prints it when there is no path.
fn write_new(path: Option<PathBuf>, text: &str, then: impl FnOnce(&str) -> String) -> i32 {
    let Some(path) = path else {
        print!("{text}");
        return 0;
    };
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()));
    let shown = path.display().to_string();
    match written {
        Ok(()) => {
            eprintln!("wrote {shown}: {}", then(&shown));
            0
        }
        Err(e) => command_error(&format!("cannot create {shown}: {e}")),
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PlanFormat {
    Text,
    Json,
}

/// Version of the `campaign plan --format json` document (`pgsurge schema plan`).
pub const PLAN_VERSION: u32 = 1;

/// JSON Schema of the `campaign plan --format json` document.
pub const PLAN_SCHEMA: &str = include_str!("../schema/plan.v1.json");

/// A commented template for `campaign new`: every section, the defaults stated.
pub const TEMPLATE: &str = include_str!("../templates/campaign.toml");

/// A host with at most this many CPUs is small: a server and a load generator on it,
/// unpinned, take CPU time from each other in every test.
const SMALL_HOST_CPUS: usize = 4;

/// The warning for throwaway servers sharing a small host (`cpus` CPUs) with the load
/// generator, none of them pinned to CPUs of their own; None otherwise.
fn shared_host_warning(campaign: &Campaign, cpus: usize) -> Option<String> {
    let spec = &campaign.spec;
    let names: Vec<String> = spec
        .targets
        .iter()
        .filter(|t| t.is_throwaway())
        .map(|t| format!("\"{}\"", t.name))
        .collect();
    if names.is_empty()
        || cpus > SMALL_HOST_CPUS
        || spec.distributed.is_some()
        || !spec.pinning.is_empty()
    {
        return None;
    }
    Some(format!(
        "this host: the server of target {} and the load generator share its {cpus} CPUs, \
         unpinned: each takes CPU time from the other, and the client's work limits the \
         server's throughput; give each CPUs of its own with [pinning] (server = \"…\", \
         client = \"…\") or run the server on another host",
        names.join(", ")
    ))
}

/// What would make the campaign's results misleading, known before it runs: what on
/// this host moves numbers from run to run, throwaway servers sharing a small host with
/// the load generator unpinned, and a throwaway target whose data directory would be in
/// memory (tmpfs, ramfs), where no I/O happens.
pub(crate) fn plan_warnings(campaign: &Campaign) -> Vec<String> {
    let mounts = std::fs::read_to_string("/proc/mounts").ok();
    // This host runs the load generator (and the throwaway servers): what on it moves
    // numbers from run to run.
    let host = pgsurge_observe::manifest::host_manifest();
    let mut out: Vec<String> = pgsurge_observe::manifest::noise_warnings(&host)
        .into_iter()
        .map(|w| format!("this host: {w}"))
        .collect();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    out.extend(shared_host_warning(campaign, cpus));
    for t in campaign.spec.targets.iter().filter(|t| t.is_throwaway()) {
        let (dir, given) = match &t.data_dir {
            Some(d) => (d.clone(), true),
            None => (std::env::temp_dir(), false),
        };
        // The data directory may not exist yet: its nearest existing parent decides.
        let mut probe = dir.clone();
        while !probe.exists() {
            if !probe.pop() {
                break;
            }
        }
        let probe = std::fs::canonicalize(&probe).unwrap_or(probe);
        let Some((mount, fstype, device)) = mounts
            .as_deref()
            .and_then(|m| pgsurge_observe::hostmetrics::mount_of(m, &probe.display().to_string()))
        else {
            continue;
        };
        if pgsurge_observe::hostmetrics::is_memory_fs(&fstype) {
            let hint = if given {
                "choose a data_dir on a disk"
            } else {
                "set data_dir for the target to a directory on a disk (or TMPDIR)"
            };
            out.push(format!(
                "target \"{}\": its data directory {} would be on {fstype} ({mount}): the \
                 server would never wait for a disk, so its results say nothing about I/O; {hint}",
                t.name,
                dir.display()
            ));
        } else {
            out.extend(
                pgsurge_observe::manifest::disk_warnings(&host["block_devices"], &device)
                    .into_iter()
                    .map(|w| format!("target \"{}\": {w}", t.name)),
            );
        }
    }
    out
}

/// The end of `campaign run`: the summary, the warnings not said yet, the capacity
/// results, the next commands (unless `quiet`); the thresholds checked. Returns the
/// exit status: 130 interrupted, 3 a test failed, else the thresholds' (0 or 4).
fn finish_run(
    campaign: &Campaign,
    store: &mut Store,
    location: &str,
    o: &crate::runner::Outcome,
    quiet: bool,
) -> i32 {
    if !quiet {
        eprintln!(
            "set {}: {} tests planned, {} already stored, {} run now ({} failed), {} remaining; store {}",
            o.set_id, o.planned, o.already_stored, o.ok + o.failed, o.failed, o.remaining, store.location()
        );
        if let Some(r) = campaign.until_section() {
            let ((reached, not), spent) = (
                o.precise,
                if o.budget_spent {
                    ", the budget spent"
                } else {
                    ""
                },
            );
            eprintln!("repeats until ±{}: {reached} cells reached it, {not} did not{spent}; {} tests not needed", r.until.as_deref().unwrap_or("").trim(), o.not_needed);
        }
        // Each warning was said once as it came; those that were not (the samplers')
        // are said here.
        for w in o.warnings.iter().filter(|w| !o.said_warnings.contains(w)) {
            eprintln!("warning: {}", terminal_safe(&redact(w)));
        }
        for r in &o.capacity {
            eprintln!("capacity: {}", terminal_safe(&r.line()));
        }
    }
    if o.remaining > 0 {
        eprintln!("campaign interrupted: run the same command again to resume");
        return pgsurge_command::EXIT_INTERRUPTED;
    }
    if !quiet {
        let steps = next_steps(campaign, location, o.set_id, o.warnings.len());
        eprint!("{}", terminal_safe(&redact(&steps)));
    }
    let gates = check_thresholds(campaign, store, o.set_id);
    if o.failed > 0 {
        pgsurge_command::EXIT_NOTHING
    } else {
        gates
    }
}

/// The closing lines of `campaign run`: the commands that show the set `set_id` of
/// the store at `location` (the targets compared, the report, the runs).
fn next_steps(campaign: &Campaign, location: &str, set_id: i64, warnings: usize) -> String {
    use pgsurge_command::shell_word;
    let store = if location == pgsurge_store::default_location() {
        String::new()
    } else {
        format!(" --store {}", shell_word(location))
    };
    let mut steps = Vec::new();
    if let [a, b, ..] = campaign.spec.targets.as_slice() {
        let side = |name: &str| shell_word(&format!("set:{set_id}/target:{name}"));
        steps.push((
            format!("pgsurge compare {} {}{store}", side(&a.name), side(&b.name)),
            format!(
                "\"{}\" against \"{}\", with 95 % intervals (--format markdown to paste)",
                b.name, a.name
            ),
        ));
    }
    steps.push((
        format!("pgsurge report --set {set_id} -o report{store}"),
        "the HTML report (report/index.html, opens offline)".to_string(),
    ));
    steps.push((
        format!("pgsurge results show {set_id}{store}"),
        if warnings == 0 {
            "the set's runs".to_string()
        } else {
            format!(
                "the set's runs and its {warnings} warning{}",
                if warnings == 1 { "" } else { "s" }
            )
        },
    ));
    pgsurge_command::next_lines(&steps)
}

/// The `campaign plan --format json` document.
pub(crate) fn plan_json(campaign: &Campaign, m: &crate::matrix::Matrix) -> serde_json::Value {
    let e = Estimate::of(campaign, m);
    let tests: Vec<serde_json::Value> = m
        .tests
        .iter()
        .map(|t| {
            let mut test = serde_json::json!({
                "seq": t.seq,
                "key": t.key,
                "target": campaign.spec.targets[t.target].name,
                "scale": t.scale,
                "script": m.workloads[t.workload].name,
                "clients": t.clients,
                "rate": t.rate,
                "rate_per_client": t.rate_per_client,
                "repeat": t.repeat,
                "seed": t.seed,
            });
            if let Some(mode) = &t.query_mode {
                test["query_mode"] = mode.as_str().into();
            }
            if let Some(j) = t.threads {
                test["threads"] = j.into();
            }
            if !t.settings.is_empty() {
                test["settings"] = t
                    .settings
                    .iter()
                    .map(|(n, v)| (n.clone(), serde_json::Value::from(v.as_str())))
                    .collect::<serde_json::Map<_, _>>()
                    .into();
            }
            test
        })
        .collect();
    let mut doc = serde_json::json!({
        "format": "pgsurge-plan",
        "version": PLAN_VERSION,
        "campaign": campaign.spec.campaign.name,
        "file": campaign.path,
        "tests": tests,
        "warnings": plan_warnings(campaign),
        "estimate": {
            "total_s": e.run_s.map(|r| r + e.between_s),
            "runs_s": e.run_s,
            "between_tests_s": e.between_s,
            "initializations": e.initializations,
        },
    });
    if let Some(d) = &campaign.spec.distributed {
        doc["distributed"] = serde_json::json!({
            "launcher": d.launcher,
            "generators": d.count(),
            "start_in_s": d.start_in,
            "description": crate::distributed::describe(&campaign.spec.campaign.name, d),
        });
        if !d.hosts.is_empty() {
            doc["distributed"]["hosts"] = serde_json::json!(d.hosts);
        }
        if let Some(k) = &d.kube {
            doc["distributed"]["kube"] = serde_json::to_value(k).unwrap_or_default();
        }
    }
    doc
}

/// Exit status of a campaign run whose thresholds fail.
pub const EXIT_THRESHOLDS: i32 = 4;

/// Checks `[thresholds]` on every stored test of the set; prints the summary on stderr
/// and returns [`EXIT_THRESHOLDS`] when a check fails (0 when none is configured).
fn check_thresholds(campaign: &Campaign, store: &mut Store, set_id: i64) -> i32 {
    let thresholds = campaign.thresholds();
    if thresholds.is_empty() {
        return 0;
    }
    let runs = match store.list_runs(&pgsurge_store::RunFilter {
        set_id: Some(set_id),
        ..Default::default()
    }) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("pgsurge: error: reading the set to check thresholds: {e}");
            return 1;
        }
    };
    let checked = runs.iter().filter(|r| r.record.status == "ok").count();
    let violations = crate::thresholds::check(&thresholds, &runs);
    if violations.is_empty() {
        eprintln!(
            "thresholds: all {checked} tests pass ({})",
            thresholds
                .iter()
                .map(|t| format!("{} {}", t.metric, t.text))
                .collect::<Vec<_>>()
                .join(", ")
        );
        0
    } else {
        eprint!("{}", crate::thresholds::summary(&violations, checked));
        EXIT_THRESHOLDS
    }
}

/// The clap definition of `pgsurge campaign` (top-level help, completions, man page).
pub(crate) fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// Entry point of `pgsurge campaign`.
pub fn main(args: &[OsString]) -> i32 {
    let cli = match pgsurge_command::parse::<Cli>("pgsurge campaign", args) {
        Ok(c) => c,
        Err(status) => return status,
    };
    match cli.cmd {
        Cmd::Convert { config, output, .. } => match crate::convert::convert_file(&config) {
            Ok(text) => write_new(output, &text, |p| {
                format!("check its notes, then `pgsurge campaign plan {p}`")
            }),
            Err(e) => command_error(&e),
        },
        Cmd::Watch { store, set, listen } => {
            let location = store.unwrap_or_else(pgsurge_store::default_location);
            match pgsurge_live::watch(&location, set.as_deref(), &listen) {
                Ok(never) => match never {},
                Err(e) => command_error(&e.to_string()),
            }
        }
        Cmd::New { file } => write_new(file, TEMPLATE, |p| {
            format!("edit it, then `pgsurge campaign plan {p}` and `pgsurge campaign run {p}`")
        }),
        Cmd::Plan {
            file,
            format,
            store,
        } => match Campaign::load(&file)
            .map_err(|e| e.to_string())
            .and_then(|c| crate::matrix::expand(&c).map(|m| (c, m)))
            .and_then(|(c, m)| {
                crate::sources::plan_lines(&c)
                    .map(|b| (c, m, b))
                    .map_err(|e| e.to_string())
            }) {
            Ok((c, m, (build_lines, build_warnings))) => {
                let store = store.unwrap_or_else(pgsurge_store::default_location);
                let repeats = pgsurge_plan::repeats::plan(&c, &store);
                match format {
                    PlanFormat::Text => {
                        for t in &m.tests {
                            println!("{:>4} {}", t.seq, terminal_safe(&t.key));
                        }
                        println!("{} tests", m.tests.len());
                        println!("{}", Estimate::of(&c, &m).line());
                        if let Some(r) = &repeats {
                            println!("{}", terminal_safe(&r.line()));
                        }
                        if let Some(d) = &c.spec.distributed {
                            println!(
                                "{}",
                                terminal_safe(&crate::distributed::describe(
                                    &c.spec.campaign.name,
                                    d
                                ))
                            );
                        }
                        for line in &build_lines {
                            println!("{}", terminal_safe(line));
                        }
                        for w in plan_warnings(&c).iter().chain(&build_warnings) {
                            eprintln!("warning: {}", terminal_safe(w));
                        }
                    }
                    PlanFormat::Json => {
                        let mut doc = plan_json(&c, &m);
                        doc["builds"] = build_lines.into();
                        if let Some(r) = &repeats {
                            doc["repeats"] = serde_json::to_value(r).unwrap_or_default();
                        }
                        if let Some(w) = doc["warnings"].as_array_mut() {
                            w.extend(build_warnings.into_iter().map(Into::into));
                        }
                        println!(
                            "{}",
                            serde_json::to_string_pretty(&doc).expect("a JSON value serializes")
                        );
                    }
                }
                0
            }
            Err(e) => command_error(&e),
        },
        Cmd::Run {
            file,
            store,
            new,
            retry_failed,
            quiet,
            live,
        } => {
            // A bad address is said before anything starts.
            let mut view = match pgsurge_live::View::start(live.as_deref()) {
                Ok(v) => v,
                Err(e) => return command_error(&e.to_string()),
            };
            // A fault this machine cannot apply is refused here, before a store or a
            // server.
            let campaign = match Campaign::load(&file) {
                Ok(c) => c,
                Err(e) => return command_error(&e.to_string()),
            };
            let location = store.unwrap_or_else(pgsurge_store::default_location);
            let mut store = match Store::open(&location) {
                Ok(s) => s,
                Err(e) => return command_error(&e.to_string()),
            };
            let stop = StopFlag::new();
            let _watcher = pgsurge_engine::stop::SignalWatcher::install(stop.clone()).ok();
            let opts = RunOptions {
                new_set: new,
                retry_failed,
                quiet,
                ..Default::default()
            };
            match run_campaign_telling(&campaign, &mut store, &opts, &stop, &mut view.consumers()) {
                Ok(o) => finish_run(&campaign, &mut store, &location, &o, quiet),
                Err(e) => command_error(&e.to_string()),
            }
        }
    }
}

/// Says `message` as the command's error (masked, terminal-safe); the exit status 1.
fn command_error(message: &str) -> i32 {
    eprintln!("pgsurge: error: {}", terminal_safe(&redact(message)));
    1
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgsurge_plan::estimate::{
        human_duration, initializations, BETWEEN_TESTS_S, LOAD_S_PER_SCALE, NEW_CLUSTER_S,
    };

    fn campaign(extra_run: &str) -> Campaign {
        let text = format!(
            "[campaign]\nname = \"t\"\n[[target]]\nname = \"a\"\n[[target]]\nname = \"b\"\n\
             [matrix]\nscales = [1, 10]\nclients = [1, 4]\nrepeats = 2\n[run]\n{extra_run}\n"
        );
        Campaign::parse(&text, "t.toml", std::path::Path::new(".")).unwrap()
    }

    #[test]
    fn plan_shows_the_kube_launcher() {
        let c = campaign(
            "duration = 5\n[distributed]\nlauncher = \"kube\"\ngenerators = 1\nstart_in = 60\n\
             [distributed.kube]\nimage = \"registry.example/pgsurge:0.1.0\"\n\
             namespace = \"bench\"\nhost = \"db.internal\"\n\
             store = \"postgresql://bench@results-db:5432/pgsurge\"",
        );
        let d = c.spec.distributed.as_ref().unwrap();
        assert_eq!(
            crate::distributed::describe(&c.spec.campaign.name, d),
            "distributed: each test as a Kubernetes Indexed Job of 1 pod (image \
             registry.example/pgsurge:0.1.0, namespace bench), starting together 60 s after \
             launch; the pods store their results in the store \
             postgresql://bench@results-db:5432/pgsurge as a group, waited for up to start_in \
             + the run + 120 s; Jobs named pgsurge-t-SET-TEST-ATTEMPT, deleted after each test"
        );
        let m = crate::matrix::expand(&c).unwrap();
        let doc = plan_json(&c, &m);
        assert_plan_valid(&doc);
        assert_eq!(doc["distributed"]["launcher"], "kube");
        assert_eq!(doc["distributed"]["generators"], 1);
        assert_eq!(doc["distributed"]["kube"]["namespace"], "bench");
    }

    #[test]
    fn estimate_counts_runs_warmups_and_initializations() {
        let c = campaign("duration = \"1m30s\"\nwarmup = \"10s\"");
        let m = crate::matrix::expand(&c).unwrap();
        assert_eq!(m.tests.len(), 16);
        let e = Estimate::of(&c, &m);
        assert_eq!(e.run_s, Some(16.0 * 100.0));
        assert_eq!(e.between_s, 16.0 * BETWEEN_TESTS_S);
        assert_eq!(e.initializations, 4);
        assert!(
            e.line().starts_with("estimated time: about 28m ("),
            "{}",
            e.line()
        );
        assert!(
            e.line().contains(
                "plus 4 initializations (one per target, scale and workload pack; about "
            ),
            "{}",
            e.line()
        );
    }

    #[test]
    fn a_workload_pack_is_loaded_apart_from_pgbench_s_tables_at_its_own_pace() {
        let text = "[campaign]\nname = \"t\"\n[[target]]\nname = \"a\"\n\
                    [matrix]\nscales = [4]\nclients = [4]\n\
                    scripts = [\"tpcb-like\", { workload = \"tpcc\" }]\n[run]\nduration = 10\n\
                    [init]\njobs = 2\n";
        let c = Campaign::parse(text, "t.toml", std::path::Path::new(".")).unwrap();
        let m = crate::matrix::expand(&c).unwrap();
        let e = Estimate::of(&c, &m);
        assert_eq!(e.initializations, 2, "pgbench's tables and the pack's");
        let tpcc = pgsurge_workload::Pack::resolve("tpcc").unwrap();
        let per_unit = tpcc.manifest.load.seconds_per_unit.unwrap();
        let (_, seconds, _) = initializations(&c, &m);
        assert!(
            (seconds - (NEW_CLUSTER_S + 4.0 * LOAD_S_PER_SCALE + 4.0 * per_unit / 2.0)).abs()
                < 1e-9,
            "{seconds}"
        );
    }

    #[test]
    fn plan_warns_of_what_on_this_host_moves_numbers() {
        let host = pgsurge_observe::manifest::host_manifest();
        let mut noisy = host.clone();
        noisy["cpu"]["governor"] = "powersave".into();
        let expected = pgsurge_observe::manifest::noise_warnings(&host);
        let warnings = plan_warnings(&campaign("duration = 10"));
        for w in &expected {
            assert!(
                warnings.contains(&format!("this host: {w}")),
                "{w} not in {warnings:?}"
            );
        }
        assert!(pgsurge_observe::manifest::noise_warnings(&noisy)
            .iter()
            .any(|w| w.contains("\"powersave\"")));
    }

    #[test]
    fn a_run_ends_with_the_commands_that_show_its_set() {
        let t = next_steps(&campaign("duration = 10"), "/tmp/r.db", 4, 1);
        assert!(
            t.starts_with("next:\n  pgsurge compare set:4/target:a set:4/target:b --store /tmp/r.db   \"b\" against \"a\""),
            "{t}"
        );
        assert!(
            t.contains("  pgsurge report --set 4 -o report --store /tmp/r.db "),
            "{t}"
        );
        assert!(
            t.contains("  pgsurge results show 4 --store /tmp/r.db "),
            "{t}"
        );
        assert!(t.contains("its 1 warning\n"), "{t}");
        let one = Campaign::parse(
            "[campaign]\nname = \"t\"\n[[target]]\nname = \"only one\"\n[matrix]\nscales = [1]\nclients = [1]\n",
            "t.toml",
            std::path::Path::new("."),
        )
        .unwrap();
        let t = next_steps(&one, &pgsurge_store::default_location(), 5, 0);
        assert!(!t.contains("compare") && !t.contains("--store"), "{t}");
        assert!(t.contains("pgsurge results show 5 "), "{t}");
    }

    #[test]
    fn plan_warns_of_a_server_and_client_sharing_a_small_host_unpinned() {
        let shared = campaign("duration = 10");
        assert!(shared.spec.targets.iter().any(|t| t.is_throwaway()));
        let w = shared_host_warning(&shared, 2).expect("a warning on 2 CPUs");
        assert!(
            w.contains("share its 2 CPUs, unpinned") && w.contains("[pinning]"),
            "{w}"
        );
        assert_eq!(shared_host_warning(&shared, 16), None);
        let pinned = campaign("duration = 10\n[pinning]\nserver = \"0\"\nclient = \"1\"");
        assert_eq!(shared_host_warning(&pinned, 2), None);
        // On this host the plan's warnings hold it exactly when the host is small.
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(
            plan_warnings(&shared)
                .iter()
                .any(|x| x.contains("unpinned")),
            cpus <= SMALL_HOST_CPUS
        );
    }

    #[test]
    fn a_fresh_cluster_is_an_initialization_per_test_or_per_change_of_scale() {
        let estimate = |fresh: &str| {
            let c = campaign(&format!(
                "duration = 10\n[hygiene]\nfresh_cluster = \"{fresh}\""
            ));
            let m = crate::matrix::expand(&c).unwrap();
            assert_eq!(m.tests.len(), 16);
            Estimate::of(&c, &m)
        };
        let every = estimate("test");
        assert_eq!(every.initializations, 16);
        assert!(
            every
                .line()
                .contains("(a new cluster and its data before every test; about "),
            "{}",
            every.line()
        );
        // Scales 1 and 10, 4 tests each per target: 16 × 3 s of clusters + 8 × 0.5 s + 8 × 5 s.
        assert_eq!(every.init_s, 16.0 * NEW_CLUSTER_S + 8.0 * 0.5 + 8.0 * 5.0);
        let never = estimate("never");
        assert_eq!(never.initializations, 4);
        let scale = estimate("scale");
        assert!(
            (4..=16).contains(&scale.initializations),
            "{}",
            scale.initializations
        );
        assert!(
            scale.line().contains("whenever a target's scale changes"),
            "{}",
            scale.line()
        );
        let bad = Campaign::parse(
            "[campaign]\nname = \"t\"\n[[target]]\nname = \"a\"\ndata_dir = \"/srv/pg\"\n\
             [matrix]\nscales = [1]\nclients = [1]\n[hygiene]\nfresh_cluster = \"test\"\n",
            "t.toml",
            std::path::Path::new("."),
        )
        .unwrap_err()
        .to_string();
        assert!(
            bad.contains("hygiene.fresh_cluster") && bad.contains("data_dir"),
            "{bad}"
        );
    }

    #[test]
    fn a_capacity_search_is_estimated_at_its_longest() {
        let c = campaign(
            "duration = 10\n[capacity]\nbound = \"10ms\"\nstart_rate = 500\nmax_rate = 4000\n\
             resolution = 0.25\nrepeats = 2",
        );
        let m = crate::matrix::expand(&c).unwrap();
        let e = Estimate::of(&c, &m);
        // The first step, 9 halvings down to 1 tps (more than the 3 doublings up to
        // 4000), then 2 bisections to within 25 %.
        assert_eq!(e.capacity_steps, Some((12, 2)));
        // 2 targets × 2 scales × 2 client counts, each a search.
        assert_eq!(e.run_s, Some(8.0 * 12.0 * 2.0 * 10.0));
        assert!(
            e.line().starts_with(
                "estimated time: at most 48m (a capacity search of at most 12 steps \
                 of 2 tests per cell"
            ),
            "{}",
            e.line()
        );
    }

    #[test]
    fn estimate_defaults_to_60_seconds_and_is_unknown_for_transactions() {
        let c = campaign("");
        let m = crate::matrix::expand(&c).unwrap();
        assert_eq!(Estimate::of(&c, &m).run_s, Some(16.0 * 60.0));
        let c = campaign("transactions = 100");
        let m = crate::matrix::expand(&c).unwrap();
        assert_eq!(Estimate::of(&c, &m).run_s, None);
        assert!(Estimate::of(&c, &m).line().contains("unknown"));
    }

    #[test]
    fn human_durations() {
        assert_eq!(human_duration(0.0), "0s");
        assert_eq!(human_duration(90.0), "1m 30s");
        assert_eq!(human_duration(7200.0), "2h");
        assert_eq!(human_duration(3725.0), "1h 2m 5s");
    }

    #[test]
    fn the_template_is_a_valid_campaign() {
        let c = Campaign::parse(TEMPLATE, "new.toml", std::path::Path::new(".")).unwrap();
        assert_eq!(c.spec.campaign.seed, 1);
        crate::matrix::expand(&c).unwrap();
    }

    /// Checks `doc` against the plan schema; returns the validator for further checks.
    fn assert_plan_valid(doc: &serde_json::Value) {
        pgsurge_testkit::schema::assert_valid(PLAN_SCHEMA, doc);
    }

    #[test]
    fn plan_json_validates_against_its_schema() {
        let c = campaign("duration = 5");
        let m = crate::matrix::expand(&c).unwrap();
        let doc = plan_json(&c, &m);
        assert_plan_valid(&doc);
        let mut bad = doc.clone();
        bad["version"] = serde_json::json!(2);
        assert!(
            !pgsurge_testkit::schema::violations(PLAN_SCHEMA, &bad).is_empty(),
            "a wrong version must not validate"
        );
        assert_eq!(doc["tests"][0]["target"], "a");
    }
}
