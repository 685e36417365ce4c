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
//!
//! A third level, builds of one source that differ in code layout only, nests
//! starts: with `n₃` builds of `n₂` starts of `n₁` runs, `Ȳᵢ` the mean of build i,
//! `Ȳᵢⱼ` that of its start j:
//!
//! * `S₁²` as above, over every start of every build;
//! * `S₂² = Σᵢ Σⱼ (Ȳᵢⱼ − Ȳᵢ)² / (n₃ (n₂ − 1))` — the spread of starts within a build;
//! * `S₃² = Σᵢ (Ȳᵢ − Ȳ)² / (n₃ − 1)` — the spread of the builds' means;
//! * `T₁² = S₁²`, `T₂² = S₂² − S₁² / n₁`, `T₃² = S₃² − S₂² / n₂` (each below 0 read as
//!   0). Each level needs two or more of its units, each with two or more of the level
//!   below; otherwise it is not estimable, said so rather than given a number.
//!
//! With the measured cost of each level — `c₁` a run, `c₂` a start (its server start
//! and data load), `c₃` a build — the cheapest design for a precision repeats
//! `n₁ = ⌈√(c₂ T₁² / (c₁ T₂²))⌉` runs per start and `n₂ = ⌈√(c₃ T₂² / (c₂ T₃²))⌉`
//! starts per build, and builds for the rest ([`of_nested_runs`]).
//!
//! A side's repeats get one or the other ([`of_side`]): over two builds or more the
//! three levels only, since the two would count the builds' variance as the starts'.

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

/// The three levels of builds × starts × runs, balanced by cutting each build to the
/// fewest starts any has and each start to the fewest runs any has.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ThreeLevels {
    /// Builds measured (`n₃`).
    pub builds: usize,
    /// Starts per build used (`n₂`).
    pub starts_per_build: usize,
    /// Runs per start used (`n₁`).
    pub runs_per_start: usize,
    /// `T₁²`: the variance of runs within a start.
    pub within: f64,
    /// `T₂²`: the variance the starts add within a build.
    pub between_starts: f64,
    /// `T₃²`: the variance the builds add.
    pub between_builds: f64,
}

impl ThreeLevels {
    /// Each level's share of one run's variance: (runs, starts, builds); zeros when
    /// there is no variance at all.
    pub fn shares(&self) -> (f64, f64, f64) {
        let total = self.within + self.between_starts + self.between_builds;
        if total > 0.0 {
            (
                self.within / total,
                self.between_starts / total,
                self.between_builds / total,
            )
        } else {
            (0.0, 0.0, 0.0)
        }
    }

    /// The runs per start and starts per build that cost least for a precision, each
    /// level at its cost; None when a cost is not positive.
    pub fn best_design(&self, costs: &LevelCosts) -> Option<(usize, usize)> {
        if !(costs.run > 0.0 && costs.start > 0.0 && costs.build > 0.0) {
            return None;
        }
        let ratio = |lower: f64, lower_cost: f64, upper: f64, upper_cost: f64| {
            if upper <= 0.0 {
                return MAX_RUNS_PER_START;
            }
            let n = (upper_cost * lower / (lower_cost * upper)).sqrt().ceil();
            (n as usize).clamp(1, MAX_RUNS_PER_START)
        };
        Some((
            ratio(self.within, costs.run, self.between_starts, costs.start),
            ratio(
                self.between_starts,
                costs.start,
                self.between_builds,
                costs.build,
            ),
        ))
    }
}

/// The three levels of `builds` (each build's starts, each start's runs). Err says
/// why they are not estimable: fewer than two builds, a build with fewer than two
/// starts, a start with fewer than two runs, or a value that is not finite.
pub fn three_levels(builds: &[Vec<Vec<f64>>]) -> Result<ThreeLevels, &'static str> {
    if builds.len() < 2 {
        return Err("fewer than two builds");
    }
    let n2 = builds.iter().map(Vec::len).min().unwrap_or(0);
    if n2 < 2 {
        return Err("a build ran in fewer than two server starts");
    }
    let n1 = builds.iter().flatten().map(Vec::len).min().unwrap_or(0);
    if n1 < 2 {
        return Err("a server start ran fewer than two runs");
    }
    if builds.iter().flatten().flatten().any(|v| !v.is_finite()) {
        return Err("a figure is not finite");
    }
    let n3 = builds.len();
    let (n1f, n2f, n3f) = (n1 as f64, n2 as f64, n3 as f64);
    let (mut within_sum, mut starts_sum, mut build_means) = (0.0, 0.0, Vec::new());
    for build in builds {
        let starts: Vec<&[f64]> = build[..n2].iter().map(|s| &s[..n1]).collect();
        let means: Vec<f64> = starts.iter().map(|s| mean(s)).collect();
        let build_mean = mean(&means);
        for (s, m) in starts.iter().zip(&means) {
            within_sum += s.iter().map(|y| (y - m).powi(2)).sum::<f64>();
            starts_sum += (m - build_mean).powi(2);
        }
        build_means.push(build_mean);
    }
    let grand = mean(&build_means);
    let s1 = within_sum / (n3f * n2f * (n1f - 1.0));
    let s2 = starts_sum / (n3f * (n2f - 1.0));
    let s3 = build_means.iter().map(|m| (m - grand).powi(2)).sum::<f64>() / (n3f - 1.0);
    Ok(ThreeLevels {
        builds: n3,
        starts_per_build: n2,
        runs_per_start: n1,
        within: s1,
        between_starts: (s2 - s1 / n1f).max(0.0),
        between_builds: (s3 - s2 / n2f).max(0.0),
    })
}

