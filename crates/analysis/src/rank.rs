//! Distribution-free two-sample statistics: the Mann–Whitney U test and the
//! Hodges–Lehmann shift with its confidence interval. They rank the values instead of
//! averaging them, so one repeat far from the others moves them little.

use crate::describe::{logs, median};
use crate::interval::{normal_quantile, normal_sf};
use serde::Serialize;

/// Both samples below this size (and no ties): the exact null distribution of U is used.
const EXACT_BELOW: usize = 20;

/// Result of a two-sided Mann–Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MannWhitney {
    /// U statistic of `b` (number of pairs where b > a, ties counting one half).
    pub u: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// Whether the exact null distribution was used (small samples without ties).
    pub exact: bool,
}

/// Two-sided Mann–Whitney U test of `b` against `a`. Exact when both samples have fewer
/// than 8 values and there are no ties; otherwise the normal approximation with tie
/// correction and continuity correction (the conventions of SciPy's `mannwhitneyu`).
/// None when a sample is empty.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    let (n1, n2) = (b.len(), a.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let u: f64 = b
        .iter()
        .map(|y| {
            a.iter()
                .map(|x| match y.partial_cmp(x) {
                    Some(std::cmp::Ordering::Greater) => 1.0,
                    Some(std::cmp::Ordering::Equal) => 0.5,
                    _ => 0.0,
                })
                .sum::<f64>()
        })
        .sum();
    let ties = tie_groups(a, b);
    let big_u = u.max((n1 * n2) as f64 - u);
    if n1 < 8 && n2 < 8 && ties.is_empty() {
        let counts = u_null_counts(n1, n2);
        let total: f64 = counts.iter().sum();
        let upper: f64 = counts.iter().skip(big_u as usize).sum();
        return Some(MannWhitney {
            u,
            p_value: (2.0 * upper / total).min(1.0),
            exact: true,
        });
    }
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let mu = n1f * n2f / 2.0;
    let sigma = u_sigma(n1f, n2f, &ties);
    let p = if sigma == 0.0 {
        1.0
    } else {
        (2.0 * normal_sf((big_u - mu - 0.5) / sigma)).min(1.0)
    };
    Some(MannWhitney {
        u,
        p_value: p,
        exact: false,
    })
}

/// Sizes of the groups of equal values over both samples (groups of one left out).
fn tie_groups(a: &[f64], b: &[f64]) -> Vec<usize> {
    let mut all: Vec<f64> = a.iter().chain(b).copied().collect();
    all.sort_by(f64::total_cmp);
    all.chunk_by(|x, y| x == y)
        .map(<[f64]>::len)
        .filter(|&t| t > 1)
        .collect()
}

/// Standard deviation of U under the null hypothesis, corrected for ties.
fn u_sigma(n1: f64, n2: f64, ties: &[usize]) -> f64 {
    let n = n1 + n2;
    let tie_term: f64 = ties.iter().map(|&t| (t as f64).powi(3) - t as f64).sum();
    (n1 * n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)))).sqrt()
}

/// Number of arrangements giving each value of U for sample sizes `n1`, `n2`
/// (index = U), by the usual recurrence over the largest observation.
fn u_null_counts(n1: usize, n2: usize) -> Vec<f64> {
    let mut table: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); n2 + 1]; n1 + 1];
    for i in 0..=n1 {
        for j in 0..=n2 {
            let mut dist = vec![0.0; i * j + 1];
            if i == 0 || j == 0 {
                dist[0] = 1.0;
            } else {
                // The largest value belongs to sample 1: it beats all j of sample 2.
                for (u, c) in table[i - 1][j].iter().enumerate() {
                    dist[u + j] += c;
                }
                for (u, c) in table[i][j - 1].iter().enumerate() {
                    dist[u] += c;
                }
            }
            table[i][j] = dist;
        }
    }
    let mut out = std::mem::take(&mut table[n1][n2]);
    out.resize(n1 * n2 + 1, 0.0);
    out
}

