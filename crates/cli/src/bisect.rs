//! `pgsurge bisect CAMPAIGN.toml --good REF --bad REF [--threshold PCT]`: the first
//! commit where a measurement got worse. The campaign has one target built from a git
//! checkout (`source`) and one matrix cell. Each commit is measured by the campaign,
//! built from source like any source target, as a target of its own (`TARGET @ COMMIT`)
//! in the bisect's one set (`NAME bisect GOOD..BAD`, kind `bisect`), and compared with
//! the good commit's runs by `compare`'s statistics. The search walks the
//! commits between good and bad (first-parent ancestry path, oldest first) by halves.
//! A step whose interval straddles the threshold is measured again, together with the
//! good commit, up to `--tries` times, and otherwise reported as inconclusive: bisect
//! never guesses. A killed bisect run again finds every finished step in the store and
//! measures only the rest.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser;
use pgsurge_campaign::{run_campaign, Campaign, RunOptions, SetIdentity};
use pgsurge_engine::stop::StopFlag;
use pgsurge_report::compare::{Comparison, Dimension, Verdict};
use pgsurge_report::{compare_sides, CompareRequest, Side};
use pgsurge_store::Store;

/// Exit status when no first bad commit can be named: a step stays inconclusive after
/// its tries, or bad is not worse than good (nothing to bisect).
const EXIT_NO_ANSWER: i32 = pgsurge_command::EXIT_NOTHING;

#[derive(Debug, Parser)]
#[command(
    name = "pgsurge bisect",
    about = "Find the first commit where a campaign's cell got worse: build, measure and compare commits between --good and --bad",
    disable_version_flag = true
)]
struct BisectArgs {
    /// The campaign: one target with `source` (a git checkout) and one matrix cell.
    campaign: PathBuf,
    /// A commit (branch, tag) whose measurement is the reference.
    #[arg(long, value_name = "REF")]
    good: String,
    /// A later commit that measures worse.
    #[arg(long, value_name = "REF")]
    bad: String,
    /// How much worse (tps lower, in percent) counts as a regression.
    #[arg(long, value_name = "PCT", default_value_t = 5.0)]
    threshold: f64,
    /// Measurements of one commit before a step that stays unclear is called inconclusive.
    #[arg(long, value_name = "N", default_value_t = 3)]
    tries: u32,
    /// Results store [default: $PGSURGE_STORE or ./pgsurge-results.db]
    #[arg(long)]
    store: Option<String>,
}

/// What one commit's measurement says against the good commit's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Worse by more than the threshold, with the whole interval beyond it.
    Regressed,
    /// Not worse by more than the threshold.
    Fine,
    /// The interval straddles the threshold.
    Unclear,
}

/// Entry point: `pgsurge bisect ...`.
pub fn main(args: &[OsString]) -> i32 {
    let a = match pgsurge_command::parse::<BisectArgs>("pgsurge bisect", args) {
        Ok(a) => a,
        Err(status) => return status,
    };
    match bisect(&a) {
        Ok(code) => code,
        Err(e) => {
            // A store URL or a target's conninfo in a message keeps no password.
            eprintln!("pgsurge: error: {}", pgsurge_store::redact_text(&e));
            pgsurge_command::EXIT_FAILURE
        }
    }
}

/// The clap definition of `pgsurge bisect`.
pub fn command() -> clap::Command {
    <BisectArgs as clap::CommandFactory>::command()
}

/// The good commit's runs, over as many measurements as the unclear steps asked for.
struct GoodRuns {
    commit: String,
    runs: Vec<i64>,
    tries: u32,
}

struct Bisection<'a> {
    args: &'a BisectArgs,
    campaign: Campaign,
    repo: PathBuf,
    store_location: String,
    stop: StopFlag,
    /// The one set every commit's runs go to: the same campaign file, good and bad
    /// commits find it again (the threshold and the tries only judge the runs).
    set: SetIdentity,
}

