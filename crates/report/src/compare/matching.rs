//! A comparison made: each side's cells matched by key (less the dimensions compared
//! along), each matched cell's repeats judged (paired by round when they ran next to
//! each other), the summary over the cells, and an A/A noise floor applied.

use super::tables::{count, pct, signed_pct, spread_text, value_text};
use super::{
    AcknowledgedLost, CompareRow, Comparison, CostComparison, Dimension, MetricComparison,
    NoiseFloor, NoiseLevels, Pair, RepeatStats, Repeats, RepeatsUntil, Summary, Verdict,
    VerdictCounts, WorkloadComparison, CONFIDENCE, ESTIMATE, FORMAT, SCHEMA_VERSION, SUMMARY_RULE,
    VERDICT_RULE,
};
use crate::cells::RunSample;
use crate::cells::{Cell, CellKey};
use pgsurge_analysis::describe::geometric_mean;
use pgsurge_analysis::precision::CellPrecision;
use pgsurge_analysis::validity::{self, Evidence};
use pgsurge_analysis::verdict::{judge, Analysis, Margin, MarginSource, Samples};
use pgsurge_results::failure::AcknowledgedCommits;
use std::collections::{BTreeMap, BTreeSet};

/// One side's repeats of a cell, gathered for comparison.
#[derive(Default)]
pub(super) struct Side {
    tps: Vec<f64>,
    p99: Vec<f64>,
    latency_mean: Vec<f64>,
    samples: Vec<RunSample>,
    /// Throughput metrics of a workload pack: (name, unit, values).
    workload: Vec<(String, String, Vec<f64>)>,
    /// Per-transaction costs: (name, unit, values).
    costs: Vec<(String, String, Vec<f64>)>,
    /// `[repeats] until`: the precision stored with the side's (first) cell.
    repeats_until: Option<CellPrecision>,
    /// Acknowledged commits lost, over the side's cells that checked them.
    acknowledged: Option<AcknowledgedCommits>,
}

impl Side {
    fn add_metrics(&mut self, cell: &Cell) {
        for m in &cell.txn_costs {
            match self.costs.iter_mut().find(|(n, _, _)| *n == m.name) {
                Some((_, _, v)) => v.extend(&m.values),
                None => self
                    .costs
                    .push((m.name.clone(), m.unit.clone(), m.values.clone())),
            }
        }
        for m in cell.workload_metrics.iter().filter(|m| m.is_throughput()) {
            match self.workload.iter_mut().find(|(n, _, _)| *n == m.name) {
                Some((_, _, v)) => v.extend(&m.values),
                None => self
                    .workload
                    .push((m.name.clone(), m.unit.clone(), m.values.clone())),
            }
        }
    }

    /// The costs both sides measured, compared (lower is better).
    fn compare_costs(&self, b: &Side) -> Vec<CostComparison> {
        self.costs
            .iter()
            .filter_map(|(name, unit, a)| {
                let (_, _, bv) = b.costs.iter().find(|(n, _, _)| n == name)?;
                Some(CostComparison {
                    name: name.clone(),
                    unit: unit.clone(),
                    a_n: a.len(),
                    b_n: bv.len(),
                    comparison: compare_metric(a, bv, &[], false, Margin::default()),
                })
            })
            .collect()
    }

    /// The metrics both sides have, compared.
    fn compare_workload(&self, b: &Side) -> Vec<WorkloadComparison> {
        self.workload
            .iter()
            .filter_map(|(name, unit, a)| {
                let (_, _, bv) = b.workload.iter().find(|(n, u, _)| n == name && u == unit)?;
                Some(WorkloadComparison {
                    name: name.clone(),
                    unit: unit.clone(),
                    a_n: a.len(),
                    b_n: bv.len(),
                    comparison: compare_metric(a, bv, &[], true, Margin::default()),
                })
            })
            .collect()
    }
}

