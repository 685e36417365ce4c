//! Capacity at a latency objective (`[capacity]`): the tests of each step of a cell's
//! search. The search and the judging of each step are `pgsurge_analysis::capacity`'s;
//! this module makes the step's tests: `repeats` ordinary tests at the step's rate (keys
//! `…/cap-r<rate>/<repeat>`), stored like any other test, so a resumed campaign replays
//! the steps already stored without running them again, and `results show` recomputes
//! every search from the store ([`capacity_of_set`]: the campaign's own steps judge
//! their runs the same way, through [`step_run`]).

use pgsurge_analysis::capacity::{results_of_runs, Objective, StepRun, StoredRun};
use pgsurge_store::validity::ValidityFacts;
use pgsurge_store::{Run, RunFilter, Store};

use crate::spec::CapacitySection;

use crate::matrix::TestPlan;

pub use pgsurge_analysis::capacity::{CapacityResult, Step};

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The cell part of a template test's key (`target/s1/wl/c4/r-…/1` → without the rate
/// label and the repeat): what [`CapacityResult::cell`] holds.
pub fn cell_name(template: &TestPlan) -> String {
    let without_repeat = template.key.rsplit_once('/').map_or("", |(a, _)| a);
    without_repeat.replacen("/r-", "", 1)
}

/// The tests of one step: `repeats` copies of `template` at `rate`.
pub fn step_plans(template: &TestPlan, rate: f64, repeats: u32, seed: u64) -> Vec<TestPlan> {
    let without_repeat = template.key.rsplit_once('/').map_or("", |(a, _)| a);
    let base = without_repeat.replacen("/r-", &format!("/cap-r{}", trim(rate)), 1);
    (1..=repeats)
        .map(|repeat| {
            let key = format!("{base}/{repeat}");
            let mut plan = template.clone();
            plan.seed = crate::matrix::test_seed(seed, &key);
            plan.key = key;
            plan.rate = Some(rate);
            plan.rate_per_client = None;
            plan.repeat = repeat;
            plan
        })
        .collect()
}

/// The search templates of a matrix: its first-repeat tests (rate-less cells).
pub fn templates(tests: &[TestPlan]) -> Vec<&TestPlan> {
    tests.iter().filter(|t| t.repeat == 1).collect()
}

/// A stored run as a step of a search judges it: its latency at `percentile`, and what
/// its stored facts (`validity`, read from its set) say about its validity.
pub fn step_run(run: &Run, percentile: f64, validity: &ValidityFacts) -> StepRun {
    StepRun {
        status: run.record.status.clone(),
        error: run.record.error.clone(),
        percentile_ms: run.record.latency_percentile_ms(percentile),
        tps: run.record.tps,
        evidence: validity.evidence(run),
    }
}

/// The `[capacity]` table of a campaign file as stored with its set, if it has one.
pub fn stored_section(spec: &str) -> Option<CapacitySection> {
    let value: toml::Value = toml::from_str(spec).ok()?;
    value.get("capacity")?.clone().try_into().ok()
}

/// Every cell's capacity search, recomputed from the runs stored in `set_id`: the same
/// steps the campaign took, judged the same way. A run that cannot be read is left out
/// ([`Store::skipped_runs`] names it).
pub fn capacity_of_set(
    store: &mut Store,
    set_id: i64,
    objective: &Objective,
) -> pgsurge_store::Result<Vec<CapacityResult>> {
    let runs = store.readable_runs(&RunFilter {
        set_id: Some(set_id),
        ..Default::default()
    })?;
    let validity = ValidityFacts::of_sets(store, [set_id])?;
    let runs: Vec<StoredRun> = runs
        .iter()
        .map(|r| StoredRun {
            test_key: r.record.test_key.clone(),
            rate: r.record.rate,
            run: step_run(r, objective.percentile, &validity),
        })
        .collect();
    Ok(results_of_runs(&runs, objective))
}
