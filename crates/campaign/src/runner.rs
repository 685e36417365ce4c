//! Runs a campaign: finds or creates its set in the store, skips the tests already
//! stored (resume), starts the targets it still needs, runs the remaining tests in the
//! planned order with a progress bar, stores each test in one transaction as soon as it
//! ends (failed tests too, with their error), and stops the throwaway servers.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pgsurge_command::terminal_safe;
use pgsurge_engine::StopFlag;
use pgsurge_observe::hostmetrics::HostSource;
use pgsurge_observe::Pg;
use pgsurge_store::{
    now_rfc3339, run_status, set_kind, set_status, ServerRecord, SetRecord, Store, TargetRecord,
    WarningRecord,
};
use pgsurge_wire::redact::redact;
use pgsurge_wire::ConnConfig;

use crate::capacity;
use crate::error::{CampaignError, Result};
use crate::execute::{run_test, Interrupted, TestSetup};
use crate::hooks;
use crate::inputs;
use crate::matrix::{expand, Matrix, TestPlan};
use crate::pinning::{ClientPin, Pinning};
use crate::spec::{Campaign, Limit};
use crate::spec::{CapacitySection, FreshCluster};
use crate::target::{self, LiveTarget};
use crate::target_lock::{self, holder_label, LockError, TargetLock};

/// How to run a campaign.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Start a new set even if one with the same identity exists.
    pub new_set: bool,
    /// Run again the tests stored as failed.
    pub retry_failed: bool,
    /// No progress bar and no per-test lines.
    pub quiet: bool,
    /// Set kind to record (default: campaign).
    pub kind: Option<String>,
    /// The set to run into, instead of the one named after the campaign and keyed by its
    /// file: a command that runs several campaigns as one measurement (bisect: one
    /// campaign per commit, the commit in the target's name) keeps them in one set.
    pub into_set: Option<SetIdentity>,
}

/// A set's name and identity (what makes a later run resume it rather than start a
/// new one).
#[derive(Debug, Clone)]
pub struct SetIdentity {
    /// The set's name (what `results` and `report` list).
    pub name: String,
    /// Stored as the set's `spec_hash`: a run with the same name, kind and identity
    /// resumes the set.
    pub identity: String,
}

/// What a campaign invocation did.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Id of the set the campaign ran in (new, or resumed).
    pub set_id: i64,
    /// Tests in the matrix.
    pub planned: usize,
    /// Tests already stored when this invocation started.
    pub already_stored: usize,
    /// Tests run and stored now with status ok.
    pub ok: usize,
    /// Tests run and stored now as failed.
    pub failed: usize,
    /// Tests still missing (interrupted).
    pub remaining: usize,
    /// Warnings raised now.
    pub warnings: Vec<String>,
    /// Run ids stored now, in order.
    pub run_ids: Vec<i64>,
    /// The searches' results, in capacity mode.
    pub capacity: Vec<crate::capacity::CapacityResult>,
    /// What the user is told about the set before the tests: a new set started
    /// because the campaign file changed, earlier sets found abandoned.
    pub notices: Vec<String>,
}

/// Seconds a test is expected to take besides its run (hygiene, snapshots).
const OVERHEAD_S: u64 = 3;

fn planned_seconds(c: &Campaign) -> u64 {
    match c.limit() {
        Limit::Duration(d) => u64::from(d) + c.warmup_s().round() as u64 + OVERHEAD_S,
        Limit::Transactions(_) => 10,
    }
}

/// Runs (or resumes) `campaign` into `store`. `stop` is raised by Ctrl-C: the test in
/// hand is abandoned (not stored) and the set stays resumable.
pub fn run_campaign(
    campaign: &Campaign,
    store: &mut Store,
    opts: &RunOptions,
    stop: &StopFlag,
) -> Result<Outcome> {
    let matrix = expand(campaign).map_err(CampaignError::Other)?;
    // Targets built from source are built (or found cached) before anything is
    // claimed or measured.
    let with_builds = crate::sources::build_sources(campaign, opts.quiet)?;
    let campaign = &with_builds;
    let spec = &campaign.spec;
    // The load generator runs on the client's CPUs from here on.
    let pinning = Pinning::of(&spec.pinning)?;
    let _client_pin = ClientPin::apply(&pinning)?;
    let kind = opts
        .kind
        .clone()
        .unwrap_or_else(|| set_kind::CAMPAIGN.into());
    let (set_name, base) = match &opts.into_set {
        Some(set) => (set.name.clone(), set.identity.clone()),
        None => (spec.campaign.name.clone(), campaign.identity_hash()),
    };
    // The set's identity covers the bytes of the inputs the file names, not only its text.
    let inputs = inputs::of(campaign, &matrix)?;
    let chosen = inputs::choose(store, &kind, &set_name, &base, &inputs)?;
    let hash = chosen.hash.clone();
    // One campaign per existing server: refused before anything is stored when another
    // campaign holds one of its servers. A server that cannot be reached now is locked
    // when its first test runs.
    let holder = holder_label(&spec.campaign.name);
    let mut locks: Vec<Option<TargetLock>> = Vec::with_capacity(spec.targets.len());
    for t in &spec.targets {
        // A connection string that does not parse is reported when the target starts.
        let conn = t.conninfo.as_deref().map(target::conn_config);
        locks.push(match conn {
            Some(Ok(conn)) => match TargetLock::acquire(&conn, &t.name, &holder) {
                Ok(lock) => Some(lock),
                Err(LockError::Busy(m)) => return Err(CampaignError::Other(m)),
                Err(LockError::Unreachable(_)) => None,
            },
            Some(Err(_)) | None => None,
        });
    }
    let earlier: Vec<pgsurge_store::Set> = store
        .list_sets()?
        .into_iter()
        .filter(|s| s.record.kind == kind && s.record.name == set_name)
        .collect();
    // Find or create the set and lock it in one step: a second campaign on the same set
    // is refused while this one lives (StoreError::SetBusy).
    let (set_id, lock) = store.claim_set(
        &SetRecord {
            name: set_name.clone(),
            kind: kind.clone(),
            description: spec.campaign.description.clone(),
            spec_hash: Some(hash.clone()),
            spec: Some(stored_spec(campaign)),
            planned_tests: Some(matrix.tests.len() as i64),
            status: set_status::RUNNING.into(),
            created_at: now_rfc3339(),
            finished_at: None,
        },
        opts.new_set,
    )?;
    for message in pinning.warnings() {
        if !opts.quiet {
            eprintln!("warning: {message}");
        }
        store.add_warning(&WarningRecord {
            set_id: Some(set_id),
            run_id: None,
            code: "pinning_overlap".into(),
            message,
            created_at: now_rfc3339(),
        })?;
    }
    for lock in locks.iter().flatten() {
        for message in lock.neighbours() {
            if !opts.quiet {
                eprintln!("warning: {}", terminal_safe(message));
            }
            store.add_warning(&WarningRecord {
                set_id: Some(set_id),
                run_id: None,
                code: "shared_server".into(),
                message: message.clone(),
                created_at: now_rfc3339(),
            })?;
        }
    }
    let identity = Identity {
        hash: &hash,
        base: &base,
        changed: chosen.changed_since.as_ref(),
    };
    let notices = match settle_earlier_sets(store, &earlier, set_id, &identity, opts.new_set) {
        Ok(n) => n,
        Err(e) => {
            lock.release();
            return Err(e);
        }
    };
    if !opts.quiet {
        for n in &notices {
            eprintln!("note: {}", terminal_safe(n));
        }
    }
    let fact = inputs::fact(&inputs);
    let mut result = run_locked(
        campaign, store, opts, stop, &matrix, set_id, &mut locks, &fact,
    );
    if let Ok(out) = &mut result {
        out.notices = notices;
    }
    if let Err(e) = &result {
        // A campaign that ends in an error is not left "running" for ever: say why.
        let _ = store.set_set_status(set_id, set_status::FAILED, Some(&now_rfc3339()));
        let _ = store.add_warning(&WarningRecord {
            set_id: Some(set_id),
            run_id: None,
            code: "campaign".into(),
            message: format!("campaign failed: {}", redact(&e.to_string())),
            created_at: now_rfc3339(),
        });
    }
    lock.release();
    result
}

