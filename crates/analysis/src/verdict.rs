//! Verdicts: what the repeats of one metric of one cell say about B against A, and by
//! which analysis.
//!
//! The change is a ratio of geometric means, except under the rank analysis, where it
//! is the Hodges–Lehmann shift its interval belongs to (one far repeat can move the
//! geometric mean across zero while the shift and its interval stay on the other
//! side). Its 95 % interval comes from one of three analyses, chosen before looking at
//! the result ([`Analysis`]):
//!
//! 1. **paired** — when both sides were measured in the same rounds (at least
//!    [`MIN_ROUNDS`] of them): Student's t on the per-round log ratios. A drift the
//!    rounds share cancels in each ratio.
//! 2. **hodges-lehmann** — otherwise, when a repeat is an outlier on either side
//!    ([`crate::outliers`]) and each side has at least [`MIN_ROBUST`] repeats: the
//!    rank-based shift of the logarithms and its distribution-free interval, which one
//!    far repeat barely moves.
//! 3. **welch** — otherwise: Welch's t on the logarithms.
//!
//! The verdict is an equivalence judgement against a margin `m` (default
//! [`DEFAULT_MARGIN`], or the A/A noise floor when that is wider):
//!
//! * `no-difference` — the whole interval lies within ±m: whatever the difference is,
//!   it is smaller than the margin;
//! * `faster` / `slower` — otherwise, the whole interval lies on one side of zero;
//! * `inconclusive` — otherwise (the interval holds zero and reaches beyond the
//!   margin: the repeats cannot tell), or when no interval exists.
//!
//! Beside each verdict: the smallest change the comparison could have detected
//! ([`crate::power`]), and, when the interval is wider than the margin, how many
//! repeats the measured spread needs to resolve a change of the margin's size.

use crate::describe::{geometric_mean, logs, stddev, variance};
use crate::interval::{normal_quantile, paired_change, welch_change, RelativeChange};
use crate::outliers::outliers;
use crate::power::{detectable_change, repeats_needed, Design};
use crate::rank::{mann_whitney, relative_shift, Shift};
use serde::Serialize;

/// Confidence level of every interval.
pub const CONFIDENCE: f64 = 0.95;
/// The equivalence margin when none is given: ±2 %.
pub const DEFAULT_MARGIN: f64 = 0.02;
/// Fewest rounds measuring both sides for the paired analysis.
pub const MIN_ROUNDS: usize = 3;
/// Fewest repeats per side for the rank-based analysis to stand in for Welch's.
/// With 7 + 7 repeats one outlier moves none of the order statistics that bound the
/// interval (it makes 7 of the 49 pairwise differences; the bounds are the 9th from
/// each end).
pub const MIN_ROBUST: usize = 7;

/// Outcome for one metric of one cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// B is better (more TPS, or less latency): the whole interval on that side, and
    /// not all of it within the margin.
    Faster,
    /// B is worse: the whole interval on that side, and not all of it within the margin.
    Slower,
    /// The whole interval lies within ±margin.
    NoDifference,
    /// The interval holds zero and reaches beyond the margin, or no interval exists.
    Inconclusive,
}

impl Verdict {
    /// The name used in every output.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoDifference => "no-difference",
            Verdict::Inconclusive => "inconclusive",
        }
    }

    /// The verdict of an interval `[low, high]` of a relative change against `margin`;
    /// `higher_is_better` for throughput, not for latency.
    pub fn of_interval(low: f64, high: f64, margin: f64, higher_is_better: bool) -> Verdict {
        if low >= -margin && high <= margin {
            return Verdict::NoDifference;
        }
        match (low > 0.0, high < 0.0, higher_is_better) {
            (true, _, true) | (_, true, false) => Verdict::Faster,
            (true, _, false) | (_, true, true) => Verdict::Slower,
            _ => Verdict::Inconclusive,
        }
    }
}

/// The analysis a verdict rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Analysis {
    /// Student's t on per-round log ratios.
    Paired,
    /// The Hodges–Lehmann shift of the logarithms and its rank-based interval.
    HodgesLehmann,
    /// Welch's t on the logarithms.
    Welch,
    /// No interval could be made.
    None,
}