/// Hodges–Lehmann estimate of the shift from `a` to `b`: the median of all pairwise
/// differences `b[j] − a[i]`; NaN when a sample is empty.
pub fn hodges_lehmann(a: &[f64], b: &[f64]) -> f64 {
    median(&pairwise_differences(a, b))
}

fn pairwise_differences(a: &[f64], b: &[f64]) -> Vec<f64> {
    let mut d: Vec<f64> = a
        .iter()
        .flat_map(|x| b.iter().map(move |y| y - x))
        .collect();
    d.sort_by(f64::total_cmp);
    d
}

/// The Hodges–Lehmann shift with its distribution-free confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Shift {
    /// The median of the pairwise differences.
    pub estimate: f64,
    /// Lower bound: an order statistic of the pairwise differences.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
    /// The confidence the two order statistics give (at least the one asked for).
    pub achieved_confidence: f64,
}

/// The Hodges–Lehmann shift from `a` to `b` with the interval made of the k-th smallest
/// and k-th largest pairwise difference, k from the null distribution of U (exact for
/// samples under 20 values without ties, otherwise its normal approximation). It is
/// the interval R's `wilcox.test(conf.int = TRUE)` gives. None when the samples are too
/// small for any pair of order statistics to reach `confidence` (fewer than 4 + 4
/// values at 95 %).
pub fn hodges_lehmann_interval(a: &[f64], b: &[f64], confidence: f64) -> Option<Shift> {
    let (m, n) = (a.len(), b.len());
    if m == 0 || n == 0 {
        return None;
    }
    let d = pairwise_differences(a, b);
    let mn = m * n;
    let alpha = 1.0 - confidence;
    let (k, achieved) = if m < EXACT_BELOW && n < EXACT_BELOW && tie_groups(a, b).is_empty() {
        let counts = u_null_counts(m, n);
        let total: f64 = counts.iter().sum();
        // The smallest k with P(U <= k) >= alpha / 2: then [D(k), D(mn + 1 - k)] (1-based)
        // holds the shift with probability 1 − 2 P(U <= k − 1).
        let mut cum = 0.0;
        let mut k = mn;
        for (u, c) in counts.iter().enumerate() {
            cum += c / total;
            if cum >= alpha / 2.0 {
                k = u;
                break;
            }
        }
        let below: f64 = counts.iter().take(k).sum::<f64>() / total;
        (k, 1.0 - 2.0 * below)
    } else {
        let z = normal_quantile(1.0 - alpha / 2.0);
        let sigma = u_sigma(m as f64, n as f64, &tie_groups(a, b));
        let k = (mn as f64 / 2.0 - z * sigma).floor();
        (k.max(0.0) as usize, confidence)
    };
    if k == 0 || achieved < confidence - 1e-12 {
        return None;
    }
    Some(Shift {
        estimate: median(&d),
        low: d[k - 1],
        high: d[mn - k],
        achieved_confidence: achieved,
    })
}

/// [`hodges_lehmann_interval`] on the logarithms, as a relative change of B against A
/// (0.05 = B 5 % higher): a robust counterpart of the ratio of geometric means.
pub fn relative_shift(a: &[f64], b: &[f64], confidence: f64) -> Option<Shift> {
    let s = hodges_lehmann_interval(&logs(a)?, &logs(b)?, confidence)?;
    Some(Shift {
        estimate: s.estimate.exp() - 1.0,
        low: s.low.exp() - 1.0,
        high: s.high.exp() - 1.0,
        achieved_confidence: s.achieved_confidence,
    })
}

#[cfg(test)]
mod tests {
    //! Reference values: `tests/data/reference.py` (SciPy, and the exact distribution of
    //! U enumerated over all rank assignments), section `rank`.
    use super::*;