/// The identity a run claimed its set by.
struct Identity<'a> {
    /// The set's `spec_hash`.
    hash: &'a str,
    /// The campaign file's part of it.
    base: &'a str,
    /// The newest set of the same file whose inputs differ, and how.
    changed: Option<&'a (i64, Vec<inputs::Changed>)>,
}

/// Marks `interrupted` the sets of the campaign (other than `set_id`, just claimed)
/// still `running` with no live process holding them, and says when `set_id` is a new
/// set because the campaign file or one of its inputs changed since the last one.
/// Returns what to tell.
fn settle_earlier_sets(
    store: &mut Store,
    earlier: &[pgsurge_store::Set],
    set_id: i64,
    identity: &Identity<'_>,
    new_set: bool,
) -> Result<Vec<String>> {
    let hash = identity.hash;
    let mut notices = Vec::new();
    let mut status_now = BTreeMap::new();
    for s in earlier.iter().filter(|s| s.id != set_id) {
        let mut status = s.record.status.clone();
        if status == set_status::RUNNING {
            let holder = store.set_lock_holder(s.id)?;
            if !holder.is_some_and(|h| h.is_alive()) {
                status = set_status::INTERRUPTED.to_string();
                store.set_set_status(s.id, &status, None)?;
                store.add_warning(&WarningRecord {
                    set_id: Some(s.id),
                    run_id: None,
                    code: "interrupted".into(),
                    message: format!(
                        "the campaign's process ended before this set was finished (killed, \
                         or its machine went down); found so by the run that took set {set_id}"
                    ),
                    created_at: now_rfc3339(),
                })?;
            }
        }
        status_now.insert(s.id, status);
    }
    let resumed = earlier.iter().any(|s| s.id == set_id);
    let last = earlier
        .iter()
        .filter(|s| s.id != set_id && s.record.spec_hash.as_deref() != Some(hash))
        .max_by_key(|s| s.id);
    let mut told = None;
    let same_file = last
        .and_then(|s| s.record.spec_hash.as_deref())
        .is_some_and(|h| inputs::same_file(h, identity.base));
    if let (false, false, true, Some((changed_set, changed))) =
        (resumed, new_set, same_file, identity.changed)
    {
        told = Some(*changed_set);
        notices.push(inputs::changed_notice(*changed_set, changed, set_id));
    } else if let (false, false, false, Some(last)) = (resumed, new_set, same_file, last) {
        told = Some(last.id);
        let status = status_now.get(&last.id).map_or("", String::as_str);
        let stored = last.runs_ok + last.runs_failed;
        let of = last
            .record
            .planned_tests
            .map_or(String::new(), |p| format!(" of {p}"));
        notices.push(format!(
            "the campaign file changed since set {} was run ({status}, {stored}{of} tests \
             stored): its targets, run, init, sampling, hygiene or other settings that make \
             tests comparable differ, so a new set {set_id} is started; set {} is kept as it \
             is (run the file as it was to resume it)",
            last.id, last.id
        ));
    }
    for s in earlier.iter().filter(|s| s.id != set_id) {
        if s.record.status == set_status::RUNNING
            && status_now.get(&s.id).map(String::as_str) == Some(set_status::INTERRUPTED)
            && told != Some(s.id)
        {
            notices.push(format!(
                "set {} of this campaign was left running by a process that is gone: marked \
                 interrupted",
                s.id
            ));
        }
    }
    Ok(notices)
}

#[allow(clippy::too_many_arguments)]
fn run_locked(
    campaign: &Campaign,
    store: &mut Store,
    opts: &RunOptions,
    stop: &StopFlag,
    matrix: &Matrix,
    set_id: i64,
    locks: &mut [Option<TargetLock>],
    inputs: &pgsurge_store::FactRecord,
) -> Result<Outcome> {
    let spec = &campaign.spec;
    if let Some(cap) = &spec.capacity {
        return run_capacity(
            campaign, cap, store, opts, stop, matrix, set_id, locks, inputs,
        );
    }
    let stored = store.stored_tests(set_id)?;
    store.set_planned_tests(set_id, planned_in_set(opts, matrix, &stored))?;
    store.set_set_status(set_id, set_status::RUNNING, None)?;
    let done: BTreeSet<String> = stored
        .iter()
        .filter(|(_, st)| !(opts.retry_failed && st == run_status::FAILED))
        .map(|(k, _)| k.clone())
        .collect();
    let todo: Vec<&TestPlan> = matrix
        .tests
        .iter()
        .filter(|t| !done.contains(&t.key))
        .collect();
    let mut out = Outcome {
        set_id,
        planned: matrix.tests.len(),
        already_stored: matrix.tests.len() - todo.len(),
        ..Default::default()
    };
    if todo.is_empty() {
        store.set_set_status(set_id, set_status::COMPLETE, Some(&now_rfc3339()))?;
        return Ok(out);
    }

    let pb = progress_bar(campaign, matrix, &todo, opts.quiet);
    let mut live: Vec<Option<LiveTarget>> = (0..spec.targets.len()).map(|_| None).collect();
    let mut ctx = RunCtx {
        set_id,
        pb: &pb,
        stop,
        quiet: opts.quiet,
        locks,
        set_start_facts: None,
        inputs: inputs.clone(),
    };
    let result = run_tests(
        campaign, store, matrix, &todo, &mut live, &mut ctx, &mut out,
    );
    pb.finish_and_clear();
    // Stop throwaway servers now (Drop does it too, on every path).
    live.iter_mut().for_each(stop_target);
    result?;
    out.remaining = todo.len() - out.ok - out.failed;
    let status = if out.remaining == 0 {
        set_status::COMPLETE
    } else {
        set_status::INCOMPLETE
    };
    store.set_set_status(
        set_id,
        status,
        (out.remaining == 0).then(now_rfc3339).as_deref(),
    )?;
    Ok(out)
}

fn progress_bar(c: &Campaign, _m: &Matrix, todo: &[&TestPlan], quiet: bool) -> ProgressBar {
    let per_test = planned_seconds(c);
    let pb = ProgressBar::new(per_test * todo.len() as u64);
    if quiet {
        pb.set_draw_target(ProgressDrawTarget::hidden());
    } else {
        pb.set_draw_target(ProgressDrawTarget::stderr());
    }
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} [{elapsed_precise}] {wide_bar} {percent:>3}% ETA {eta_precise}\n  {msg}",
    ) {
        pb.set_style(style);
    }
    pb.enable_steady_tick(Duration::from_millis(250));
    pb
}

/// The `servers` row of a target's host, from its manifest (which describes the server
/// host from the target's metrics source). None when the server host is not known:
/// the client's machine is never recorded as the server's.
pub fn server_record(manifest: &serde_json::Value) -> Option<ServerRecord> {
    let hostname = manifest["hostname"].as_str()?.to_string();
    let mut details = manifest.clone();
    if let Some(o) = details.as_object_mut() {
        o.remove("server");
        o.remove("client");
    }
    Some(ServerRecord {
        name: hostname.clone(),
        hostname: Some(hostname),
        cpu_model: manifest["cpu"]["model"].as_str().map(str::to_string),
        cpu_count: manifest["cpu"]["count"].as_i64(),
        memory_bytes: manifest["memory_bytes"].as_i64(),
        kernel: manifest["kernel"].as_str().map(str::to_string),
        os_release: manifest["os_release"].as_str().map(str::to_string),
        details: Some(details),
    })
}

