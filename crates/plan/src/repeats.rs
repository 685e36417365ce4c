//! `[repeats] until`: whether a test's repeat is still needed, from the repeats of its
//! cell stored so far. A cell is its matrix cell across targets; its precision is
//! judged by `pgsurge_analysis::precision::of_cell` on the rounds before the test's
//! own, so every target of a round gets the same answer, and a round once started is
//! finished.

use pgsurge_analysis::precision::{of_cell, CellPrecision};
use pgsurge_store::{run_status, Run};

use crate::matrix::TestPlan;
use crate::spec::Campaign;

/// A test key's target, cell and repeat: `target/…cell…/repeat`.
pub fn cell_of(key: &str) -> Option<(&str, &str, u32)> {
    let (target, rest) = key.split_once('/')?;
    let (cell, repeat) = rest.rsplit_once('/')?;
    Some((target, cell, repeat.parse().ok()?))
}

/// The precision of `cell` from `stored` runs of rounds before `before`, against
/// `target` (the campaign's targets in order, the first the base).
pub fn cell_precision(
    campaign: &Campaign,
    cell: &str,
    stored: &[Run],
    before: u32,
    target: f64,
) -> CellPrecision {
    let names: Vec<&str> = campaign
        .spec
        .targets
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    let mut sides = vec![Vec::new(); names.len()];
    for run in stored.iter().filter(|r| r.record.status == run_status::OK) {
        let Some((t, c, repeat)) = cell_of(&run.record.test_key) else {
            continue;
        };
        let side = names.iter().position(|n| *n == t);
        if let (true, true, Some(i), Some(tps)) = (c == cell, repeat < before, side, run.record.tps)
        {
            sides[i].push((repeat, tps));
        }
    }
    of_cell(&sides, target)
}

/// Why `plan` need not run (its cell is precise enough, or the budget is spent), said
/// as a line; None when it runs: without `[repeats]`, within `min`, or when its round
/// has begun. `budget_spent`: the campaign's `budget` of wall time has passed.
pub fn not_needed(
    campaign: &Campaign,
    plan: &TestPlan,
    stored: &[Run],
    budget_spent: bool,
) -> Option<String> {
    let (r, target) = (
        campaign.spec.repeats.as_ref()?,
        campaign.precision_target()?,
    );
    let (_, cell, _) = cell_of(&plan.key)?;
    let begun = stored.iter().any(|run| {
        cell_of(&run.record.test_key).is_some_and(|(_, c, n)| c == cell && n == plan.repeat)
    });
    if plan.repeat <= r.min || begun {
        return None;
    }
    let p = cell_precision(campaign, cell, stored, plan.repeat, target);
    if p.reached() {
        Some(format!("{cell}: precise enough, {}", p.text()))
    } else if budget_spent {
        Some(format!("{cell}: budget spent, {}", p.text()))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_names_its_target_cell_and_repeat() {
        assert_eq!(
            cell_of("pg17/s10/tpcb-like/c8/r-/3"),
            Some(("pg17", "s10/tpcb-like/c8/r-", 3))
        );
        assert_eq!(cell_of("no-repeat"), None);
        assert_eq!(cell_of("a/b/x"), None);
    }
}
