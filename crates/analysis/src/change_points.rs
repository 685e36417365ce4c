//! Change points in a series of levels (a cell's figure in each set of a campaign run
//! nightly): where the level changed, by how much, and the evidence.
//!
//! The method is E-divisive means (Matteson & James, "A nonparametric approach for
//! multiple change point analysis of multivariate data", 2014), as MongoDB's and Apache
//! Otava's regression tracking use it, with Otava's deterministic significance test in
//! place of the original permutation test:
//!
//! 1. In a segment of the series, each split `τ` is scored by the energy statistic
//!    `Q(τ) = m·n/(m+n) · (2/(m·n) Σ|xᵢ−yⱼ| − 1/C(m,2) Σ|xᵢ−xₖ| − 1/C(n,2) Σ|yⱼ−yₖ|)`
//!    of the values before it (`x`, `m` of them) and from it on (`y`, `n`): large when
//!    the two parts lie apart, whatever their distributions' shape. The best split is
//!    the one with the largest `Q`, each part holding at least [`MIN_SEGMENT`] values.
//! 2. Each part is split again the same way, until no part is long enough: every split
//!    found is a candidate.
//! 3. Each candidate is judged between its neighbours (the previous candidate to the
//!    next) by Welch's t test on the logarithms of the two segments; the weakest one
//!    whose two-sided p-value is not below [`MAX_P`] (Otava's default) is dropped, its
//!    two segments become one, and the rest are judged again, until every one left
//!    holds. Judging between neighbours, not over the whole series, lets a step find
//!    its evidence where the level is flat on both sides of it.
//!
//! Limits: a change smaller than the noise between sets needs many sets on each side
//! to be found; a slow drift has no single change point and may be cut in several
//! places or none; the test assumes the sets' levels independent around each level.

use crate::describe::{logs, mean, variance};
use crate::interval::t_two_sided_p;
use serde::Serialize;

/// The fewest values on each side of a change point.
pub const MIN_SEGMENT: usize = 2;

/// The p-value below which a split is kept (Otava's default).
pub const MAX_P: f64 = 0.001;

/// One change of level.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ChangePoint {
    /// Position in the series of the first value of the new level.
    pub index: usize,
    /// Mean level of the segment before it (to the previous change point).
    pub before: f64,
    /// Mean level of the segment from it on (to the next change point).
    pub after: f64,
    /// `after / before − 1` of the segments' geometric means.
    pub change: f64,
    /// Welch's t test's two-sided p-value on the logarithms of the two segments.
    pub p_value: f64,
    /// The split's energy statistic `Q` when it was found.
    pub q: f64,
    /// Values before it, in its segment.
    pub n_before: usize,
    /// Values from it on, in its segment.
    pub n_after: usize,
}

/// The energy statistic `Q` of splitting `x` before position `tau` (see the module
/// doc); None when a part has fewer than two values.
pub fn energy_q(x: &[f64], tau: usize) -> Option<f64> {
    let (a, b) = (x.get(..tau)?, x.get(tau..)?);
    let (m, n) = (a.len() as f64, b.len() as f64);
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let between: f64 = a
        .iter()
        .flat_map(|p| b.iter().map(move |q| (p - q).abs()))
        .sum();
    let within = |s: &[f64]| {
        let mut sum = 0.0;
        for (i, p) in s.iter().enumerate() {
            sum += s[i + 1..].iter().map(|q| (p - q).abs()).sum::<f64>();
        }
        let k = s.len() as f64;
        sum / (k * (k - 1.0) / 2.0)
    };
    let e = 2.0 * between / (m * n) - within(a) - within(b);
    Some(m * n / (m + n) * e)
}

/// The split of `x` with the largest [`energy_q`], each part at least [`MIN_SEGMENT`]
/// long: (position, Q).
pub fn best_split(x: &[f64]) -> Option<(usize, f64)> {
    (MIN_SEGMENT..=x.len().saturating_sub(MIN_SEGMENT))
        .filter_map(|tau| Some((tau, energy_q(x, tau)?)))
        .fold(None, |best: Option<(usize, f64)>, (tau, q)| match best {
            Some((_, bq)) if bq >= q => best,
            _ => Some((tau, q)),
        })
}

/// Welch's t test on the logarithms of `a` and `b`: the two-sided p-value (0 when both
/// sides are constant and differ, 1 when they are equal). None when a side has fewer
/// than two values or a value that is not positive.
pub fn welch_p(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (la, lb) = (logs(a)?, logs(b)?);
    let d = mean(&lb) - mean(&la);
    let (va, vb) = (
        variance(&la)? / la.len() as f64,
        variance(&lb)? / lb.len() as f64,
    );
    let se2 = va + vb;
    if se2 == 0.0 {
        return Some(if d == 0.0 { 1.0 } else { 0.0 });
    }
    let df = se2 * se2 / (va * va / (la.len() as f64 - 1.0) + vb * vb / (lb.len() as f64 - 1.0));
    t_two_sided_p(d / se2.sqrt(), df)
}

