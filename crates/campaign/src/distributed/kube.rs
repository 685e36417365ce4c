//! `launcher = "kube"`: a test's generators are the pods of a Kubernetes Indexed Job.
//!
//! For each test: the Job of `pgsurge kube job` (built by `pgsurge_kube`, so the same
//! generator command and the same checks), its pods told to store their results in a
//! PostgreSQL results store as the generators of a group of their own
//! (`--store=URL --group=NAME`); `kubectl apply -f -`; then the wait on the store for
//! the N generators and their merge, by `pgsurge_generators::group::wait_for_group`, the
//! code of `pgsurge dist wait`; last `kubectl delete job`, whatever happened, unless
//! `keep_job` is set.
//!
//! This module owns the campaign's side: naming Jobs and groups and driving `kubectl`;
//! the table itself, where the pods connect and where they store are checked by
//! `pgsurge_plan::kube`. It never puts a password into a manifest: the database
//! password is only ever a `secretKeyRef`.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use pgsurge_engine::{RunLimit, RunSpec};
use pgsurge_generators::group::{wait_for_group, WaitError};
use pgsurge_kube::job::{self, Format, KubePlan, Spread, Start};
use pgsurge_plan::kube::{pod_database, pod_store, PodDatabase};

use super::{Outcome, TestContext};
use crate::error::{CampaignError, Result};
use crate::spec::{DistributedSection, KubeSection};

/// The label every pod of a Job carries (`app.kubernetes.io/instance=NAME`).
const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";

/// The group names of a test's attempts start with this; the attempt number follows.
pub fn group_prefix(campaign: &str, set_id: i64, key: &str) -> String {
    format!("{campaign}/{set_id}/{key}#")
}

/// The Job of attempt `attempt` of test `seq` of set `set_id`:
/// `pgsurge-CAMPAIGN-SET-SEQ-ATTEMPT`, a DNS label short enough that every pod's host
/// name (`NAME-INDEX`) is one too; the campaign part is shortened to make room.
pub fn job_name(campaign: &str, set_id: i64, seq: usize, attempt: u32, generators: u32) -> String {
    let room = job::max_job_name_len(generators);
    let tail = format!("-{set_id}-{seq}-{attempt}");
    let head = job::dns_label_from(
        &format!("pgsurge-{campaign}"),
        room.saturating_sub(tail.len()),
    )
    .unwrap_or_else(|| "pgsurge".into());
    let name = format!("{head}{tail}");
    if job::is_dns_label(&name, room) {
        name
    } else {
        // Only numbers too long for any name are left: the shortest form.
        format!("p{tail}").chars().take(room).collect()
    }
}

/// A test's attempt: its number, its group's name and the group's set in the pods'
/// store.
struct Attempt {
    number: u32,
    group: String,
    set_id: i64,
}

/// Creates the group of the test's next attempt in the pods' store, before any pod
/// runs (the pods store into it: `bench --group` takes the group of that name): one
/// more than the highest attempt stored, so that every attempt — even one whose pods
/// never stored anything — has a group, and so a Job name, of its own.
fn reserve_group(
    store: &str,
    prefix: &str,
    generators: u32,
    about: &str,
) -> std::result::Result<Attempt, String> {
    use pgsurge_store::{set_kind, set_status, SetRecord};
    let shown = pgsurge_store::redact_location(store);
    let in_store = |e: pgsurge_store::StoreError| format!("{shown}: {e}");
    let mut s = pgsurge_store::Store::open(store).map_err(in_store)?;
    let highest = s
        .list_sets()
        .map_err(in_store)?
        .iter()
        .filter(|set| set.record.kind == set_kind::GROUP)
        .filter_map(|set| set.record.name.strip_prefix(prefix)?.parse::<u32>().ok())
        .max()
        .unwrap_or(0);
    let number = highest + 1;
    let group = format!("{prefix}{number}");
    let set_id = s
        .create_set(&SetRecord {
            name: group.clone(),
            kind: set_kind::GROUP.into(),
            description: Some(format!(
                "distributed run of {generators} generators: {about}"
            )),
            spec_hash: Some(pgsurge_store::GROUP_SPEC_HASH.into()),
            planned_tests: Some(i64::from(generators)),
            status: set_status::RUNNING.into(),
            created_at: pgsurge_store::now_rfc3339(),
            ..Default::default()
        })
        .map_err(in_store)?;
    Ok(Attempt {
        number,
        group,
        set_id,
    })
}

