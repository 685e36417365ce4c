//! Runs a campaign: finds or creates its set in the store, skips the tests already
//! stored (resume), starts the targets it still needs, runs the remaining tests in the
//! planned order, stores each test in one transaction as soon as it ends (failed tests
//! too, with their error), and stops the throwaway servers. Each step is an event
//! (`pgsurge_events`): the store, the terminal's progress and the caller's consumers
//! take them.
//!
//! Files, ground floor first: each uses only files listed before it.
//!
//! | file | owns |
//! |---|---|
//! | `options` | what a run is asked for, and its [`Outcome`] |
//! | `storing` | failed tests that never ran, the campaign file kept with its set, masking |
//! | `state` | what the test loop shares and keeps, a test's place; where its outcome goes |
//! | `test_hooks` | `set_start`, `before_test` and `after_test`, with their environment |
//! | `targets` | a target started, recorded, held, loaded at a scale, stopped |
//! | `outage` | a test run again after its server came back |
//! | `test_loop` | the tests, one by one, each as the same steps |
//! | `search` | capacity mode: each cell's search of rates |
//! | this file | the set: claimed or resumed, earlier sets settled, its status |

mod options;
mod outage;
mod search;
mod state;
mod storing;
mod targets;
mod test_hooks;
mod test_loop;

use std::collections::{BTreeMap, BTreeSet};

use pgsurge_command::terminal_safe;
use pgsurge_engine::StopFlag;
use pgsurge_events::{Consumer, Emitter, Event, Progress};
use pgsurge_store::{
    now_rfc3339, run_status, set_kind, set_status, SetRecord, Store, WarningRecord,
};

use crate::error::{CampaignError, Result};
use crate::matrix::{expand, Matrix, TestPlan};
use crate::pinning::{ClientPin, Pinning};
use crate::spec::Campaign;
use crate::target::LiveTarget;
use crate::target_lock::{holder_label, LockError, TargetLock};
use crate::{inputs, target};
use search::run_capacity;
use state::RunCtx;
use targets::stop_target;
use test_loop::run_tests;

pub use options::{Outcome, RunOptions, SetIdentity};
pub use pgsurge_events::store_writer::HOOK_LEFTOVER;
pub use targets::server_record;

/// Runs (or resumes) `campaign` into `store`, its progress on the terminal unless
/// `opts.quiet`. `stop` is raised by Ctrl-C: the test in hand is abandoned (not
/// stored) and the set stays resumable.
pub fn run_campaign(
    campaign: &Campaign,
    store: &mut Store,
    opts: &RunOptions,
    stop: &StopFlag,
) -> Result<Outcome> {
    run_campaign_telling(campaign, store, opts, stop, &mut [])
}

/// [`run_campaign`], its events told to `consumers` too (after the store and the
/// terminal).
pub fn run_campaign_telling(
    campaign: &Campaign,
    store: &mut Store,
    opts: &RunOptions,
    stop: &StopFlag,
    consumers: &mut [&mut dyn Consumer],
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
            spec: Some(pgsurge_plan::stored::stored_spec(campaign)),
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
    let mut progress = (!opts.quiet).then(Progress::new);
    let mut told: Vec<&mut dyn Consumer> = consumers.iter_mut().map(|c| &mut **c as _).collect();
    told.extend(progress.as_mut().map(|p| p as &mut dyn Consumer));
    let mut events = Emitter::new(store, set_id, told);
    let (name, planned) = (&set_name, matrix.tests.len());
    let mut result = run_locked(
        campaign,
        &mut events,
        opts,
        stop,
        &matrix,
        (set_id, name, planned),
        &mut locks,
        &fact,
    );
    drop(events);
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
            message: format!("campaign failed: {e}"),
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
    events: &mut Emitter<'_>,
    opts: &RunOptions,
    stop: &StopFlag,
    matrix: &Matrix,
    (set_id, name, planned): (i64, &str, usize),
    locks: &mut [Option<TargetLock>],
    inputs: &pgsurge_store::FactRecord,
) -> Result<Outcome> {
    let spec = &campaign.spec;
    if let Some(cap) = &spec.capacity {
        return run_capacity(
            campaign,
            cap,
            events,
            opts,
            stop,
            matrix,
            (set_id, name),
            locks,
            inputs,
        );
    }
    let store = events.store();
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
    let already_stored = planned - todo.len();
    events.emit(Event::SetStarted {
        set_id,
        name,
        planned,
        already_stored,
    })?;
    let mut out = Outcome {
        set_id,
        planned,
        already_stored,
        ..Default::default()
    };
    let mut live: Vec<Option<LiveTarget>> = (0..spec.targets.len()).map(|_| None).collect();
    let mut ctx = RunCtx {
        set_id,
        stop,
        quiet: opts.quiet,
        locks,
        set_start_facts: None,
        inputs: inputs.clone(),
    };
    let result = match todo.is_empty() {
        true => Ok(()),
        false => run_tests(
            campaign, events, matrix, &todo, &mut live, &mut ctx, &mut out,
        ),
    };
    // Stop throwaway servers now (Drop does it too, on every path).
    for slot in &mut live {
        stop_target(slot, events)?;
    }
    result?;
    out.remaining = todo.len() - out.ok - out.failed - out.not_needed;
    let finished = out.remaining == 0;
    let status = if finished {
        set_status::COMPLETE
    } else {
        set_status::INCOMPLETE
    };
    events.emit(Event::SetEnded {
        set_id,
        status,
        finished,
    })?;
    Ok(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A set several campaigns run into (a bisect's) plans every test stored in it, not
    /// only the matrix of the last campaign: it never reads `complete 8/2`.
    #[test]
    fn a_shared_set_plans_every_test_stored_in_it() {
        let text = "[campaign]\nname = \"b\"\n[[target]]\nname = \"pg @ c3\"\n\
                    [matrix]\nscales = [1]\nclients = [1]\nscripts = [\"select-only\"]\n\
                    repeats = 2\n";
        let campaign = Campaign::parse(text, "b.toml", std::path::Path::new(".")).unwrap();
        let matrix = crate::matrix::expand(&campaign).unwrap();
        assert_eq!(matrix.tests.len(), 2);
        // Three earlier commits' measurements, two tests each, and this one's first.
        let mut stored: Vec<(String, String)> = (1..=6)
            .map(|i| (format!("pg @ c{}/t{i}", i / 3), "ok".to_string()))
            .collect();
        stored.push((matrix.tests[0].key.clone(), "ok".to_string()));
        let shared = RunOptions {
            into_set: Some(SetIdentity {
                name: "b bisect".into(),
                identity: "x".into(),
            }),
            ..Default::default()
        };
        assert_eq!(planned_in_set(&shared, &matrix, &stored), 8);
        // A campaign's own set plans its matrix.
        assert_eq!(planned_in_set(&RunOptions::default(), &matrix, &stored), 2);
    }
}
