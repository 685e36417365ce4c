//! The comparison of two groups of cells (A and B), the one model behind `pgsurge
//! compare` (text and JSON) and the report's comparison tables.
//!
//! * A is the first side (the baseline: the first target of a campaign, the first side
//!   named on the command line), B the second, everywhere; a comparison is titled
//!   `A → B`.
//! * Per matrix cell, the printed columns are the geometric means of the repeats of A
//!   and of B, and the change is their ratio minus one ([`ESTIMATE`]). Its 95 % interval
//!   and the verdict come from `pgsurge_analysis::verdict::judge`: paired by round when
//!   both sides ran in the same rounds, else Welch's t on the logarithms, or the
//!   Hodges–Lehmann interval when a repeat is an outlier; each metric says which.
//! * Verdict ([`Verdict`]) against a margin (±2 % by default, the A/A noise floor when
//!   that is wider, or given): `no-difference` when the whole interval lies within it,
//!   else `faster`/`slower` when the whole interval lies on one side of zero, else
//!   `inconclusive` ([`VERDICT_RULE`]). Beside it: the smallest detectable change, and
//!   the reasons the verdict may not hold (`pgsurge_analysis::validity`).
//! * Summary: the geometric mean over the compared cells of `1 + change`, minus one
//!   ([`SUMMARY_RULE`]); it always lies between the smallest and largest cell change.
//!
//! Owns no I/O. The JSON document ([`Comparison`] serialized) is described by
//! [`SCHEMA`] (format [`FORMAT`], version [`SCHEMA_VERSION`]).

//!
//! | module | owns |
//! |---|---|
//! | this file | the comparison's document: its types, rules and JSON Schema |
//! | `matching` | the cells of A and B matched and judged, the summary, the noise floor applied |
//! | `tables` | the figures as words and table rows shared by text, Markdown and HTML |
//! | `text` | `compare`'s text |
//! | `markdown` | `compare --format markdown` |

mod markdown;
mod matching;
mod tables;
mod text;

pub use markdown::render_markdown;
pub use matching::{compare, compare_with_margin, Along};
pub use tables::{
    costs_table, count, interval, pct, preamble, repeat_rows, row_cells, spread_text, value_text,
    workload_table, COLUMNS, COSTS_COLUMNS, REPEAT_COLUMNS, WORKLOAD_COLUMNS,
};
pub use text::render_text;

use crate::cells::{CellKey, RunSample};
use pgsurge_analysis::describe;
use pgsurge_analysis::noise_levels::{self, Advice, BuildsAdvice, LevelCosts};
use pgsurge_analysis::precision::CellPrecision;
use pgsurge_analysis::rank::Shift;
use pgsurge_analysis::validity::Reason;
use pgsurge_analysis::verdict::{Analysis, Margin, MarginSource};
use pgsurge_results::failure::AcknowledgedCommits;
use serde::Serialize;
use std::collections::BTreeMap;

/// Confidence level of the intervals.
pub const CONFIDENCE: f64 = pgsurge_analysis::verdict::CONFIDENCE;
/// Value of the `format` field of compare's JSON document.
pub const FORMAT: &str = "pgsurge-compare";
/// Version of compare's JSON document (`schema_version`); bumped on any change that a
/// consumer could notice.
pub const SCHEMA_VERSION: u32 = 2;
/// JSON Schema (draft 2020-12) of compare's JSON document.
pub const SCHEMA: &str = include_str!("../schema/compare.v2.json");
/// The estimate of change of every cell, as stated in outputs.
pub const ESTIMATE: &str = "change = geometric mean of B's repeats / geometric mean of A's repeats - 1; 95 % interval: paired t on the per-round log ratios when both sides ran in the same rounds (3 or more), else the Hodges-Lehmann interval of the logarithms when a repeat is an outlier (7 or more repeats a side), else Welch's t on the logarithms";
/// How a verdict is read from the interval, as stated in outputs.
pub const VERDICT_RULE: &str = "no-difference: the whole interval within the margin; faster/slower: else the whole interval on one side of zero; inconclusive: otherwise";
/// How the summary is made from the cells' changes, as stated in outputs.
pub const SUMMARY_RULE: &str = "geometric mean over the compared cells of (1 + change), minus 1";

/// The JSON Schema of `pgsurge compare --format json` (what `pgsurge schema compare`
/// prints).
pub fn compare_schema() -> &'static str {
    SCHEMA
}

pub use pgsurge_analysis::verdict::Verdict;

/// A dimension a comparison is made along: the two sides differ in it, and it is not
/// part of the cells that are matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dimension {
    /// Result sets (campaigns, imports).
    Set,
    /// Targets (a target carries its server and its settings).
    Target,
    /// Query mode (simple, extended, prepared).
    QueryMode,
    /// Workload (script or mix).
    Script,
    /// Scale factor.
    Scale,
    /// Number of clients.
    Clients,
    /// Target rate (`-R`).
    Rate,
}

impl Dimension {
    /// The name used in outputs and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Dimension::Set => "set",
            Dimension::Target => "target",
            Dimension::QueryMode => "query-mode",
            Dimension::Script => "script",
            Dimension::Scale => "scale",
            Dimension::Clients => "clients",
            Dimension::Rate => "rate",
        }
    }
}

