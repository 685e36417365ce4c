//! What grew between two sides' profiles: per function, the change of its cost per
//! transaction (self and inclusive) from A's repeats to B's, with an interval across
//! the repeats, and the change of its share of all samples. Ranked by the size of the
//! self change, so the function a patch made slower comes first.
//!
//! A repeat's profile comes in as counts per function (self: the function is the
//! innermost frame; inclusive: it is anywhere on the stack), the transactions of its
//! measured window and the cost of one count (µs of CPU per sample at the sampling
//! frequency). The interval is Welch's for the difference of the two sides' mean
//! per-transaction costs (none with fewer than two repeats a side).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::describe::{mean, variance};
use crate::interval::t_quantile;

/// One repeat's profile, reduced to what the comparison needs.
#[derive(Debug, Clone, Default)]
pub struct RepeatProfile {
    /// Transactions of the measured window.
    pub transactions: f64,
    /// What one count is worth, µs (1e6 / sampling frequency for on-CPU samples).
    pub us_per_count: f64,
    /// Counts per function as the innermost frame.
    pub self_counts: BTreeMap<String, f64>,
    /// Counts per function anywhere on the stack (once per stack).
    pub inclusive_counts: BTreeMap<String, f64>,
}

impl RepeatProfile {
    fn total(&self) -> f64 {
        self.self_counts.values().sum()
    }
}

/// The change of one figure from A to B, µs per transaction.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct CostShift {
    /// Mean over A's repeats.
    pub a: f64,
    /// Mean over B's repeats.
    pub b: f64,
    /// B − A.
    pub change: f64,
    /// Lower end of the interval of the change (`None` with one repeat a side).
    pub ci_low: Option<f64>,
    /// Upper end.
    pub ci_high: Option<f64>,
}

/// One function's change between the sides.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FunctionShift {
    /// The function (a frame's name).
    pub function: String,
    /// Self time per transaction, µs.
    pub self_us: CostShift,
    /// Inclusive time per transaction, µs.
    pub inclusive_us: CostShift,
    /// Share of A's samples with the function innermost (pooled repeats), 0..1.
    pub a_self_share: f64,
    /// Same for B.
    pub b_self_share: f64,
}

/// Welch's interval of `mean(b) − mean(a)` at `confidence`.
fn difference(a: &[f64], b: &[f64], confidence: f64) -> CostShift {
    let (ma, mb) = (mean(a), mean(b));
    let mut shift = CostShift {
        a: ma,
        b: mb,
        change: mb - ma,
        ci_low: None,
        ci_high: None,
    };
    if let (Some(va), Some(vb)) = (variance(a), variance(b)) {
        let (na, nb) = (a.len() as f64, b.len() as f64);
        let se2 = va / na + vb / nb;
        let df = if se2 > 0.0 {
            se2 * se2 / ((va / na).powi(2) / (na - 1.0) + (vb / nb).powi(2) / (nb - 1.0))
        } else {
            na + nb - 2.0
        };
        if let Some(t) = t_quantile(df.max(1.0), 0.5 + confidence / 2.0) {
            let h = t * se2.sqrt();
            shift.ci_low = Some(shift.change - h);
            shift.ci_high = Some(shift.change + h);
        }
    }
    shift
}

/// µs per transaction of `function` in each repeat, from `counts` of the repeat.
fn per_txn(
    repeats: &[RepeatProfile],
    function: &str,
    counts: impl Fn(&RepeatProfile) -> &BTreeMap<String, f64>,
) -> Vec<f64> {
    repeats
        .iter()
        .filter(|r| r.transactions > 0.0)
        .map(|r| counts(r).get(function).copied().unwrap_or(0.0) * r.us_per_count / r.transactions)
        .collect()
}

/// Whether `frame` names a function: frames the profiler could not symbolize
/// (`[unknown]`, a bare address `0x…`) are not ranked, since no one can act on them;
/// their samples still count in every share.
fn is_named(frame: &str) -> bool {
    !(frame.starts_with("[unknown]") || frame.starts_with("0x"))
}