/// Seconds per scale unit an initialization is first assumed to take (then measured).
const INIT_S_PER_SCALE: f64 = 0.5;

fn say(pb: &ProgressBar, quiet: bool, line: &str) {
    if quiet {
        return;
    }
    let line = &terminal_safe(line);
    if pb.is_hidden() {
        eprintln!("{line}");
    } else {
        pb.println(line);
    }
}

/// The tests a set holds once the run ends: the matrix's, and in a set several
/// campaigns run into (bisect: one campaign per commit) those stored by the others too.
fn planned_in_set(opts: &RunOptions, matrix: &Matrix, stored: &[(String, String)]) -> i64 {
    let mut keys: BTreeSet<&str> = matrix.tests.iter().map(|t| t.key.as_str()).collect();
    if opts.into_set.is_some() {
        keys.extend(stored.iter().map(|(k, _)| k.as_str()));
    }
    keys.len() as i64
}

/// A campaign in capacity mode: each cell's search runs its steps as ordinary tests
/// (found in the store when a resumed campaign already ran them), then says the result.
#[allow(clippy::too_many_arguments)]
fn run_capacity(
    campaign: &Campaign,
    cap: &CapacitySection,
    store: &mut Store,
    opts: &RunOptions,
    stop: &StopFlag,
    matrix: &Matrix,
    set_id: i64,
    locks: &mut [Option<TargetLock>],
    inputs: &pgsurge_store::FactRecord,
) -> Result<Outcome> {
    let spec = &campaign.spec;
    store.set_set_status(set_id, set_status::RUNNING, None)?;
    let templates = capacity::templates(&matrix.tests);
    let stored_before = store.stored_tests(set_id)?.len();
    let mut out = Outcome {
        set_id,
        already_stored: stored_before,
        ..Default::default()
    };
    // About eight steps per search.
    let guess: Vec<&TestPlan> = templates
        .iter()
        .flat_map(|t| std::iter::repeat_n(*t, 8 * cap.repeats as usize))
        .collect();
    let pb = progress_bar(campaign, matrix, &guess, opts.quiet);
    let mut live: Vec<Option<LiveTarget>> = (0..spec.targets.len()).map(|_| None).collect();
    let mut ctx = RunCtx {
        set_id,
        pb: &pb,
        stop,
        quiet: opts.quiet,
        locks,
        set_start_facts: None,
        inputs: inputs.clone(),
    };
    let mut results = Vec::new();
    let mut interrupted = false;
    let objective = cap.objective();
    for template in &templates {
        let cell = capacity::cell_name(template);
        let searched = pgsurge_analysis::capacity::search(cell, &objective, |rate| {
            let plans = capacity::step_plans(template, rate, cap.repeats, spec.campaign.seed);
            let keys: BTreeSet<String> = plans.iter().map(|p| p.key.clone()).collect();
            let stored = store.stored_tests(set_id)?;
            let done: BTreeSet<&String> = stored
                .iter()
                .filter(|(_, st)| !(opts.retry_failed && st == run_status::FAILED))
                .map(|(k, _)| k)
                .collect();
            let todo: Vec<&TestPlan> = plans.iter().filter(|p| !done.contains(&p.key)).collect();
            if !todo.is_empty() {
                run_tests(
                    campaign, store, matrix, &todo, &mut live, &mut ctx, &mut out,
                )?;
            }
            if stop.is_raised() {
                return Ok(None);
            }
            let runs = store.list_runs(&pgsurge_store::RunFilter {
                set_id: Some(set_id),
                ..Default::default()
            })?;
            let at: Vec<pgsurge_analysis::capacity::StepRun> = runs
                .iter()
                .filter(|r| keys.contains(&r.record.test_key))
                .map(|r| capacity::step_run(r, cap.percentile))
                .collect();
            if at.len() < plans.len() {
                return Ok(None);
            }
            let step = pgsurge_analysis::capacity::judge(rate, &at, &objective);
            say(
                &pb,
                opts.quiet,
                &format!(
                    "capacity {}: {} tps {} (p{} median {:.3} ms{})",
                    capacity::cell_name(template),
                    rate,
                    if step.pass { "passes" } else { "fails" },
                    cap.percentile,
                    step.median_ms,
                    if step.why.is_empty() {
                        String::new()
                    } else {
                        format!("; {}", step.why)
                    }
                ),
            );
            Ok(Some(step))
        });
        match searched {
            Ok(Some(r)) => {
                say(&pb, opts.quiet, &r.line());
                results.push(r);
            }
            Ok(None) => {
                interrupted = true;
                break;
            }
            Err(e) => {
                pb.finish_and_clear();
                return Err(e);
            }
        }
    }
    pb.finish_and_clear();
    live.iter_mut().for_each(stop_target);
    let stored = store.stored_tests(set_id)?.len();
    out.planned = stored;
    store.set_planned_tests(set_id, stored as i64)?;
    if interrupted {
        out.remaining = 1;
        store.set_set_status(set_id, set_status::INCOMPLETE, None)?;
    } else {
        store.set_set_status(set_id, set_status::COMPLETE, Some(&now_rfc3339()))?;
    }
    out.capacity = results;
    Ok(out)
}

/// Takes a started target out of its slot and stops its server when it is a throwaway
/// one (dropping it would too; this stops it now, before what comes next).
fn stop_target(slot: &mut Option<LiveTarget>) {
    if let Some(c) = slot.take().and_then(|t| t.cluster) {
        c.stop();
    }
}

/// What every test of one invocation shares.
struct RunCtx<'a> {
    set_id: i64,
    pb: &'a ProgressBar,
    stop: &'a StopFlag,
    quiet: bool,
    /// The server locks of the campaign's existing-server targets.
    locks: &'a mut [Option<TargetLock>],
    /// The `set_start` hook's facts, once it has run in this invocation.
    set_start_facts: Option<Vec<pgsurge_store::FactRecord>>,
    /// The campaign's inputs ([`inputs::fact`]), stored with every test.
    inputs: pgsurge_store::FactRecord,
}

/// Warning code of a hook that left processes running (they were killed).
pub const HOOK_LEFTOVER: &str = "hook_leftover";

/// The warning stored with a test whose hook left processes running.
fn hook_warning(o: &hooks::HookOutcome) -> Option<WarningRecord> {
    o.leftover_warning().map(|message| WarningRecord {
        set_id: None,
        run_id: None,
        code: HOOK_LEFTOVER.into(),
        message,
        created_at: now_rfc3339(),
    })
}