pub(super) fn compare_metric(
    a: &[f64],
    b: &[f64],
    rounds: &[(f64, f64)],
    higher_is_better: bool,
    margin: Margin,
) -> MetricComparison {
    let mut m = MetricComparison {
        a: geometric_mean(a),
        b: geometric_mean(b),
        a_values: a.to_vec(),
        b_values: b.to_vec(),
        change: None,
        ci_low: None,
        ci_high: None,
        p_value: None,
        direction: "equal",
        verdict: Verdict::Inconclusive,
        analysis: Analysis::None,
        rounds: None,
        margin: margin.value,
        margin_source: margin.source,
        half_width: None,
        detectable_change: None,
        repeats_needed: None,
        robust: None,
        a_outliers: Vec::new(),
        b_outliers: Vec::new(),
        round_values: rounds.to_vec(),
        higher_is_better,
        until: None,
        levels: None,
    };
    m.judge(margin);
    m
}

impl MetricComparison {
    /// Judges the repeats (again) against `margin`.
    fn judge(&mut self, margin: Margin) {
        let j = judge(
            Samples {
                a: &self.a_values,
                b: &self.b_values,
                rounds: &self.round_values,
                higher_is_better: self.higher_is_better,
            },
            margin,
        );
        self.direction = match j.change {
            Some(c) if c > 0.0 => "higher",
            Some(c) if c < 0.0 => "lower",
            _ => "equal",
        };
        self.change = j.change;
        self.ci_low = j.low;
        self.ci_high = j.high;
        self.p_value = j.p_value;
        self.verdict = j.verdict;
        self.analysis = j.analysis;
        self.rounds = j.rounds;
        self.margin = j.margin.value;
        self.margin_source = j.margin.source;
        self.half_width = j.half_width;
        self.detectable_change = j.detectable_change;
        self.repeats_needed = j.repeats_needed;
        self.robust = j.robust;
        self.a_outliers = j.outliers_a;
        self.b_outliers = j.outliers_b;
    }

    /// How the verdict was reached, in words: the analysis, the margin, the smallest
    /// detectable change, the robust shift, the outliers.
    pub fn basis_text(&self) -> String {
        let mut parts = vec![match self.rounds {
            Some(n) => format!("paired over {n} rounds"),
            None => self.analysis.name().to_string(),
        }];
        parts.push(format!(
            "margin ±{:.1} % ({})",
            self.margin * 100.0,
            match self.margin_source {
                MarginSource::Default => "default",
                MarginSource::Given => "given",
                MarginSource::NoiseFloor => "A/A noise floor",
            }
        ));
        if let Some(d) = self.detectable_change {
            parts.push(format!("smallest detectable change {:.1} %", d * 100.0));
        }
        if let Some(r) = &self.robust {
            parts.push(format!(
                "robust shift {} [{}, {}]",
                signed_pct(r.estimate),
                signed_pct(r.low),
                signed_pct(r.high)
            ));
        }
        let outliers = |side: &str, idx: &[usize], values: &[f64]| {
            idx.iter()
                .map(|i| format!("{side} {}", value_text(values[*i], 1)))
                .collect::<Vec<_>>()
        };
        let mut flagged = outliers("A", &self.a_outliers, &self.a_values);
        flagged.extend(outliers("B", &self.b_outliers, &self.b_values));
        if !flagged.is_empty() {
            parts.push(format!("outliers (kept): {}", flagged.join(", ")));
        }
        parts.extend(self.until.clone());
        parts.extend(self.levels.clone());
        parts.join("; ")
    }
}

/// (A, B) of each round in which both sides ran once and next to each other: the two
/// runs of a pair have the same set and repeat number, and no other run of the cell (on
/// either side) started between them. Rounds run far apart are not paired: their
/// ratio shares no drift.
pub(super) fn paired_rounds(
    a: &[RunSample],
    b: &[RunSample],
    value: fn(&RunSample) -> Option<f64>,
) -> Vec<(f64, f64)> {
    /// The samples of a side by (set, repeat), those that occur once.
    fn once(side: &[RunSample]) -> BTreeMap<(i64, i64), &RunSample> {
        let mut seen: BTreeMap<(i64, i64), Vec<&RunSample>> = BTreeMap::new();
        for s in side {
            seen.entry((s.set_id, s.repeat)).or_default().push(s);
        }
        seen.into_iter()
            .filter(|(_, v)| v.len() == 1)
            .map(|(k, v)| (k, v[0]))
            .collect()
    }
    let (ia, ib) = (once(a), once(b));
    let mut starts: Vec<f64> = a.iter().chain(b).map(|s| s.start).collect();
    starts.sort_by(f64::total_cmp);
    let between = |x: f64, y: f64| {
        let (lo, hi) = (x.min(y), x.max(y));
        starts.iter().filter(|t| **t > lo && **t < hi).count()
    };
    ia.iter()
        .filter_map(|(k, sa)| {
            let sb = ib.get(k)?;
            if between(sa.start, sb.start) > 0 {
                return None;
            }
            Some((value(sa)?, value(sb)?))
        })
        .collect()
}