/// Comparison of one metric (TPS or p99 latency) in one cell.
#[derive(Debug, Clone, Serialize)]
pub struct MetricComparison {
    /// Geometric mean of A's repeats (the printed A column).
    pub a: f64,
    /// Geometric mean of B's repeats (the printed B column).
    pub b: f64,
    /// A's repeats.
    pub a_values: Vec<f64>,
    /// B's repeats.
    pub b_values: Vec<f64>,
    /// `b / a - 1`; None when a side has no positive value.
    pub change: Option<f64>,
    /// Lower bound of the 95 % interval of the change.
    pub ci_low: Option<f64>,
    /// Upper bound.
    pub ci_high: Option<f64>,
    /// Two-sided Mann–Whitney p-value (a distribution-free cross-check).
    pub p_value: Option<f64>,
    /// `higher`, `lower` or `equal`: the sign of the change.
    pub direction: &'static str,
    /// What the confidence interval says about B against A.
    pub verdict: Verdict,
    /// The analysis the interval and the verdict rest on.
    pub analysis: Analysis,
    /// Rounds paired (paired analysis only).
    pub rounds: Option<usize>,
    /// The equivalence margin the verdict was judged against (0.02 = ±2 %).
    pub margin: f64,
    /// Where the margin came from.
    pub margin_source: MarginSource,
    /// The interval's half-width (log scale, as a relative change).
    pub half_width: Option<f64>,
    /// The smallest change this comparison would have detected (95 %, 80 % power).
    pub detectable_change: Option<f64>,
    /// When the interval is wider than the margin: repeats per side (rounds, when
    /// paired) the measured spread needs to resolve a change of the margin's size.
    pub repeats_needed: Option<usize>,
    /// Hodges–Lehmann shift of the logarithms with its interval, as a relative change,
    /// when each side has enough repeats.
    pub robust: Option<Shift>,
    /// Positions in `a_values` of A's outliers (flagged, never dropped).
    pub a_outliers: Vec<usize>,
    /// Positions in `b_values` of B's outliers.
    pub b_outliers: Vec<usize>,
    /// (A, B) per paired round, kept to judge again against another margin.
    #[serde(skip)]
    round_values: Vec<(f64, f64)>,
    #[serde(skip)]
    higher_is_better: bool,
    /// `[repeats] until` in words, said with the basis of the cell's TPS verdict.
    #[serde(skip)]
    until: Option<String>,
    /// Where the noise lives, in words, said with the basis of the cell's TPS verdict.
    #[serde(skip)]
    levels: Option<String>,
}

/// One compared cell.
#[derive(Debug, Clone, Serialize)]
pub struct CompareRow {
    /// The matrix cell (a dimension compared along is `*`).
    pub key: CellKey,
    /// The target, when targets are cells rather than the compared dimension.
    pub target: Option<String>,
    /// Its label.
    pub label: String,
    /// Repeats on A.
    pub a_n: usize,
    /// Repeats on B.
    pub b_n: usize,
    /// Throughput (higher is better).
    pub tps: MetricComparison,
    /// p99 latency in ms (lower is better); None when no run stored it.
    pub p99_ms: Option<MetricComparison>,
    /// The repeats of each side as plain statistics (the table a patch's author posts).
    pub repeats: Repeats,
    /// Human-readable warnings about this cell (its validity reasons among them).
    pub warnings: Vec<String>,
    /// Why the cell's verdicts may not hold, from the runs' stored data.
    pub validity: Vec<Reason>,
    /// A workload pack's throughput metrics (NOPM…) both sides have, compared as tps is.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub workload_metrics: Vec<WorkloadComparison>,
    /// Per-transaction costs both sides measured (lower is better), compared as tps is.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub txn_costs: Vec<CostComparison>,
    /// `--explain`: what changed in the profiles stored with the repeats, by kind.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub explanations: Vec<crate::explain::Explanation>,
    /// `[repeats] until`: the precision each side's campaign reached for the cell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeats_until: Option<RepeatsUntil>,
    /// Where each side's TPS noise lives, when its repeats span several server starts
    /// with several runs in each.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise_levels: Option<NoiseLevels>,
    /// Acknowledged commits lost after the faults of each side's repeats, when a side
    /// checked them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acknowledged_lost: Option<AcknowledgedLost>,
    /// Run ids of A's repeats.
    #[serde(skip)]
    pub a_run_ids: Vec<i64>,
    /// Run ids of B's repeats.
    #[serde(skip)]
    pub b_run_ids: Vec<i64>,
}

/// Where the noise of a compared cell's TPS lives, per side: within a server start or
/// between starts, and between layout builds (`pgsurge_analysis::noise_levels`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NoiseLevels {
    /// A's two levels; None when A's repeats do not span two starts of two runs, or
    /// ran on two layout builds or more (the three levels of `builds` hold them then).
    pub a: Option<Advice>,
    /// B's.
    pub b: Option<Advice>,
    /// The three levels of each side whose repeats ran on two layout builds or more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub builds: Option<BuildsLevels>,
}

/// The builds level of each side (None for a side without two layout builds).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BuildsLevels {
    /// A's.
    pub a: Option<SideBuilds>,
    /// B's.
    pub b: Option<SideBuilds>,
}

/// The builds level of one side: the analysis, and which builds its repeats ran on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideBuilds {
    /// The three levels, or why they are not estimable.
    #[serde(flatten)]
    pub advice: BuildsAdvice,
    /// The layout builds' seeds, in order.
    pub layout_seeds: Vec<u64>,
    /// The SHA-256 of each build's `postgres`, in the order of the seeds.
    pub postgres_sha256: Vec<String>,
}

impl SideBuilds {
    /// The levels of a side's samples: runs and starts, or over layout builds (fact
    /// `build_layout_seed`, two or more) runs, starts within a build and builds, as
    /// [`noise_levels::of_side`] judges them.
    fn of(samples: &[RunSample]) -> (Option<Advice>, Option<SideBuilds>) {
        let runs: Vec<(Option<&str>, &str, f64)> = samples
            .iter()
            .filter_map(|r| {
                let build = r.levels.layout_seed.and(r.levels.build_key.as_deref());
                Some((build, r.server_start.as_deref()?, r.tps?))
            })
            .collect();
        let on_layouts: Vec<&RunSample> = samples
            .iter()
            .filter(|r| r.levels.layout_seed.is_some() && r.server_start.is_some())
            .collect();
        let side = noise_levels::of_side(&runs, level_costs(&on_layouts));
        let Some(advice) = side.builds else {
            return (side.starts, None);
        };
        let mut builds: Vec<(u64, String)> = on_layouts
            .iter()
            .filter_map(|r| {
                let seed = r.levels.layout_seed?;
                Some((seed, r.levels.postgres_sha256.clone().unwrap_or_default()))
            })
            .collect();
        builds.sort();
        builds.dedup();
        let builds = SideBuilds {
            advice,
            layout_seeds: builds.iter().map(|b| b.0).collect(),
            postgres_sha256: builds.into_iter().map(|b| b.1).collect(),
        };
        (side.starts, Some(builds))
    }