/// The environment of a hook: the set, and the test and its target when there is one.
fn hook_env(set_id: i64, test: Option<(&TestPlan, &LiveTarget, &str)>) -> Vec<(String, String)> {
    let mut env = vec![("PGSURGE_SET_ID".to_string(), set_id.to_string())];
    let Some((plan, target, workload)) = test else {
        return env;
    };
    let mut put = |k: &str, v: String| env.push((k.to_string(), v));
    put("PGSURGE_TEST_KEY", plan.key.clone());
    put("PGSURGE_TARGET", target.name.clone());
    put("PGSURGE_SCALE", plan.scale.to_string());
    put("PGSURGE_CLIENTS", plan.clients.to_string());
    put("PGSURGE_REPEAT", plan.repeat.to_string());
    put("PGSURGE_SCRIPT", workload.to_string());
    // Where the server is, without its password (a hook uses ~/.pgpass for that): the
    // test's server, whatever the launching shell's PG* variables say.
    let cfg = &target.conn;
    put("PGHOST", cfg.host().to_string());
    if let Some(addr) = cfg.hosts().first().and_then(|h| h.hostaddr.clone()) {
        put("PGHOSTADDR", addr);
    }
    put("PGPORT", cfg.port());
    put("PGDATABASE", cfg.dbname().to_string());
    put("PGUSER", cfg.user().to_string());
    if let Some(c) = &target.cluster {
        put("PGDATA", c.data_dir().display().to_string());
    }
    if let Some(bin) = &target.bin_dir {
        put("PGSURGE_BIN_DIR", bin.clone());
    }
    env
}

/// Runs the tests of `todo` in order, each as the same steps: its target started (or
/// restarted for a swept setting), an existing server held, the scale loaded, the
/// `before_test` hook, the test itself (run again after an outage), the `after_test`
/// hook, and the outcome stored and said. A step that fails stores the test as failed
/// and goes on with the next; Ctrl-C ends the loop with the test in hand unstored.
fn run_tests(
    campaign: &Campaign,
    store: &mut Store,
    matrix: &Matrix,
    todo: &[&TestPlan],
    live: &mut [Option<LiveTarget>],
    ctx: &mut RunCtx<'_>,
    out: &mut Outcome,
) -> Result<()> {
    let mut set_start_facts = run_set_start_hook(campaign, store, ctx)?;
    set_start_facts.push(ctx.inputs.clone());
    let mut state = LoopState {
        set_start_facts,
        per_test: planned_seconds(campaign),
        wait: campaign.outage_wait(),
        store_location: store.location().to_string(),
        down: vec![false; campaign.spec.targets.len()],
        not_started: BTreeMap::new(),
        secs_per_scale: INIT_S_PER_SCALE,
    };
    for (i, plan) in todo.iter().enumerate() {
        if ctx.stop.is_raised() {
            break;
        }
        let at = TestAt {
            n: i + 1,
            of: todo.len(),
            plan,
            base: state.per_test * i as u64,
        };
        ctx.pb.set_position(at.base);
        ctx.pb.set_message(format!("{} (starting)", at.head()));
        let mut sink = Sink {
            store: &mut *store,
            out: &mut *out,
            pb: ctx.pb,
            quiet: ctx.quiet,
            set_id: ctx.set_id,
        };
        let flow = run_one_test(campaign, matrix, &at, live, ctx, &mut state, &mut sink)?;
        if flow == Flow::Stop {
            break;
        }
    }
    Ok(())
}

/// Runs the `set_start` hook once per invocation; its facts go with every test it
/// preceded.
fn run_set_start_hook(
    campaign: &Campaign,
    store: &mut Store,
    ctx: &mut RunCtx<'_>,
) -> Result<Vec<pgsurge_store::FactRecord>> {
    if let Some(facts) = &ctx.set_start_facts {
        return Ok(facts.clone());
    }
    let spec = &campaign.spec;
    let mut facts = Vec::new();
    if let Some(cmd) = &spec.hooks.set_start {
        ctx.pb.set_message("running the set_start hook");
        let secrets: Vec<String> = spec
            .targets
            .iter()
            .filter_map(|t| t.conninfo.as_deref())
            .flat_map(pgsurge_wire::redact::passwords)
            .collect();
        let o = hooks::run_hook_masking(
            "set_start",
            cmd,
            &hook_env(ctx.set_id, None),
            spec.hooks.timeout(),
            &secrets,
        );
        if let Some(message) = o.leftover_warning() {
            say(ctx.pb, ctx.quiet, &format!("warning: {message}"));
            store.add_warning(&WarningRecord {
                set_id: Some(ctx.set_id),
                run_id: None,
                code: HOOK_LEFTOVER.into(),
                message: redact(&message),
                created_at: now_rfc3339(),
            })?;
        }
        if !o.ok() {
            return Err(CampaignError::Other(o.failure()));
        }
        facts = o.facts();
    }
    ctx.set_start_facts = Some(facts.clone());
    Ok(facts)
}

/// What the test loop keeps from one test to the next.
struct LoopState {
    /// The `set_start` hook's facts, stored with every test.
    set_start_facts: Vec<pgsurge_store::FactRecord>,
    /// Progress-bar units (seconds) one test is planned to take.
    per_test: u64,
    /// How long an outage is waited out.
    wait: Duration,
    /// The store's location, for distributed generators that write to it.
    store_location: String,
    /// Targets given up on after an outage longer than `wait`: their remaining tests
    /// fail (a server back by then runs them) without a message each.
    down: Vec<bool>,
    /// Swept settings a throwaway target did not start with, and why.
    not_started: BTreeMap<(usize, Vec<(String, String)>), String>,
    /// Seconds of loading per unit of scale, learnt from the last load (for its ETA).
    secs_per_scale: f64,
}

/// Whether the loop goes on after a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Next,
    Stop,
}

/// One test of the loop: its place in the invocation and its plan.
struct TestAt<'p> {
    /// Its number, from 1.
    n: usize,
    /// Tests in this invocation.
    of: usize,
    plan: &'p TestPlan,
    /// The progress bar's position when it starts.
    base: u64,
}

impl TestAt<'_> {
    /// `[3/12] local/s10/tpcb-like/c4/r-/1`.
    fn head(&self) -> String {
        format!("[{}/{}] {}", self.n, self.of, self.plan.key)
    }

    /// `[3/12] local/s10/tpcb-like/c4/r-/1: {what}`.
    fn line(&self, what: impl std::fmt::Display) -> String {
        format!("{}: {what}", self.head())
    }
}

/// Where a test's outcome goes: the store, the invocation's counts and the terminal.
struct Sink<'s> {
    store: &'s mut Store,
    out: &'s mut Outcome,
    pb: &'s ProgressBar,
    quiet: bool,
    set_id: i64,
}

impl Sink<'_> {
    fn say(&self, line: &str) {
        say(self.pb, self.quiet, line);
    }

    /// Stores a test that failed, counts it, and says `line` when there is one.
    fn fail(&mut self, mut write: pgsurge_store::RunWrite, line: Option<String>) -> Result<()> {
        redact_write(&mut write);
        self.out
            .run_ids
            .push(self.store.write_run_replacing(&write)?);
        self.out.failed += 1;
        if let Some(line) = line {
            self.say(&line);
        }
        Ok(())
    }
}