/// Marks a failed attempt's group failed (best effort: the test's error says more).
fn mark_failed(store: &str, set_id: i64) {
    if let Ok(mut s) = pgsurge_store::Store::open(store) {
        let _ = s.set_set_status(
            set_id,
            pgsurge_store::set_status::FAILED,
            Some(&pgsurge_store::now_rfc3339()),
        );
    }
}

/// The test's Job: the plan `pgsurge kube job` builds the manifest from.
fn kube_plan(
    d: &DistributedSection,
    k: &KubeSection,
    spec: &RunSpec,
    db: &PodDatabase,
    name: String,
    bench: Vec<String>,
) -> KubePlan {
    KubePlan {
        generators: d.count(),
        clients: spec.clients,
        rate: spec.rate_tps,
        seed: Some(spec.random_seed),
        start: Start::In(format!("{}s", d.start_in)),
        name,
        namespace: k.namespace.clone(),
        image: k.image.clone(),
        cpu: k.cpu.clone().unwrap_or_else(|| "1".into()),
        memory: k.memory.clone().unwrap_or_else(|| "512Mi".into()),
        spread: match k.spread.as_deref() {
            Some("hard") => Spread::Hard,
            _ => Spread::Soft,
        },
        secret: k.secret.clone(),
        secret_key: k.secret_key.clone(),
        host: Some(db.host.clone()),
        port: Some(db.port.clone()),
        dbname: Some(db.dbname.clone()),
        user: Some(db.user.clone()),
        env: k.env.iter().map(|(n, v)| format!("{n}={v}")).collect(),
        bench,
    }
}

/// How long to wait for the results from now: `wait_timeout`, else until the start,
/// the run and `wait_margin`.
fn wait_time(k: &KubeSection, spec: &RunSpec, start_unix_s: i64, now_unix_us: i64) -> Duration {
    if let Some(t) = k.wait_timeout {
        return Duration::from_secs(u64::from(t));
    }
    let until_start = (start_unix_s - now_unix_us / 1_000_000).max(0) as u64;
    let run = match spec.limit {
        RunLimit::Duration(s) => u64::from(s),
        // Refused at parse time without wait_timeout.
        RunLimit::Transactions(_) => 0,
    };
    let margin = u64::from(k.wait_margin.unwrap_or(KubeSection::DEFAULT_WAIT_MARGIN));
    Duration::from_secs(until_start + run + margin)
}

/// Runs the test as a Job and returns the merge of its pods' results.
pub fn run(
    spec: &RunSpec,
    d: &DistributedSection,
    k: &KubeSection,
    conninfo: &str,
    t: &TestContext<'_>,
) -> Result<Outcome> {
    let fail = |m: String| CampaignError::Other(format!("launcher kube: {m}"));
    let store = pod_store(k, t.store).map_err(fail)?;
    let db = pod_database(k, conninfo, &pgsurge_wire::process_env).map_err(fail)?;
    let generators = d.count();
    let mut bench = super::generator_options(spec, generators);
    if let Some(f) = bench.iter().find_map(|a| a.strip_prefix("--file=")) {
        return Err(fail(format!(
            "script file {f}: the pods cannot read files of this machine"
        )));
    }
    let prefix = group_prefix(t.campaign, t.set_id, t.key);
    let about = format!(
        "the pods of a Kubernetes Job for test {} of campaign \"{}\"",
        t.key, t.campaign
    );
    let attempt = reserve_group(&store, &prefix, generators, &about).map_err(fail)?;
    let group = attempt.group.clone();
    let name = job_name(t.campaign, t.set_id, t.seq, attempt.number, generators);
    bench.push(format!("--store={store}"));
    bench.push(format!("--group={group}"));
    let job_plan = kube_plan(d, k, spec, &db, name.clone(), bench);
    let now = job::now_unix_us();
    let plan = pgsurge_kube::build_job(&job_plan, now).map_err(|e| fail(e.to_string()))?;
    let manifest =
        pgsurge_kube::render(&plan.job, Format::Json).map_err(|e| fail(e.to_string()))?;
    let kubectl = Kubectl::of(k);

    let outcome = kubectl
        .apply(&manifest)
        .and_then(|()| {
            let timeout = wait_time(k, spec, plan.start_unix_s, now);
            wait_for_group(
                &store,
                &group,
                generators,
                timeout,
                &|| t.stop.is_raised(),
                &mut |_| {},
            )
            .map_err(|e| kubectl.explain(&name, &e, k.keep_job))
        })
        .map(|waited| waited.merged.result);
    if outcome.is_err() {
        mark_failed(&store, attempt.set_id);
    }
    let mut warnings = Vec::new();
    let deleted = if k.keep_job {
        Ok(())
    } else {
        kubectl.delete_job(&name)
    };
    match (outcome, deleted) {
        (Ok(result), Ok(())) => Ok(Outcome { result, warnings }),
        (Ok(result), Err(e)) => {
            warnings.push(format!(
                "test {}: the Job {name} could not be deleted: {e}",
                t.key
            ));
            Ok(Outcome { result, warnings })
        }
        (Err(e), Ok(())) => Err(fail(format!("Job {name}: {e}"))),
        (Err(e), Err(d)) => Err(fail(format!(
            "Job {name}: {e}\n(and it could not be deleted: {d})"
        ))),
    }
}