fn bisect(a: &BisectArgs) -> Result<i32, String> {
    check_threshold(a.threshold)?;
    if a.tries == 0 {
        return Err("--tries must be at least 1".into());
    }
    let campaign = Campaign::load(&a.campaign).map_err(|e| e.to_string())?;
    let repo = check_campaign(&campaign)?;
    let good = rev_parse(&repo, &a.good)?;
    let bad = rev_parse(&repo, &a.bad)?;
    if !git_ok(&repo, &["merge-base", "--is-ancestor", &good, &bad]) {
        return Err(format!(
            "--good {} is not an ancestor of --bad {}",
            a.good, a.bad
        ));
    }
    let commits = git_lines(
        &repo,
        &[
            "rev-list",
            "--reverse",
            "--first-parent",
            "--ancestry-path",
            &format!("{good}..{bad}"),
        ],
    )?;
    if commits.is_empty() {
        return Err("there is no commit between --good and --bad".into());
    }
    let store_location = a
        .store
        .clone()
        .unwrap_or_else(pgsurge_store::default_location);
    let stop = StopFlag::new();
    let _watcher = pgsurge_engine::stop::SignalWatcher::install(stop.clone()).ok();
    let set = SetIdentity {
        name: format!(
            "{} bisect {}..{}",
            campaign.spec.campaign.name,
            short(&good),
            short(&bad)
        ),
        identity: format!("bisect {} {good}..{bad}", campaign.identity_hash()),
    };
    let b = Bisection {
        args: a,
        set,
        campaign,
        repo,
        store_location,
        stop,
    };
    println!(
        "bisecting {} commits from {} (good) to {} (bad); a regression is tps lower by more than {} %",
        commits.len(),
        short(&good),
        short(&bad),
        a.threshold
    );
    let (first_good, stored) = b.measure(&good, 1)?;
    let mut good_runs = GoodRuns {
        commit: good.clone(),
        runs: first_good,
        tries: 1,
    };
    println!(
        "good {} {}: {} runs{}",
        short(&good),
        subject(&b.repo, &good),
        good_runs.runs.len(),
        if stored { ", from the store" } else { "" }
    );
    // The bad end must be worse, or there is nothing to find.
    let (mut lo, mut hi) = (None::<usize>, commits.len() - 1);
    match b.decide(&commits[hi], &mut good_runs)? {
        Step::Regressed => {}
        Step::Fine => {
            println!(
                "bad {} is not worse than good by more than the threshold: nothing to bisect",
                short(&bad)
            );
            return Ok(EXIT_NO_ANSWER);
        }
        Step::Unclear => return Ok(b.inconclusive(&commits[hi])),
    }
    while hi > lo.map_or(0, |l| l + 1) {
        let mid = lo.map_or(0, |l| l + 1) + (hi - lo.map_or(0, |l| l + 1)) / 2;
        match b.decide(&commits[mid], &mut good_runs)? {
            Step::Regressed => hi = mid,
            Step::Fine => lo = Some(mid),
            Step::Unclear => return Ok(b.inconclusive(&commits[mid])),
        }
    }
    let first = &commits[hi];
    println!("first bad commit: {} {}", first, subject(&b.repo, first));
    Ok(pgsurge_command::EXIT_OK)
}

