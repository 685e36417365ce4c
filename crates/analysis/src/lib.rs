//! Judging measurements: pure functions over stored samples and runs. Every statistic
//! pgsurge prints, every verdict and every "why" is computed here, once; `compare`, the
//! report, capacity search, thresholds and `bisect` call it, and render what it returns.
//!
//! Owns no I/O, no store, no clock: values come in as numbers, answers go out as
//! values and words. Nothing here drops a measurement.
//!
//! | module | owns |
//! |---|---|
//! | [`describe`] | mean, median, variance, geometric mean, the summary of a sample |
//! | [`interval`] | intervals of a mean and of a change (Welch, paired by round), t quantiles |
//! | [`rank`] | Mann–Whitney U, the Hodges–Lehmann shift and its interval |
//! | [`outliers`] | repeats far from their cell, by the median absolute deviation |
//! | [`power`] | the smallest detectable change, the repeats a spread needs |
//! | [`steady`] | where a run's warm-up ends (MSER-5's window, the batches that differ from it), whether the rest drifts |
//! | [`verdict`] | the judgement of one metric of one cell: analysis, interval, equivalence verdict |
//! | [`precision`] | how precisely a cell's repeats pin its figure down (its mean, or the change between its targets) and whether that change is decided, the repeats a precision needs |
//! | [`noise_levels`] | where the noise lives: the variance of runs within a server start, of the starts and of layout builds, the design that costs least (Kalibera & Jones) |
//! | [`validity`] | why a verdict or a figure may not hold, from the runs' stored data |
//! | [`limits`] | "what limited this run?": saturated resources, client-bound tests |
//! | [`profile_diff`] | what grew between two sides' profiles: per function, the change of its cost per transaction and its interval |
//! | [`capacity`] | the highest rate meeting a latency objective, searched step by step |
//! | [`outage`] | a failure's cost: the stretch without commits, the steady rate, the recovery |
//! | [`change_points`] | where a series of levels (a cell over a campaign's sets) changed: E-divisive means, each change's size and p-value |
//!
//! Each module uses only modules above it in this list.
#![warn(missing_docs)]

pub mod capacity;
pub mod change_points;
pub mod describe;
pub mod interval;
pub mod limits;
pub mod noise_levels;
pub mod outage;
pub mod outliers;
pub mod power;
pub mod precision;
pub mod profile_diff;
pub mod rank;
pub mod steady;
pub mod validity;
pub mod verdict;
