//! The loop over a campaign's tests: each test as the same steps (target started, server
//! held, scale loaded, `before_test`, the test through outages, `after_test`, stored and
//! said), each step told as an event.

use std::collections::BTreeMap;

use pgsurge_events::{Emitter, Event};
use pgsurge_store::{now_rfc3339, run_status};
use pgsurge_wire::redact::redact;

use super::options::Outcome;
use super::outage::run_through_outages;
use super::state::{Flow, LoopState, RunCtx, Sink, TestAt};
use super::storing::failed_write;
use super::targets::{hold_existing_server, load_scale, start_target, Loaded, INIT_S_PER_SCALE};
use super::test_hooks::{hook_env, hook_warning, run_set_start_hook, run_test_hook};
use crate::error::Result;
use crate::execute::TestSetup;
use crate::matrix::{Matrix, TestPlan};
use crate::spec::Campaign;
use crate::target::LiveTarget;

/// Runs the tests of `todo` in order, each as the same steps: its target started (or
/// restarted for a swept setting), an existing server held, the scale loaded, the
/// `before_test` hook, the test itself (run again after an outage), the `after_test`
/// hook, and the outcome stored and said. A step that fails stores the test as failed
/// and goes on with the next; Ctrl-C ends the loop with the test in hand unstored.
/// Every test of `todo` is told planned first.
pub(super) fn run_tests(
    campaign: &Campaign,
    events: &mut Emitter<'_>,
    matrix: &Matrix,
    todo: &[&TestPlan],
    live: &mut [Option<LiveTarget>],
    ctx: &mut RunCtx<'_>,
    out: &mut Outcome,
) -> Result<()> {
    let planned_s = pgsurge_plan::estimate::test_seconds(campaign);
    let at = |i: usize| TestAt {
        n: i + 1,
        of: todo.len(),
        plan: todo[i],
        target: &campaign.spec.targets[todo[i].target].name,
    };
    for i in 0..todo.len() {
        let at = at(i);
        let test = at.test();
        events.emit(Event::TestPlanned { test, planned_s })?;
    }
    let mut set_start_facts = run_set_start_hook(campaign, events, ctx)?;
    set_start_facts.push(ctx.inputs.clone());
    let mut state = LoopState {
        set_start_facts,
        wait: campaign.outage_wait(),
        store_location: events.store().location().to_string(),
        down: vec![false; campaign.spec.targets.len()],
        not_started: BTreeMap::new(),
        secs_per_scale: INIT_S_PER_SCALE,
    };
    let mut until = pgsurge_plan::repeats::Until::start();
    for i in 0..todo.len() {
        if ctx.stop.is_raised() {
            break;
        }
        let at = at(i);
        if until.leaves_out(campaign, events.store(), at.plan, ctx.set_id)? {
            out.not_needed += 1;
            for line in until.to_say() {
                events.say(&line)?;
            }
            continue;
        }
        events.emit(Event::TestStarted { test: at.test() })?;
        let mut sink = Sink {
            events: &mut *events,
            out: &mut *out,
            quiet: ctx.quiet,
            set_id: ctx.set_id,
        };
        let flow = run_one_test(campaign, matrix, &at, live, ctx, &mut state, &mut sink)?;
        if flow == Flow::Stop {
            break;
        }
    }
    out.precise = until.store_reached(campaign, events.store(), ctx.set_id)?;
    out.budget_spent = until.budget_spent();
    Ok(())
}

/// One test, step by step.
pub(super) fn run_one_test(
    campaign: &Campaign,
    matrix: &Matrix,
    at: &TestAt<'_>,
    live: &mut [Option<LiveTarget>],
    ctx: &mut RunCtx<'_>,
    state: &mut LoopState,
    sink: &mut Sink<'_, '_>,
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
        sink.doing(at, "before_test hook")?;
        let o = run_test_hook("before_test", cmd, &hook_env_of(target), campaign, target);
        told_hook(sink, at, "before_test", &o)?;
        hook_facts.extend(o.facts());
        hook_warnings.extend(hook_warning(&o));
        if !o.ok() {
            let mut write = failed_write(sink.set_id, target, plan, &o.failure());
            write.facts.extend(hook_facts);
            write.warnings.extend(hook_warnings);
            sink.fail(at, write, true)?;
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
        told_hook(sink, at, "after_test", &o)?;
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

/// Tells that a test's hook ran.
fn told_hook(
    sink: &mut Sink<'_, '_>,
    at: &TestAt<'_>,
    hook: &str,
    o: &crate::hooks::HookOutcome,
) -> Result<()> {
    let failure = (!o.ok()).then(|| o.failure());
    let leftover = o.leftover_warning();
    Ok(sink.events.emit(Event::HookRan {
        hook,
        test: Some(at.test()),
        failure: failure.as_deref(),
        leftover: leftover.as_deref(),
    })?)
}

/// Stores a test that ran, with its target's facts and warnings, and says its result.
pub(super) fn store_test(
    mut write: pgsurge_store::RunWrite,
    at: &TestAt<'_>,
    target: &LiveTarget,
    state: &mut LoopState,
    sink: &mut Sink<'_, '_>,
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
    let failed = write.run.status == run_status::FAILED;
    for (k, w) in write.warnings.iter().enumerate() {
        // The store masks what it keeps; what is said and returned is masked alike.
        let message = redact(&w.message);
        // Each message is told once, however many tests raise it.
        if sink.out.warnings.contains(&message) {
            continue;
        }
        // A target's were said when it started; the samplers' are not said here.
        let the_targets = k >= said_at_start;
        if !the_targets && w.code != "sampler" {
            sink.say(&format!("warning: {message}"))?;
        }
        if !sink.quiet && (the_targets || w.code != "sampler") {
            sink.out.said_warnings.push(message.clone());
        }
        sink.out.warnings.push(message);
    }
    // A target given up on was said once, when it was.
    sink.ended(at, &write, !(failed && state.down[plan.target]))?;
    if failed {
        sink.out.failed += 1;
    } else {
        sink.out.ok += 1;
        state.down[plan.target] = false;
    }
    Ok(())
}