impl Bisection<'_> {
    /// Measures `commit` (its `attempt`-th measurement), or finds it in the store; the
    /// ids of its runs, and whether they were all in the store already.
    fn measure(&self, commit: &str, attempt: u32) -> Result<(Vec<i64>, bool), String> {
        let mut spec = self.campaign.spec.clone();
        let target = &mut spec.targets[0];
        target.name = if attempt == 1 {
            format!("{} @ {}", target.name, short(commit))
        } else {
            format!("{} @ {} try {attempt}", target.name, short(commit))
        };
        target.git_ref = Some(commit.to_string());
        let c = Campaign::from_spec(spec, &self.campaign.path, &self.campaign.base_dir)
            .map_err(|e| e.to_string())?;
        // The commit is built (or found in the cache) first, saying how far along the
        // build is on stderr; the measurement itself is quiet.
        let c = pgsurge_campaign::sources::build_sources(&c, false).map_err(|e| e.to_string())?;
        let mut store = Store::open(&self.store_location).map_err(|e| e.to_string())?;
        let opts = RunOptions {
            new_set: false,
            retry_failed: false,
            quiet: true,
            kind: Some("bisect".into()),
            into_set: Some(self.set.clone()),
        };
        let out = run_campaign(&c, &mut store, &opts, &self.stop).map_err(|e| e.to_string())?;
        if out.remaining > 0 {
            return Err("interrupted: run the same command again to resume".into());
        }
        // The set holds every commit's runs: this measurement's are its target's.
        let target_name = &c.spec.targets[0].name;
        let target = store
            .targets(out.set_id)
            .map_err(|e| e.to_string())?
            .into_iter()
            .find(|t| &t.record.name == target_name)
            .ok_or_else(|| format!("target {target_name} is not in the store"))?;
        let runs = store
            .readable_runs(&pgsurge_store::RunFilter {
                set_id: Some(out.set_id),
                target_id: Some(target.id),
                ..Default::default()
            })
            .map_err(|e| e.to_string())?;
        let ids: Vec<i64> = runs
            .iter()
            .filter(|r| r.record.status == "ok")
            .map(|r| r.id)
            .collect();
        if ids.is_empty() {
            return Err(format!("commit {}: no test succeeded", short(commit)));
        }
        Ok((ids, out.already_stored == out.planned))
    }

    /// Measures `commit` and says how it compares with good. While unclear, both are
    /// measured again (the noise may be on either side), up to `--tries` times.
    fn decide(&self, commit: &str, good: &mut GoodRuns) -> Result<Step, String> {
        let mut runs = Vec::new();
        for attempt in 1..=self.args.tries {
            let (ids, stored) = self.measure(commit, attempt)?;
            runs.extend(ids);
            if attempt > good.tries {
                let (more, _) = self.measure(&good.commit, attempt)?;
                good.runs.extend(more);
                good.tries = attempt;
            }
            let c = self.compare(&good.runs, &runs)?;
            let step = classify(&c, self.args.threshold)?;
            let cell = &c.cells[0];
            println!(
                "{} {}: tps {} {} ({} runs{}) → {}",
                short(commit),
                subject(&self.repo, commit),
                pgsurge_report::compare::pct(cell.tps.change),
                pgsurge_report::compare::interval(cell.tps.ci_low, cell.tps.ci_high),
                runs.len(),
                if stored { ", from the store" } else { "" },
                match step {
                    Step::Regressed => "regressed",
                    Step::Fine => "fine",
                    Step::Unclear if attempt < self.args.tries => "unclear, measuring again",
                    Step::Unclear => "inconclusive",
                }
            );
            if step != Step::Unclear {
                return Ok(step);
            }
        }
        Ok(Step::Unclear)
    }

    fn compare(&self, good: &[i64], candidate: &[i64]) -> Result<Comparison, String> {
        compare_runs(&self.store_location, good, candidate)
    }

    fn inconclusive(&self, commit: &str) -> i32 {
        println!(
            "inconclusive at {} {}: after {} measurements its interval still straddles the \
             threshold; add repeats to the campaign, or lower the noise, and run again",
            short(commit),
            subject(&self.repo, commit),
            self.args.tries
        );
        EXIT_NO_ANSWER
    }
}