/// The change points of `series` (levels in order, all positive), at [`MAX_P`].
pub fn change_points(series: &[f64]) -> Vec<ChangePoint> {
    change_points_at(series, MAX_P)
}

/// [`change_points`] at the p-value `max_p`.
pub fn change_points_at(series: &[f64], max_p: f64) -> Vec<ChangePoint> {
    let mut found: Vec<(usize, f64)> = Vec::new();
    let mut segments = vec![(0, series.len())];
    while let Some((from, to)) = segments.pop() {
        let part = &series[from..to];
        let Some((tau, q)) = best_split(part) else {
            continue;
        };
        found.push((from + tau, q));
        segments.push((from, from + tau));
        segments.push((from + tau, to));
    }
    found.sort_by_key(|(i, _)| *i);
    loop {
        let judged = judge(series, &found);
        let weakest = judged
            .iter()
            .enumerate()
            .filter(|(_, c)| c.p_value >= max_p || c.p_value.is_nan())
            .max_by(|(_, a), (_, b)| a.p_value.total_cmp(&b.p_value));
        match weakest {
            Some((i, _)) => {
                found.remove(i);
            }
            None => return judged,
        }
    }
}

/// Each of `found` (position, Q) judged between its neighbours.
fn judge(series: &[f64], found: &[(usize, f64)]) -> Vec<ChangePoint> {
    let bounds: Vec<usize> = std::iter::once(0)
        .chain(found.iter().map(|(i, _)| *i))
        .chain(std::iter::once(series.len()))
        .collect();
    found
        .iter()
        .enumerate()
        .map(|(k, (index, q))| {
            let (a, b) = (&series[bounds[k]..*index], &series[*index..bounds[k + 2]]);
            let gm = |s: &[f64]| logs(s).map_or(f64::NAN, |l| mean(&l).exp());
            ChangePoint {
                index: *index,
                before: mean(a),
                after: mean(b),
                change: gm(b) / gm(a) - 1.0,
                p_value: welch_p(a, b).unwrap_or(1.0),
                q: *q,
                n_before: a.len(),
                n_after: b.len(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    //! Reference values: `tests/data/reference.py`, section `change points` (the
    //! energy statistic written from its definition with NumPy, Welch's test by SciPy).
    use super::*;

    /// 16 nightly levels around 1000 with a deterministic ±1 % wobble; from the 10th
    /// on, 8 % lower.
    fn stepped() -> Vec<f64> {
        (0..16)
            .map(|i| {
                let wobble = [0.0, 6.0, -4.0, 9.0, -7.0, 3.0, -9.0, 5.0][i % 8];
                (if i >= 10 { 920.0 } else { 1000.0 }) + wobble
            })
            .collect()
    }

    #[test]
    fn the_energy_statistic_matches_its_definition() {
        let x = stepped();
        assert!((energy_q(&x, 10).unwrap() - 550.5).abs() < 1e-9);
        assert!((energy_q(&x, 5).unwrap() - 131.375).abs() < 1e-9);
        assert_eq!(energy_q(&x, 1), None);
        assert_eq!(best_split(&x).map(|(i, _)| i), Some(10));
    }

    #[test]
    fn a_step_is_found_where_it_is_with_its_size_and_evidence() {
        let cps = change_points(&stepped());
        assert_eq!(cps.len(), 1, "{cps:?}");
        let c = cps[0];
        assert_eq!((c.index, c.n_before, c.n_after), (10, 10, 6));
        assert!((c.change - -0.081_335_375_83).abs() < 1e-10, "{c:?}");
        assert!((c.p_value / 5.756_377e-9 - 1.0).abs() < 1e-6, "{c:?}");
    }

    #[test]
    fn a_flat_noisy_series_has_no_change_point() {
        // ±3 % noise (a fixed pseudo-random sequence), no change of level.
        let noise = [
            2.1, -1.3, 0.4, -2.8, 1.7, -0.2, 2.9, -1.9, 0.8, -0.6, 1.2, -2.4, 0.1, 2.5, -1.1, -2.9,
            1.9, 0.3, -0.9, 2.2,
        ];
        let flat: Vec<f64> = noise.iter().map(|n| 1000.0 * (1.0 + n / 100.0)).collect();
        assert_eq!(change_points(&flat), []);
        // Two steps: both found.
        let two: Vec<f64> = stepped()
            .iter()
            .enumerate()
            .map(|(i, v)| if i >= 4 { v * 1.1 } else { *v })
            .collect();
        let at: Vec<usize> = change_points(&two).iter().map(|c| c.index).collect();
        assert_eq!(at, [4, 10]);
        assert_eq!(change_points(&[1.0, 2.0, 3.0]), []);
        assert_eq!(change_points(&[]), []);
    }
}
