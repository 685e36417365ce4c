//! `[repeats] until`: whether a test's repeat is still needed, from the repeats of its
//! cell stored so far; the precision each cell reached, stored with its runs; and, for
//! `campaign plan`, how many repeats an earlier set's spread says the precision needs.
//! A cell is its matrix cell across targets; its precision is judged by
//! `pgsurge_analysis::precision::of_cell` on the rounds before the test's own, so every
//! target of a round gets the same answer, and a round once started is finished. A
//! cell within the precision whose change is still `inconclusive` (its interval holds
//! zero and crosses the margin of ±`until`) is not done: it repeats on, up to `max`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use serde::Serialize;

use pgsurge_analysis::precision::{of_cell, repeats_for_cell, CellPrecision};
use pgsurge_store::{facts, run_status, FactRecord, Run, RunFilter, Store, StoreError};

use crate::matrix::TestPlan;
use crate::spec::Campaign;

/// A test key's target, cell and repeat: `target/…cell…/repeat`.
pub fn cell_of(key: &str) -> Option<(&str, &str, u32)> {
    let (target, rest) = key.split_once('/')?;
    let (cell, repeat) = rest.rsplit_once('/')?;
    Some((target, cell, repeat.parse().ok()?))
}

/// The stored repeats of each cell, per target in the campaign's order (the first the
/// base), as `(round, tps)`, those of rounds before `before` only.
fn sides(
    campaign: &Campaign,
    stored: &[Run],
    before: u32,
) -> BTreeMap<String, Vec<Vec<(u32, f64)>>> {
    let names: Vec<&str> = campaign
        .spec
        .targets
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    let mut cells: BTreeMap<String, Vec<Vec<(u32, f64)>>> = BTreeMap::new();
    for run in stored.iter().filter(|r| r.record.status == run_status::OK) {
        let Some((t, cell, repeat)) = cell_of(&run.record.test_key) else {
            continue;
        };
        let (Some(i), Some(tps), true) = (
            names.iter().position(|n| *n == t),
            run.record.tps,
            repeat < before,
        ) else {
            continue;
        };
        cells
            .entry(cell.to_string())
            .or_insert_with(|| vec![Vec::new(); names.len()])[i]
            .push((repeat, tps));
    }
    cells
}

/// The precision of `cell` from `stored` runs of rounds before `before`, against
/// `target`.
pub fn cell_precision(
    campaign: &Campaign,
    cell: &str,
    stored: &[Run],
    before: u32,
    target: f64,
) -> CellPrecision {
    let sides = sides(campaign, stored, before)
        .remove(cell)
        .unwrap_or_default();
    of_cell(&sides, target)
}

/// Why a repeat need not run: its cell, and whether the cell is precise enough or the
/// budget is spent; its text is the line said for it.
#[derive(Debug, Clone, PartialEq)]
pub struct NotNeeded {
    /// The repeat's matrix cell.
    pub cell: String,
    /// True when the budget ended the cell's repeats (it is not precise enough).
    pub budget_spent: bool,
    /// The precision the cell reached, as said (`reached (±1.3 % after 5 repeats)`).
    pub precision: String,
}

impl std::fmt::Display for NotNeeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let why = if self.budget_spent {
            "budget spent"
        } else {
            "precise enough"
        };
        write!(f, "{}: {why}, {}", self.cell, self.precision)
    }
}

/// Why `plan` need not run (its cell is precise enough, or the budget is spent); None
/// when it runs: without `[repeats]`, within `min`, or when its round has begun.
/// `budget_spent`: the campaign's `budget` of wall time has passed.
pub fn not_needed(
    campaign: &Campaign,
    plan: &TestPlan,
    stored: &[Run],
    budget_spent: bool,
) -> Option<NotNeeded> {
    let (r, target) = (campaign.until_section()?, campaign.precision_target()?);
    let (_, cell, _) = cell_of(&plan.key)?;
    let begun = stored.iter().any(|run| {
        cell_of(&run.record.test_key).is_some_and(|(_, c, n)| c == cell && n == plan.repeat)
    });
    if plan.repeat <= r.min || begun {
        return None;
    }
    let p = cell_precision(campaign, cell, stored, plan.repeat, target);
    (p.reached() || budget_spent).then(|| NotNeeded {
        cell: cell.to_string(),
        budget_spent: !p.reached(),
        precision: p.text(),
    })
}