/// The good commit's runs against a candidate's, by `compare`'s statistics, as one
/// cell: every measurement of a commit is a target of its own (`… try 2`), and all of
/// a commit's runs are pooled.
fn compare_runs(store: &str, good: &[i64], candidate: &[i64]) -> Result<Comparison, String> {
    let mut store = Store::open_read_only(store).map_err(|e| e.to_string())?;
    let request = CompareRequest {
        a: Side::Runs(good.to_vec()),
        b: Side::Runs(candidate.to_vec()),
        along: vec![Dimension::Set, Dimension::Target],
        aa: None,
        margin: None,
    };
    let c = compare_sides(&mut store, &request, &mut Vec::new()).map_err(|e| e.to_string())?;
    if c.cells.len() != 1 {
        return Err(format!(
            "expected the one cell of the campaign on both sides, found {}",
            c.cells.len()
        ));
    }
    Ok(c)
}

/// A regression needs the whole interval below −threshold; fine needs the whole
/// interval above it; anything else is unclear.
fn classify(c: &Comparison, threshold_pct: f64) -> Result<Step, String> {
    let cell = &c.cells[0];
    let limit = -threshold_pct / 100.0;
    match (cell.tps.ci_low, cell.tps.ci_high) {
        (Some(_), Some(hi)) if hi < limit && cell.tps.verdict == Verdict::Slower => {
            Ok(Step::Regressed)
        }
        (Some(lo), Some(_)) if lo > limit => Ok(Step::Fine),
        _ => Ok(Step::Unclear),
    }
}

/// The campaign's one source target's checkout, after checking the campaign has one
/// target built from a git checkout and one cell.
fn check_campaign(c: &Campaign) -> Result<PathBuf, String> {
    let [target] = c.spec.targets.as_slice() else {
        return Err(format!(
            "{}: bisect needs exactly one [[target]] (with source = a git checkout); it has {}",
            c.path,
            c.spec.targets.len()
        ));
    };
    let Some(source) = &target.source else {
        return Err(format!(
            "{}: target \"{}\" has no source: bisect builds each commit from a git checkout",
            c.path, target.name
        ));
    };
    if !source.join(".git").exists() {
        return Err(format!(
            "{}: source {} is not a git checkout",
            c.path,
            source.display()
        ));
    }
    let m = pgsurge_campaign::matrix::expand(c)?;
    let cells: std::collections::BTreeSet<String> = m
        .tests
        .iter()
        .map(|t| {
            t.key
                .rsplit_once('/')
                .map_or(t.key.clone(), |(k, _)| k.to_string())
        })
        .collect();
    if cells.len() != 1 {
        return Err(format!(
            "{}: bisect measures one cell (one scale, client count, script, rate); this matrix has {}",
            c.path,
            cells.len()
        ));
    }
    Ok(source.clone())
}

fn git(repo: &Path, args: &[&str]) -> std::io::Result<std::process::Output> {
    Command::new("git").arg("-C").arg(repo).args(args).output()
}

fn git_ok(repo: &Path, args: &[&str]) -> bool {
    git(repo, args).is_ok_and(|o| o.status.success())
}

