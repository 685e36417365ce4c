//! `pgsurge results trend [FILTER]`: a campaign run again and again (a set per night,
//! the same cells) read as one series per cell — its level in each set, oldest set
//! first — and the sets where the level changed, found by
//! `pgsurge_analysis::change_points` (E-divisive means). A cell's level in a set is the
//! median tps of its successful repeats there. Where the sets are builds of commits
//! (targets built from a git checkout store `build_commit`), a change names the range
//! of commits and the `pgsurge bisect` command that searches it. [`document`] is the
//! same as JSON (`results trend --json`, schema [`TREND_SCHEMA`]).

use std::collections::BTreeMap;

use pgsurge_analysis::change_points::{change_points, ChangePoint, MAX_P, MIN_SEGMENT};
use pgsurge_analysis::describe::median;
use pgsurge_plan::repeats::cell_of;
use pgsurge_store::{facts, run_status, RunFilter, Store, StoreError};
use serde::Serialize;

/// Version of the `results trend --json` document.
pub const TREND_VERSION: u32 = 1;

/// JSON Schema of the `results trend --json` document (`pgsurge schema trend`).
pub const TREND_SCHEMA: &str = include_str!("../schema/trend.v1.json");

/// One set's level of a cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
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

/// The commits around a change and the `pgsurge bisect` command that searches them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bisect {
    /// The commit of the set before the change.
    pub good: String,
    /// That set.
    pub good_set_id: i64,
    /// The commit of the set at the change.
    pub bad: String,
    /// The threshold given to bisect, per cent: half the change, at least 1.
    pub threshold_pct: f64,
    /// The command, with `CAMPAIGN.toml` in place of the campaign file.
    pub command: String,
}

impl Trend {
    /// The bisect of change `c`, when the sets around it are builds of two commits.
    fn bisect(&self, c: &ChangePoint) -> Option<Bisect> {
        let (before, at) = (&self.levels[c.index - 1], &self.levels[c.index]);
        let (good, bad) = (before.commit.as_ref()?, at.commit.as_ref()?);
        if good == bad {
            return None;
        }
        let threshold_pct = (c.change.abs() * 100.0 / 2.0).max(1.0).round();
        Some(Bisect {
            good: good.clone(),
            good_set_id: before.set_id,
            bad: bad.clone(),
            threshold_pct,
            command: format!(
                "pgsurge bisect CAMPAIGN.toml --good {good} --bad {bad} --threshold {threshold_pct:.0}"
            ),
        })
    }

    /// Whether the series is long enough to hold a change.
    fn judged(&self) -> bool {
        self.levels.len() >= 2 * MIN_SEGMENT
    }
}

impl Trend {
    /// `nightly · pg · s1/tpcb-like/c8/r-`.
    pub fn label(&self) -> String {
        format!("{} · {} · {}", self.campaign, self.target, self.cell)
    }

    /// What `results trend` prints for the cell.
    pub fn text(&self) -> String {
        let mut out = format!("{}: {} sets", self.label(), self.levels.len());
        if !self.judged() {
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
            let at = &self.levels[c.index];
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
            if let Some(b) = self.bisect(c) {
                out.push_str(&format!(
                    "  between commits {} (set {}) and {}: {}\n",
                    b.good, b.good_set_id, b.bad, b.command
                ));
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

/// A change of level as `results trend --json` states it.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct Change {
    set_id: i64,
    created_at: String,
    #[serde(flatten)]
    point: ChangePoint,
    bisect: Option<Bisect>,
}

/// A cell's trend as `results trend --json` states it.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct CellTrend<'a> {
    campaign: &'a str,
    target: &'a str,
    cell: &'a str,
    label: String,
    judged: bool,
    levels: &'a [Level],
    changes: Vec<Change>,
}

/// The `results trend --json` document of `trends` (found with `filter`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrendDocument<'a> {
    format: &'static str,
    schema_version: u32,
    filter: Option<&'a str>,
    method: &'static str,
    max_p_value: f64,
    min_segment: usize,
    cells: Vec<CellTrend<'a>>,
}

/// The JSON document of `trends`.
pub fn document<'a>(trends: &'a [Trend], filter: Option<&'a str>) -> TrendDocument<'a> {
    let cells = trends
        .iter()
        .map(|t| CellTrend {
            campaign: &t.campaign,
            target: &t.target,
            cell: &t.cell,
            label: t.label(),
            judged: t.judged(),
            levels: &t.levels,
            changes: t
                .changes
                .iter()
                .map(|c| Change {
                    set_id: t.levels[c.index].set_id,
                    created_at: t.levels[c.index].created_at.clone(),
                    point: *c,
                    bisect: t.bisect(c),
                })
                .collect(),
        })
        .collect();
    TrendDocument {
        format: "pgsurge-trend",
        schema_version: TREND_VERSION,
        filter,
        method: "e-divisive means, Welch's t between neighbouring change points",
        max_p_value: MAX_P,
        min_segment: MIN_SEGMENT,
        cells,
    }
}