/// The named functions whose cost per transaction changed most from `a` to `b`, at
/// most `top`, largest absolute self change first (inclusive change breaking ties);
/// empty when a side has no repeat with transactions and samples.
pub fn function_shifts(
    a: &[RepeatProfile],
    b: &[RepeatProfile],
    confidence: f64,
    top: usize,
) -> Vec<FunctionShift> {
    let usable = |s: &[RepeatProfile]| s.iter().any(|r| r.transactions > 0.0 && r.total() > 0.0);
    if !usable(a) || !usable(b) {
        return Vec::new();
    }
    let functions: BTreeSet<&String> = a
        .iter()
        .chain(b)
        .flat_map(|r| r.inclusive_counts.keys().chain(r.self_counts.keys()))
        .filter(|f| is_named(f))
        .collect();
    let share = |side: &[RepeatProfile], f: &str| {
        let total: f64 = side.iter().map(RepeatProfile::total).sum();
        let own: f64 = side
            .iter()
            .map(|r| r.self_counts.get(f).copied().unwrap_or(0.0))
            .sum();
        if total > 0.0 {
            own / total
        } else {
            0.0
        }
    };
    let mut shifts: Vec<FunctionShift> = functions
        .into_iter()
        .map(|f| FunctionShift {
            function: f.clone(),
            self_us: difference(
                &per_txn(a, f, |r| &r.self_counts),
                &per_txn(b, f, |r| &r.self_counts),
                confidence,
            ),
            inclusive_us: difference(
                &per_txn(a, f, |r| &r.inclusive_counts),
                &per_txn(b, f, |r| &r.inclusive_counts),
                confidence,
            ),
            a_self_share: share(a, f),
            b_self_share: share(b, f),
        })
        .collect();
    shifts.sort_by(|x, y| {
        y.self_us
            .change
            .abs()
            .total_cmp(&x.self_us.change.abs())
            .then(
                y.inclusive_us
                    .change
                    .abs()
                    .total_cmp(&x.inclusive_us.change.abs()),
            )
            .then_with(|| x.function.cmp(&y.function))
    });
    shifts.truncate(top);
    shifts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repeat(tx: f64, own: &[(&str, f64)], inc: &[(&str, f64)]) -> RepeatProfile {
        let m = |v: &[(&str, f64)]| v.iter().map(|(k, n)| (k.to_string(), *n)).collect();
        RepeatProfile {
            transactions: tx,
            us_per_count: 1000.0,
            self_counts: m(own),
            inclusive_counts: m(inc),
        }
    }

    #[test]
    fn the_function_that_grew_comes_first_with_its_change_per_transaction() {
        let a: Vec<_> = [100.0, 110.0, 90.0]
            .iter()
            .map(|n| {
                repeat(
                    1000.0,
                    &[("burn", 1.0), ("other", *n)],
                    &[("main", n + 1.0)],
                )
            })
            .collect();
        let b: Vec<_> = [300.0, 310.0, 290.0]
            .iter()
            .map(|n| {
                repeat(
                    1000.0,
                    &[("burn", *n), ("other", 100.0)],
                    &[("main", n + 100.0)],
                )
            })
            .collect();
        let s = function_shifts(&a, &b, 0.95, 3);
        assert_eq!(s[0].function, "burn");
        // 300 samples × 1 ms over 1000 transactions = 300 µs, from 1 µs.
        assert!((s[0].self_us.change - 299.0).abs() < 1e-9, "{:?}", s[0]);
        let (lo, hi) = (s[0].self_us.ci_low.unwrap(), s[0].self_us.ci_high.unwrap());
        assert!(lo > 250.0 && hi < 350.0, "{lo} {hi}");
        assert!(s[0].b_self_share > 0.7 && s[0].a_self_share < 0.02);
        // One repeat a side: a change, no interval.
        let s = function_shifts(&a[..1], &b[..1], 0.95, 1);
        assert_eq!(s[0].function, "burn");
        assert!(s[0].self_us.ci_low.is_none());
        // A side without samples explains nothing.
        assert!(function_shifts(&[], &b, 0.95, 3).is_empty());
    }

    #[test]
    fn frames_without_a_name_are_not_ranked_but_count_in_the_shares() {
        let a = [repeat(1000.0, &[("burn", 10.0), ("other", 90.0)], &[])];
        let b = [repeat(
            1000.0,
            &[
                ("burn", 50.0),
                ("other", 90.0),
                ("[unknown]", 400.0),
                ("0x7f00beef", 60.0),
            ],
            &[("[unknown]", 400.0)],
        )];
        let s = function_shifts(&a, &b, 0.95, 5);
        let names: Vec<&str> = s.iter().map(|f| f.function.as_str()).collect();
        assert_eq!(names, ["burn", "other"]);
        // burn's 50 samples of B's 600.
        assert!(
            (s[0].b_self_share - 50.0 / 600.0).abs() < 1e-12,
            "{:?}",
            s[0]
        );
    }
}