/// What one repeat of each level costs, in seconds of wall time: a run, a server start
/// (the start and the data loaded into it), a build.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LevelCosts {
    /// A run (its measured window and warm-up).
    pub run: f64,
    /// A server start.
    pub start: f64,
    /// A build.
    pub build: f64,
}

/// Where a side's noise lives when its repeats ran in several builds: the three
/// levels (None when not estimable, with the reason), each level's share, and the
/// design that costs least.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BuildsAdvice {
    /// Builds the repeats ran in.
    pub builds: usize,
    /// The three levels' variances of the logarithms; None when not estimable.
    pub levels: Option<ThreeLevels>,
    /// Why the levels are not estimable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_estimable: Option<String>,
    /// Each level's share of one run's variance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share_runs: Option<f64>,
    /// The starts' share.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share_starts: Option<f64>,
    /// The builds' share.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share_builds: Option<f64>,
    /// The measured costs, when every level's was measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub costs: Option<LevelCosts>,
    /// The runs per start that cost least.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advised_runs_per_start: Option<usize>,
    /// The starts per build that cost least.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advised_starts_per_build: Option<usize>,
    /// The level cheapest to repeat: `runs`, `starts` or `builds`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cheapest: Option<&'static str>,
}

impl BuildsAdvice {
    /// `builds 40 %, starts 35 %, runs 25 % of the variance (±2.1 % a build, …;
    /// 2 builds × 2 starts × 3 runs): cheapest to repeat builds, …`, or why the levels
    /// are not estimable.
    pub fn text(&self) -> String {
        let Some(l) = &self.levels else {
            return format!(
                "builds: not estimable over {} builds ({})",
                self.builds,
                self.not_estimable.as_deref().unwrap_or("too few repeats")
            );
        };
        let (r, s, b) = l.shares();
        let spread = |v: f64| v.sqrt() * 100.0;
        let mut text = format!(
            "{:.0} % of the variance between builds, {:.0} % between server starts, \
             {:.0} % between runs (±{:.1} % a build, ±{:.1} % a start, ±{:.1} % a run; \
             {} builds × {} starts × {} runs)",
            b * 100.0,
            s * 100.0,
            r * 100.0,
            spread(l.between_builds),
            spread(l.between_starts),
            spread(l.within),
            l.builds,
            l.starts_per_build,
            l.runs_per_start
        );
        match (self.costs, self.cheapest) {
            (Some(c), Some(level)) => {
                let count = |n: usize, what: &str| match n {
                    1 => format!("1 {what}"),
                    n => format!("{n} {what}s"),
                };
                text.push_str(&format!(
                    ": cheapest to repeat {level} (a build {:.0} s, a start {:.0} s, a run \
                     {:.0} s: builds of {} × {})",
                    c.build,
                    c.start,
                    c.run,
                    count(self.advised_starts_per_build.unwrap_or(1), "start"),
                    count(self.advised_runs_per_start.unwrap_or(1), "run")
                ))
            }
            _ => text.push_str(": the cost of each level was not measured"),
        }
        text
    }
}