/// One `campaign run`'s `[repeats] until`: when its budget began, the cells it left
/// out a repeat of (and why, each said once), and the cells the budget ended.
#[derive(Debug)]
pub struct Until {
    begun: Instant,
    said: BTreeSet<String>,
    unsaid: Vec<String>,
    budget_ended: BTreeSet<String>,
}

impl Default for Until {
    fn default() -> Self {
        Until::start()
    }
}

impl Until {
    /// The budget counts from now.
    pub fn start() -> Until {
        Until {
            begun: Instant::now(),
            said: BTreeSet::new(),
            unsaid: Vec::new(),
            budget_ended: BTreeSet::new(),
        }
    }

    /// True when `plan` of set `set_id` need not run ([`not_needed`], from the set's
    /// runs stored so far); its reason is then kept for [`Until::to_say`] once per cell.
    pub fn leaves_out(
        &mut self,
        campaign: &Campaign,
        store: &mut Store,
        plan: &TestPlan,
        set_id: i64,
    ) -> Result<bool, StoreError> {
        if campaign.until_section().is_none() {
            return Ok(false);
        }
        let stored = store.list_runs(&RunFilter {
            set_id: Some(set_id),
            ..Default::default()
        })?;
        let spent = campaign
            .repeats_budget()
            .is_some_and(|b| self.begun.elapsed() >= b);
        let Some(why) = not_needed(campaign, plan, &stored, spent) else {
            return Ok(false);
        };
        if why.budget_spent {
            self.budget_ended.insert(why.cell.clone());
        }
        let why = why.to_string();
        if self.said.insert(why.clone()) {
            self.unsaid.push(why);
        }
        Ok(true)
    }

    /// The reasons not said yet, in the order they came.
    pub fn to_say(&mut self) -> Vec<String> {
        std::mem::take(&mut self.unsaid)
    }

    /// True when the budget ended some cell's repeats.
    pub fn budget_spent(&self) -> bool {
        !self.budget_ended.is_empty()
    }

    /// Stores with every run of each cell of set `set_id` the precision the cell
    /// reached over all its stored repeats (fact [`facts::REPEATS_UNTIL`]); returns
    /// how many cells reached it and how many did not.
    pub fn store_reached(
        &self,
        campaign: &Campaign,
        store: &mut Store,
        set_id: i64,
    ) -> Result<(usize, usize), StoreError> {
        let Some(target) = campaign.precision_target() else {
            return Ok((0, 0));
        };
        let stored = store.list_runs(&RunFilter {
            set_id: Some(set_id),
            ..Default::default()
        })?;
        let (mut reached, mut not) = (0, 0);
        for (cell, sides) in sides(campaign, &stored, u32::MAX) {
            let mut p = of_cell(&sides, target);
            p.budget_spent = !p.reached() && self.budget_ended.contains(&cell);
            *if p.reached() { &mut reached } else { &mut not } += 1;
            let fact = FactRecord::new(
                facts::REPEATS_UNTIL,
                serde_json::to_string(&p).unwrap_or_default(),
            );
            for run in stored.iter().filter(|r| {
                r.record.status == run_status::OK
                    && cell_of(&r.record.test_key).is_some_and(|(_, c, _)| c == cell)
            }) {
                store.set_run_fact(run.id, &fact)?;
            }
        }
        Ok((reached, not))
    }
}

/// What `campaign plan` says of `[repeats] until`: the worst case (every cell at
/// `max`) and, when the store holds an earlier set of the same campaign file, the
/// repeats each of its cells needs by its spread
/// (`pgsurge_analysis::precision::repeats_for_cell`, kept within `min` and `max`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RepeatsPlan {
    /// `until` as written (`"2%"`).
    pub until: String,
    /// Fewest repeats of a cell.
    pub min: u32,
    /// Most repeats of a cell: the worst case every test is planned at.
    pub max: u32,
    /// The earlier set the estimate comes from.
    pub from_set: Option<i64>,
    /// Per cell of that set, the repeats its precision needs.
    pub needed: BTreeMap<String, usize>,
}