/// One test, step by step.
fn run_one_test(
    campaign: &Campaign,
    matrix: &Matrix,
    at: &TestAt<'_>,
    live: &mut [Option<LiveTarget>],
    ctx: &mut RunCtx<'_>,
    state: &mut LoopState,
    sink: &mut Sink<'_>,
) -> Result<Flow> {
    let plan = at.plan;
    if !start_target(campaign, at, live, state, sink)? {
        return Ok(Flow::Next);
    }
    let Some(target) = live[plan.target].as_mut() else {
        return Ok(Flow::Next);
    };
    if !hold_existing_server(campaign, at, target, ctx, sink)? {
        return Ok(Flow::Next);
    }
    let workload = &matrix.workloads[plan.workload];
    let init_facts = match load_scale(campaign, at, workload, target, state, ctx.stop, sink)? {
        Loaded::Facts(f) => f,
        Loaded::Failed => return Ok(Flow::Next),
        Loaded::Stopped => return Ok(Flow::Stop),
    };
    let workload_name = matrix.workloads[plan.workload].name.as_str();
    let mut hook_facts = state.set_start_facts.clone();
    let mut hook_warnings = Vec::new();
    let set_id = sink.set_id;
    let hook_env_of = |target: &LiveTarget| hook_env(set_id, Some((plan, target, workload_name)));
    if let Some(cmd) = &campaign.spec.hooks.before_test {
        sink.pb.set_message(at.line("before_test hook"));
        let o = run_test_hook("before_test", cmd, &hook_env_of(target), campaign, target);
        hook_facts.extend(o.facts());
        hook_warnings.extend(hook_warning(&o));
        if !o.ok() {
            let mut write = failed_write(sink.set_id, target, plan, &o.failure());
            write.facts.extend(hook_facts);
            write.warnings.extend(hook_warnings);
            sink.fail(write, Some(at.line(format!("FAILED: {}", o.failure()))))?;
            return Ok(Flow::Next);
        }
    }
    let store_location = state.store_location.clone();
    let setup = TestSetup {
        campaign,
        plan,
        workload: &matrix.workloads[plan.workload],
        set_id: sink.set_id,
        store: &store_location,
    };
    let Some(mut write) = run_through_outages(campaign, &setup, at, target, ctx, state, sink)?
    else {
        return Ok(Flow::Stop);
    };
    if let Some(cmd) = &campaign.spec.hooks.after_test {
        let o = run_test_hook("after_test", cmd, &hook_env_of(target), campaign, target);
        hook_facts.extend(o.facts());
        hook_warnings.extend(hook_warning(&o));
        if !o.ok() && write.run.status != run_status::FAILED {
            write.run.status = run_status::FAILED.into();
            write.run.error = Some(o.failure());
        }
    }
    write.facts.extend(hook_facts);
    write.warnings.extend(hook_warnings);
    write.facts.extend(init_facts);
    target.tests_done += 1;
    store_test(write, at, target, state, sink)?;
    Ok(Flow::Next)
}

/// A hook of one test, with the target's password masked in what it prints.
fn run_test_hook(
    name: &'static str,
    cmd: &str,
    env: &[(String, String)],
    campaign: &Campaign,
    target: &LiveTarget,
) -> hooks::HookOutcome {
    let secrets = pgsurge_wire::redact::passwords(&target.conninfo);
    hooks::run_hook_masking(name, cmd, env, campaign.spec.hooks.timeout(), &secrets)
}

/// Starts the test's target when it is not running, or restarts a throwaway one for
/// the next value of a swept setting. False when the test was stored as failed
/// (the server refused the setting's value).
fn start_target(
    campaign: &Campaign,
    at: &TestAt<'_>,
    live: &mut [Option<LiveTarget>],
    state: &mut LoopState,
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let spec = &campaign.spec;
    let plan = at.plan;
    let restart = live[plan.target]
        .as_ref()
        .is_some_and(|t| t.cluster.is_some() && t.swept_settings != plan.settings);
    if restart || wants_fresh_cluster(campaign, live[plan.target].as_ref(), plan) {
        // A throwaway server takes the next value of a swept setting by restarting, and
        // `fresh_cluster` replaces it (a new data directory, initdb, data loaded again).
        stop_target(&mut live[plan.target]);
    }
    if live[plan.target].is_some() {
        return Ok(true);
    }
    let tspec = &spec.targets[plan.target];
    let pinning = Pinning::of(&spec.pinning)?;
    sink.pb
        .set_message(format!("starting target \"{}\"", tspec.name));
    let swept = tspec.is_throwaway() && !plan.settings.is_empty();
    let refused = swept
        .then(|| state.not_started.get(&(plan.target, plan.settings.clone())))
        .flatten();
    if let Some(why) = refused {
        // The server refused these values already: their other tests fail alike.
        let write = failed_write_unstarted(sink.store, sink.set_id, tspec, plan, why)?;
        let line = at.line(format!(
            "FAILED: target \"{}\" did not start with {} (see above)",
            tspec.name,
            settings_label(&plan.settings)
        ));
        sink.fail(write, Some(line))?;
        return Ok(false);
    }
    let mut live_target = if swept {
        let mut with = tspec.clone();
        for (name, value) in &plan.settings {
            with.settings
                .insert(name.clone(), toml::Value::String(value.clone()));
        }
        match target::start(
            &with,
            &spec.run.database,
            campaign.builds.get(&tspec.name),
            &pinning,
        ) {
            Ok(mut t) => {
                t.swept_settings = plan.settings.clone();
                sink.say(&format!(
                    "target \"{}\" started with {}",
                    tspec.name,
                    settings_label(&plan.settings)
                ));
                t
            }
            Err(e) => {
                // A swept value the server rejects (`shared_buffers = "banana"`) fails
                // the tests of that value, with the server's message; the campaign goes
                // on with the others.
                let why = format!(
                    "target \"{}\" did not start with {}: {e}",
                    tspec.name,
                    settings_label(&plan.settings)
                );
                let write = failed_write_unstarted(sink.store, sink.set_id, tspec, plan, &why)?;
                sink.fail(write, Some(at.line(format!("FAILED: {why}"))))?;
                state
                    .not_started
                    .insert((plan.target, plan.settings.clone()), why);
                return Ok(false);
            }
        }
    } else {
        target::start(
            tspec,
            &spec.run.database,
            campaign.builds.get(&tspec.name),
            &pinning,
        )?
    };
    record_started_target(tspec, &mut live_target, sink)?;
    live[plan.target] = Some(live_target);
    Ok(true)
}

/// `[hygiene] fresh_cluster`: whether the running throwaway server is replaced before
/// this test (`test`: after each test; `scale`: when the scale changes).
fn wants_fresh_cluster(campaign: &Campaign, live: Option<&LiveTarget>, plan: &TestPlan) -> bool {
    let Some(t) = live.filter(|t| t.cluster.is_some()) else {
        return false;
    };
    match campaign.spec.hygiene.fresh_cluster() {
        FreshCluster::Test => t.tests_done > 0,
        FreshCluster::Scale => t
            .current_data
            .as_ref()
            .is_some_and(|d| d.scale != plan.scale),
        FreshCluster::Never => false,
    }
}

/// Says where a started target's host metrics come from and its warnings, and stores
/// the target (and its server) with the set.
fn record_started_target(
    tspec: &crate::spec::TargetSpec,
    live_target: &mut LiveTarget,
    sink: &mut Sink<'_>,
) -> Result<()> {
    let server_id = match server_record(&live_target.manifest) {
        Some(r) => Some(sink.store.upsert_server(&r)?),
        None => None,
    };
    sink.say(&format!(
        "target \"{}\": server host metrics from {}{}",
        live_target.name,
        live_target.host_source.name(),
        match &live_target.host_source {
            HostSource::None(why) => format!(" ({why})"),
            _ => String::new(),
        }
    ));
    for (_, w) in &live_target.warnings {
        sink.say(&format!("warning: {w}"));
    }
    live_target.target_id = sink.store.upsert_target(&TargetRecord {
        set_id: sink.set_id,
        name: live_target.name.clone(),
        server_id,
        kind: if tspec.is_throwaway() {
            "throwaway"
        } else {
            "conninfo"
        }
        .into(),
        conninfo: Some(redact(&live_target.conninfo)),
        bin_dir: live_target.bin_dir.clone(),
        server_version: Some(live_target.server_version.clone()),
        server_version_num: Some(i64::from(live_target.version_num)),
        settings: Some(serde_json::Value::Object(
            tspec
                .settings_text()
                .into_iter()
                .map(|(k, v)| (k, serde_json::Value::String(v)))
                .collect(),
        )),
    })?;
    Ok(())
}

