//! Two-sample statistics for `pgsurge compare`: is B different from A?
//!
//! Owns the numbers only (no I/O, no store access). The comparison is made on
//! log-transformed values, so a change is a ratio ("B is 9.9 % faster"), not a
//! difference in transactions per second, and a 95 % confidence interval of that ratio
//! comes from Welch's t-interval on the logs — usable from 2 repeats per side, where
//! rank methods cannot reach 95 % at all (with 3 + 3 repeats the smallest two-sided
//! Mann–Whitney p-value is 0.1). The Mann–Whitney U test and the Hodges–Lehmann shift
//! are reported beside it as distribution-free cross-checks.

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// Median of a sample (mean of the two middle values for even sizes); NaN when empty.
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

fn sample_variance(values: &[f64]) -> f64 {
    let m = mean(values);
    values.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (values.len() as f64 - 1.0)
}

/// Hodges–Lehmann estimate of the shift from `a` to `b`: the median of all pairwise
/// differences `b[j] - a[i]`.
pub fn hodges_lehmann(a: &[f64], b: &[f64]) -> f64 {
    let diffs: Vec<f64> = a
        .iter()
        .flat_map(|x| b.iter().map(move |y| y - x))
        .collect();
    median(&diffs)
}

/// Result of a two-sided Mann–Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq)]
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
/// Returns `None` when a sample is empty.
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
    let mut all: Vec<f64> = a.iter().chain(b).copied().collect();
    all.sort_by(f64::total_cmp);
    let tie_groups: Vec<usize> = all
        .chunk_by(|x, y| x == y)
        .map(|g| g.len())
        .filter(|&t| t > 1)
        .collect();
    let big_u = u.max((n1 * n2) as f64 - u);
    if n1 < 8 && n2 < 8 && tie_groups.is_empty() {
        // P(U >= big_u) under H0, doubled.
        let counts = u_null_counts(n1, n2);
        let total: f64 = counts.iter().sum();
        let upper: f64 = counts.iter().skip(big_u as usize).sum();
        let p = (2.0 * upper / total).min(1.0);
        return Some(MannWhitney {
            u,
            p_value: p,
            exact: true,
        });
    }
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let n = n1f + n2f;
    let mu = n1f * n2f / 2.0;
    let tie_term: f64 = tie_groups
        .iter()
        .map(|&t| (t as f64).powi(3) - t as f64)
        .sum();
    let sigma = (n1f * n2f / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)))).sqrt();
    let p = if sigma == 0.0 {
        1.0
    } else {
        let z = (big_u - mu - 0.5) / sigma;
        let normal = Normal::new(0.0, 1.0).expect("standard normal is valid");
        (2.0 * normal.sf(z)).min(1.0)
    };
    Some(MannWhitney {
        u,
        p_value: p,
        exact: false,
    })
}