/// The `kubectl` of `[distributed.kube]`: its program, context and namespace.
struct Kubectl {
    program: String,
    globals: Vec<String>,
}

impl Kubectl {
    fn of(k: &KubeSection) -> Kubectl {
        let mut globals = Vec::new();
        if let Some(c) = &k.context {
            globals.push(format!("--context={c}"));
        }
        if let Some(n) = &k.namespace {
            globals.push(format!("--namespace={n}"));
        }
        Kubectl {
            program: k.kubectl.clone().unwrap_or_else(|| "kubectl".into()),
            globals,
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.program);
        c.args(&self.globals).args(args);
        c
    }

    /// The command line, for messages.
    fn shown(&self, args: &[&str]) -> String {
        let mut words = vec![self.program.clone()];
        words.extend(self.globals.iter().cloned());
        words.extend(args.iter().map(|a| a.to_string()));
        words.join(" ")
    }

    fn run(&self, args: &[&str], stdin: Option<&str>) -> std::result::Result<String, String> {
        let shown = self.shown(args);
        let mut child = self
            .command(args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                format!(
                    "cannot run `{shown}`: {e} (set [distributed.kube] kubectl to the kubectl \
                     program)"
                )
            })?;
        if let (Some(text), Some(mut input)) = (stdin, child.stdin.take()) {
            // A kubectl that exits before reading says why on stderr, below.
            let _ = input.write_all(text.as_bytes());
        }
        let out = child
            .wait_with_output()
            .map_err(|e| format!("`{shown}`: {e}"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(format!(
                "`{shown}` failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim_end()
            ))
        }
    }

    fn apply(&self, manifest: &str) -> std::result::Result<(), String> {
        self.run(&["apply", "-f", "-"], Some(manifest)).map(|_| ())
    }

    /// Deletes the Job and waits for its pods to go (foreground cascade), so that no
    /// straggler loads the server during the next test.
    fn delete_job(&self, name: &str) -> std::result::Result<(), String> {
        self.run(
            &[
                "delete",
                "job",
                name,
                "--cascade=foreground",
                "--ignore-not-found",
                "--timeout=120s",
            ],
            None,
        )
        .map(|_| ())
    }

    /// The wait's failure, with what the pods say (asked before the Job is deleted)
    /// and how to look at them.
    fn explain(&self, name: &str, e: &WaitError, keep_job: bool) -> String {
        let selector = format!("{INSTANCE_LABEL}={name}");
        let get = ["get", "pods", "-l", selector.as_str()];
        let mut text = e.to_string();
        if matches!(e, WaitError::Stopped(_)) {
            return text;
        }
        text.push_str(&format!("\ninspect the pods: {}", self.shown(&get)));
        if !keep_job {
            text.push_str(" (the Job is deleted now: keep_job = true keeps it)");
        }
        if let Ok(pods) = self.run(&get, None) {
            text.push_str(&format!("\n{}", last_lines(&pods, 12)));
        }
        let logs = ["logs", "-l", selector.as_str(), "--prefix", "--tail=5"];
        if let Ok(logs) = self.run(&logs, None) {
            if !logs.trim().is_empty() {
                text.push_str(&format!("\nlast log lines:\n{}", last_lines(&logs, 20)));
            }
        }
        text
    }
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use pgsurge_engine::RunScript;
    use pgsurge_kube::JobArgs;

    fn spec(rate: Option<f64>) -> RunSpec {
        let conn = pgsurge_wire::ConnConfig::parse("host=db dbname=bench").unwrap();
        let mut s = RunSpec::new(conn, vec![RunScript::builtin("select-only", 1).unwrap()]);
        s.clients = 12;
        s.rate_tps = rate;
        s.random_seed = 23;
        s.limit = RunLimit::Duration(30);
        s
    }

    fn section(text: &str) -> (DistributedSection, KubeSection) {
        let d: DistributedSection = toml::from_str(text).unwrap();
        let k = d.kube.clone().unwrap();
        (d, k)
    }

