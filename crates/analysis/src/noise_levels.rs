//! Where the noise lives: with repeats at two levels — runs within one server start,
//! and server starts (restarts, fresh clusters) — how much of the variance each level
//! holds, and how many runs per start make the cheapest campaign for a precision
//! (Kalibera & Jones, "Rigorous benchmarking in reasonable time", ISMM 2013, §4).
//!
//! With `n₂` starts of `n₁` runs each, `Yⱼₖ` the k-th run of start j:
//!
//! * `S₁² = Σⱼ Σₖ (Yⱼₖ − Ȳⱼ)² / (n₂ (n₁ − 1))` — the spread of runs within a start;
//! * `S₂² = Σⱼ (Ȳⱼ − Ȳ)² / (n₂ − 1)` — the spread of the starts' means;
//! * the variance each level adds: `T₁² = S₁²` and `T₂² = S₂² − S₁² / n₁` (a start's
//!   mean carries its runs' noise divided by `n₁`; what is left is the starts' own).
//!   `T₂²` below 0 is read as 0: nothing measurable comes from the starts.
//!
//! The runs per start that give the narrowest interval for the time spent is
//! `n₁ = ⌈√(c₂ T₁² / (c₁ T₂²))⌉`, `c₁` the cost of a run and `c₂` that of a start
//! (the cost of the level above over the cost of this one, times the ratio of their
//! variances): when starts are expensive and add little, many runs per start; when
//! the starts hold the noise, one run per start and more starts. Unbalanced groups
//! are cut to the fewest runs any start has, as the estimators need equal groups.
//!
//! [`of_runs`] judges a cell's repeats this way on the logarithms of their figures, so
//! each level's variance is a relative one (its square root a per-cent spread), and
//! advises with a start costing as much as a run: `n₁ = ⌈T₁ / T₂⌉`.

use crate::describe::mean;
use serde::Serialize;

/// The variance of each level, and the share the starts hold.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Levels {
    /// Starts measured (`n₂`).
    pub starts: usize,
    /// Runs per start used (`n₁`).
    pub runs_per_start: usize,
    /// `T₁²`: the variance of runs within a start.
    pub within: f64,
    /// `T₂²`: the variance the starts add (0 when not measurable).
    pub between: f64,
}

impl Levels {
    /// The share of one run's variance that comes from its start:
    /// `T₂² / (T₁² + T₂²)` (0 when there is no variance at all).
    pub fn share_between(&self) -> f64 {
        let total = self.within + self.between;
        if total > 0.0 {
            self.between / total
        } else {
            0.0
        }
    }

    /// The runs per start that cost least for a given precision, a run costing
    /// `run_cost` and a start `start_cost` (any one unit, e.g. seconds); None when
    /// the costs are not positive. With no variance between starts it is
    /// [`MAX_RUNS_PER_START`]: starting again buys nothing.
    pub fn best_runs_per_start(&self, run_cost: f64, start_cost: f64) -> Option<usize> {
        if !(run_cost > 0.0 && start_cost > 0.0) {
            return None;
        }
        if self.between <= 0.0 {
            return Some(MAX_RUNS_PER_START);
        }
        let n = (start_cost * self.within / (run_cost * self.between))
            .sqrt()
            .ceil();
        Some((n as usize).clamp(1, MAX_RUNS_PER_START))
    }
}

/// The most runs per start [`Levels::best_runs_per_start`] advises.
pub const MAX_RUNS_PER_START: usize = 100;

/// Where a cell's noise lives: its levels on the logarithms of its figures, and what
/// is cheapest to repeat.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Advice {
    /// The levels; `within` and `between` are variances of logarithms (relative).
    #[serde(flatten)]
    pub levels: Levels,
    /// [`Levels::share_between`].
    pub share_between: f64,
    /// The runs per start that cost least, a start costing as much as a run.
    pub advised_runs_per_start: usize,
}

impl Advice {
    /// What is cheapest to repeat: `starts` (one run per start, more starts), `runs`
    /// (within one start: the starts add nothing measurable), or `both`.
    pub fn cheapest(&self) -> &'static str {
        match self.advised_runs_per_start {
            1 => "starts",
            MAX_RUNS_PER_START => "runs",
            _ => "both",
        }
    }

    /// `96 % of the variance between server starts (±5.0 % a start, ±1.0 % a run
    /// within one; 3 starts × 3 runs): cheapest to repeat starts, one run each`.
    pub fn text(&self) -> String {
        let l = &self.levels;
        let advice = match self.cheapest() {
            "starts" => "cheapest to repeat starts, one run each".to_string(),
            "runs" => "cheapest to repeat runs within a start".to_string(),
            _ => format!(
                "cheapest to repeat starts of {} runs each",
                self.advised_runs_per_start
            ),
        };
        format!(
            "{:.0} % of the variance between server starts (±{:.1} % a start, ±{:.1} % a run \
             within one; {} starts × {} runs): {advice}",
            self.share_between * 100.0,
            l.between.sqrt() * 100.0,
            l.within.sqrt() * 100.0,
            l.starts,
            l.runs_per_start
        )
    }
}

