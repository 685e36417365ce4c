//! The sections that replace fixed matrix values by a search: `[capacity]` (the
//! highest rate meeting a latency objective) and `[repeats]` (repeats until a cell's
//! figure is precise enough).

use serde::{Deserialize, Serialize};

use super::{limits, three, DurationValue};

/// `[capacity]`: the highest rate (`-R`) whose latency percentile stays under a bound,
/// found per matrix cell by doubling the rate from `start_rate` until the objective is
/// missed, then bisecting until the passing and failing rates are within `resolution`.
/// Each step runs `repeats` times; a step passes when the median of its runs'
/// percentile is under the bound, every run ended ok, and the runs kept up with the rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacitySection {
    /// The percentile judged: 50, 90, 95, 99 or 99.9 (default 99).
    #[serde(default = "ninety_nine")]
    pub percentile: f64,
    /// The latency objective, e.g. "10ms".
    pub bound: DurationValue,
    /// The first rate tried, in tps.
    pub start_rate: f64,
    /// The highest rate tried (default: 1000 × start_rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rate: Option<f64>,
    /// Runs per step (default 3).
    #[serde(default = "three")]
    pub repeats: u32,
    /// Stop when the failing rate is within this fraction above the passing one
    /// (default 0.05).
    #[serde(default = "five_hundredths")]
    pub resolution: f64,
}

impl CapacitySection {
    /// The objective in milliseconds.
    pub fn bound_ms(&self) -> f64 {
        self.bound.seconds().unwrap_or(0.0) * 1000.0
    }

    /// The highest rate tried (default: 1000 × start_rate, at most the highest rate a
    /// campaign takes).
    pub fn max_rate(&self) -> f64 {
        self.max_rate
            .unwrap_or((self.start_rate * 1000.0).min(limits::RATE.1))
    }

    /// The objective in numbers, as the search of `pgsurge_analysis::capacity` takes it.
    pub fn objective(&self) -> pgsurge_analysis::capacity::Objective {
        pgsurge_analysis::capacity::Objective {
            percentile: self.percentile,
            bound_ms: self.bound_ms(),
            start_rate: self.start_rate,
            max_rate: self.max_rate(),
            repeats: self.repeats,
            resolution: self.resolution,
        }
    }
}

/// `[repeats]`: repeats until precise, or repeats nested in levels.
///
/// With `until`, a cell stops repeating once the 95 % interval of the change between
/// its targets (of its own mean, with one target) is within `until` either side and
/// the change is decided against a margin of ±`until` (not `inconclusive`), after at
/// least `min` repeats; it never runs more than `max`, and once the campaign's
/// `budget` of wall time is spent no cell starts a repeat beyond `min`. Rounds stay
/// interleaved (and shuffled) across targets.
///
/// With `builds` or `starts`, the `matrix.repeats` of each cell are nested: `builds`
/// layout builds of each (`source`) target, `starts` server starts of each build, and
/// the rest runs within a start (`matrix.repeats` = builds × starts × runs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepeatsSection {
    /// The precision, as a percentage: `"2%"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// Fewest repeats of every cell (default 3).
    #[serde(default = "three")]
    pub min: u32,
    /// Most repeats of a cell (default 10).
    #[serde(default = "ten")]
    pub max: u32,
    /// Wall time after which no cell starts a repeat beyond `min` (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<DurationValue>,
    /// Builds of each `source` target that differ only in code layout (default 1: the
    /// target's one build). Each is linked with its own seed (1, 2, …).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub builds: u32,
    /// Server starts of each build (default 1): a new throwaway cluster for each.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub starts: u32,
}

impl RepeatsSection {
    /// `until` as a fraction (0.02 for `"2%"`), or what is wrong with it.
    pub fn precision(&self) -> Result<f64, String> {
        let t = self.until.as_deref().ok_or("given")?.trim();
        let number = t.strip_suffix('%').ok_or("a percentage such as \"2%\"")?;
        match number.trim().parse::<f64>() {
            Ok(p) if p > 0.0 && p < 100.0 => Ok(p / 100.0),
            _ => Err("a percentage above 0 and below 100, such as \"2%\"".into()),
        }
    }
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

fn ten() -> u32 {
    10
}

fn ninety_nine() -> f64 {
    99.0
}

fn five_hundredths() -> f64 {
    0.05
}