fn git_lines(repo: &Path, args: &[&str]) -> Result<Vec<String>, String> {
    let out = git(repo, args).map_err(|e| format!("git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect())
}

fn rev_parse(repo: &Path, r: &str) -> Result<String, String> {
    git_lines(
        repo,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{r}^{{commit}}"),
        ],
    )
    .ok()
    .and_then(|l| l.into_iter().next())
    .ok_or_else(|| format!("{r}: not a commit of {}", repo.display()))
}

/// `--threshold`, a percentage a tps may fall by: above 0 and below 100.
fn check_threshold(t: f64) -> Result<(), String> {
    if t.is_nan() {
        Err(format!("--threshold {t} is not a number"))
    } else if t <= 0.0 {
        Err(format!(
            "--threshold {t} must be greater than 0 (the percentage tps falls by)"
        ))
    } else if t >= 100.0 {
        Err(format!(
            "--threshold {t} must be less than 100 (tps cannot fall by 100 % or more)"
        ))
    } else {
        Ok(())
    }
}

fn subject(repo: &Path, commit: &str) -> String {
    git_lines(repo, &["log", "-1", "--format=%s", commit])
        .ok()
        .and_then(|l| l.into_iter().next())
        .unwrap_or_default()
}

fn short(commit: &str) -> &str {
    pgsurge_server::source_build::short(commit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgsurge_store::{RunRecord, RunWrite, SetRecord, TargetRecord};
    use std::collections::BTreeMap;

    #[test]
    fn a_threshold_out_of_range_says_which_bound() {
        let e = check_threshold(0.0).unwrap_err();
        assert!(
            e.contains("must be greater than 0") && !e.contains("between"),
            "{e}"
        );
        assert!(check_threshold(-3.0)
            .unwrap_err()
            .contains("greater than 0"));
        assert!(check_threshold(100.0)
            .unwrap_err()
            .contains("less than 100"));
        assert!(check_threshold(f64::NAN)
            .unwrap_err()
            .contains("not a number"));
        assert!(check_threshold(5.0).is_ok());
    }

    /// A commit measured twice is two targets of the bisect's set; compared, each side
    /// pools its targets' runs into the one cell.
    #[test]
    fn every_measurement_of_a_commit_is_pooled_in_one_cell() {
        let dir = pgsurge_testkit::scratch_dir("bisect-compare");
        let location = dir.path().join("s.db").display().to_string();
        let mut store = Store::open(&location).unwrap();
        let set_id = store
            .create_set(&SetRecord {
                name: "b bisect a..d".into(),
                kind: "bisect".into(),
                status: "complete".into(),
                created_at: "2026-11-26T00:00:00Z".into(),
                ..Default::default()
            })
            .unwrap();
        let mut runs = BTreeMap::new();
        for (target, tps) in [
            ("pg @ good", 1000.0),
            ("pg @ good try 2", 1010.0),
            ("pg @ cand", 500.0),
            ("pg @ cand try 2", 505.0),
        ] {
            let target_id = store
                .upsert_target(&TargetRecord {
                    set_id,
                    name: target.into(),
                    kind: "throwaway".into(),
                    ..Default::default()
                })
                .unwrap();
            for repeat in 1..=3i64 {
                let id = store
                    .write_run(&RunWrite {
                        run: RunRecord {
                            set_id,
                            target_id: Some(target_id),
                            test_key: format!("{target}/s1/select-only/c2/r-/{repeat}"),
                            repeat_no: repeat,
                            status: "ok".into(),
                            script: Some("select-only".into()),
                            scale: Some(1),
                            clients: Some(2),
                            tps: Some(tps + repeat as f64),
                            ..Default::default()
                        },
                        ..Default::default()
                    })
                    .unwrap();
                runs.entry(target.split(" try").next().unwrap().to_string())
                    .or_insert_with(Vec::new)
                    .push(id);
            }
        }
        drop(store);
        let c = compare_runs(&location, &runs["pg @ good"], &runs["pg @ cand"]).unwrap();
        let cell = &c.cells[0];
        assert_eq!((cell.a_n, cell.b_n), (6, 6));
        assert!(cell.tps.change.unwrap() < -0.45, "{:?}", cell.tps.change);
    }

    /// The example the README's bisect names is a campaign bisect takes: one target
    /// built from a git checkout, one cell.
    #[test]
    fn the_repository_example_is_a_campaign_bisect_takes() {
        let checkout = pgsurge_testkit::scratch_dir("bisect-example");
        std::fs::create_dir(checkout.path().join(".git")).unwrap();
        let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let file = examples.join("regression.toml");
        let text = std::fs::read_to_string(&file).unwrap();
        let source = checkout.path().display().to_string();
        let env = |k: &str| (k == "PG_SOURCE").then(|| source.clone());
        let c =
            Campaign::parse_with_env(&text, &file.display().to_string(), &examples, &env).unwrap();
        assert_eq!(check_campaign(&c).unwrap(), checkout.path());
        let readme = std::fs::read_to_string(examples.join("../README.md")).unwrap();
        assert!(
            readme.contains("pgsurge bisect examples/regression.toml "),
            "the README's bisect names the example"
        );
    }
}