    /// `over layout builds (seeds 1, 2): …`.
    fn text(&self) -> String {
        let seeds: Vec<String> = self.layout_seeds.iter().map(u64::to_string).collect();
        format!(
            "over layout builds (seeds {}): {}",
            seeds.join(", "),
            self.advice.text()
        )
    }
}

/// The measured wall time of one repeat of each level of `samples`: a run (their
/// mean), a server start (its start and the data loaded into it, the mean over the
/// starts), a build (the mean over the builds); None when one was not measured.
fn level_costs(samples: &[&RunSample]) -> Option<LevelCosts> {
    let mut starts: BTreeMap<&str, f64> = BTreeMap::new();
    let mut builds: BTreeMap<&str, f64> = BTreeMap::new();
    let mut runs = Vec::new();
    for r in samples {
        let l = &r.levels;
        runs.push(l.run_seconds?);
        let start = starts
            .entry(r.server_start.as_deref()?)
            .or_insert(l.start_seconds?);
        *start += l.init_seconds.unwrap_or(0.0);
        builds.insert(l.build_key.as_deref()?, l.build_seconds?);
    }
    let mean = |v: Vec<f64>| (!v.is_empty()).then(|| describe::mean(&v));
    Some(LevelCosts {
        run: mean(runs)?,
        start: mean(starts.into_values().collect())?,
        build: mean(builds.into_values().collect())?,
    })
}

impl NoiseLevels {
    /// Of the two sides' samples; None when neither spans two starts of two runs nor
    /// two layout builds.
    fn of(a: &[RunSample], b: &[RunSample]) -> Option<NoiseLevels> {
        let ((a, builds_a), (b, builds_b)) = (SideBuilds::of(a), SideBuilds::of(b));
        let builds = BuildsLevels {
            a: builds_a,
            b: builds_b,
        };
        let levels = NoiseLevels {
            a,
            b,
            builds: (builds.a.is_some() || builds.b.is_some()).then_some(builds),
        };
        (levels.a.is_some() || levels.b.is_some() || levels.builds.is_some()).then_some(levels)
    }

    /// `noise levels of A: 96 % of the variance between server starts (…)`, per side,
    /// and per side over layout builds.
    fn text(&self) -> String {
        let builds = self.builds.as_ref();
        [
            ("A", self.a, builds.and_then(|b| b.a.as_ref())),
            ("B", self.b, builds.and_then(|b| b.b.as_ref())),
        ]
        .iter()
        .flat_map(|(side, l, over)| {
            let two = l.map(|l| format!("noise levels of {side}: {}", l.text()));
            let three = over.map(|o| format!("noise levels of {side} {}", o.text()));
            two.into_iter().chain(three)
        })
        .collect::<Vec<_>>()
        .join("; ")
    }
}

/// Acknowledged commits lost in a compared cell, per side: summed over the repeats
/// that checked theirs (None: no repeat of the side did).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AcknowledgedLost {
    /// A's.
    pub a: Option<AcknowledgedCommits>,
    /// B's.
    pub b: Option<AcknowledgedCommits>,
}

/// `[repeats] until` of a compared cell: what each side's campaign stored when it
/// stopped repeating the cell (the same on both sides when they are targets of one
/// campaign).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RepeatsUntil {
    /// A's; None when A's campaign asked for no precision.
    pub a: Option<CellPrecision>,
    /// B's.
    pub b: Option<CellPrecision>,
}

impl RepeatsUntil {
    /// `until ±2 %: reached (±1.3 % after 4 repeats)`, or each side's when they differ.
    pub fn text(&self) -> String {
        match (self.a, self.b) {
            (Some(a), Some(b)) if a == b => a.until_text(),
            (a, b) => {
                let side = |name: &str, p: Option<CellPrecision>| {
                    p.map_or(format!("{name} none asked"), |p| {
                        format!("{name} {}", p.until_text())
                    })
                };
                format!("{}, {}", side("A", a), side("B", b))
            }
        }
    }
}

/// One per-transaction cost of a compared cell (`server_cpu_user_us`).
#[derive(Debug, Clone, Serialize)]
pub struct CostComparison {
    /// A `pgsurge_results::COST_KINDS` name.
    pub name: String,
    /// Unit of one transaction's share (`µs`, `bytes`, `count`).
    pub unit: String,
    /// Repeats of A that measured it.
    pub a_n: usize,
    /// Repeats of B that measured it.
    pub b_n: usize,
    /// The comparison (lower is better).
    pub comparison: MetricComparison,
}

/// One workload pack metric of a compared cell.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadComparison {
    /// The pack's name for it (`NOPM`).
    pub name: String,
    /// `per minute` or `per second`.
    pub unit: String,
    /// Repeats of A that have it.
    pub a_n: usize,
    /// Repeats of B that have it.
    pub b_n: usize,
    /// The comparison (higher is better).
    pub comparison: MetricComparison,
}

/// Plain statistics of one side's repeats.
pub type RepeatStats = describe::Summary;

/// A statistic on both sides.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Pair {
    /// A's repeats.
    pub a: RepeatStats,
    /// B's repeats.
    pub b: RepeatStats,
}

/// The repeats of a cell on both sides: throughput and average latency.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Repeats {
    /// Transactions per second.
    pub tps: Pair,
    /// Average latency (ms); None when a side stored none.
    pub latency_avg_ms: Option<Pair>,
}