/// The levels of a side's repeats, each given as (its build, its server start, its
/// figure), on the logarithms of the figures; `costs` as measured. None when the
/// repeats ran in fewer than two builds or a figure is not positive.
pub fn of_nested_runs<B: PartialEq, S: PartialEq>(
    runs: &[(B, S, f64)],
    costs: Option<LevelCosts>,
) -> Option<BuildsAdvice> {
    if !runs.iter().all(|(_, _, v)| v.is_finite() && *v > 0.0) {
        return None;
    }
    // Each build with its starts, each start with its logarithms.
    type Starts<'a, S> = Vec<(&'a S, Vec<f64>)>;
    let mut builds: Vec<(&B, Starts<S>)> = Vec::new();
    for (b, s, v) in runs {
        let at = match builds.iter().position(|(k, _)| *k == b) {
            Some(i) => i,
            None => {
                builds.push((b, Vec::new()));
                builds.len() - 1
            }
        };
        let starts = &mut builds[at].1;
        match starts.iter_mut().find(|(k, _)| *k == s) {
            Some((_, values)) => values.push(v.ln()),
            None => starts.push((s, vec![v.ln()])),
        }
    }
    if builds.len() < 2 {
        return None;
    }
    let nested: Vec<Vec<Vec<f64>>> = builds
        .into_iter()
        .map(|(_, starts)| starts.into_iter().map(|(_, v)| v).collect())
        .collect();
    let mut advice = BuildsAdvice {
        builds: nested.len(),
        levels: None,
        not_estimable: None,
        share_runs: None,
        share_starts: None,
        share_builds: None,
        costs,
        advised_runs_per_start: None,
        advised_starts_per_build: None,
        cheapest: None,
    };
    match three_levels(&nested) {
        Err(why) => advice.not_estimable = Some(why.to_string()),
        Ok(levels) => {
            let (r, s, b) = levels.shares();
            (advice.share_runs, advice.share_starts, advice.share_builds) =
                (Some(r), Some(s), Some(b));
            if let Some((n1, n2)) = costs.and_then(|c| levels.best_design(&c)) {
                advice.advised_runs_per_start = Some(n1);
                advice.advised_starts_per_build = Some(n2);
                advice.cheapest = Some(if n1 > 1 {
                    "runs"
                } else if n2 > 1 {
                    "starts"
                } else {
                    "builds"
                });
            }
            advice.levels = Some(levels);
        }
    }
    Some(advice)
}

/// Where one side's noise lives, at the levels its repeats span: the two levels of
/// runs and starts, or, when the repeats ran on two layout builds or more, the three.
#[derive(Debug, Clone, PartialEq)]
pub struct SideLevels {
    /// Runs within a start and between starts; None over two builds or more.
    pub starts: Option<Advice>,
    /// Runs, starts within a build and builds; None on fewer than two builds.
    pub builds: Option<BuildsAdvice>,
}