/// What to compare along. The sides are groups of cells; a cell is matched by workload,
/// scale, clients, rate and query mode, less the dimensions compared along. Targets are
/// part of the cell too when both sides hold several targets and targets are not
/// compared along.
#[derive(Debug, Clone, Default)]
pub struct Along(pub Vec<Dimension>);

impl Along {
    /// Along targets (the sides are two targets).
    pub fn targets() -> Along {
        Along(vec![Dimension::Target])
    }

    fn has(&self, d: Dimension) -> bool {
        self.0.contains(&d)
    }
}

pub(super) type MatchKey = (Option<String>, CellKey);

/// The dimensions a matched cell is made of: the target when it is part of the cell,
/// and the key's dimensions not compared along.
pub(super) fn cell_dimensions(
    target_is_cell: bool,
    along: crate::cells::Along,
) -> Vec<&'static str> {
    let mut dims = Vec::new();
    if target_is_cell {
        dims.push("target");
    }
    for (along, name) in [
        (along.script, "script"),
        (along.scale, "scale"),
        (along.clients, "clients"),
        (along.rate, "rate"),
        (along.query_mode, "query-mode"),
    ] {
        if !along {
            dims.push(name);
        }
    }
    dims
}

/// One matched cell, compared.
pub(super) fn compare_cell(
    label: String,
    key: &MatchKey,
    side_a: &Side,
    side_b: &Side,
    margin: Margin,
) -> CompareRow {
    let tps_rounds = paired_rounds(&side_a.samples, &side_b.samples, |s| s.tps);
    let mut tps = compare_metric(&side_a.tps, &side_b.tps, &tps_rounds, true, margin);
    let repeats_until = (side_a.repeats_until.is_some() || side_b.repeats_until.is_some())
        .then_some(RepeatsUntil {
            a: side_a.repeats_until,
            b: side_b.repeats_until,
        });
    tps.until = repeats_until.map(|r| r.text());
    let noise_levels = NoiseLevels::of(&side_a.samples, &side_b.samples);
    tps.levels = noise_levels.as_ref().map(|l| l.text());
    let p99_ms = (!side_a.p99.is_empty() && !side_b.p99.is_empty()).then(|| {
        let rounds = paired_rounds(&side_a.samples, &side_b.samples, |s| s.p99_ms);
        compare_metric(&side_a.p99, &side_b.p99, &rounds, false, margin)
    });
    let evidence = |side: &Side| {
        side.samples
            .iter()
            .fold(Evidence::default(), |e, s| e.plus(s.evidence))
    };
    let validity = validity::reasons(&evidence(side_a), &evidence(side_b));
    let mut row = CompareRow {
        label,
        target: key.0.clone(),
        key: key.1.clone(),
        a_n: side_a.tps.len(),
        b_n: side_b.tps.len(),
        tps,
        p99_ms,
        repeats: Repeats {
            tps: Pair {
                a: RepeatStats::of(&side_a.tps),
                b: RepeatStats::of(&side_b.tps),
            },
            latency_avg_ms: (!side_a.latency_mean.is_empty() && !side_b.latency_mean.is_empty())
                .then(|| Pair {
                    a: RepeatStats::of(&side_a.latency_mean),
                    b: RepeatStats::of(&side_b.latency_mean),
                }),
        },
        warnings: Vec::new(),
        validity,
        workload_metrics: side_a.compare_workload(side_b),
        txn_costs: side_a.compare_costs(side_b),
        explanations: Vec::new(),
        repeats_until,
        noise_levels,
        acknowledged_lost: (side_a.acknowledged.is_some() || side_b.acknowledged.is_some())
            .then_some(AcknowledgedLost {
                a: side_a.acknowledged,
                b: side_b.acknowledged,
            }),
        a_run_ids: side_a.samples.iter().map(|s| s.run_id).collect(),
        b_run_ids: side_b.samples.iter().map(|s| s.run_id).collect(),
    };
    row.warnings = row.warnings_now();
    row
}

