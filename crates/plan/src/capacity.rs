//! Capacity at a latency objective (`[capacity]`): the tests of each step of a cell's
//! search. The search and the judging of each step are `pgsurge_analysis::capacity`'s;
//! this module makes the step's tests: `repeats` ordinary tests at the step's rate (keys
//! `…/cap-r<rate>/<repeat>`), stored like any other test, so a resumed campaign replays
//! the steps already stored without running them again, and `results show` recomputes
//! every search from the store.

use pgsurge_analysis::capacity::StepRun;
use pgsurge_store::Run;

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

/// A stored run as a step of a search judges it, its latency at `percentile`.
pub fn step_run(run: &Run, percentile: f64) -> StepRun {
    StepRun {
        status: run.record.status.clone(),
        error: run.record.error.clone(),
        percentile_ms: run.record.latency_percentile_ms(percentile),
        tps: run.record.tps,
    }
}