/// For an existing server: holds its lock (lost with a restarted server, or never
/// taken while it was down) and checks the swept settings a session can change.
/// False when the test was stored as failed.
fn hold_existing_server(
    campaign: &Campaign,
    at: &TestAt<'_>,
    target: &mut LiveTarget,
    ctx: &mut RunCtx<'_>,
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let plan = at.plan;
    if campaign.spec.targets[plan.target].conninfo.is_none() {
        return Ok(true);
    }
    let holder = holder_label(&campaign.spec.campaign.name);
    let lock = &mut ctx.locks[plan.target];
    let ready = target_lock::hold(lock, &target.conn, &target.name, &holder)
        .and_then(|()| target::check_session_settings(target, &plan.settings));
    match ready {
        Ok(()) => Ok(true),
        Err(busy) => {
            let write = failed_write(sink.set_id, target, plan, &busy);
            sink.fail(write, Some(at.line(format!("FAILED: {busy}"))))?;
            Ok(false)
        }
    }
}

/// How loading a test's scale went.
enum Loaded {
    /// Loaded now, or earlier in this invocation: the facts to store with the test.
    Facts(Vec<pgsurge_store::FactRecord>),
    /// The load failed; the test is stored as failed.
    Failed,
    /// Ctrl-C during the load.
    Stopped,
}

/// Loads the test's data (pgbench's tables, or its workload pack's) at its scale unless
/// the target holds it already from an earlier test.
fn load_scale(
    campaign: &Campaign,
    at: &TestAt<'_>,
    workload: &crate::matrix::Workload,
    target: &mut LiveTarget,
    state: &mut LoopState,
    stop: &StopFlag,
    sink: &mut Sink<'_>,
) -> Result<Loaded> {
    let plan = at.plan;
    let init = campaign.spec.init.for_scale(plan.scale);
    let wanted = workload.dataset(plan.scale);
    if target.current_data.as_ref() == Some(&wanted) {
        return Ok(Loaded::Facts(
            target::InitOutcome {
                performed: false,
                reason: format!(
                    "scale {} was prepared for an earlier test of this invocation",
                    plan.scale
                ),
                duration_s: None,
                method: match &wanted.pack {
                    Some(_) => "workload".into(),
                    None => init.method.clone().unwrap_or_else(|| "client".into()),
                },
            }
            .facts(),
        ));
    }
    let eta = state.secs_per_scale * f64::from(plan.scale);
    let label = format!(
        "[{}/{}] initializing scale {} on \"{}\"",
        at.n, at.of, plan.scale, target.name
    );
    let pb = sink.pb;
    let show = |elapsed: Duration| {
        let e = elapsed.as_secs_f64();
        pb.set_message(format!(
            "{label}: {e:.0} s, init ETA {:.0} s",
            (eta - e).max(0.0)
        ));
    };
    let quiet = sink.quiet;
    let mut announce = |line: &str| say(pb, quiet, line);
    let prepared = match &workload.pack {
        Some(p) => target::prepare_pack(
            target,
            &p.pack,
            plan.scale,
            campaign.spec.campaign.seed,
            &init,
            &mut announce,
            &show,
        ),
        None => target::prepare_scale(target, plan.scale, &init, &mut announce, &show),
    };
    match prepared {
        Ok(o) => {
            if let Some(d) = o.duration_s {
                state.secs_per_scale = (d / f64::from(plan.scale)).max(0.01);
            }
            Ok(Loaded::Facts(o.facts()))
        }
        Err(_) if stop.is_raised() => Ok(Loaded::Stopped),
        Err(e) => {
            let write = failed_write(sink.set_id, target, plan, &e.to_string());
            // A target given up on was said once already.
            let line = (!state.down[plan.target]).then(|| at.line(format!("FAILED: {e}")));
            sink.fail(write, line)?;
            Ok(Loaded::Failed)
        }
    }
}

/// Runs the test; a failure while the server is unreachable (restarting, the network
/// gone) is not the test's result: the server is waited for and the test run again,
/// up to [`MAX_OUTAGE_RETRIES`] times. `None` on Ctrl-C.
fn run_through_outages(
    campaign: &Campaign,
    setup: &TestSetup<'_>,
    at: &TestAt<'_>,
    target: &mut LiveTarget,
    ctx: &mut RunCtx<'_>,
    state: &mut LoopState,
    sink: &mut Sink<'_>,
) -> Result<Option<pgsurge_store::RunWrite>> {
    let plan = at.plan;
    let pb = sink.pb;
    let (base, per_test) = (at.base, state.per_test);
    let mut ticks = 0u64;
    let mut on_interval = |iv: &pgsurge_results::IntervalSample| {
        ticks += 1;
        pb.set_position((base + ticks).min(base + per_test));
        pb.set_message(at.line(format!("{:.0} tps, {:.2} ms", iv.tps, iv.latency_ms)));
    };
    let mut retries = 0;
    loop {
        let write = match run_test(setup, target, ctx.stop, &mut on_interval) {
            Ok(w) => w,
            Err(Interrupted::Stopped) => return Ok(None),
        };
        if write.run.status != run_status::FAILED || state.down[plan.target] {
            return Ok(Some(write));
        }
        let error = write.run.error.as_deref().unwrap_or("");
        let unreachable = probe(&target.conn).err();
        // A distributed test's failure quotes its generators (a kube Job's pods, a
        // process that hung or left no result), whose errors say nothing of the
        // server as seen from here: for it, only the probe tells an outage.
        let from_generators = campaign.spec.distributed.is_some();
        if retries >= MAX_OUTAGE_RETRIES
            || (unreachable.is_none() && (from_generators || !looks_like_connection_loss(error)))
        {
            return Ok(Some(write));
        }
        let reason = unreachable.unwrap_or_else(|| first_line(error).to_string());
        match wait_for_target(target, &reason, state.wait, pb, sink.quiet, ctx.stop) {
            Waited::Back(after) => {
                retries += 1;
                sink.say(&format!(
                    "target \"{}\" is back after {:.0} s: running {} again",
                    target.name,
                    after.as_secs_f64(),
                    plan.key
                ));
            }
            Waited::Stopped => return Ok(None),
            Waited::Down(message) => {
                state.down[plan.target] = true;
                sink.say(&message);
                // Kept with the set (results show), printed once.
                sink.store.add_warning(&WarningRecord {
                    set_id: Some(sink.set_id),
                    run_id: None,
                    code: "outage".into(),
                    message,
                    created_at: now_rfc3339(),
                })?;
                return Ok(Some(write));
            }
        }
    }
}

/// Stores a test that ran, with its target's facts and warnings, and says its result.
fn store_test(
    mut write: pgsurge_store::RunWrite,
    at: &TestAt<'_>,
    target: &LiveTarget,
    state: &mut LoopState,
    sink: &mut Sink<'_>,
) -> Result<()> {
    let plan = at.plan;
    write.facts.extend(target.facts.iter().cloned());
    // The target's warnings go with each of its tests (a test's page shows them) but
    // were said when it started: the terminal and the outcome get each once.
    let said_at_start = write.warnings.len();
    for (code, w) in &target.warnings {
        write.warnings.push(pgsurge_store::WarningRecord {
            code: (*code).into(),
            message: w.clone(),
            created_at: now_rfc3339(),
            ..Default::default()
        });
    }
    redact_write(&mut write);
    let failed = write.run.status == run_status::FAILED;
    let run_id = sink.store.write_run_replacing(&write)?;
    sink.out.run_ids.push(run_id);
    for (k, w) in write.warnings.iter().enumerate() {
        let the_targets = k >= said_at_start;
        if the_targets && sink.out.warnings.contains(&w.message) {
            continue;
        }
        if w.code != "sampler" && !the_targets {
            sink.say(&format!("warning: {}", w.message));
        }
        sink.out.warnings.push(w.message.clone());
    }
    if failed {
        sink.out.failed += 1;
        // A target given up on was said once, when it was.
        if !state.down[plan.target] {
            let error = write.run.error.as_deref().unwrap_or("");
            sink.say(&at.line(format!("FAILED: {error}")));
        }
    } else {
        sink.out.ok += 1;
        state.down[plan.target] = false;
        sink.say(&at.line(format!(
            "{:.1} tps, latency avg {:.3} ms, p99 {:.3} ms",
            write.run.tps.unwrap_or(0.0),
            write.run.latency_mean_ms.unwrap_or(0.0),
            write.run.latency_p99_ms.unwrap_or(0.0)
        )));
    }
    Ok(())
}