impl CompareRow {
    /// The cell's warnings: its validity reasons, and a TPS interval wider than the
    /// margin with the repeats the spread needs.
    fn warnings_now(&self) -> Vec<String> {
        let mut w: Vec<String> = self.validity.iter().map(|r| r.text.clone()).collect();
        let t = &self.tps;
        if let (Some(lo), Some(hi), Some(h)) = (t.ci_low, t.ci_high, t.half_width) {
            if h > t.margin {
                let needed = match t.repeats_needed {
                    Some(n) if t.rounds.is_some() => format!("about {n} rounds would resolve it"),
                    Some(n) => format!("about {n} repeats per side would resolve it"),
                    None => format!(
                        "more than {} repeats per side would be needed",
                        pgsurge_analysis::power::MAX_REPEATS
                    ),
                };
                w.push(format!(
                    "noise too high to see a {:.1} % change (interval {}): {needed}",
                    t.margin * 100.0,
                    spread_text(t.change, lo, hi)
                ));
            }
        }
        w
    }
}

/// Verdict counts and the geometric mean of the changes over the compared cells.
pub(super) fn summarize(rows: &[CompareRow]) -> Summary {
    let (mut tps_ratios, mut p99_ratios) = (Vec::new(), Vec::new());
    let (mut tps_verdicts, mut p99_verdicts) = (VerdictCounts::default(), VerdictCounts::default());
    for r in rows {
        if let Some(c) = r.tps.change {
            tps_ratios.push(1.0 + c);
        }
        tps_verdicts.add(r.tps.verdict);
        if let Some(p) = &r.p99_ms {
            if let Some(c) = p.change {
                p99_ratios.push(1.0 + c);
            }
            p99_verdicts.add(p.verdict);
        }
    }
    let gm = |r: &[f64]| (!r.is_empty()).then(|| geometric_mean(r) - 1.0);
    Summary {
        cells: rows.len(),
        tps_change: gm(&tps_ratios),
        p99_change: gm(&p99_ratios),
        tps_verdicts,
        p99_verdicts,
        with_validity_reasons: rows.iter().filter(|r| !r.validity.is_empty()).count(),
    }
}

/// Compares the cells of A with the cells of B that match (see [`Along`]).
pub fn compare(a_label: &str, a: &[Cell], b_label: &str, b: &[Cell], along: &Along) -> Comparison {
    compare_with_margin(a_label, a, b_label, b, along, Margin::default())
}

/// [`compare`], judging the verdicts against `margin` (before any noise floor).
pub fn compare_with_margin(
    a_label: &str,
    a: &[Cell],
    b_label: &str,
    b: &[Cell],
    along: &Along,
    margin: Margin,
) -> Comparison {
    let targets = |cells: &[Cell]| {
        cells
            .iter()
            .map(|c| c.target.clone())
            .collect::<BTreeSet<_>>()
            .len()
    };
    let target_is_cell = !along.has(Dimension::Target) && targets(a) > 1 && targets(b) > 1;
    let key_along = crate::cells::Along {
        script: along.has(Dimension::Script),
        query_mode: along.has(Dimension::QueryMode),
        scale: along.has(Dimension::Scale),
        clients: along.has(Dimension::Clients),
        rate: along.has(Dimension::Rate),
    };
    let index = |cells: &[Cell]| {
        let mut m: BTreeMap<MatchKey, Side> = BTreeMap::new();
        for c in cells {
            let key = (
                target_is_cell.then(|| c.target.clone()),
                c.key.clone().along(key_along),
            );
            let e = m.entry(key).or_default();
            e.tps.extend(&c.tps);
            e.p99.extend(&c.p99_ms);
            e.latency_mean.extend(&c.latency_mean_ms);
            e.samples.extend(c.samples.iter().cloned());
            e.repeats_until = e.repeats_until.or(c.repeats_until);
            e.acknowledged = [e.acknowledged, c.acknowledged]
                .into_iter()
                .flatten()
                .reduce(std::ops::Add::add);
            e.add_metrics(c);
        }
        m
    };
    let label = |k: &MatchKey| match &k.0 {
        Some(t) if !t.is_empty() => format!("{t} · {}", k.1.label()),
        _ => k.1.label(),
    };
    let (ia, ib) = (index(a), index(b));
    let mut rows = Vec::new();
    let mut only_in_a = Vec::new();
    for (key, side_a) in &ia {
        let Some(side_b) = ib.get(key) else {
            only_in_a.push(label(key));
            continue;
        };
        rows.push(compare_cell(label(key), key, side_a, side_b, margin));
    }
    let only_in_b = ib
        .keys()
        .filter(|k| !ia.contains_key(*k))
        .map(label)
        .collect();
    let dims = cell_dimensions(target_is_cell, key_along);
    Comparison {
        format: FORMAT,
        schema_version: SCHEMA_VERSION,
        title: format!("{a_label} → {b_label}"),
        a_label: a_label.to_string(),
        b_label: b_label.to_string(),
        along: along.0.clone(),
        cell_dimensions: dims,
        estimate: ESTIMATE,
        summary_rule: SUMMARY_RULE,
        confidence: CONFIDENCE,
        verdict_rule: VERDICT_RULE,
        margin,
        summary: summarize(&rows),
        cells: rows,
        only_in_a,
        only_in_b,
        noise_floor: None,
    }
}

