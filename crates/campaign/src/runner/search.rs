//! A campaign in capacity mode (`[capacity]`): each cell's search, its steps run as
//! ordinary tests through the test loop and judged by `pgsurge_analysis::capacity`.

use std::collections::BTreeSet;

use pgsurge_engine::StopFlag;
use pgsurge_store::{now_rfc3339, run_status, set_status, Store};

use super::options::{Outcome, RunOptions};
use super::progress::{progress_bar, say};
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