/// Masks passwords in everything of a test stored as text (its error, options,
/// manifest, warnings, settings): a conninfo can reach them through error messages
/// and argument lists.
fn redact_write(w: &mut pgsurge_store::RunWrite) {
    fn walk(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::String(s) => {
                let masked = redact(s);
                if masked != *s {
                    *s = masked;
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(walk),
            serde_json::Value::Object(o) => {
                for (k, val) in o.iter_mut() {
                    // {"password": "x"}: the key names the secret.
                    if k.to_ascii_lowercase().ends_with("password") && !val.is_null() {
                        *val = serde_json::Value::String(pgsurge_wire::redact::MASK.into());
                    } else {
                        walk(val);
                    }
                }
            }
            _ => {}
        }
    }
    fn json(v: &mut Option<serde_json::Value>) {
        if let Some(value) = v {
            walk(value);
        }
    }
    if let Some(e) = &w.run.error {
        w.run.error = Some(redact(e));
    }
    json(&mut w.run.options);
    json(&mut w.run.result_json);
    json(&mut w.environment);
    for warning in &mut w.warnings {
        warning.message = redact(&warning.message);
    }
    for s in &mut w.settings {
        if let Some(v) = &s.setting {
            s.setting = Some(redact(v));
        }
    }
}

/// Times one test is run again after the server went away during it.
const MAX_OUTAGE_RETRIES: u32 = 3;

/// Longest pause between two connection attempts while waiting out an outage.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

enum Waited {
    /// The server answers again, after this long.
    Back(Duration),
    /// Ctrl-C.
    Stopped,
    /// Still unreachable when the wait ended: the message to show and store.
    Down(String),
}

/// Tries one connection; the reason (password masked) when there is none.
fn probe(conn: &ConnConfig) -> std::result::Result<(), String> {
    Pg::connect(conn)
        .map(|_| ())
        .map_err(|e| first_line(&redact(&e.to_string())).to_string())
}

fn first_line(s: &str) -> &str {
    s.lines().find(|l| !l.trim().is_empty()).unwrap_or(s).trim()
}

/// True when a test's error says the connection to the server failed or was lost
/// (as opposed to a failure of the test itself).
pub fn looks_like_connection_loss(error: &str) -> bool {
    const SIGNS: &[&str] = &[
        "could not connect",
        "connection refused",
        "server closed the connection",
        "terminating connection",
        "the database system is shutting down",
        "the database system is starting up",
        "the database system is in recovery mode",
        "the database system is not yet accepting connections",
        "perhaps the backend died",
        "connection reset",
        "broken pipe",
        "could not translate host name",
        "no such file or directory",
        "connection to server",
        "server conn crashed",
        "lost synchronization",
        "timeout expired",
    ];
    let e = error.to_ascii_lowercase();
    SIGNS.iter().any(|s| e.contains(s))
}

/// Waits (retrying with back-off) until `target` accepts a connection, for at most
/// `wait`, saying so once.
fn wait_for_target(
    target: &LiveTarget,
    reason: &str,
    wait: Duration,
    pb: &ProgressBar,
    quiet: bool,
    stop: &StopFlag,
) -> Waited {
    let started = std::time::Instant::now();
    say(
        pb,
        quiet,
        &format!(
            "target \"{}\" is unreachable ({reason}); waiting up to {} for it to come back",
            target.name,
            human_duration(wait)
        ),
    );
    let mut pause = Duration::from_millis(250);
    let mut last: String;
    loop {
        if stop.is_raised() {
            return Waited::Stopped;
        }
        match probe(&target.conn) {
            Ok(()) => return Waited::Back(started.elapsed()),
            Err(e) => last = e,
        }
        let elapsed = started.elapsed();
        if elapsed >= wait {
            return Waited::Down(format!(
                "target \"{}\" stayed unreachable for {} ({last}): its remaining tests fail",
                target.name,
                human_duration(elapsed)
            ));
        }
        pb.set_message(format!(
            "waiting for target \"{}\" ({} of {})",
            target.name,
            human_duration(elapsed),
            human_duration(wait)
        ));
        let slice = pause.min(wait - elapsed);
        let until = std::time::Instant::now() + slice;
        while std::time::Instant::now() < until && !stop.is_raised() {
            std::thread::sleep(Duration::from_millis(50));
        }
        pause = (pause * 2).min(MAX_BACKOFF);
    }
}

fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{:.0}s", d.as_secs_f64())
    }
}

/// The campaign as stored with its set (`sets.spec`): the file's text as written, its
/// `${VAR}` references kept (never the values they took from the environment), with
/// every password masked (conninfo strings, URIs, `…password = "…"` keys).
pub fn stored_spec(campaign: &Campaign) -> String {
    use toml_edit::visit_mut::{self, VisitMut};
    use toml_edit::{Formatted, Item, KeyMut, Value};

    /// Masks string values (each read as TOML decoded it, and written back encoded,
    /// so a mask never cuts a quote or an escape) and every value of a key that names
    /// a password.
    struct Mask;
    impl VisitMut for Mask {
        fn visit_table_like_kv_mut(&mut self, key: KeyMut<'_>, node: &mut Item) {
            if key.get().to_ascii_lowercase().ends_with("password") {
                if let Some(v) = node.as_value_mut() {
                    let decor = v.decor().clone();
                    *v = Value::from(pgsurge_wire::redact::MASK);
                    *v.decor_mut() = decor;
                    return;
                }
            }
            visit_mut::visit_table_like_kv_mut(self, key, node);
        }
        fn visit_string_mut(&mut self, node: &mut Formatted<String>) {
            let masked = redact(node.value());
            if masked != *node.value() {
                let decor = node.decor().clone();
                *node = Formatted::new(masked);
                *node.decor_mut() = decor;
            }
        }
    }
    let masked = match campaign.text.parse::<toml_edit::DocumentMut>() {
        Ok(mut doc) => {
            Mask.visit_document_mut(&mut doc);
            redact_comments(&doc.to_string())
        }
        Err(_) => String::new(),
    };
    if toml::from_str::<toml::Value>(&masked).is_ok() {
        return masked;
    }
    // Not expected (the text parsed as TOML): the whole text masked as free text.
    redact(&campaign.text)
}