/// Verdicts counted by name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct VerdictCounts {
    /// `faster`.
    pub faster: usize,
    /// `slower`.
    pub slower: usize,
    /// `no-difference`.
    #[serde(rename = "no-difference")]
    pub no_difference: usize,
    /// `inconclusive`.
    pub inconclusive: usize,
}

impl VerdictCounts {
    fn add(&mut self, v: Verdict) {
        match v {
            Verdict::Faster => self.faster += 1,
            Verdict::Slower => self.slower += 1,
            Verdict::NoDifference => self.no_difference += 1,
            Verdict::Inconclusive => self.inconclusive += 1,
        }
    }

    fn text(&self) -> String {
        format!(
            "{} faster, {} slower, {} no-difference, {} inconclusive",
            self.faster, self.slower, self.no_difference, self.inconclusive
        )
    }
}

/// The aggregate of the compared cells.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Cells compared.
    pub cells: usize,
    /// [`SUMMARY_RULE`] applied to the TPS changes.
    pub tps_change: Option<f64>,
    /// [`SUMMARY_RULE`] applied to the p99 latency changes.
    pub p99_change: Option<f64>,
    /// TPS verdicts.
    pub tps_verdicts: VerdictCounts,
    /// p99 latency verdicts.
    pub p99_verdicts: VerdictCounts,
    /// Cells whose verdicts carry a reason they may not hold.
    pub with_validity_reasons: usize,
}

/// The noise floor of the machine measured by an A/A comparison.
#[derive(Debug, Clone, Serialize)]
pub struct NoiseFloor {
    /// Title of the A/A comparison.
    pub from: String,
    /// Widest half-width of its TPS intervals (0.01 = ±1 %).
    pub tps_half_width: f64,
}

/// A whole comparison: what `pgsurge compare --format json` prints.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Always [`FORMAT`].
    pub format: &'static str,
    /// Always [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `A → B`.
    pub title: String,
    /// What A is (the baseline).
    pub a_label: String,
    /// What B is.
    pub b_label: String,
    /// Dimensions compared along.
    pub along: Vec<Dimension>,
    /// Dimensions that make a cell.
    pub cell_dimensions: Vec<&'static str>,
    /// [`ESTIMATE`].
    pub estimate: &'static str,
    /// [`SUMMARY_RULE`].
    pub summary_rule: &'static str,
    /// Confidence level of the intervals.
    pub confidence: f64,
    /// [`VERDICT_RULE`].
    pub verdict_rule: &'static str,
    /// The margin given (or the default), before any noise floor widened it.
    pub margin: Margin,
    /// Cells present on both sides.
    pub cells: Vec<CompareRow>,
    /// Labels of the cells only A has.
    pub only_in_a: Vec<String>,
    /// Labels of the cells only B has.
    pub only_in_b: Vec<String>,
    /// The geometric mean of the per-cell ratios and its overall verdict.
    pub summary: Summary,
    /// From an A/A comparison, when one was measured.
    pub noise_floor: Option<NoiseFloor>,
}

#[cfg(test)]
mod tests {
    use super::tables::signed_pct;
    use super::*;
    use crate::cells::Cell;
    use crate::cells::Percentiles;
    use pgsurge_analysis::describe::median;
    use pgsurge_analysis::validity::Evidence;

    fn cell(target: &str, clients: i64, tps: &[f64], p99: &[f64]) -> Cell {
        Cell {
            set_id: 1,
            target: target.into(),
            key: CellKey {
                script: "select-only".into(),
                scale: 10,
                clients,
                rate_milli: 0,
                query_mode: "prepared".into(),
                extra: String::new(),
            },
            run_ids: vec![],
            tps: tps.to_vec(),
            p99_ms: p99.to_vec(),
            latency_mean_ms: tps.iter().map(|t| 1000.0 / t).collect(),
            tps_median: median(tps),
            tps_min: 0.0,
            tps_max: 0.0,
            latency_ms: Percentiles::default(),
            lag_mean_ms: None,
            failed: 0,
            client_bound: 0,
            workload_metrics: Vec::new(),
            samples: tps
                .iter()
                .enumerate()
                .map(|(i, t)| crate::cells::RunSample {
                    run_id: i as i64,
                    set_id: 1,
                    repeat: i as i64 + 1,
                    // Each side's runs in a block of its own: not paired.
                    start: i as f64 + if target == "b" { 100.0 } else { 0.0 },
                    tps: Some(*t),
                    p99_ms: p99.get(i).copied(),
                    server_start: None,
                    levels: Default::default(),
                    evidence: Evidence {
                        runs: 1,
                        ..Evidence::default()
                    },
                })
                .collect(),
            txn_costs: Vec::new(),
            repeats_until: None,
            acknowledged: None,
        }
    }

