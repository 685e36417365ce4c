//! Verdicts: what an interval of a change says about B against A.

use serde::Serialize;

/// Outcome for one metric of one cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// B is better (more TPS, or less latency), the whole interval on that side.
    Faster,
    /// B is worse, the whole interval on that side.
    Slower,
    /// The interval contains zero.
    NoDifference,
    /// Too few repeats (or unusable values) to have an interval.
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

    /// The verdict of an interval `[low, high]` of a relative change; `higher_is_better`
    /// for throughput, not for latency.
    pub fn of_interval(low: f64, high: f64, higher_is_better: bool) -> Verdict {
        let (up, down) = (low > 0.0, high < 0.0);
        match (up, down, higher_is_better) {
            (true, _, true) | (_, true, false) => Verdict::Faster,
            (true, _, false) | (_, true, true) => Verdict::Slower,
            _ => Verdict::NoDifference,
        }
    }
}