impl RepeatsPlan {
    /// The plan's line.
    pub fn line(&self) -> String {
        let mut line = format!(
            "repeats: until ±{}, at least {} and at most {} per cell; planned at the worst \
             case, every cell at {}",
            self.until.trim(),
            self.min,
            self.max,
            self.max
        );
        let needs = self.needed.values();
        match (self.from_set, needs.clone().min(), needs.clone().max()) {
            (Some(set), Some(least), Some(most)) => line.push_str(&format!(
                "; by the spread of set {set}, {least} to {most} repeats per cell ({} rounds \
                 of its {} cells instead of {})",
                needs.sum::<usize>(),
                self.needed.len(),
                self.needed.len() * self.max as usize
            )),
            _ => line.push_str("; no earlier set of this campaign file to estimate from"),
        }
        line
    }
}

/// [`RepeatsPlan`] of `campaign`, the earlier set looked for in the store at
/// `location` (none when it cannot be opened); None without `[repeats]`.
pub fn plan(campaign: &Campaign, location: &str) -> Option<RepeatsPlan> {
    let r = campaign.until_section()?;
    let target = campaign.precision_target()?;
    let mut plan = RepeatsPlan {
        until: r.until.clone().unwrap_or_default(),
        min: r.min,
        max: r.max,
        from_set: None,
        needed: BTreeMap::new(),
    };
    let Some((set_id, runs)) = earlier_set(campaign, location) else {
        return Some(plan);
    };
    for (cell, s) in sides(campaign, &runs, u32::MAX) {
        let n = repeats_for_cell(&s, target)
            .map_or(r.max as usize, |n| n.clamp(r.min as usize, r.max as usize));
        plan.needed.insert(cell, n);
    }
    plan.from_set = (!plan.needed.is_empty()).then_some(set_id);
    Some(plan)
}

