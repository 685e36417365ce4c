//! How precisely a cell's repeats pin its figure down, and how many repeats a precision
//! asks for: the rule behind `[repeats] until` (a cell repeats until it is precise
//! enough, or reaches `max`). With several targets a cell's precision is that of the
//! change between them, as `compare` states it ([`of_cell`]), and a cell is done only
//! when that change is also decided: its verdict against a margin of ±`until` is not
//! `inconclusive` (an interval within the precision that holds zero and crosses the
//! margin can still be decided by more repeats, so the cell goes on).
//!
//! The precision of a cell is the half-width of the 95 % Student's t interval of the
//! mean of its repeats, relative to their median: `±2 %` means the interval reaches
//! 2 % of the cell's typical value either side. With one repeat there is no interval
//! (the precision is unknown, never "reached"). The number of repeats a spread needs is
//! the smallest `n` at which `t₀.₉₇₅(n − 1) · s / √n` is within the precision, `s` the
//! standard deviation measured — an estimate, since `s` is itself uncertain with few
//! repeats.

use crate::describe::{median, stddev};
use crate::interval::t_quantile;
use crate::verdict::{judge, Margin, Samples, Verdict};
use serde::{Deserialize, Serialize};

/// Confidence of the interval a precision is stated at.
pub const CONFIDENCE: f64 = 0.95;

/// The most repeats [`repeats_for`] looks for.
pub const MAX_REPEATS: usize = 10_000;

/// A cell's precision.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Precision {
    /// Half-width of the interval of the mean, relative to the median (0.02 = ±2 %).
    pub half_width: f64,
    /// Repeats it was computed from.
    pub repeats: usize,
}

impl Precision {
    /// True when the half-width is within `target` (0.02 = 2 %).
    pub fn reached(&self, target: f64) -> bool {
        self.half_width <= target
    }
}

/// The precision of `values` (a cell's repeats); None with fewer than two, a value that
/// is not finite, or a median of 0.
pub fn precision(values: &[f64]) -> Option<Precision> {
    if values.len() < 2 || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let m = median(values);
    if m == 0.0 {
        return None;
    }
    let n = values.len() as f64;
    let q = t_quantile(n - 1.0, 0.5 + CONFIDENCE / 2.0)?;
    let half = q * stddev(values)? / n.sqrt();
    Some(Precision {
        half_width: half / m.abs(),
        repeats: values.len(),
    })
}

/// How many repeats the spread of `values` needs for a half-width within `target`
/// (0.02 = 2 %): at least 2; None with fewer than two values, a target that is not
/// positive, or when even [`MAX_REPEATS`] would not do.
pub fn repeats_for(values: &[f64], target: f64) -> Option<usize> {
    if values.len() < 2 || target.is_nan() || target <= 0.0 || values.iter().any(|v| !v.is_finite())
    {
        return None;
    }
    let m = median(values).abs();
    if m == 0.0 {
        return None;
    }
    let relative_sd = stddev(values)? / m;
    (2..=MAX_REPEATS).find(|&n| {
        let n = n as f64;
        t_quantile(n - 1.0, 0.5 + CONFIDENCE / 2.0)
            .is_some_and(|q| q * relative_sd / n.sqrt() <= target)
    })
}

/// A cell's precision against the one its campaign asked for (`[repeats] until`), as
/// a campaign stores it with the cell's runs once it stops repeating the cell.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CellPrecision {
    /// The precision asked (0.02 = ±2 %).
    pub target: f64,
    /// The half-width reached: of the change between targets, or of the cell's own mean
    /// with one target; None when there is no interval yet.
    pub half_width: Option<f64>,
    /// Repeats it rests on (the fewest of any target).
    pub repeats: usize,
    /// True when the campaign's `budget` of wall time ended the cell's repeats before
    /// it was precise.
    #[serde(default)]
    pub budget_spent: bool,
    /// With several targets: true when the verdict of some change against a margin of
    /// ±`target` is `inconclusive` (its interval holds zero and reaches beyond the
    /// margin), so the cell is not done even when its half-width is within the target.
    #[serde(default)]
    pub inconclusive: bool,
}

impl CellPrecision {
    /// True when the cell is done: its half-width is within the target and no change
    /// of it is `inconclusive`.
    pub fn reached(&self) -> bool {
        self.precise() && !self.inconclusive
    }

    /// True when the half-width is within the target, whatever the verdict.
    pub fn precise(&self) -> bool {
        self.half_width.is_some_and(|h| h <= self.target)
    }