    #[test]
    fn a_cell_says_whether_its_campaign_reached_the_precision_asked() {
        let until = |h: f64, n: usize| CellPrecision {
            target: 0.02,
            half_width: Some(h),
            repeats: n,
            budget_spent: false,
            inconclusive: false,
        };
        let mut a = cell("a", 8, &[1000.0, 1010.0, 990.0], &[]);
        let mut b = cell("b", 8, &[1100.0, 1111.0, 1089.0], &[]);
        a.repeats_until = Some(until(0.013, 3));
        b.repeats_until = Some(until(0.013, 3));
        let c = compare("a", &[a.clone()], "b", &[b.clone()], &Along::targets());
        let row = &c.cells[0];
        assert!(
            row.tps
                .basis_text()
                .ends_with("; until ±2 %: reached (±1.3 % after 3 repeats)"),
            "{}",
            row.tps.basis_text()
        );
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["cells"][0]["repeats_until"]["a"]["repeats"], 3);
        // Sides from two campaigns: each side's said apart.
        b.repeats_until = Some(CellPrecision {
            budget_spent: true,
            ..until(0.031, 10)
        });
        let c = compare("a", &[a.clone()], "b", &[b], &Along::targets());
        assert!(c.cells[0].tps.basis_text().ends_with(
            "A until ±2 %: reached (±1.3 % after 3 repeats), B until ±2 %: not reached, \
             ±3.1 % after 10 repeats, budget spent"
        ));
        // Without [repeats], nothing is said and the JSON has no such field.
        a.repeats_until = None;
        let plain = compare(
            "a",
            &[a],
            "b",
            &[cell("b", 8, &[1.0, 2.0], &[])],
            &Along::targets(),
        );
        assert!(!plain.cells[0].tps.basis_text().contains("until"));
        let json = serde_json::to_value(&plain).unwrap();
        assert!(json["cells"][0].get("repeats_until").is_none());
    }

    fn pack_metric(name: &str, unit: &str, values: &[f64]) -> crate::cells::CellMetric {
        crate::cells::CellMetric {
            name: name.into(),
            unit: unit.into(),
            description: String::new(),
            values: values.to_vec(),
        }
    }

    #[test]
    fn a_packs_throughput_metrics_are_compared_as_tps_and_its_counts_are_not() {
        let mut a = cell("base", 8, &[100.0, 110.0, 105.0], &[]);
        let mut b = cell("patched", 8, &[120.0, 130.0, 125.0], &[]);
        a.workload_metrics = vec![
            pack_metric("NOPM", "per minute", &[1000.0, 1010.0, 990.0]),
            pack_metric("New-Order rollbacks", "in the run", &[3.0, 4.0, 5.0]),
        ];
        b.workload_metrics = vec![
            pack_metric("NOPM", "per minute", &[1500.0, 1490.0, 1510.0]),
            pack_metric("New-Order rollbacks", "in the run", &[6.0, 7.0, 5.0]),
        ];
        let c = compare("base", &[a], "patched", &[b], &Along::targets());
        let w = &c.cells[0].workload_metrics;
        assert_eq!(w.len(), 1, "only the rate is compared: {w:?}");
        assert_eq!((w[0].name.as_str(), w[0].a_n, w[0].b_n), ("NOPM", 3, 3));
        assert!((w[0].comparison.change.unwrap() - 0.5).abs() < 0.01);
        assert_eq!(w[0].comparison.verdict, Verdict::Faster);
        let text = render_text(&c);
        let line = text
            .lines()
            .find(|l| l.contains("NOPM (per minute)"))
            .unwrap_or_else(|| panic!("no NOPM line in\n{text}"));
        assert!(line.contains("1000.0") && line.contains("1500.0"), "{line}");
        assert!(render_markdown(&c).contains("| NOPM (per minute) |"));
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["cells"][0]["workload_metrics"][0]["name"], "NOPM");

        let plain = compare(
            "base",
            &[cell("base", 8, &[1.0, 2.0], &[])],
            "patched",
            &[cell("patched", 8, &[1.0, 2.0], &[])],
            &Along::targets(),
        );
        assert!(!render_text(&plain).contains("workload metrics"));
        let json = serde_json::to_value(&plain).unwrap();
        assert!(json["cells"][0].get("workload_metrics").is_none());
    }

    #[test]
    fn per_transaction_costs_are_compared_with_lower_being_better() {
        let mut a = cell("base", 8, &[100.0, 110.0, 105.0], &[]);
        let mut b = cell("patched", 8, &[100.0, 110.0, 105.0], &[]);
        a.txn_costs = vec![
            pack_metric("server_cpu_user_us", "µs", &[200.0, 202.0, 198.0]),
            pack_metric("wal_bytes", "bytes", &[500.0, 501.0, 499.0]),
        ];
        b.txn_costs = vec![
            pack_metric("server_cpu_user_us", "µs", &[240.0, 242.0, 238.0]),
            pack_metric("wal_bytes", "bytes", &[400.0, 401.0, 399.0]),
        ];
        let c = compare("base", &[a], "patched", &[b], &Along::targets());
        let costs = &c.cells[0].txn_costs;
        assert_eq!(costs.len(), 2, "{costs:?}");
        let cpu = &costs[0];
        assert_eq!(
            (cpu.name.as_str(), cpu.a_n, cpu.b_n),
            ("server_cpu_user_us", 3, 3)
        );
        assert!((cpu.comparison.change.unwrap() - 0.2).abs() < 0.01);
        assert_eq!(cpu.comparison.verdict, Verdict::Slower, "B costs more");
        assert_eq!(
            costs[1].comparison.verdict,
            Verdict::Faster,
            "B writes less WAL"
        );
        let text = render_text(&c);
        let line = text
            .lines()
            .find(|l| l.contains("server_cpu_user_us (µs)"))
            .unwrap_or_else(|| panic!("no server CPU line in\n{text}"));
        assert!(line.contains("slower") && line.contains("+20.0"), "{line}");
        assert!(render_markdown(&c).contains("| wal_bytes (bytes) |"));
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["cells"][0]["txn_costs"][1]["name"], "wal_bytes");
        pgsurge_testkit::schema::assert_valid(SCHEMA, &json);
    }

    #[test]
    fn each_side_s_repeats_are_summed_up_in_text_json_and_markdown() {
        let a = vec![cell("base", 8, &[100.0, 120.0, 110.0], &[])];
        let b = vec![cell("patched", 8, &[80.0, 90.0, 85.0, 95.0], &[])];
        let c = compare("base", &a, "patched", &b, &Along::targets());
        let r = &c.cells[0].repeats;
        assert_eq!((r.tps.a.n, r.tps.a.mean, r.tps.a.median), (3, 110.0, 110.0));
        assert_eq!((r.tps.a.min, r.tps.a.max), (100.0, 120.0));
        assert!((r.tps.a.stddev.unwrap() - 10.0).abs() < 1e-9);
        assert_eq!((r.tps.b.n, r.tps.b.mean, r.tps.b.median), (4, 87.5, 87.5));
        let lat = r.latency_avg_ms.unwrap();
        assert!((lat.a.min - 1000.0 / 120.0).abs() < 1e-9);
        assert_eq!(RepeatStats::of(&[5.0]).stddev, None);

        let text = render_text(&c);
        let line = text
            .lines()
            .find(|l| l.contains("  A  ") && l.contains("110.0"))
            .unwrap_or_else(|| panic!("no A repeats line in\n{text}"));
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(
            &words[words.len() - 12..words.len() - 5],
            ["A", "3", "110.0", "110.0", "100.0", "120.0", "10.0"],
            "{line}"
        );
        assert!(text.contains("standard deviation"), "{text}");

        let md = render_markdown(&c);
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
        // The verdicts (header, rule, one cell), then the repeats (header, rule, A, B).
        assert_eq!(rows.len(), 7, "{md}");
        assert!(
            rows[5].ends_with("| A | 3 | 110.0 | 110.0 | 100.0 | 120.0 | 10.0 |"),
            "{md}"
        );
        assert!(
            rows[6].ends_with("| B | 4 | 87.5 | 87.5 | 80.0 | 95.0 | 6.5 |"),
            "{md}"
        );
        let verdicts: Vec<&str> = rows[2].split(" | ").collect();
        assert_eq!(verdicts[5], c.cells[0].tps.verdict.name(), "{md}");
        assert!(md.contains("geometric means"), "{md}");
        assert!(md.contains("mean: arithmetic mean"), "{md}");
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["cells"][0]["repeats"]["tps"]["b"]["n"], 4);
    }

    #[test]
    fn one_cell_is_counted_in_the_singular() {
        let a = vec![cell("a", 1, &[1000.0, 1010.0, 995.0], &[])];
        let b = vec![cell("b", 1, &[1100.0, 1090.0, 1112.0], &[])];
        let text = render_text(&compare("A", &a, "B", &b, &Along::targets()));
        assert!(
            text.contains("\nsummary over 1 cell (geometric mean"),
            "{text}"
        );
        let a2 = vec![a[0].clone(), cell("a", 2, &[900.0, 910.0, 905.0], &[])];
        let b2 = vec![b[0].clone(), cell("b", 2, &[950.0, 940.0, 960.0], &[])];
        let text = render_text(&compare("A", &a2, "B", &b2, &Along::targets()));
        assert!(
            text.contains("\nsummary over 2 cells (geometric mean"),
            "{text}"
        );
    }

    #[test]
    fn a_skewed_noisy_interval_is_printed_with_its_ends() {
        let a = vec![cell("a", 1, &[100.0, 1000.0, 30.0], &[])];
        let b = vec![cell("b", 1, &[50.0, 2000.0, 400.0], &[])];
        let c = compare("A", &a, "B", &b, &Along::targets());
        let text = render_text(&c);
        let noise = c.cells[0]
            .warnings
            .iter()
            .find(|w| w.starts_with("noise too high"))
            .unwrap_or_else(|| panic!("no noise warning: {text}"));
        let (lo, hi) = (
            c.cells[0].tps.ci_low.unwrap(),
            c.cells[0].tps.ci_high.unwrap(),
        );
        let change = c.cells[0].tps.change.unwrap();
        assert!(((hi - change) - (change - lo)).abs() > 0.01, "{text}");
        assert!(
            noise.contains(&format!(
                "(interval [{}, {}]): ",
                signed_pct(lo),
                signed_pct(hi)
            )),
            "{text}"
        );
        assert!(
            noise.ends_with("repeats per side would resolve it")
                || noise.ends_with("repeats per side would be needed"),
            "{noise}"
        );
        assert!(!noise.contains('±'), "{text}");
        let row = text.lines().find(|l| l.starts_with("select-only")).unwrap();
        assert!(!row.contains('±'), "{text}");
    }

    #[test]
    fn client_bound_runs_are_named_in_the_comparison() {
        let a = vec![cell("a", 1, &[1000.0, 1010.0, 995.0], &[])];
        let mut b = vec![cell("b", 1, &[1100.0, 1090.0, 1112.0], &[])];
        let c = compare("A", &a, "B", &b, &Along::targets());
        assert!(!c.cells[0]
            .warnings
            .iter()
            .any(|w| w.contains("client-bound")));
        b[0].client_bound = 2;
        for s in &mut b[0].samples[..2] {
            s.evidence.client_bound = 1;
        }
        let c = compare("A", &a, "B", &b, &Along::targets());
        assert!(
            c.cells[0].warnings.iter().any(|w| {
                w
                == "client-bound runs (A 0 of 3, B 2 of 3): they measure the client, not the server"
            }),
            "{:?}",
            c.cells[0].warnings
        );
    }

    #[test]
    fn verdicts_follow_the_interval_and_the_summary_aggregates_the_printed_changes() {
        let a = vec![
            cell(
                "a",
                1,
                &[1000.0, 1010.0, 995.0, 1003.0],
                &[2.0, 2.1, 2.05, 2.02],
            ),
            cell("a", 2, &[500.0, 510.0, 490.0], &[1.0, 1.0, 1.0]),
            cell("a", 4, &[2000.0, 2010.0, 1990.0], &[]),
            cell("a", 8, &[100.0], &[]),
        ];
        let b = vec![
            cell(
                "b",
                1,
                &[1100.0, 1090.0, 1112.0, 1105.0],
                &[1.5, 1.55, 1.52, 1.51],
            ),
            cell("b", 2, &[505.0, 495.0, 500.0], &[1.0, 1.01, 0.99]),
            cell("b", 4, &[1800.0, 1810.0, 1795.0], &[]),
            cell("b", 16, &[100.0], &[]),
        ];
        let c = compare("A", &a, "B", &b, &Along::targets());
        assert_eq!(c.title, "A → B");
        assert_eq!(c.cells.len(), 3);
        assert_eq!(c.cells[0].tps.verdict, Verdict::Faster);
        assert_eq!(c.cells[0].p99_ms.as_ref().unwrap().verdict, Verdict::Faster);
        // [−4.1 %, +4.3 %] holds zero and reaches beyond ±2 %: the repeats cannot tell.
        assert_eq!(c.cells[1].tps.verdict, Verdict::Inconclusive);
        assert!(c.cells[1]
            .warnings
            .iter()
            .any(|w| w.contains("noise too high to see a 2.0 % change")
                && w.ends_with("repeats per side would resolve it")));
        assert_eq!(c.cells[2].tps.verdict, Verdict::Slower);
        assert_eq!(c.cells[2].tps.direction, "lower");
        assert!(c.cells[2].p99_ms.is_none());
        let v = c.summary.tps_verdicts;
        assert_eq!(
            (v.faster, v.slower, v.no_difference, v.inconclusive),
            (1, 1, 0, 1)
        );
        assert_eq!(c.only_in_a, ["select-only s=10 c=8 prepared"]);
        assert_eq!(c.only_in_b, ["select-only s=10 c=16 prepared"]);
        // The change is exactly the ratio of the printed columns (geometric means).
        for r in &c.cells {
            assert!((r.tps.change.unwrap() - (r.tps.b / r.tps.a - 1.0)).abs() < 1e-12);
            let gm = |v: &[f64]| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp();
            assert!((r.tps.a - gm(&r.tps.a_values)).abs() < 1e-9);
        }
        // The summary is the geometric mean of (1 + change) and lies within the cells'.
        let prod: f64 = c
            .cells
            .iter()
            .map(|r| 1.0 + r.tps.change.unwrap())
            .product();
        let expected = prod.powf(1.0 / 3.0) - 1.0;
        assert!((c.summary.tps_change.unwrap() - expected).abs() < 1e-12);
        let text = render_text(&c);
        assert!(text.starts_with("A → B\nA: A\nB: B\n"), "{text}");
        assert!(text.contains("inconclusive") && text.contains("slower"));
        assert!(
            text.contains("how each tps verdict was reached (no-difference: the whole interval within the margin"),
            "{text}"
        );
        assert!(!text.contains(" ~ ") && !text.contains(" ? "));
        assert!(text.contains("only in A: select-only s=10 c=8 prepared"));
        assert!(text.contains("only in B: select-only s=10 c=16 prepared"));
        // --fail-on: the c=4 cell is 10 % slower.
        assert_eq!(c.regressions(0.0).len(), 1);
        assert_eq!(c.regressions(0.05).len(), 1);
        assert!(c.regressions(0.2).is_empty());
    }

    #[test]
    fn rounds_run_next_to_each_other_are_paired_and_cancel_a_shared_drift() {
        // Base drifted 1487 → 782 → 575 over three rounds; B ran right after A in
        // each round and is 59 % slower.
        let mut a = cell("a", 1, &[1487.0, 782.0, 575.0], &[]);
        let mut b = cell("b", 1, &[610.0, 321.0, 236.0], &[]);
        for (i, s) in a.samples.iter_mut().enumerate() {
            s.start = 10.0 * i as f64;
        }
        for (i, s) in b.samples.iter_mut().enumerate() {
            s.start = 10.0 * i as f64 + 5.0;
        }
        let c = compare("A", &[a.clone()], "B", &[b.clone()], &Along::targets());
        let t = &c.cells[0].tps;
        assert_eq!((t.analysis, t.rounds), (Analysis::Paired, Some(3)), "{t:?}");
        assert_eq!(t.verdict, Verdict::Slower, "{t:?}");
        assert!(render_text(&c).contains(": paired over 3 rounds; margin ±2.0 % (default)"));
        // The same values run in two blocks (all of A, then all of B) are not paired.
        for (i, s) in b.samples.iter_mut().enumerate() {
            s.start = 100.0 + i as f64;
        }
        let c = compare("A", &[a], "B", &[b], &Along::targets());
        let t = &c.cells[0].tps;
        assert_eq!(t.analysis, Analysis::Welch, "{t:?}");
        assert_eq!(t.verdict, Verdict::Inconclusive, "{t:?}");
    }

    #[test]
    fn an_outlier_is_flagged_and_kept_and_the_verdict_says_it_used_the_robust_interval() {
        // A's eighth repeat is far from the others (the `verdict` unit test's values):
        // flagged, kept in the geometric mean, and the interval is Hodges–Lehmann's.
        let a_tps = [1000.0, 1004.0, 998.0, 1002.0, 1001.0, 999.0, 1003.0, 420.0];
        let b_tps = [950.0, 953.0, 948.0, 951.0, 949.0, 952.0, 950.5, 951.5];
        let c = compare(
            "A",
            &[cell("a", 1, &a_tps, &[])],
            "B",
            &[cell("b", 1, &b_tps, &[])],
            &Along::targets(),
        );
        let t = &c.cells[0].tps;
        assert_eq!(t.analysis, Analysis::HodgesLehmann, "{t:?}");
        assert_eq!(t.verdict, Verdict::Slower, "{t:?}");
        assert_eq!(t.a_outliers, vec![7]);
        assert_eq!(t.a_values.len(), 8, "never dropped");
        let text = render_text(&c);
        assert!(text.contains("outliers (kept): A 420.0"), "{text}");
        assert!(
            text.contains("robust shift −5.0 % [−5.2 %, −4.7 %]"),
            "{text}"
        );
        assert!(text.contains(": hodges-lehmann; "), "{text}");
        // The row's change is the shift its interval belongs to.
        let row = text
            .lines()
            .find(|l| l.contains("[-5.2%, -4.7%]"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(row.contains("-5.0%") && !row.contains("+5.9%"), "{row}");
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["cells"][0]["tps"]["a_outliers"][0], 7);
        assert_eq!(json["cells"][0]["tps"]["analysis"], "hodges-lehmann");
    }

    #[test]
    fn a_wide_interval_is_inconclusive_and_cannot_pass_an_invalid_gate() {
        let a = vec![cell("a", 1, &[100.0, 810.5], &[])];
        let b = vec![cell("b", 1, &[120.0, 125.0], &[])];
        let c = compare("A", &a, "B", &b, &Along::targets());
        assert_eq!(c.cells[0].tps.verdict, Verdict::Inconclusive);
        assert!(c.regressions(0.03).is_empty());
        let invalid = c.invalid(false);
        assert_eq!(invalid.len(), 1, "{invalid:?}");
        assert!(
            invalid[0].contains("fewer than 3 repeats (A 2, B 2)"),
            "{invalid:?}"
        );
        assert_eq!(c.invalid(true).len(), 2);
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["cells"][0]["validity"][0]["kind"], "few-repeats");
    }

    #[test]
    fn a_wider_noise_floor_becomes_the_margin_and_the_verdicts_are_judged_again() {
        let a = vec![cell("a", 1, &[1000.0, 1010.0, 995.0, 1003.0], &[])];
        let b = vec![cell("b", 1, &[1030.0, 1040.0, 1025.0, 1033.0], &[])];
        let c = compare("A", &a, "B", &b, &Along::targets());
        assert_eq!(c.cells[0].tps.verdict, Verdict::Faster);
        let noisy_aa = compare(
            "A",
            &[cell("a", 1, &[900.0, 1100.0, 1000.0], &[])],
            "A'",
            &[cell("b", 1, &[1000.0, 950.0, 1050.0], &[])],
            &Along::targets(),
        );
        let c = c.with_noise_floor(&noisy_aa);
        let t = &c.cells[0].tps;
        assert_eq!(t.margin_source, MarginSource::NoiseFloor);
        assert!(t.margin > 0.05, "{t:?}");
        assert_eq!(t.verdict, Verdict::NoDifference, "{t:?}");
        assert_eq!(c.summary.tps_verdicts.no_difference, 1);
    }

    #[test]
    fn single_runs_are_inconclusive_with_a_warning() {
        let c = compare(
            "A",
            &[cell("a", 1, &[10.0], &[])],
            "B",
            &[cell("b", 1, &[12.0], &[])],
            &Along::targets(),
        );
        assert_eq!(c.cells[0].tps.verdict, Verdict::Inconclusive);
        assert!((c.cells[0].tps.change.unwrap() - 0.2).abs() < 1e-12);
        assert!(c.cells[0].warnings[0].contains("fewer than 3 repeats"));
        assert!(c.regressions(0.0).is_empty());
    }

    #[test]
    fn along_query_mode_matches_cells_that_differ_only_in_mode() {
        let mut simple = cell("a", 1, &[100.0, 101.0, 99.0], &[]);
        simple.key.query_mode = "simple".into();
        let prepared = cell("a", 1, &[150.0, 151.0, 149.0], &[]);
        let none = compare(
            "A",
            std::slice::from_ref(&simple),
            "B",
            std::slice::from_ref(&prepared),
            &Along::default(),
        );
        assert!(none.cells.is_empty());
        assert_eq!(none.only_in_a, ["select-only s=10 c=1"]);
        assert_eq!(none.only_in_b, ["select-only s=10 c=1 prepared"]);
        let c = compare(
            "A",
            &[simple],
            "B",
            &[prepared],
            &Along(vec![Dimension::QueryMode]),
        );
        assert_eq!(c.cells.len(), 1);
        assert_eq!(c.cells[0].tps.verdict, Verdict::Faster);
        assert!(!c.cell_dimensions.contains(&"query-mode"));
    }

    #[test]
    fn noise_floor_is_widest_aa_half_width() {
        let a = vec![cell("a", 1, &[100.0, 104.0, 98.0], &[])];
        let b = vec![cell("a", 1, &[101.0, 99.0, 103.0], &[])];
        let aa = compare("A", &a, "A'", &b, &Along::targets());
        let half = (aa.cells[0].tps.ci_high.unwrap() - aa.cells[0].tps.ci_low.unwrap()) / 2.0;
        let c = compare("A", &a, "B", &b, &Along::targets()).with_noise_floor(&aa);
        assert_eq!(c.noise_floor.as_ref().unwrap().tps_half_width, half);
        assert!(render_text(&c).contains("noise floor (A/A, A → A'): ±"));
    }

    /// A side whose repeats ran on two layout builds: its starts differ only by their
    /// builds, and no two-level line puts that difference between the starts.
    #[test]
    fn a_side_over_layout_builds_has_no_two_level_line() {
        let sample = |build: u64, start: u64, tps: f64| crate::cells::RunSample {
            run_id: 0,
            set_id: 1,
            repeat: 1,
            start: 0.0,
            tps: Some(tps),
            p99_ms: None,
            server_start: Some(format!("start {build}.{start}")),
            levels: crate::cells::SampleLevels {
                build_key: Some(format!("key{build}")),
                layout_seed: Some(build),
                ..Default::default()
            },
            evidence: Evidence {
                runs: 1,
                ..Evidence::default()
            },
        };
        let mut a = Vec::new();
        for (build, level) in [(1, 900.0), (2, 1100.0)] {
            for start in 1..=2 {
                a.extend([
                    sample(build, start, level - 5.0),
                    sample(build, start, level + 5.0),
                ]);
            }
        }
        let l = NoiseLevels::of(&a, &[]).unwrap();
        assert_eq!(l.a, None, "{l:?}");
        let three = l.builds.as_ref().and_then(|b| b.a.as_ref()).unwrap();
        let levels = three.advice.levels.unwrap();
        assert_eq!(levels.between_starts, 0.0, "{levels:?}");
        assert!(levels.between_builds > 0.0, "{levels:?}");
        let text = l.text();
        assert!(!text.contains("noise levels of A: "), "{text}");
        assert!(
            text.starts_with("noise levels of A over layout builds (seeds 1, 2): "),
            "{text}"
        );
        // Without layout builds the same starts are two levels.
        let plain: Vec<_> = a
            .iter()
            .cloned()
            .map(|mut r| {
                r.levels = Default::default();
                r
            })
            .collect();
        let l = NoiseLevels::of(&plain, &[]).unwrap();
        assert!(l.a.is_some() && l.builds.is_none(), "{l:?}");
    }
}