impl Comparison {
    /// Records the noise floor measured by an A/A comparison of the same machine: the
    /// widest half-width of its TPS intervals.
    pub fn with_noise_floor(mut self, aa: &Comparison) -> Self {
        self.noise_floor = aa
            .cells
            .iter()
            .filter_map(|r| Some((r.tps.ci_high? - r.tps.ci_low?) / 2.0))
            .fold(None, |acc: Option<f64>, h| {
                Some(acc.map_or(h, |a| a.max(h)))
            })
            .map(|h| NoiseFloor {
                from: aa.title.clone(),
                tps_half_width: h,
            });
        if let Some(floor) = self.noise_floor.as_ref().map(|n| n.tps_half_width) {
            let margin = self.margin.with_noise_floor(floor);
            for r in &mut self.cells {
                r.tps.judge(margin);
                if let Some(p) = &mut r.p99_ms {
                    p.judge(margin);
                }
                for w in &mut r.workload_metrics {
                    w.comparison.judge(margin);
                }
                r.warnings = r.warnings_now();
            }
            self.summary = summarize(&self.cells);
        }
        self
    }

    /// Cells with a reason their verdict may not hold, or whose TPS verdict is
    /// `inconclusive` when `inconclusive` is set. One line each.
    pub fn invalid(&self, inconclusive: bool) -> Vec<String> {
        let mut out = Vec::new();
        for r in &self.cells {
            if !r.validity.is_empty() {
                let why: Vec<&str> = r.validity.iter().map(|v| v.text.as_str()).collect();
                out.push(format!("{}: {}", r.label, why.join("; ")));
            }
            if inconclusive && r.tps.verdict == Verdict::Inconclusive {
                out.push(format!("{}: tps verdict inconclusive", r.label));
            }
        }
        out
    }

    /// Cells whose verdict is `slower` by more than `threshold` (0.05 = 5 %): TPS lower
    /// by more than the threshold, or p99 latency higher by more than it. One line each.
    pub fn regressions(&self, threshold: f64) -> Vec<String> {
        let mut out = Vec::new();
        for r in &self.cells {
            if r.tps.verdict == Verdict::Slower && r.tps.change.is_some_and(|c| -c > threshold) {
                out.push(format!("{}: tps {}", r.label, pct(r.tps.change)));
            }
            if let Some(p) = &r.p99_ms {
                if p.verdict == Verdict::Slower && p.change.is_some_and(|c| c > threshold) {
                    out.push(format!("{}: p99 latency {}", r.label, pct(p.change)));
                }
            }
        }
        out
    }

    /// The text of the noise floor, when measured.
    pub fn noise_floor_text(&self) -> Option<String> {
        self.noise_floor.as_ref().map(|n| {
            format!(
                "noise floor (A/A, {}): ±{:.1} %",
                n.from,
                n.tps_half_width * 100.0
            )
        })
    }

    /// The summary line (same words in text and HTML).
    pub fn summary_text(&self) -> String {
        let s = &self.summary;
        format!(
            "summary over {} (geometric mean of the cell changes): tps {}, p99 latency {}; tps verdicts: {}",
            count(s.cells, "cell", "cells"),
            pct(s.tps_change),
            pct(s.p99_change),
            s.tps_verdicts.text()
        )
    }
}
