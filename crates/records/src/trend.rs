//! `pgsurge results trend [FILTER]`: a campaign run again and again (a set per night,
//! the same cells) read as one series per cell — its level in each set, oldest set
//! first — and the sets where the level changed, found by
//! `pgsurge_analysis::change_points` (E-divisive means). A cell's level in a set is the
//! median tps of its successful repeats there. Where the sets are builds of commits
//! (targets built from a git checkout store `build_commit`), a change names the range
//! of commits and the `pgsurge bisect` command that searches it.

use std::collections::BTreeMap;

use pgsurge_analysis::change_points::{change_points, ChangePoint, MIN_SEGMENT};
use pgsurge_analysis::describe::median;
use pgsurge_plan::repeats::cell_of;
use pgsurge_store::{facts, run_status, RunFilter, Store, StoreError};

/// One set's level of a cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    /// The set.
    pub set_id: i64,
    /// When the set was created.
    pub created_at: String,
    /// Median tps of the cell's successful repeats in the set.
    pub tps: f64,
    /// The commit the target was built from, when it was built from a git checkout.
    pub commit: Option<String>,
}

/// A cell of a campaign over its sets, and where its level changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Trend {
    /// The campaign (the sets' name).
    pub campaign: String,
    /// The target.
    pub target: String,
    /// The cell: its test key without the target and the repeat.
    pub cell: String,
    /// Its level per set, oldest set first.
    pub levels: Vec<Level>,
    /// Where the level changed (`index` into `levels`).
    pub changes: Vec<ChangePoint>,
}

impl Trend {
    /// `nightly · pg · s1/tpcb-like/c8/r-`.
    pub fn label(&self) -> String {
        format!("{} · {} · {}", self.campaign, self.target, self.cell)
    }

    /// What `results trend` prints for the cell.
    pub fn text(&self) -> String {
        let mut out = format!("{}: {} sets", self.label(), self.levels.len());
        if self.levels.len() < 2 * MIN_SEGMENT {
            out.push_str(&format!(
                ", too few to judge (a change needs {MIN_SEGMENT} sets on each side)\n"
            ));
            return out;
        }
        if self.changes.is_empty() {
            out.push_str(", no change of level\n");
            return out;
        }
        out.push('\n');
        for c in &self.changes {
            let (before, at) = (&self.levels[c.index - 1], &self.levels[c.index]);
            out.push_str(&format!(
                "  level changed at set {} ({}): {:.1} → {:.1} tps ({:+.1} %), p = {:.2e} \
                 (Welch's t over {} sets before, {} from it on)\n",
                at.set_id,
                at.created_at,
                c.before,
                c.after,
                c.change * 100.0,
                c.p_value,
                c.n_before,
                c.n_after
            ));
            if let (Some(good), Some(bad)) = (&before.commit, &at.commit) {
                if good != bad {
                    out.push_str(&format!(
                        "  between commits {good} (set {}) and {bad}: pgsurge bisect \
                         CAMPAIGN.toml --good {good} --bad {bad} --threshold {:.0}\n",
                        before.set_id,
                        (c.change.abs() * 100.0 / 2.0).max(1.0)
                    ));
                }
            }
        }
        out
    }
}

/// The trends of every cell of every campaign in `store` whose label
/// ([`Trend::label`]) contains `filter`, by campaign, target and cell.
pub fn trends(store: &mut Store, filter: Option<&str>) -> Result<Vec<Trend>, StoreError> {
    let mut sets = store.list_sets()?;
    sets.sort_by_key(|s| s.id);
    let mut series: BTreeMap<(String, String, String), Vec<Level>> = BTreeMap::new();
    for set in &sets {
        let runs = store.list_runs(&RunFilter {
            set_id: Some(set.id),
            ..Default::default()
        })?;
        let mut commits: BTreeMap<i64, String> = BTreeMap::new();
        for (run_id, fact) in store.set_facts(set.id)? {
            if let (facts::BUILD_COMMIT, Some(v)) = (fact.name.as_str(), fact.value) {
                commits.insert(run_id, v);
            }
        }
        let mut cells: BTreeMap<(String, String), (Vec<f64>, Option<String>)> = BTreeMap::new();
        for run in runs.iter().filter(|r| r.record.status == run_status::OK) {
            let (Some((target, cell, _)), Some(tps)) =
                (cell_of(&run.record.test_key), run.record.tps)
            else {
                continue;
            };
            let entry = cells
                .entry((target.to_string(), cell.to_string()))
                .or_default();
            entry.0.push(tps);
            entry.1 = entry.1.take().or_else(|| commits.get(&run.id).cloned());
        }
        for ((target, cell), (values, commit)) in cells {
            series
                .entry((set.record.name.clone(), target, cell))
                .or_default()
                .push(Level {
                    set_id: set.id,
                    created_at: set.record.created_at.clone(),
                    tps: median(&values),
                    commit,
                });
        }
    }
    Ok(series
        .into_iter()
        .map(|((campaign, target, cell), levels)| {
            let values: Vec<f64> = levels.iter().map(|l| l.tps).collect();
            Trend {
                campaign,
                target,
                cell,
                changes: change_points(&values),
                levels,
            }
        })
        .filter(|t| filter.is_none_or(|f| t.label().contains(f)))
        .collect())
}