/// The levels of a side's repeats, each given as (its layout build when it ran on
/// one, its server start, its figure); `costs` as measured on the layout builds. Over
/// two builds or more only the three levels are given: the starts' means then differ
/// by their builds too, so the spread between starts would hold the builds' variance,
/// while the three levels say what the starts add within a build.
pub fn of_side<B: PartialEq, S: PartialEq>(
    runs: &[(Option<B>, S, f64)],
    costs: Option<LevelCosts>,
) -> SideLevels {
    let on_builds: Vec<(&B, &S, f64)> = runs
        .iter()
        .filter_map(|(b, s, v)| Some((b.as_ref()?, s, *v)))
        .collect();
    let builds = of_nested_runs(&on_builds, costs);
    let starts = match builds {
        Some(_) => None,
        None => of_runs(&runs.iter().map(|(_, s, v)| (s, *v)).collect::<Vec<_>>()),
    };
    SideLevels { starts, builds }
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

    #[test]
    fn three_levels_match_their_definition() {
        // Three builds (about 1010, 1035, 985) of two starts each, one start with a
        // fourth run that the balanced design leaves out.
        let builds = vec![
            vec![vec![1001.0, 998.0, 1003.0], vec![1011.0, 1013.0, 1009.0]],
            vec![vec![1041.0, 1037.0, 1042.0], vec![1030.0, 1034.0, 1029.0]],
            vec![vec![979.0, 983.0, 978.0], vec![990.0, 986.0, 991.0, 5000.0]],
        ];
        let l = three_levels(&builds).unwrap();
        assert_eq!((l.builds, l.starts_per_build, l.runs_per_start), (3, 2, 3));
        assert!((l.within - 6.388_888_888_889).abs() < 1e-9, "{l:?}");
        assert!((l.between_starts - 42.666_666_666_67).abs() < 1e-8, "{l:?}");
        assert!((l.between_builds - 633.638_888_888_9).abs() < 1e-8, "{l:?}");
        assert!((l.shares().2 - 0.928_144_199_86).abs() < 1e-9);
        // A run costs 60 s, a start 30 s, a build 600 s.
        let costs = LevelCosts {
            run: 60.0,
            start: 30.0,
            build: 600.0,
        };
        assert_eq!(l.best_design(&costs), Some((1, 2)));
        assert_eq!(
            l.best_design(&LevelCosts {
                build: 0.0,
                ..costs
            }),
            None
        );
    }

    #[test]
    fn too_few_repeats_at_any_level_are_not_estimable() {
        let two = vec![1.0, 2.0];
        let cases = [
            (
                vec![vec![two.clone(), two.clone()]],
                "fewer than two builds",
            ),
            (
                vec![vec![two.clone()], vec![two.clone(), two.clone()]],
                "a build ran in fewer than two server starts",
            ),
            (
                vec![vec![two.clone(), vec![1.0]], vec![two.clone(), two.clone()]],
                "a server start ran fewer than two runs",
            ),
            (
                vec![
                    vec![two.clone(), vec![1.0, f64::NAN]],
                    vec![two.clone(), two],
                ],
                "a figure is not finite",
            ),
        ];
        for (builds, why) in cases {
            assert_eq!(three_levels(&builds), Err(why), "{builds:?}");
        }
        // Two builds of one start each: the side spans builds, the levels are not
        // estimable, and the text says so instead of a number.
        let runs = [
            ("b1", 1, 100.0),
            ("b1", 1, 101.0),
            ("b2", 2, 99.0),
            ("b2", 2, 98.0),
        ];
        let a = of_nested_runs(&runs, None).unwrap();
        assert_eq!(a.levels, None);
        assert_eq!(
            a.text(),
            "builds: not estimable over 2 builds (a build ran in fewer than two server starts)"
        );
        assert_eq!(of_nested_runs(&runs[..2], None), None);
    }

    #[test]
    fn a_side_over_builds_gets_each_level_share_and_the_cheapest_design() {
        // On the log scale: builds ±3 %, starts ±1 % within a build, runs ±0.5 % within
        // a start. So S₁² = 5e-5, S₂² = 2e-4, S₃² = 1.8e-3; T₂² = 2e-4 − 5e-5 / 2,
        // T₃² = 1.8e-3 − 2e-4 / 2.
        let mut runs = Vec::new();
        for (build, b) in [("x", -0.03), ("y", 0.03)] {
            for (start, s) in [(1, -0.01), (2, 0.01)] {
                for r in [-0.005, 0.005] {
                    runs.push((build, (build, start), 1000.0 * f64::exp(b + s + r)));
                }
            }
        }
        let costs = LevelCosts {
            run: 10.0,
            start: 5.0,
            build: 100.0,
        };
        let a = of_nested_runs(&runs, Some(costs)).unwrap();
        let l = a.levels.unwrap();
        assert!((l.within - 5e-5).abs() < 1e-12, "{l:?}");
        assert!((l.between_starts - 1.75e-4).abs() < 1e-12, "{l:?}");
        assert!((l.between_builds - 1.7e-3).abs() < 1e-12, "{l:?}");
        assert_eq!(
            (a.advised_runs_per_start, a.advised_starts_per_build),
            (Some(1), Some(2))
        );
        assert_eq!(a.cheapest, Some("starts"));
        assert_eq!(
            a.text(),
            "88 % of the variance between builds, 9 % between server starts, 3 % between \
             runs (±4.1 % a build, ±1.3 % a start, ±0.7 % a run; 2 builds × 2 starts × 2 \
             runs): cheapest to repeat starts (a build 100 s, a start 5 s, a run 10 s: \
             builds of 2 starts × 1 run)"
        );
        let unmeasured = of_nested_runs(&runs, None).unwrap();
        assert_eq!(unmeasured.cheapest, None);
        assert!(unmeasured
            .text()
            .ends_with(": the cost of each level was not measured"));
    }

    #[test]
    fn a_side_over_builds_is_judged_at_three_levels_only() {
        // Builds 10 % apart on the log scale, no start adding anything within a build
        // (each start's runs the same ±1 %), 2 builds × 2 starts × 2 runs.
        let mut runs = Vec::new();
        for (build, b) in [("x", -0.05), ("y", 0.05)] {
            for start in 1..=2 {
                for r in [-0.01, 0.01] {
                    runs.push((Some(build), (build, start), 1000.0 * f64::exp(b + r)));
                }
            }
        }
        let side = of_side(&runs, None);
        let three = side.builds.unwrap().levels.unwrap();
        assert!((three.within - 2e-4).abs() < 1e-12, "{three:?}");
        assert_eq!(three.between_starts, 0.0, "{three:?}");
        assert!((three.between_builds - 0.005).abs() < 1e-12, "{three:?}");
        assert_eq!(side.starts, None, "no two-level line over builds");
        // Taken as two levels, the starts' means would carry the builds' difference.
        let flat: Vec<((&str, i32), f64)> = runs.iter().map(|(_, s, v)| (*s, *v)).collect();
        let wrong = of_runs(&flat).unwrap();
        assert!(wrong.share_between > 0.9, "{wrong:?}");
        // One build (or none): the two levels, as `of_runs` gives them.
        let one: Vec<(Option<&str>, (&str, i32), f64)> =
            runs.iter().map(|(_, s, v)| (None, *s, *v)).collect();
        let side = of_side(&one, None);
        assert_eq!(side.builds, None);
        assert_eq!(side.starts, Some(wrong));
    }
}