impl Analysis {
    /// The name used in outputs.
    pub fn name(self) -> &'static str {
        match self {
            Analysis::Paired => "paired",
            Analysis::HodgesLehmann => "hodges-lehmann",
            Analysis::Welch => "welch",
            Analysis::None => "none",
        }
    }
}

/// Where a margin came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MarginSource {
    /// [`DEFAULT_MARGIN`].
    Default,
    /// Given by the user.
    Given,
    /// The A/A noise floor, wider than the default or given margin.
    NoiseFloor,
}

/// The equivalence margin of a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Margin {
    /// Half-width, as a relative change (0.02 = ±2 %).
    pub value: f64,
    /// Where it came from.
    pub source: MarginSource,
}

impl Default for Margin {
    fn default() -> Self {
        Margin {
            value: DEFAULT_MARGIN,
            source: MarginSource::Default,
        }
    }
}

impl Margin {
    /// A margin the user gave (0.03 = ±3 %).
    pub fn given(value: f64) -> Margin {
        Margin {
            value,
            source: MarginSource::Given,
        }
    }

    /// The margin widened to the A/A noise floor when that is wider.
    pub fn with_noise_floor(self, floor: f64) -> Margin {
        if floor > self.value {
            Margin {
                value: floor,
                source: MarginSource::NoiseFloor,
            }
        } else {
            self
        }
    }
}

/// One metric of one cell, as measured.
#[derive(Debug, Clone, Copy)]
pub struct Samples<'a> {
    /// A's repeats.
    pub a: &'a [f64],
    /// B's repeats.
    pub b: &'a [f64],
    /// (A, B) of each round in which both sides were measured once.
    pub rounds: &'a [(f64, f64)],
    /// Whether a higher value is better (throughput), or lower (latency).
    pub higher_is_better: bool,
}

/// The judgement of one metric of one cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Judgement {
    /// Ratio of B's geometric mean to A's, minus one (the Hodges–Lehmann shift when
    /// [`Analysis::HodgesLehmann`] is used); None when a side has no positive value.
    pub change: Option<f64>,
    /// Lower bound of the interval of the analysis used.
    pub low: Option<f64>,
    /// Upper bound.
    pub high: Option<f64>,
    /// The analysis the interval and the verdict rest on.
    pub analysis: Analysis,
    /// Rounds paired, when the analysis is [`Analysis::Paired`].
    pub rounds: Option<usize>,
    /// The verdict.
    pub verdict: Verdict,
    /// The margin it was judged against.
    pub margin: Margin,
    /// The interval's half-width on the log scale, as a relative change.
    pub half_width: Option<f64>,
    /// The smallest change this comparison would have detected (95 %, 80 % power).
    pub detectable_change: Option<f64>,
    /// When the interval is wider than the margin: the repeats per side (rounds, when
    /// paired) the measured spread needs to resolve a change of the margin's size.
    pub repeats_needed: Option<usize>,
    /// The Hodges–Lehmann shift with its interval, when each side has enough repeats.
    pub robust: Option<Shift>,
    /// Two-sided Mann–Whitney p-value (a distribution-free cross-check).
    pub p_value: Option<f64>,
    /// Indices of A's repeats that are outliers (flagged, never dropped).
    pub outliers_a: Vec<usize>,
    /// Indices of B's repeats that are outliers.
    pub outliers_b: Vec<usize>,
}