    const FASTER: ([f64; 4], [f64; 4]) = (
        [1000.0, 1010.0, 995.0, 1003.0],
        [1100.0, 1090.0, 1112.0, 1105.0],
    );
    const TIES: ([f64; 9], [f64; 9]) = (
        [10.0, 10.0, 12.0, 13.0, 11.0, 10.0, 14.0, 9.0, 12.0],
        [11.0, 12.0, 12.0, 15.0, 16.0, 14.0, 13.0, 12.0, 17.0],
    );
    const SLOWER: ([f64; 3], [f64; 3]) = ([2000.0, 2010.0, 1990.0], [1800.0, 1810.0, 1795.0]);

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol, "{a} != {b} (tol {tol})");
    }

    #[test]
    fn mann_whitney_exact_matches_scipy() {
        let mw = mann_whitney(&FASTER.0, &FASTER.1).unwrap();
        assert!(mw.exact);
        close(mw.u, 16.0, 0.0);
        close(mw.p_value, 0.0285714285714, 1e-12);
        let mw = mann_whitney(&SLOWER.0, &SLOWER.1).unwrap();
        close(mw.u, 0.0, 0.0);
        close(mw.p_value, 0.1, 1e-12);
    }

    #[test]
    fn mann_whitney_with_ties_uses_corrected_normal_approximation() {
        let mw = mann_whitney(&TIES.0, &TIES.1).unwrap();
        assert!(!mw.exact);
        close(mw.u, 65.5, 0.0);
        close(mw.p_value, 0.0282218972544, 1e-9);
        let mw = mann_whitney(&[500.0, 510.0, 490.0], &[505.0, 495.0, 500.0]).unwrap();
        close(mw.u, 4.5, 0.0);
        close(mw.p_value, 1.0, 1e-12);
    }

    #[test]
    fn hodges_lehmann_matches_numpy() {
        close(hodges_lehmann(&FASTER.0, &FASTER.1), 101.0, 0.0);
        close(hodges_lehmann(&TIES.0, &TIES.1), 2.0, 0.0);
        close(hodges_lehmann(&SLOWER.0, &SLOWER.1), -200.0, 0.0);
    }

    #[test]
    fn hodges_lehmann_interval_matches_the_enumerated_distribution() {
        // 6 + 6 values, one far outlier on A.
        let a = [100.0, 102.0, 99.0, 101.0, 98.0, 160.0];
        let b = [95.0, 96.5, 94.0, 97.0, 95.5, 93.0];
        let s = hodges_lehmann_interval(&a, &b, 0.95).unwrap();
        close(s.estimate, -5.25, 1e-12);
        close(s.low, -63.0, 1e-12);
        close(s.high, -3.0, 1e-12);
        close(s.achieved_confidence, 0.958874458874, 1e-9);
        // 3 + 3 values cannot reach 95 %.
        assert!(hodges_lehmann_interval(&SLOWER.0, &SLOWER.1, 0.95).is_none());
        // 4 + 4: only the full range reaches it.
        let s = hodges_lehmann_interval(&FASTER.0, &FASTER.1, 0.95).unwrap();
        close(s.low, 80.0, 0.0);
        close(s.high, 117.0, 0.0);
    }

    #[test]
    fn hodges_lehmann_interval_with_ties_uses_the_normal_approximation() {
        let s = hodges_lehmann_interval(&TIES.0, &TIES.1, 0.95).unwrap();
        close(s.estimate, 2.0, 0.0);
        close(s.low, 0.0, 0.0);
        close(s.high, 4.0, 0.0);
    }

    #[test]
    fn empty_samples_have_no_test() {
        assert!(mann_whitney(&[], &[1.0]).is_none());
        assert!(hodges_lehmann_interval(&[], &[1.0], 0.95).is_none());
        assert!(relative_shift(&[0.0, 1.0, 2.0, 3.0], &[1.0, 2.0, 3.0, 4.0], 0.95).is_none());
    }
}