    /// `reached (±1.4 % after 5 repeats)`, `not decided, ±1.5 % after 9 repeats,
    /// inconclusive (the interval crosses the ±2 % margin)` or `not reached, ±3.1 %
    /// after 10 repeats` (with `, budget spent` when the budget ended it).
    pub fn text(&self) -> String {
        let n = self.repeats;
        let text = match self.half_width {
            Some(h) if self.reached() => {
                return format!("reached (±{:.1} % after {n} repeats)", h * 100.0)
            }
            Some(h) if self.precise() => format!(
                "not decided, ±{:.1} % after {n} repeats, inconclusive (the interval \
                 crosses the ±{} % margin)",
                h * 100.0,
                percent(self.target)
            ),
            Some(h) => format!("not reached, ±{:.1} % after {n} repeats", h * 100.0),
            None => format!("not reached, no interval after {n} repeats"),
        };
        if self.budget_spent {
            format!("{text}, budget spent")
        } else {
            text
        }
    }

    /// `until ±2 %: reached (±1.4 % after 5 repeats)`.
    pub fn until_text(&self) -> String {
        format!("until ±{} %: {}", percent(self.target), self.text())
    }
}

/// `0.02` → `2`, `0.025` → `2.5`.
fn percent(fraction: f64) -> String {
    let s = format!("{:.2}", fraction * 100.0);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// (A, B) of the rounds both `base` and `other` ran in.
fn rounds_of(base: &[(u32, f64)], other: &[(u32, f64)]) -> Vec<(f64, f64)> {
    base.iter()
        .filter_map(|(r, a)| {
            let b = other.iter().find(|(q, _)| q == r)?;
            Some((*a, b.1))
        })
        .collect()
}

/// How many repeats a cell whose repeats are `sides` (as [`of_cell`] takes them) will
/// need for `target`, from their spread ([`repeats_for`]): with one target that of its
/// values; with more, the most any other target's per-round ratios to the first need
/// for a half-width that also decides the change ([`deciding_half_width`] at their
/// mean). None when a side has fewer than two repeats (or rounds in common with the
/// first).
pub fn repeats_for_cell(sides: &[Vec<(u32, f64)>], target: f64) -> Option<usize> {
    match sides {
        [] => None,
        [one] => repeats_for(&one.iter().map(|(_, v)| *v).collect::<Vec<_>>(), target),
        [base, others @ ..] => others.iter().try_fold(2, |most, other| {
            let ratios: Vec<f64> = rounds_of(base, other)
                .iter()
                .filter(|(a, _)| *a != 0.0)
                .map(|(a, b)| b / a)
                .collect();
            let change = ratios.iter().sum::<f64>() / ratios.len().max(1) as f64 - 1.0;
            let half_width = deciding_half_width(change, target);
            Some(most.max(repeats_for(&ratios, half_width)?))
        }),
    }
}

/// The half-width an interval centred on `change` needs to be decided against a margin
/// of ±`margin` (and within the precision `margin`): either it lies within the margin
/// (half-width ≤ margin − |change|) or on one side of zero (half-width < |change|).
/// Narrowest, `margin / 2`, at a change of half the margin; `margin` at no change or a
/// change beyond the margin.
pub fn deciding_half_width(change: f64, margin: f64) -> f64 {
    let d = change.abs().min(margin);
    (margin - d).max(d)
}

/// The precision of a cell whose repeats are `sides` (per target, `(round, value)`;
/// the first target the base), against `target`: with one target, the half-width of
/// its mean's interval ([`precision`]); with more, the widest half-width of the change
/// of each other target against the first, as `compare` judges it (paired by round when
/// the rounds allow, [`crate::verdict::judge`]), and whether any of those changes is
/// `inconclusive` against a margin of ±`target`.
pub fn of_cell(sides: &[Vec<(u32, f64)>], target: f64) -> CellPrecision {
    let repeats = sides.iter().map(Vec::len).min().unwrap_or(0);
    let values = |s: &[(u32, f64)]| s.iter().map(|(_, v)| *v).collect::<Vec<f64>>();
    let (half_width, inconclusive) = match sides {
        [] => (None, false),
        [one] => (precision(&values(one)).map(|p| p.half_width), false),
        [base, others @ ..] => {
            let judged: Vec<_> = others
                .iter()
                .map(|other| {
                    let rounds = rounds_of(base, other);
                    let (a, b) = (values(base), values(other));
                    let samples = Samples {
                        a: &a,
                        b: &b,
                        rounds: &rounds,
                        higher_is_better: true,
                    };
                    judge(samples, Margin::given(target))
                })
                .collect();
            (
                judged
                    .iter()
                    .try_fold(0.0_f64, |w, j| Some(w.max(j.half_width?))),
                judged.iter().any(|j| j.verdict == Verdict::Inconclusive),
            )
        }
    };
    CellPrecision {
        target,
        half_width,
        repeats,
        budget_spent: false,
        inconclusive,
    }
}

#[cfg(test)]
mod tests {
    //! Reference values: `tests/data/reference.py`, section `precision`
    //! (`scipy.stats.ttest_1samp(...).confidence_interval`).
    use super::*;

    #[test]
    fn the_half_width_is_the_t_interval_relative_to_the_median() {
        let p = precision(&[1000.0, 1010.0, 990.0, 1004.0]).unwrap();
        assert_eq!(p.repeats, 4);
        assert!((p.half_width - 0.013349674).abs() < 1e-8, "{p:?}");
        assert!(p.reached(0.02) && !p.reached(0.01));
    }

    #[test]
    fn one_repeat_or_broken_values_have_no_precision() {
        assert!(precision(&[1000.0]).is_none());
        assert!(precision(&[1000.0, f64::NAN]).is_none());
        assert!(precision(&[0.0, 0.0]).is_none());
        let same = precision(&[5.0, 5.0, 5.0]).unwrap();
        assert_eq!(same.half_width, 0.0);
    }

    #[test]
    fn the_repeats_a_spread_needs() {
        // 1.41 % relative standard deviation: t(3) · s / √4 = 2.25 % is not within
        // ±2 %, t(4) · s / √5 = 1.76 % is.
        let values = [990.0, 1010.0];
        let sd = stddev(&values).unwrap() / 1000.0;
        assert!((sd - 0.014142135).abs() < 1e-8);
        assert_eq!(repeats_for(&values, 0.02), Some(5));
        assert_eq!(repeats_for(&values, 0.5), Some(2));
        assert_eq!(repeats_for(&values, 0.0), None);
        assert_eq!(repeats_for(&[1.0, 1.0], 0.01), Some(2));
    }
    #[test]
    fn a_cell_of_one_target_is_as_precise_as_its_mean() {
        let one = vec![vec![(1, 1000.0), (2, 1010.0), (3, 990.0), (4, 1004.0)]];
        let p = of_cell(&one, 0.02);
        assert!((p.half_width.unwrap() - 0.013349674).abs() < 1e-8, "{p:?}");
        assert_eq!(p.repeats, 4);
        assert!(p.reached());
        assert_eq!(p.text(), "reached (±1.3 % after 4 repeats)");
        let wide = of_cell(&one, 0.01);
        assert_eq!(wide.text(), "not reached, ±1.3 % after 4 repeats");
        assert_eq!(
            of_cell(&[vec![(1, 5.0)]], 0.02).text(),
            "not reached, no interval after 1 repeats"
        );
    }

    #[test]
    fn a_cell_of_two_targets_is_as_precise_as_their_change() {
        // B is A × 1.1 in every round but for a little noise: the paired interval
        // is narrow although each side drifts 10 % over the rounds.
        let a = vec![(1, 1000.0), (2, 950.0), (3, 900.0)];
        let b = vec![(1, 1100.0), (2, 1046.0), (3, 989.0)];
        let p = of_cell(&[a.clone(), b.clone()], 0.02);
        let j = judge(
            Samples {
                a: &[1000.0, 950.0, 900.0],
                b: &[1100.0, 1046.0, 989.0],
                rounds: &[(1000.0, 1100.0), (950.0, 1046.0), (900.0, 989.0)],
                higher_is_better: true,
            },
            Margin::given(0.02),
        );
        assert_eq!(p.half_width, j.half_width);
        assert!(p.reached(), "{p:?}");
        // A third target that wanders: the cell is as precise as its widest change.
        let c = vec![(1, 1000.0), (2, 1300.0), (3, 700.0)];
        assert!(!of_cell(&[a, b, c], 0.02).reached());
    }

    #[test]
    fn the_repeats_a_cell_needs_come_from_its_spread() {
        // Reference: `reference.py`, "repeats of a change for 0.5 %": the spread of the
        // per-round ratios, not of each side (which drifts 10 % over the rounds).
        let a = vec![(1, 1000.0), (2, 950.0), (3, 900.0), (4, 1020.0)];
        let b = vec![(1, 1100.0), (2, 1040.0), (3, 1000.0), (4, 1115.0)];
        assert_eq!(repeats_for_cell(&[a.clone(), b], 0.005), Some(11));
        let one: Vec<f64> = a.iter().map(|(_, v)| *v).collect();
        assert_eq!(
            repeats_for_cell(std::slice::from_ref(&a), 0.02),
            repeats_for(&one, 0.02)
        );
        assert_eq!(repeats_for_cell(&[a, vec![(9, 1.0)]], 0.02), None);
        assert_eq!(repeats_for_cell(&[], 0.02), None);
    }

    #[test]
    fn a_stored_precision_reads_back_and_says_why_it_stopped() {
        let p = CellPrecision {
            target: 0.02,
            half_width: Some(0.031),
            repeats: 4,
            budget_spent: true,
            inconclusive: false,
        };
        assert_eq!(
            p.until_text(),
            "until ±2 %: not reached, ±3.1 % after 4 repeats, budget spent"
        );
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(serde_json::from_str::<CellPrecision>(&json).unwrap(), p);
    }

    /// A base drifting ±10 % over five rounds, and B at a ratio to it per round (the
    /// cells of `reference.py`, "paired crossing / inside / slower").
    const BASE: [f64; 5] = [1000.0, 1100.0, 900.0, 1050.0, 950.0];

    fn cell_against_base(b: [f64; 5]) -> Vec<Vec<(u32, f64)>> {
        let rounds = |v: [f64; 5]| (1..).zip(v).collect::<Vec<(u32, f64)>>();
        vec![rounds(BASE), rounds(b)]
    }

    #[test]
    fn a_precise_interval_crossing_the_margin_is_not_done() {
        // [−2.118 %, +0.538 %], half-width 1.347 %: within ±2 %, yet it holds zero and
        // reaches beyond −2 %, so more rounds can still decide it.
        let p = of_cell(
            &cell_against_base([978.2, 1084.7, 892.8, 1047.9, 955.7]),
            0.02,
        );
        assert!(
            (p.half_width.unwrap() - 0.01347327949).abs() < 1e-8,
            "{p:?}"
        );
        assert!(p.precise() && p.inconclusive && !p.reached(), "{p:?}");
        assert_eq!(
            p.until_text(),
            "until ±2 %: not decided, ±1.3 % after 5 repeats, inconclusive (the \
             interval crosses the ±2 % margin)"
        );
    }

    #[test]
    fn a_precise_interval_inside_the_margin_or_beside_zero_is_done() {
        // [−1.329 %, +1.346 %]: no-difference.
        let inside = of_cell(
            &cell_against_base([986.1, 1093.4, 900.0, 1056.3, 963.4]),
            0.02,
        );
        assert!((inside.half_width.unwrap() - 0.01346470941).abs() < 1e-8);
        assert!(inside.reached() && !inside.inconclusive, "{inside:?}");
        // [−4.242 %, −1.651 %]: slower, though it crosses the margin.
        let slower = of_cell(
            &cell_against_base([957.0, 1061.1, 873.4, 1025.1, 934.9]),
            0.02,
        );
        assert!((slower.half_width.unwrap() - 0.01343483691).abs() < 1e-8);
        assert!(slower.reached(), "{slower:?}");
        assert_eq!(slower.text(), "reached (±1.3 % after 5 repeats)");
    }

    #[test]
    fn a_cell_of_one_target_has_no_verdict_to_wait_for() {
        let p = of_cell(
            &[vec![(1, 1000.0), (2, 1010.0), (3, 990.0), (4, 1004.0)]],
            0.02,
        );
        assert!(!p.inconclusive && p.reached(), "{p:?}");
    }

    #[test]
    fn the_half_width_that_decides_a_change() {
        assert_eq!(deciding_half_width(0.0, 0.02), 0.02);
        assert_eq!(deciding_half_width(-0.01, 0.02), 0.01);
        assert!((deciding_half_width(0.005, 0.02) - 0.015).abs() < 1e-15);
        assert!((deciding_half_width(0.015, 0.02) - 0.015).abs() < 1e-15);
        assert_eq!(deciding_half_width(-0.05, 0.02), 0.02);
        // The crossing cell: a mean ratio 0.79 % below 1 needs ±1.21 %, six rounds
        // (`reference.py`, "deciding half-width").
        let crossing = cell_against_base([978.2, 1084.7, 892.8, 1047.9, 955.7]);
        assert_eq!(repeats_for_cell(&crossing, 0.02), Some(6));
    }

    #[test]
    fn a_stored_precision_without_the_verdict_field_reads_back() {
        let old = r#"{"target":0.02,"half_width":0.013,"repeats":4,"budget_spent":false}"#;
        let p: CellPrecision = serde_json::from_str(old).unwrap();
        assert!(!p.inconclusive && p.reached(), "{p:?}");
    }
}