/// `text` (valid TOML) with every comment masked as free text; strings are skipped,
/// so a `#` in a value is not taken for a comment, and no line break is touched.
fn redact_comments(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut i, mut copied) = (0, 0);
    while i < b.len() {
        match b[i] {
            b'#' => {
                let end = text[i..].find('\n').map_or(text.len(), |n| i + n);
                out.push_str(&text[copied..i]);
                out.push_str(&redact(&text[i..end]));
                (i, copied) = (end, end);
            }
            q @ (b'"' | b'\'') => {
                let triple = b[i..].starts_with(&[q, q, q]);
                i += if triple { 3 } else { 1 };
                while i < b.len() {
                    if q == b'"' && b[i] == b'\\' {
                        i += 2;
                    } else if triple && b[i..].starts_with(&[q, q, q]) {
                        // Up to two more quotes may close a multi-line string: `"""a""""`.
                        i += 3;
                        while i < b.len() && b[i] == q {
                            i += 1;
                        }
                        break;
                    } else if !triple && (b[i] == q || b[i] == b'\n') {
                        i += 1;
                        break;
                    } else {
                        i += 1;
                    }
                }
            }
            _ => i += 1,
        }
    }
    out.push_str(&text[copied.min(text.len())..]);
    out
}

/// `shared_buffers=1GB, work_mem=4MB`.
fn settings_label(settings: &[(String, String)]) -> String {
    settings
        .iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A failed test whose throwaway target did not start: stored against the target's
/// row (created bare when the target never started in this set).
fn failed_write_unstarted(
    store: &mut Store,
    set_id: i64,
    tspec: &crate::spec::TargetSpec,
    plan: &TestPlan,
    error: &str,
) -> Result<pgsurge_store::RunWrite> {
    let existing = store
        .targets(set_id)?
        .into_iter()
        .find(|t| t.record.name == tspec.name)
        .map(|t| t.id);
    let target_id = match existing {
        Some(id) => id,
        None => store.upsert_target(&TargetRecord {
            set_id,
            name: tspec.name.clone(),
            server_id: None,
            kind: "throwaway".into(),
            conninfo: None,
            bin_dir: None,
            server_version: None,
            server_version_num: None,
            settings: Some(serde_json::Value::Object(
                tspec
                    .settings_text()
                    .into_iter()
                    .map(|(k, v)| (k, serde_json::Value::String(v)))
                    .collect(),
            )),
        })?,
    };
    Ok(failed_record(set_id, target_id, &tspec.name, plan, error))
}

/// A failed test that never ran (its target could not be prepared).
fn failed_write(
    set_id: i64,
    target: &LiveTarget,
    plan: &TestPlan,
    error: &str,
) -> pgsurge_store::RunWrite {
    let mut w = failed_record(set_id, target.target_id, &target.name, plan, error);
    w.environment = Some(target.manifest.clone());
    w.facts = target.facts.clone();
    w
}

/// The record of a test that failed before it ran.
fn failed_record(
    set_id: i64,
    target_id: i64,
    target_name: &str,
    plan: &TestPlan,
    error: &str,
) -> pgsurge_store::RunWrite {
    let now = pgsurge_store::now_epoch();
    pgsurge_store::RunWrite {
        run: pgsurge_store::RunRecord {
            set_id,
            target_id: Some(target_id),
            test_key: plan.key.clone(),
            seq: Some(plan.seq as i64),
            repeat_no: i64::from(plan.repeat),
            status: run_status::FAILED.into(),
            error: Some(error.to_string()),
            started_at: Some(pgsurge_store::epoch_to_rfc3339(now)),
            start_epoch: Some(now),
            scale: Some(i64::from(plan.scale)),
            clients: Some(i64::from(plan.clients)),
            // The cell's swept dimensions, so the failure shows in its cell.
            query_mode: plan.query_mode.clone(),
            threads: plan.threads.map(|j| i64::from(j.min(plan.clients))),
            options: Some(serde_json::json!({
                "target": target_name,
                "settings": plan.settings.iter().cloned().collect::<BTreeMap<_, _>>(),
                "threads_dimension": plan.threads,
            })),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_losses_are_told_from_test_failures() {
        for e in [
            "benchmark run aborted:\nclient 0 aborted in command 1 query 0: FATAL:  terminating connection due to administrator command",
            "connecting: connection to server at \"127.0.0.1\", port 5432 failed: Connection refused",
            "server closed the connection unexpectedly",
            "FATAL:  the database system is shutting down",
        ] {
            assert!(looks_like_connection_loss(e), "{e}");
        }
        for e in [
            "benchmark run aborted:\nclient 0 aborted in command 0 query 0: ERROR:  relation \"no_such_table\" does not exist",
            "ERROR:  division by zero",
        ] {
            assert!(!looks_like_connection_loss(e), "{e}");
        }
    }

    #[test]
    fn stored_spec_has_no_password_and_parses_back() {
        let text = r#"
[campaign]
name = "t"
[[target]]
name = "a"
conninfo = "host=h password = 'Sp ace' dbname=x"
[[target]]
name = "b"
conninfo = "postgresql://u:pw1@h/db?password=pw2"
[matrix]
scales = [1]
clients = [1]
scripts = ["select-only"]
[run.defines]
dsn = "host=x password=pw3"
"#;
        let c = Campaign::parse(text, "t.toml", std::path::Path::new(".")).unwrap();
        let stored = stored_spec(&c);
        for secret in ["Sp ace", "Sp", "ace'", "pw1", "pw2", "pw3"] {
            assert!(!stored.contains(secret), "{secret} in {stored}");
        }
        let back = Campaign::parse(&stored, "stored", std::path::Path::new(".")).unwrap();
        assert_eq!(back.spec.targets.len(), 2);
        assert_eq!(
            back.spec.targets[0].conninfo.as_deref(),
            Some("host=h password = '********' dbname=x")
        );
        assert_eq!(back.spec.matrix, c.spec.matrix);
    }

    #[test]
    fn stored_spec_is_the_file_as_written_without_the_environment() {
        let text = "# comment kept\n[campaign]\nname = \"t\"\n[[target]]\nname = \"a\"\nconninfo = \"${DSN}\"\n[matrix]\nscales = [1]\nclients = [1]\n[hooks]\nbefore_test = \"psql -p ${PGPORT} -c 'select 1'\"\n";
        let env = |k: &str| (k == "DSN").then(|| "host=db9 password=Env-Secret-1".to_string());
        let c = Campaign::parse_with_env(text, "t.toml", std::path::Path::new("."), &env).unwrap();
        assert_eq!(
            c.spec.targets[0].conninfo.as_deref(),
            Some("host=db9 password=Env-Secret-1")
        );
        let stored = stored_spec(&c);
        assert_eq!(stored, text);
        assert!(!stored.contains("Env-Secret-1") && !stored.contains("db9"));
    }

    #[test]
    fn stored_spec_masks_passwords_in_comments_and_keeps_the_layout() {
        let text = "[campaign]\nname = \"t # not a comment\" # old: host=h password=Comment-Pw\n[[target]]\nname = \"a\"\n# conninfo = 'postgresql://u:Uri-Pw@h/db'\nconninfo = \"\"\"host=h\npassword='Multi Pw' dbname=x\"\"\"\n[matrix]\nscales = [1]\nclients = [1]\n[run.defines]\nsslpassword = 42\n";
        let c = Campaign::parse(text, "t.toml", std::path::Path::new(".")).unwrap();
        let stored = stored_spec(&c);
        for secret in ["Comment-Pw", "Uri-Pw", "Multi", "42"] {
            assert!(!stored.contains(secret), "{secret} in {stored}");
        }
        assert!(
            stored.contains("# old: host=h password=********\n"),
            "{stored}"
        );
        assert!(
            stored.contains("# conninfo = 'postgresql://u:********@h/db'\n"),
            "{stored}"
        );
        let back = Campaign::parse(&stored, "stored", std::path::Path::new(".")).unwrap();
        assert_eq!(back.spec.campaign.name, c.spec.campaign.name);
        assert_eq!(
            back.spec.run.defines.get("sslpassword"),
            Some(&toml::Value::String("********".into()))
        );
    }
}