/// Judges one metric of one cell against `margin`.
pub fn judge(s: Samples<'_>, margin: Margin) -> Judgement {
    let (ga, gb) = (geometric_mean(s.a), geometric_mean(s.b));
    let change = (ga.is_finite() && gb.is_finite()).then(|| gb / ga - 1.0);
    let outliers_a = outliers(s.a);
    let outliers_b = outliers(s.b);
    let robust = relative_shift(s.a, s.b, CONFIDENCE);
    let paired = (s.rounds.len() >= MIN_ROUNDS)
        .then(|| paired_change(s.rounds, CONFIDENCE))
        .flatten();
    let has_outliers = !outliers_a.is_empty() || !outliers_b.is_empty();
    let enough_for_ranks = s.a.len().min(s.b.len()) >= MIN_ROBUST;
    let (analysis, interval): (Analysis, Option<(f64, f64)>) = if let Some(p) = &paired {
        (Analysis::Paired, Some((p.low, p.high)))
    } else if let (true, true, Some(r)) = (has_outliers, enough_for_ranks, &robust) {
        (Analysis::HodgesLehmann, Some((r.low, r.high)))
    } else {
        match welch_change(s.a, s.b, CONFIDENCE) {
            Some(w) => (Analysis::Welch, Some((w.low, w.high))),
            None => (Analysis::None, None),
        }
    };
    let verdict = match interval {
        Some((lo, hi)) => Verdict::of_interval(lo, hi, margin.value, s.higher_is_better),
        None => Verdict::Inconclusive,
    };
    let half_width =
        interval.map(|(lo, hi)| (((1.0 + hi).ln() - (1.0 + lo).ln()) / 2.0).exp() - 1.0);
    let detectable = match analysis {
        Analysis::Paired => paired.as_ref().and_then(detectable_of),
        Analysis::Welch => welch_change(s.a, s.b, CONFIDENCE)
            .as_ref()
            .and_then(detectable_of),
        // The rank interval's half-width read as 1.96 standard errors.
        Analysis::HodgesLehmann => half_width.and_then(|h| {
            let se = (1.0 + h).ln() / normal_quantile(0.975);
            detectable_change(se, f64::INFINITY)
        }),
        Analysis::None => None,
    };
    let repeats_needed = half_width
        .filter(|h| *h > margin.value)
        .and_then(|_| repeats_for(&s, analysis, margin.value));
    let change = match (analysis, &robust) {
        (Analysis::HodgesLehmann, Some(r)) => Some(r.estimate),
        _ => change,
    };
    Judgement {
        change,
        low: interval.map(|i| i.0),
        high: interval.map(|i| i.1),
        analysis,
        rounds: (analysis == Analysis::Paired).then_some(s.rounds.len()),
        verdict,
        margin,
        half_width,
        detectable_change: detectable,
        repeats_needed,
        robust,
        p_value: mann_whitney(s.a, s.b).map(|m| m.p_value),
        outliers_a,
        outliers_b,
    }
}

fn detectable_of(rc: &RelativeChange) -> Option<f64> {
    detectable_change(rc.se_log, rc.df)
}