    fn db() -> PodDatabase {
        PodDatabase {
            host: "db.internal".into(),
            port: "5433".into(),
            user: "bench".into(),
            dbname: "pgbench".into(),
        }
    }

    /// `pgsurge kube job OPTIONS -- BENCH`, parsed, as its plan.
    fn command_line(options: &[&str], bench: &[String]) -> KubePlan {
        let argv = std::iter::once("pgsurge kube job")
            .chain(options.iter().copied())
            .chain(std::iter::once("--"))
            .chain(bench.iter().map(String::as_str));
        KubePlan::from(JobArgs::try_parse_from(argv).unwrap())
    }

    #[test]
    fn the_kube_launch_is_the_one_its_command_line_gives() {
        let bench = vec![
            "-T".to_string(),
            "30".into(),
            "--store=postgresql://s/r".into(),
        ];
        let (d, k) = section(
            "launcher = \"kube\"\ngenerators = 3\nstart_in = 20\n[kube]\n\
             image = \"registry.example/pgsurge:1\"\nnamespace = \"bench\"\n\
             secret = \"db-pass\"\nsecret_key = \"pw\"\ncpu = \"2\"\n\
             memory = \"1Gi\"\nspread = \"hard\"\n\
             env = { PGSSLMODE = \"require\", PGAPPNAME = \"surge\" }",
        );
        let s = spec(Some(900.0));
        let cli = command_line(
            &[
                "-n",
                "3",
                "-c",
                "12",
                "-R",
                "900",
                "--random-seed=23",
                "--start-in=20s",
                "--name=pgsurge-c-1-2-1",
                "--namespace=bench",
                "--image=registry.example/pgsurge:1",
                "--cpu=2",
                "--memory=1Gi",
                "--spread=hard",
                "--conninfo-secret=db-pass",
                "--conninfo-secret-key=pw",
                "--host=db.internal",
                "--port=5433",
                "--dbname=pgbench",
                "--user=bench",
                "--env=PGAPPNAME=surge",
                "--env=PGSSLMODE=require",
                "--format=json",
            ],
            &bench,
        );
        let name = "pgsurge-c-1-2-1".to_string();
        assert_eq!(cli, kube_plan(&d, &k, &s, &db(), name, bench.clone()));

        // The defaults agree too: resources, spread, the Secret's key, no rate.
        let (d, k) = section("launcher = \"kube\"\ngenerators = 2\n[kube]\nimage = \"pgsurge:2\"");
        let s = spec(None);
        let cli = command_line(
            &[
                "--generators=2",
                "--clients=12",
                "--random-seed=23",
                "--start-in=3s",
                "--name=pgsurge-c-1-2-1",
                "--image=pgsurge:2",
                "--host=db.internal",
                "--port=5433",
                "--dbname=pgbench",
                "--user=bench",
            ],
            &bench,
        );
        let name = "pgsurge-c-1-2-1".to_string();
        assert_eq!(cli, kube_plan(&d, &k, &s, &db(), name, bench));
    }

    #[test]
    fn job_names_are_dns_labels_with_room_for_the_index() {
        assert_eq!(job_name("nightly", 7, 12, 1, 4), "pgsurge-nightly-7-12-1");
        assert_eq!(
            job_name("Nightly run: PG 17 / NVMe", 7, 12, 2, 4),
            "pgsurge-nightly-run-pg-17-nvme-7-12-2"
        );
        // Long names are cut to leave room for "-INDEX" in the pods' host names.
        for generators in [1, 10, 11, 1000, 100_000] {
            let n = job_name(&"x".repeat(200), 123_456, 999, 3, generators);
            assert!(
                job::is_dns_label(&n, job::max_job_name_len(generators)),
                "{n}"
            );
            assert!(n.ends_with("-123456-999-3"), "{n}");
            assert!(
                n.len() + 1 + (generators - 1).to_string().len() <= 63,
                "{n}"
            );
        }
        // Nothing usable in the campaign's name.
        assert_eq!(job_name("ÄÖ!", 1, 1, 1, 2), "pgsurge-1-1-1");
        // Attempts and tests differ in name.
        assert_ne!(job_name("c", 1, 1, 1, 2), job_name("c", 1, 1, 2, 2));
        assert_ne!(job_name("c", 1, 1, 1, 2), job_name("c", 1, 2, 1, 2));
        assert_eq!(
            group_prefix("nightly", 7, "pg17/s10/tpcb-like/c8/r-/3"),
            "nightly/7/pg17/s10/tpcb-like/c8/r-/3#"
        );
    }
}