/// Number of arrangements giving each value of U for sample sizes `n1`, `n2`
/// (index = U), by the usual recurrence over the largest observation.
fn u_null_counts(n1: usize, n2: usize) -> Vec<f64> {
    // f[i][j] = distribution for sizes (i, j).
    let max_u = n1 * n2;
    let mut table: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); n2 + 1]; n1 + 1];
    for i in 0..=n1 {
        for j in 0..=n2 {
            let mut dist = vec![0.0; i * j + 1];
            if i == 0 || j == 0 {
                dist[0] = 1.0;
            } else {
                // Largest value belongs to sample 1: it beats all j of sample 2.
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
    out.resize(max_u + 1, 0.0);
    out
}

/// Relative change of B against A, with a confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RelativeChange {
    /// Point estimate: `exp(mean(ln b) - mean(ln a)) - 1` (0.05 = B is 5 % higher).
    pub estimate: f64,
    /// Lower bound of the confidence interval, same unit.
    pub low: f64,
    /// Upper bound of the confidence interval, same unit.
    pub high: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
}

/// Welch's t confidence interval (at `confidence`, e.g. 0.95) of the ratio of the
/// geometric means of `b` and `a`, expressed as a relative change. Needs at least two
/// positive values per side; returns `None` otherwise.
pub fn relative_change(a: &[f64], b: &[f64], confidence: f64) -> Option<RelativeChange> {
    if a.len() < 2 || b.len() < 2 || a.iter().chain(b).any(|v| *v <= 0.0 || !v.is_finite()) {
        return None;
    }
    let la: Vec<f64> = a.iter().map(|v| v.ln()).collect();
    let lb: Vec<f64> = b.iter().map(|v| v.ln()).collect();
    let d = mean(&lb) - mean(&la);
    let (va, vb) = (
        sample_variance(&la) / la.len() as f64,
        sample_variance(&lb) / lb.len() as f64,
    );
    let se2 = va + vb;
    if se2 == 0.0 {
        let e = d.exp() - 1.0;
        return Some(RelativeChange {
            estimate: e,
            low: e,
            high: e,
            df: f64::INFINITY,
        });
    }
    let df = se2 * se2 / (va * va / (la.len() as f64 - 1.0) + vb * vb / (lb.len() as f64 - 1.0));
    let t = StudentsT::new(0.0, 1.0, df).ok()?;
    let q = t.inverse_cdf(0.5 + confidence / 2.0);
    let half = q * se2.sqrt();
    Some(RelativeChange {
        estimate: d.exp() - 1.0,
        low: (d - half).exp() - 1.0,
        high: (d + half).exp() - 1.0,
        df,
    })
}

/// Geometric mean of positive ratios (the summary row of a comparison); NaN when empty.
pub fn geometric_mean(ratios: &[f64]) -> f64 {
    if ratios.is_empty() {
        return f64::NAN;
    }
    (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp()
}

#[cfg(test)]
mod tests {
    //! Reference values computed independently with SciPy 1.17.1:
    //! `scipy.stats.mannwhitneyu(b, a, alternative='two-sided')` (method auto),
    //! `scipy.stats.ttest_ind(log b, log a, equal_var=False).confidence_interval(0.95)`,
    //! and `numpy.median([y - x for x in a for y in b])`; see `tests/refvals.py`.
    use super::*;

    const FASTER: ([f64; 4], [f64; 4]) = (
        [1000.0, 1010.0, 995.0, 1003.0],
        [1100.0, 1090.0, 1112.0, 1105.0],
    );
    const SAME: ([f64; 3], [f64; 3]) = ([500.0, 510.0, 490.0], [505.0, 495.0, 500.0]);
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
        let mw = mann_whitney(&SAME.0, &SAME.1).unwrap();
        close(mw.u, 4.5, 0.0);
        close(mw.p_value, 1.0, 1e-12);
    }

    #[test]
    fn welch_interval_on_logs_matches_scipy() {
        let rc = relative_change(&FASTER.0, &FASTER.1, 0.95).unwrap();
        close(rc.estimate, 0.0995379292215, 1e-10);
        close(rc.low, 0.0852512590622, 1e-9);
        close(rc.high, 0.11401267467, 1e-9);
        close(rc.df, 5.54305281776, 1e-8);
        let rc = relative_change(&SAME.0, &SAME.1, 0.95).unwrap();
        close(rc.low, -0.0406130590336, 1e-9);
        close(rc.high, 0.0425408428198, 1e-9);
        let rc = relative_change(&TIES.0, &TIES.1, 0.95).unwrap();
        close(rc.low, 0.0419119681137, 1e-9);
        close(rc.high, 0.398412816051, 1e-9);
        let rc = relative_change(&SLOWER.0, &SLOWER.1, 0.95).unwrap();
        close(rc.estimate, -0.0991645511582, 1e-10);
        close(rc.low, -0.108678800752, 1e-9);
        close(rc.high, -0.0895487433996, 1e-9);
    }

    #[test]
    fn hodges_lehmann_matches_numpy() {
        close(hodges_lehmann(&FASTER.0, &FASTER.1), 101.0, 0.0);
        close(hodges_lehmann(&TIES.0, &TIES.1), 2.0, 0.0);
        close(hodges_lehmann(&SLOWER.0, &SLOWER.1), -200.0, 0.0);
    }

    #[test]
    fn degenerate_inputs_are_rejected_not_panicking() {
        assert!(relative_change(&[1.0], &[2.0, 3.0], 0.95).is_none());
        assert!(relative_change(&[0.0, 1.0], &[2.0, 3.0], 0.95).is_none());
        assert!(mann_whitney(&[], &[1.0]).is_none());
        assert!(median(&[]).is_nan());
        let rc = relative_change(&[5.0, 5.0], &[10.0, 10.0], 0.95).unwrap();
        close(rc.estimate, 1.0, 1e-12);
        close(rc.low, 1.0, 1e-12);
    }

    #[test]
    fn geometric_mean_of_ratios() {
        close(geometric_mean(&[2.0, 0.5]), 1.0, 1e-12);
        close(geometric_mean(&[1.1, 1.1, 1.1]), 1.1, 1e-12);
    }
}
