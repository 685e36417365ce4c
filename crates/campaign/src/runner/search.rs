//! A campaign in capacity mode (`[capacity]`): each cell's search, its steps run as
//! ordinary tests through the test loop and judged by `pgsurge_analysis::capacity`.

use std::collections::BTreeSet;

use pgsurge_analysis::capacity::StepRun;
use pgsurge_engine::StopFlag;
use pgsurge_events::{Emitter, Event};
use pgsurge_store::validity::ValidityFacts;
use pgsurge_store::{run_status, set_status};

use super::options::{Outcome, RunOptions};
use super::state::RunCtx;
use super::targets::stop_target;
use super::test_loop::run_tests;
use crate::capacity;
use crate::error::Result;
use crate::matrix::{Matrix, TestPlan};
use crate::spec::{Campaign, CapacitySection};
use crate::target::LiveTarget;
use crate::target_lock::TargetLock;

/// A campaign in capacity mode: each cell's search runs its steps as ordinary tests
/// (found in the store when a resumed campaign already ran them), then says the result.
#[allow(clippy::too_many_arguments)]
pub(super) fn run_capacity(
    campaign: &Campaign,
    cap: &CapacitySection,
    events: &mut Emitter<'_>,
    opts: &RunOptions,
    stop: &StopFlag,
    matrix: &Matrix,
    (set_id, name): (i64, &str),
    locks: &mut [Option<TargetLock>],
    inputs: &pgsurge_store::FactRecord,
) -> Result<Outcome> {
    let spec = &campaign.spec;
    let store = events.store();
    store.set_set_status(set_id, set_status::RUNNING, None)?;
    let templates = capacity::templates(&matrix.tests);
    let stored_before = store.stored_tests(set_id)?.len();
    // The steps are planned as each search goes.
    events.emit(Event::SetStarted {
        set_id,
        name,
        planned: stored_before,
        already_stored: stored_before,
    })?;
    let mut out = Outcome {
        set_id,
        already_stored: stored_before,
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
    let mut results = Vec::new();
    let mut interrupted = false;
    let objective = cap.objective();
    for template in &templates {
        let cell = capacity::cell_name(template);
        let searched = pgsurge_analysis::capacity::search(cell, &objective, |rate| {
            let plans = capacity::step_plans(template, rate, cap.repeats, spec.campaign.seed);
            let keys: BTreeSet<String> = plans.iter().map(|p| p.key.clone()).collect();
            let stored = events.store().stored_tests(set_id)?;
            let done: BTreeSet<&String> = stored
                .iter()
                .filter(|(_, st)| !(opts.retry_failed && st == run_status::FAILED))
                .map(|(k, _)| k)
                .collect();
            let todo: Vec<&TestPlan> = plans.iter().filter(|p| !done.contains(&p.key)).collect();
            if !todo.is_empty() {
                run_tests(
                    campaign, events, matrix, &todo, &mut live, &mut ctx, &mut out,
                )?;
            }
            if stop.is_raised() {
                return Ok(None);
            }
            let store = events.store();
            let runs = store.list_runs(&pgsurge_store::RunFilter {
                set_id: Some(set_id),
                ..Default::default()
            })?;
            let validity = ValidityFacts::of_sets(store, [set_id])?;
            let at: Vec<StepRun> = runs
                .iter()
                .filter(|r| keys.contains(&r.record.test_key))
                .map(|r| capacity::step_run(r, cap.percentile, &validity))
                .collect();
            if at.len() < plans.len() {
                return Ok(None);
            }
            let step = pgsurge_analysis::capacity::judge(rate, &at, &objective);
            events.say(&step.line(&capacity::cell_name(template), cap.percentile))?;
            Ok(Some(step))
        });
        match searched {
            Ok(Some(r)) => {
                events.say(&r.line())?;
                results.push(r);
            }
            Ok(None) => {
                interrupted = true;
                break;
            }
            Err(e) => return Err(e),
        }
    }
    for slot in &mut live {
        stop_target(slot, events)?;
    }
    let stored = events.store().stored_tests(set_id)?.len();
    out.planned = stored;
    events.store().set_planned_tests(set_id, stored as i64)?;
    out.remaining = usize::from(interrupted);
    events.emit(Event::SetEnded {
        set_id,
        status: match interrupted {
            true => set_status::INCOMPLETE,
            false => set_status::COMPLETE,
        },
        finished: !interrupted,
    })?;
    out.capacity = results;
    Ok(out)
}