/// The newest set of `campaign`'s file in the store at `location` holding runs, with
/// them.
fn earlier_set(campaign: &Campaign, location: &str) -> Option<(i64, Vec<Run>)> {
    let mut store = Store::open_read_only(location).ok()?;
    let base = campaign.identity_hash();
    let mut sets = store.list_sets().ok()?;
    sets.retain(|s| {
        s.record.kind == pgsurge_store::set_kind::CAMPAIGN
            && s.record.name == campaign.spec.campaign.name
            && s.record
                .spec_hash
                .as_deref()
                .is_some_and(|h| crate::stored::same_file(h, &base))
    });
    sets.sort_by_key(|s| std::cmp::Reverse(s.id));
    sets.into_iter().find_map(|s| {
        let runs = store
            .list_runs(&RunFilter {
                set_id: Some(s.id),
                ..Default::default()
            })
            .ok()?;
        (!runs.is_empty()).then_some((s.id, runs))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgsurge_store::{RunRecord, RunWrite, SetRecord};
    use std::path::Path;

    /// Two targets, one cell, `until = "2%"` from 3 to 6 repeats.
    fn two_targets() -> Campaign {
        let text = "[campaign]\nname = \"u\"\n\
                    [[target]]\nname = \"a\"\nconninfo = \"dbname=a\"\n\
                    [[target]]\nname = \"b\"\nconninfo = \"dbname=b\"\n\
                    [matrix]\nscales = [1]\nclients = [4]\nscripts = [\"select-only\"]\n\
                    [repeats]\nuntil = \"2%\"\nmin = 3\nmax = 6\n[run]\nduration = 2\n";
        Campaign::parse(text, "u.toml", Path::new(".")).unwrap()
    }

    /// The campaign's tests of repeat `repeat`, one per target.
    fn round(c: &Campaign, repeat: u32) -> Vec<TestPlan> {
        let m = crate::matrix::expand(c).unwrap();
        m.tests.into_iter().filter(|t| t.repeat == repeat).collect()
    }

    /// Stored runs of the cell: round `i + 1` measured `a[i]` on `a`, `b[i]` on `b`.
    fn stored(c: &Campaign, a: &[f64], b: &[f64]) -> Vec<Run> {
        let mut runs = Vec::new();
        for (i, (a, b)) in a.iter().zip(b).enumerate() {
            for t in round(c, i as u32 + 1) {
                let tps = [a, b][t.target];
                runs.push(Run {
                    id: runs.len() as i64 + 1,
                    record: RunRecord {
                        set_id: 1,
                        test_key: t.key,
                        repeat_no: i64::from(t.repeat),
                        status: run_status::OK.into(),
                        tps: Some(*tps),
                        ..Default::default()
                    },
                });
            }
        }
        runs
    }

    /// A base drifting ±10 % over five rounds; B crossing the −2 % margin within a
    /// half-width of 1.35 % (`pgsurge_analysis` `reference.py`, "paired crossing"),
    /// and B within ±2 % ("paired inside").
    const BASE: [f64; 5] = [1000.0, 1100.0, 900.0, 1050.0, 950.0];
    const CROSSING: [f64; 5] = [978.2, 1084.7, 892.8, 1047.9, 955.7];
    const INSIDE: [f64; 5] = [986.1, 1093.4, 900.0, 1056.3, 963.4];

    #[test]
    fn a_cell_whose_interval_crosses_the_margin_keeps_repeating() {
        let c = two_targets();
        let runs = stored(&c, &BASE, &CROSSING);
        for t in round(&c, 6) {
            assert_eq!(not_needed(&c, &t, &runs, false), None, "{}", t.key);
        }
        // The budget still ends it, and says why.
        let why = not_needed(&c, &round(&c, 6)[0], &runs, true).unwrap();
        assert!(why.budget_spent, "{why}");
        assert!(
            why.to_string()
                .contains("budget spent, not decided, ±1.3 %"),
            "{why}"
        );
    }

    #[test]
    fn a_cell_whose_interval_lies_inside_the_margin_is_done() {
        let c = two_targets();
        let runs = stored(&c, &BASE, &INSIDE);
        for t in round(&c, 6) {
            let why = not_needed(&c, &t, &runs, false).unwrap();
            assert!(!why.budget_spent, "{why}");
            assert!(
                why.to_string()
                    .ends_with(": precise enough, reached (±1.3 % after 5 repeats)"),
                "{why}"
            );
        }
    }

    #[test]
    fn a_cell_still_crossing_at_max_stops_and_its_runs_say_inconclusive() {
        let c = two_targets();
        let dir = pgsurge_testkit::scratch_dir("repeats-cap");
        let location = dir.path().join("r.db").display().to_string();
        let mut store = Store::open(&location).unwrap();
        let set_id = store
            .create_set(&SetRecord {
                name: "u".into(),
                kind: pgsurge_store::set_kind::CAMPAIGN.into(),
                status: "complete".into(),
                created_at: "2026-01-01T00:00:00Z".into(),
                ..Default::default()
            })
            .unwrap();
        // Six rounds: the five crossing ones and a sixth at the same ratio as the
        // first; the plan has no seventh.
        let (a, b) = (
            [BASE.as_slice(), &[1000.0]].concat(),
            [CROSSING.as_slice(), &[978.2]].concat(),
        );
        assert!(round(&c, 7).is_empty());
        for mut run in stored(&c, &a, &b) {
            run.record.set_id = set_id;
            store
                .write_run(&RunWrite {
                    run: run.record,
                    ..Default::default()
                })
                .unwrap();
        }
        let until = Until::start();
        assert_eq!(until.store_reached(&c, &mut store, set_id).unwrap(), (0, 1));
        let runs = store.list_runs(&RunFilter::default()).unwrap();
        assert_eq!(runs.len(), 12);
        for run in &runs {
            let fact = store
                .load_run(run.id)
                .unwrap()
                .facts
                .into_iter()
                .find(|f| f.name == facts::REPEATS_UNTIL)
                .and_then(|f| f.value)
                .unwrap();
            let p: CellPrecision = serde_json::from_str(&fact).unwrap();
            assert!(p.precise() && p.inconclusive && p.repeats == 6, "{p:?}");
            assert!(
                p.until_text().starts_with("until ±2 %: not decided, ±")
                    && p.until_text().contains("inconclusive"),
                "{}",
                p.until_text()
            );
        }
    }

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