/// The levels of a cell's repeats, each given as (its server start, its figure), on
/// the logarithms of the figures. Starts with a single run are left out (they hold no
/// spread within a start); None with fewer than two starts of two runs or more, or a
/// figure that is not positive.
pub fn of_runs<K: PartialEq>(runs: &[(K, f64)]) -> Option<Advice> {
    if !runs.iter().all(|(_, v)| v.is_finite() && *v > 0.0) {
        return None;
    }
    let mut starts: Vec<(&K, Vec<f64>)> = Vec::new();
    for (k, v) in runs {
        match starts.iter_mut().find(|(s, _)| *s == k) {
            Some((_, values)) => values.push(v.ln()),
            None => starts.push((k, vec![v.ln()])),
        }
    }
    let starts: Vec<Vec<f64>> = starts
        .into_iter()
        .map(|(_, v)| v)
        .filter(|v| v.len() >= 2)
        .collect();
    let levels = two_levels(&starts)?;
    Some(Advice {
        levels,
        share_between: levels.share_between(),
        advised_runs_per_start: levels.best_runs_per_start(1.0, 1.0)?,
    })
}

/// The two levels of `starts` (each start's runs); None with fewer than two starts or
/// fewer than two runs in some start, or a value that is not finite.
pub fn two_levels(starts: &[Vec<f64>]) -> Option<Levels> {
    let n1 = starts.iter().map(Vec::len).min()?;
    let n2 = starts.len();
    if n2 < 2 || n1 < 2 || starts.iter().flatten().any(|v| !v.is_finite()) {
        return None;
    }
    let groups: Vec<&[f64]> = starts.iter().map(|s| &s[..n1]).collect();
    let means: Vec<f64> = groups.iter().map(|g| mean(g)).collect();
    let grand = mean(&means);
    let within_sum: f64 = groups
        .iter()
        .zip(&means)
        .map(|(g, m)| g.iter().map(|y| (y - m).powi(2)).sum::<f64>())
        .sum();
    let s1 = within_sum / (n2 as f64 * (n1 as f64 - 1.0));
    let s2 = means.iter().map(|m| (m - grand).powi(2)).sum::<f64>() / (n2 as f64 - 1.0);
    Some(Levels {
        starts: n2,
        runs_per_start: n1,
        within: s1,
        between: (s2 - s1 / n1 as f64).max(0.0),
    })
}

#[cfg(test)]
mod tests {
    //! Reference values: `tests/data/reference.py`, section `noise levels`.
    use super::*;

    #[test]
    fn the_levels_match_their_definition() {
        // Four starts whose levels differ (1000, 1040, 980, 1020) more than their runs.
        let starts = vec![
            vec![1001.0, 998.0, 1003.0],
            vec![1041.0, 1037.0, 1042.0],
            vec![979.0, 983.0, 978.0],
            vec![1022.0, 1019.0, 1021.0, 5000.0],
        ];
        let l = two_levels(&starts).unwrap();
        assert_eq!((l.starts, l.runs_per_start), (4, 3));
        assert!((l.within - 5.666_666_666_667).abs() < 1e-9, "{l:?}");
        assert!((l.between - 664.925_925_925_9).abs() < 1e-6, "{l:?}");
        assert!((l.share_between() - 0.991_549_762_5).abs() < 1e-9);
        // A start costs 60 runs: still one run per start is cheapest, the starts hold
        // the noise.
        assert_eq!(l.best_runs_per_start(1.0, 60.0), Some(1));
        assert_eq!(l.best_runs_per_start(0.0, 60.0), None);
    }

    #[test]
    fn noise_within_starts_only_advises_staying_in_one_start() {
        let starts = vec![
            vec![1000.0, 1030.0, 970.0, 1010.0],
            vec![990.0, 1020.0, 1005.0, 985.0],
            vec![1015.0, 975.0, 1000.0, 1010.0],
        ];
        let l = two_levels(&starts).unwrap();
        assert_eq!(l.between, 0.0, "{l:?}");
        assert_eq!(l.share_between(), 0.0);
        assert_eq!(l.best_runs_per_start(1.0, 10.0), Some(MAX_RUNS_PER_START));
        assert_eq!(two_levels(&[vec![1.0, 2.0]]), None);
        assert_eq!(two_levels(&[vec![1.0], vec![2.0, 3.0]]), None);
    }

    #[test]
    fn a_cell_whose_starts_hold_the_noise_is_advised_to_repeat_starts() {
        // Three starts 5 % apart on the log scale, runs ±1 % within each: the
        // variance of the runs is 1e-4, that of the starts' means 25e-4, of which
        // 1e-4 / 3 comes from the runs.
        let mut runs = Vec::new();
        for (start, s) in [(7, -0.05), (8, 0.0), (9, 0.05)] {
            for r in [-0.01, 0.0, 0.01] {
                runs.push((start, 1000.0 * f64::exp(s + r)));
            }
        }
        runs.push((10, 5000.0)); // one run alone: left out
        let a = of_runs(&runs).unwrap();
        assert_eq!((a.levels.starts, a.levels.runs_per_start), (3, 3));
        assert!((a.levels.within - 1e-4).abs() < 1e-12, "{a:?}");
        assert!(
            (a.levels.between - (25e-4 - 1e-4 / 3.0)).abs() < 1e-12,
            "{a:?}"
        );
        assert_eq!(a.advised_runs_per_start, 1);
        assert_eq!(a.cheapest(), "starts");
        assert_eq!(
            a.text(),
            "96 % of the variance between server starts (±5.0 % a start, ±1.0 % a run \
             within one; 3 starts × 3 runs): cheapest to repeat starts, one run each"
        );
        assert_eq!(of_runs(&runs[..3]), None);
        assert_eq!(of_runs(&[(1, 1.0), (1, 0.0), (2, 1.0), (2, 1.0)]), None);
    }
}