/// Repeats per side (rounds when paired) the measured spread needs to detect a change
/// of `change` with `crate::power::POWER`.
fn repeats_for(s: &Samples<'_>, analysis: Analysis, change: f64) -> Option<usize> {
    let design = if analysis == Analysis::Paired {
        let ratios: Option<Vec<f64>> = s
            .rounds
            .iter()
            .map(|(a, b)| (*a > 0.0 && *b > 0.0).then(|| (b / a).ln()))
            .collect();
        Design::Paired {
            sd_log: stddev(&ratios?)?,
        }
    } else {
        let (la, lb) = (logs(s.a)?, logs(s.b)?);
        let (na, nb) = (la.len() as f64, lb.len() as f64);
        let pooled = (variance(&la)? * (na - 1.0) + variance(&lb)? * (nb - 1.0)) / (na + nb - 2.0);
        Design::Independent {
            sd_log: pooled.sqrt(),
        }
    };
    repeats_needed(design, change)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tps(a: &[f64], b: &[f64]) -> Judgement {
        judge(
            Samples {
                a,
                b,
                rounds: &[],
                higher_is_better: true,
            },
            Margin::default(),
        )
    }

    #[test]
    fn equivalence_needs_the_whole_interval_within_the_margin() {
        assert_eq!(
            Verdict::of_interval(-0.01, 0.015, 0.02, true),
            Verdict::NoDifference
        );
        assert_eq!(
            Verdict::of_interval(0.001, 0.015, 0.02, true),
            Verdict::NoDifference
        );
        assert_eq!(
            Verdict::of_interval(-0.04, 0.04, 0.02, true),
            Verdict::Inconclusive
        );
        assert_eq!(
            Verdict::of_interval(0.01, 0.05, 0.02, true),
            Verdict::Faster
        );
        assert_eq!(
            Verdict::of_interval(0.01, 0.05, 0.02, false),
            Verdict::Slower
        );
        assert_eq!(
            Verdict::of_interval(-0.05, -0.01, 0.02, true),
            Verdict::Slower
        );
    }

    #[test]
    fn a_wild_interval_is_inconclusive_not_no_difference() {
        // A = {100, 810.5}, B = {120, 125}: the interval spans from −100 % to
        // hundreds of thousands of per cent.
        let j = tps(&[100.0, 810.5], &[120.0, 125.0]);
        assert_eq!(j.analysis, Analysis::Welch);
        assert_eq!(j.verdict, Verdict::Inconclusive);
        assert!(j.low.unwrap() < -0.9 && j.high.unwrap() > 100.0, "{j:?}");
        // Even 10,000 repeats of this spread would not resolve a 2 % change.
        assert_eq!(j.repeats_needed, None, "{j:?}");
    }

    #[test]
    fn a_tight_a_a_pair_is_no_difference_with_its_detectable_change() {
        let j = tps(
            &[1000.0, 1003.0, 998.0, 1001.0, 999.0],
            &[1001.0, 999.0, 1002.0, 998.0, 1000.0],
        );
        assert_eq!(j.verdict, Verdict::NoDifference, "{j:?}");
        let d = j.detectable_change.unwrap();
        assert!(d > 0.0 && d < 0.01, "{j:?}");
        assert_eq!(j.repeats_needed, None);
    }

    #[test]
    fn shared_drift_is_cancelled_by_pairing_rounds() {
        // Base drifted 1487 → 782 → 575 over three rounds; B is 59 % lower each round.
        let a = [1487.0, 782.0, 575.0];
        let b = [610.0, 321.0, 236.0];
        let rounds: Vec<(f64, f64)> = a.iter().copied().zip(b.iter().copied()).collect();
        let welch = tps(&a, &b);
        assert_eq!(welch.verdict, Verdict::Inconclusive, "{welch:?}");
        let j = judge(
            Samples {
                a: &a,
                b: &b,
                rounds: &rounds,
                higher_is_better: true,
            },
            Margin::default(),
        );
        assert_eq!((j.analysis, j.rounds), (Analysis::Paired, Some(3)));
        assert_eq!(j.verdict, Verdict::Slower, "{j:?}");
        assert!(j.high.unwrap() < -0.5, "{j:?}");
    }

    #[test]
    fn an_outlier_with_enough_repeats_switches_to_the_rank_interval() {
        let a = [1000.0, 1004.0, 998.0, 1002.0, 1001.0, 999.0, 1003.0, 420.0];
        let b = [950.0, 953.0, 948.0, 951.0, 949.0, 952.0, 950.5, 951.5];
        let j = tps(&a, &b);
        assert_eq!(j.outliers_a, vec![7]);
        assert_eq!(j.analysis, Analysis::HodgesLehmann, "{j:?}");
        assert_eq!(j.verdict, Verdict::Slower, "{j:?}");
        let r = j.robust.unwrap();
        assert!((r.estimate - -0.0504).abs() < 0.002, "{r:?}");
        // The point stated is the shift the interval belongs to, not the ratio of
        // geometric means the outlier drags above zero.
        assert_eq!(j.change, Some(r.estimate));
        assert!(
            j.low.unwrap() <= r.estimate && r.estimate <= j.high.unwrap(),
            "{j:?}"
        );
        assert!(geometric_mean(&b) / geometric_mean(&a) > 1.0);
        // Welch's interval on the same values is pulled wide by the outlier.
        let w = welch_change(&a, &b, CONFIDENCE).unwrap();
        assert!(w.high > 0.0, "{w:?}");
    }

    #[test]
    fn the_noise_floor_widens_the_margin() {
        let m = Margin::default().with_noise_floor(0.05);
        assert_eq!((m.value, m.source), (0.05, MarginSource::NoiseFloor));
        let m = Margin::default().with_noise_floor(0.01);
        assert_eq!(m.source, MarginSource::Default);
        let j = judge(
            Samples {
                a: &[1000.0, 1010.0, 995.0, 1003.0],
                b: &[1030.0, 1040.0, 1025.0, 1033.0],
                rounds: &[],
                higher_is_better: true,
            },
            Margin::default().with_noise_floor(0.05),
        );
        assert_eq!(j.verdict, Verdict::NoDifference, "{j:?}");
    }

    #[test]
    fn single_repeats_have_no_interval() {
        let j = tps(&[10.0], &[12.0]);
        assert_eq!(
            (j.verdict, j.analysis),
            (Verdict::Inconclusive, Analysis::None)
        );
        assert!((j.change.unwrap() - 0.2).abs() < 1e-12);
        assert_eq!(j.detectable_change, None);
    }
}
