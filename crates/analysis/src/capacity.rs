//! Capacity at a latency objective: for each cell, the highest rate whose latency
//! percentile stays under a bound.
//!
//! The search doubles the rate from the objective's start rate while it holds (halving
//! from it when even the first rate misses), then bisects between the last passing and
//! the first failing rate until they are within the resolution of each other. Each step
//! is judged from the runs at that rate ([`judge`]): it passes when every run ended ok,
//! the runs kept up with the rate (at least 90 % of it on average: a server that cannot
//! keep up shows as schedule lag, which pgbench counts in the latency anyway), and the
//! median of the runs' percentile is under the bound. The result is the passing rate,
//! the failing rate above it (the capacity lies between them), and the percentile at the
//! passing rate with its 95 % confidence interval over the repeats (Student's t).
//!
//! A step's runs may not measure what the step claims: each run carries what its stored
//! data says about its validity (`validity::Evidence`), and a step names the reasons its
//! runs may not hold ([`Step::reasons`]). The answer rests on the passing step (its rate
//! and percentile) and the failing step above it (the bracket): [`CapacityResult::validity`]
//! names the reasons of both (and fewer than three repeats at the passing rate), save a
//! growing `-R` lag at the failing step: that is how a step fails, not a doubt about it.
//!
//! The campaign runs the steps ([`search`] asks for each); `results show` recomputes every
//! search from the stored runs ([`results_of_runs`]), so both give the same answer.

use serde::{Serialize, Serializer};

use crate::describe::{mean, median};
use crate::interval::mean_interval;
use crate::validity::{reasons_one_side, Evidence, Kind, Reason};

/// Fraction of the target rate the runs must reach on average.
const KEEP_UP: f64 = 0.9;

/// Lowest rate the search goes down to.
const MIN_RATE: f64 = 1.0;

/// What a capacity search looks for, in numbers (a campaign's `[capacity]`).
#[derive(Debug, Clone, PartialEq)]
pub struct Objective {
    /// The percentile judged (99 for p99).
    pub percentile: f64,
    /// The bound the percentile must stay under, in ms.
    pub bound_ms: f64,
    /// The first rate tried, in tps.
    pub start_rate: f64,
    /// The highest rate tried, in tps.
    pub max_rate: f64,
    /// Runs per step.
    pub repeats: u32,
    /// The search stops when the failing rate is within this fraction above the passing
    /// one.
    pub resolution: f64,
}

/// One run of a step, as far as judging it needs.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRun {
    /// The run's status (`ok`, `failed`, …).
    pub status: String,
    /// Its error, when it has one.
    pub error: Option<String>,
    /// The objective's percentile of its latency, in ms.
    pub percentile_ms: Option<f64>,
    /// Its throughput.
    pub tps: Option<f64>,
    /// What its stored data says about its validity.
    pub evidence: Evidence,
}

/// One step of a search: the runs at one rate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// The rate (tps).
    pub rate: f64,
    /// The percentile of each run, in ms.
    pub values_ms: Vec<f64>,
    /// Their median.
    pub median_ms: f64,
    /// Mean throughput of the runs.
    pub mean_tps: f64,
    /// Whether the step met the objective.
    pub pass: bool,
    /// Why it failed (empty when it passed).
    pub why: String,
    /// What its runs' stored data says about them, summed.
    #[serde(skip)]
    pub evidence: Evidence,
    /// The reasons its runs may not hold (empty when none).
    pub validity: Vec<Reason>,
}

impl Step {
    /// One line for the terminal as the search goes: the step's verdict and why.
    pub fn line(&self, cell: &str, percentile: f64) -> String {
        let mut notes = format!("p{} median {:.3} ms", trim(percentile), self.median_ms);
        if !self.why.is_empty() {
            notes.push_str(&format!("; {}", self.why));
        }
        if !self.validity.is_empty() {
            notes.push_str(&format!("; may not hold: {}", texts(&self.validity)));
        }
        format!(
            "capacity {cell}: {} tps {} ({notes})",
            trim(self.rate),
            if self.pass { "passes" } else { "fails" }
        )
    }
}

/// A reason the capacity answer may not hold, with the step it comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepReason {
    /// The step's rate.
    pub rate: f64,
    /// Whether it is the passing step (else the failing one above it).
    pub pass: bool,
    /// The reason.
    #[serde(flatten)]
    pub reason: Reason,
}

fn texts(reasons: &[Reason]) -> String {
    reasons
        .iter()
        .map(|r| r.text.as_str())
        .collect::<Vec<_>>()
        .join("; ")
}

/// The outcome of one cell's search.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapacityResult {
    /// The cell, as its test keys name it without rate and repeat.
    pub cell: String,
    /// The highest passing rate (None: even the lowest rate missed the objective).
    pub rate: Option<f64>,
    /// The lowest failing rate above it (None: the highest rate passed).
    pub fail_rate: Option<f64>,
    /// The percentile at `rate`: median, and 95 % confidence interval over the repeats
    /// (None with a single repeat).
    #[serde(serialize_with = "at_rate")]
    pub at_rate_ms: Option<(f64, Option<(f64, f64)>)>,
    /// Every step in the order run.
    pub steps: Vec<Step>,
    /// The objective: percentile and bound (ms).
    pub percentile: f64,
    /// The bound in ms.
    pub bound_ms: f64,
    /// The reasons the answer may not hold: those of the passing and the failing step.
    pub validity: Vec<StepReason>,
}

/// `at_rate_ms` in JSON: `{"median": …, "ci95": [low, high] | null}` or null.
fn at_rate<S: Serializer>(v: &Option<(f64, Option<(f64, f64)>)>, s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct AtRate {
        median: f64,
        ci95: Option<(f64, f64)>,
    }
    v.map(|(median, ci95)| AtRate { median, ci95 }).serialize(s)
}

/// The reasons the answer resting on `pass` (the passing step) and `fail` (the failing
/// one above it) may not hold.
fn answer_validity(pass: Option<&Step>, fail: Option<&Step>) -> Vec<StepReason> {
    let mut out = Vec::new();
    if let Some(p) = pass {
        out.extend(
            reasons_one_side(&p.evidence, true)
                .into_iter()
                .map(|reason| StepReason {
                    rate: p.rate,
                    pass: true,
                    reason,
                }),
        );
    }
    if let Some(f) = fail {
        out.extend(
            f.validity
                .iter()
                .filter(|r| r.kind != Kind::LagGrowing)
                .map(|reason| StepReason {
                    rate: f.rate,
                    pass: false,
                    reason: reason.clone(),
                }),
        );
    }
    out
}

impl CapacityResult {
    /// One line for the terminal and `results show`.
    pub fn line(&self) -> String {
        let objective = format!("p{} < {} ms", trim(self.percentile), trim(self.bound_ms));
        match (self.rate, self.fail_rate) {
            (None, Some(f)) => format!(
                "{}: no rate meets {objective} (even {} tps misses it){}",
                self.cell,
                trim(f),
                self.validity_note()
            ),
            (None, None) => format!("{}: no step ran", self.cell),
            (Some(r), fail) => {
                let at = match &self.at_rate_ms {
                    Some((m, Some((lo, hi)))) => format!(
                        "p{} {:.3} ms (95% CI {:.3}–{:.3})",
                        trim(self.percentile),
                        m,
                        lo,
                        hi
                    ),
                    Some((m, None)) => format!("p{} {:.3} ms", trim(self.percentile), m),
                    None => String::new(),
                };
                let bracket = match fail {
                    Some(f) => format!("between {} and {} tps", trim(r), trim(f)),
                    None => format!("at least {} tps (the highest rate tried)", trim(r)),
                };
                format!(
                    "{}: capacity at {objective}: {} tps — {bracket}; {at}; {} steps{}",
                    self.cell,
                    trim(r),
                    self.steps.len(),
                    self.validity_note()
                )
            }
        }
    }

    /// `; may not hold: at 300 tps (passing): …` when the answer rests on a step with
    /// reasons; empty when it rests on none.
    pub fn validity_note(&self) -> String {
        let mut note = String::new();
        for (i, r) in self.validity.iter().enumerate() {
            let same_step = i > 0 && self.validity[i - 1].rate == r.rate;
            if same_step {
                note.push_str(&format!("; {}", r.reason.text));
            } else {
                note.push_str(&format!(
                    "{}at {} tps ({}): {}",
                    if i == 0 { "; may not hold: " } else { "; " },
                    trim(r.rate),
                    if r.pass { "passing" } else { "failing" },
                    r.reason.text
                ));
            }
        }
        note
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A step's rate as keys and `-R` carry it: whole tps from 10 up, else one decimal.
pub fn round_rate(rate: f64) -> f64 {
    if rate >= 10.0 {
        rate.round()
    } else {
        (rate * 10.0).round() / 10.0
    }
}

/// Judges a step from its runs.
pub fn judge(rate: f64, runs: &[StepRun], cap: &Objective) -> Step {
    let values: Vec<f64> = runs.iter().filter_map(|r| r.percentile_ms).collect();
    let tps: Vec<f64> = runs.iter().filter_map(|r| r.tps).collect();
    let evidence = runs
        .iter()
        .fold(Evidence::default(), |e, r| e.plus(r.evidence));
    let mean_tps = if tps.is_empty() { 0.0 } else { mean(&tps) };
    let median_ms = median(&values);
    let bound = cap.bound_ms;
    let why = if let Some(bad) = runs.iter().find(|r| r.status != "ok") {
        format!(
            "a run {}: {}",
            bad.status,
            bad.error.as_deref().unwrap_or("")
        )
    } else if values.len() < runs.len() || values.is_empty() {
        "a run has no latency percentile".to_string()
    } else if mean_tps < KEEP_UP * rate {
        format!("kept up with {mean_tps:.1} tps only")
    } else if median_ms >= bound {
        format!(
            "p{} {median_ms:.3} ms ≥ {} ms",
            trim(cap.percentile),
            trim(bound)
        )
    } else {
        String::new()
    };
    Step {
        rate,
        values_ms: values,
        median_ms,
        mean_tps,
        pass: why.is_empty(),
        why,
        validity: reasons_one_side(&evidence, false),
        evidence,
    }
}

/// The most steps one cell's search can take: the first rate, doubling up to
/// the highest rate (or halving down to 1 tps), then bisecting until the rates are within
/// the resolution.
pub fn max_steps(cap: &Objective) -> u32 {
    let start = round_rate(cap.start_rate).max(MIN_RATE);
    let max = round_rate(cap.max_rate).max(start);
    let log2 = |x: f64| x.log2().ceil().clamp(0.0, 1000.0) as u32;
    let bracket = log2(max / start).max(log2(start / MIN_RATE));
    1 + bracket + log2(1.0 / cap.resolution)
}

/// Runs the search for one cell. `run_step(rate)` runs (or finds stored) the step's
/// tests and judges them; it returns None when the campaign was stopped.
pub fn search<E>(
    cell: String,
    cap: &Objective,
    mut run_step: impl FnMut(f64) -> Result<Option<Step>, E>,
) -> Result<Option<CapacityResult>, E> {
    let mut steps: Vec<Step> = Vec::new();
    let mut step = |rate: f64, steps: &mut Vec<Step>| -> Result<Option<bool>, E> {
        if let Some(done) = steps.iter().find(|s| s.rate == rate) {
            return Ok(Some(done.pass));
        }
        match run_step(rate)? {
            Some(s) => {
                let pass = s.pass;
                steps.push(s);
                Ok(Some(pass))
            }
            None => Ok(None),
        }
    };
    let max = round_rate(cap.max_rate);
    let mut rate = round_rate(cap.start_rate).min(max);
    let (mut lo, mut hi): (Option<f64>, Option<f64>) = (None, None);
    // Bracket: up while passing, down while failing.
    let Some(first) = step(rate, &mut steps)? else {
        return Ok(None);
    };
    if first {
        lo = Some(rate);
        while rate < max {
            rate = round_rate((rate * 2.0).min(max));
            match step(rate, &mut steps)? {
                None => return Ok(None),
                Some(true) => lo = Some(rate),
                Some(false) => {
                    hi = Some(rate);
                    break;
                }
            }
        }
    } else {
        hi = Some(rate);
        while rate > MIN_RATE {
            rate = round_rate((rate / 2.0).max(MIN_RATE));
            match step(rate, &mut steps)? {
                None => return Ok(None),
                Some(true) => {
                    lo = Some(rate);
                    break;
                }
                Some(false) => hi = Some(rate),
            }
        }
    }
    // Bisect.
    while let (Some(l), Some(h)) = (lo, hi) {
        let mid = round_rate((l + h) / 2.0);
        if h / l - 1.0 <= cap.resolution || mid <= l || mid >= h {
            break;
        }
        match step(mid, &mut steps)? {
            None => return Ok(None),
            Some(true) => lo = Some(mid),
            Some(false) => hi = Some(mid),
        }
    }
    let at_rate_ms = lo
        .and_then(|l| steps.iter().find(|s| s.rate == l))
        .map(|s| {
            let ci = mean_interval(&s.values_ms, 0.95).map(|i| (i.low, i.high));
            (s.median_ms, ci)
        });
    let at = |rate: Option<f64>| rate.and_then(|r| steps.iter().find(|s| s.rate == r));
    let validity = answer_validity(at(lo), at(hi));
    Ok(Some(CapacityResult {
        cell,
        rate: lo,
        fail_rate: hi,
        at_rate_ms,
        validity,
        steps,
        percentile: cap.percentile,
        bound_ms: cap.bound_ms,
    }))
}

/// One stored run of a capacity search, as [`results_of_runs`] reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRun {
    /// Its test key (`target/s1/wl/c4/cap-r300/2`).
    pub test_key: String,
    /// The rate it ran at.
    pub rate: Option<f64>,
    /// What judging it needs.
    pub run: StepRun,
}

/// The cell of a capacity step's test key: the key without its rate label
/// (`/cap-r300`) and its repeat, or None for a key of no capacity step.
pub fn cell_of_key(key: &str) -> Option<String> {
    let at = key.find("/cap-r")?;
    let rest = &key[at + "/cap-r".len()..];
    let after_rate = rest.find('/').map_or(rest.len(), |p| p);
    let without_repeat = key.rsplit_once('/').map_or("", |(a, _)| a);
    Some(format!(
        "{}{}",
        &key[..at],
        &without_repeat[(at + "/cap-r".len() + after_rate).min(without_repeat.len())..]
    ))
}

/// Every cell's search, recomputed from its stored runs: the same steps the campaign
/// took, judged the same way.
pub fn results_of_runs(runs: &[StoredRun], cap: &Objective) -> Vec<CapacityResult> {
    let mut cells: std::collections::BTreeMap<String, Vec<&StoredRun>> = Default::default();
    for r in runs {
        if let Some(cell) = cell_of_key(&r.test_key) {
            cells.entry(cell).or_default().push(r);
        }
    }
    let mut out = Vec::new();
    for (cell, cell_runs) in cells {
        let result = search(cell.clone(), cap, |rate| {
            let at: Vec<StepRun> = cell_runs
                .iter()
                .filter(|r| r.rate == Some(rate))
                .map(|r| r.run.clone())
                .collect();
            Ok::<_, std::convert::Infallible>((!at.is_empty()).then(|| judge(rate, &at, cap)))
        });
        if let Ok(Some(r)) = result {
            out.push(r);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap(start: f64) -> Objective {
        Objective {
            percentile: 99.0,
            bound_ms: 10.0,
            start_rate: start,
            max_rate: 100_000.0,
            repeats: 3,
            resolution: 0.05,
        }
    }

    /// A server whose p99 grows past the bound at `knee` tps.
    fn model(knee: f64) -> impl FnMut(f64) -> Result<Option<Step>, ()> {
        move |rate| {
            let p99 = 2.0 + 8.0 * rate / knee;
            let values = vec![p99 * 0.98, p99, p99 * 1.02];
            let pass = p99 * 1.0 < 10.0;
            Ok(Some(Step {
                rate,
                median_ms: p99,
                values_ms: values,
                mean_tps: rate,
                pass,
                why: if pass { String::new() } else { "over".into() },
                evidence: Evidence {
                    runs: 3,
                    ..Evidence::default()
                },
                validity: Vec::new(),
            }))
        }
    }

    #[test]
    fn finds_the_knee_within_the_resolution_from_below_and_above() {
        for (start, knee) in [(100.0, 1234.0), (5000.0, 1234.0), (1000.0, 1000.5)] {
            let r = search("c".into(), &cap(start), model(knee))
                .unwrap()
                .unwrap();
            let (lo, hi) = (r.rate.unwrap(), r.fail_rate.unwrap());
            assert!(lo < knee && hi >= knee, "{start} {knee}: {lo} {hi}");
            assert!(hi / lo - 1.0 <= 0.05 || hi - lo <= 1.0, "{lo} {hi}");
            let (median, ci) = r.at_rate_ms.unwrap();
            let (a, b) = ci.unwrap();
            assert!(a < median && median < b && b < 10.5, "{a} {median} {b}");
            // No rate is tried twice.
            let mut rates: Vec<f64> = r.steps.iter().map(|s| s.rate).collect();
            rates.sort_by(f64::total_cmp);
            rates.dedup();
            assert_eq!(rates.len(), r.steps.len());
        }
    }

    #[test]
    fn a_server_that_never_meets_the_objective_has_no_capacity() {
        let r = search("c".into(), &cap(100.0), model(0.5))
            .unwrap()
            .unwrap();
        assert_eq!(r.rate, None);
        assert_eq!(r.fail_rate, Some(1.0));
        assert!(
            r.line().contains("no rate meets p99 < 10 ms"),
            "{}",
            r.line()
        );
    }

    #[test]
    fn the_answer_names_the_reasons_of_the_two_steps_it_rests_on() {
        let objective = Objective {
            max_rate: 200.0,
            ..cap(100.0)
        };
        let clean = Evidence {
            runs: 1,
            ..Evidence::default()
        };
        // Passing up to 100 tps, one client-bound run in each passing step; above, a
        // growing lag and a failed transaction in one run of each failing step.
        let r = search("c".into(), &objective, |rate| {
            let pass = rate <= 100.0;
            let odd = match pass {
                true => Evidence {
                    client_bound: 1,
                    ..clean
                },
                false => Evidence {
                    lag_growing: 1,
                    with_failures: 1,
                    ..clean
                },
            };
            let run = |evidence| StepRun {
                status: "ok".into(),
                error: None,
                percentile_ms: Some(if pass { 5.0 } else { 50.0 }),
                tps: Some(rate),
                evidence,
            };
            let runs = [run(clean), run(odd), run(clean)];
            Ok::<_, ()>(Some(judge(rate, &runs, &objective)))
        })
        .unwrap()
        .unwrap();
        assert_eq!(r.rate, Some(100.0));
        let fail = r.fail_rate.unwrap();
        let step = |rate: f64| r.steps.iter().find(|s| s.rate == rate).unwrap();
        let kinds = |v: &[Reason]| v.iter().map(|r| r.kind).collect::<Vec<_>>();
        assert_eq!(kinds(&step(100.0).validity), [Kind::ClientBound]);
        assert_eq!(
            kinds(&step(fail).validity),
            [Kind::LagGrowing, Kind::Failures]
        );
        // The failing step's growing lag is how it failed: not a doubt about the answer.
        let answer: Vec<(f64, bool, Kind)> = r
            .validity
            .iter()
            .map(|v| (v.rate, v.pass, v.reason.kind))
            .collect();
        assert_eq!(
            answer,
            [
                (100.0, true, Kind::ClientBound),
                (fail, false, Kind::Failures)
            ]
        );
        assert!(
            r.line().ends_with(&format!(
                "; may not hold: at 100 tps (passing): client-bound runs (1 of 3): they \
                 measure the client, not the server; at {} tps (failing): runs with failed \
                 transactions (1 of 3)",
                trim(fail)
            )),
            "{}",
            r.line()
        );
        assert!(
            step(100.0)
                .line("c", 99.0)
                .contains("passes (p99 median 5.000 ms; may not hold: client-bound runs (1 of 3)"),
            "{}",
            step(100.0).line("c", 99.0)
        );
        // A clean search says nothing of validity.
        let clean_search = search("c".into(), &cap(100.0), model(1234.0))
            .unwrap()
            .unwrap();
        assert!(clean_search.validity.is_empty());
        assert!(!clean_search.line().contains("may not hold"));
    }

    #[test]
    fn a_stopped_search_reports_nothing() {
        let mut n = 0;
        let r = search("c".into(), &cap(100.0), |rate| {
            n += 1;
            if n == 3 {
                Ok(None)
            } else {
                model(10_000.0)(rate)
            }
        })
        .unwrap();
        assert!(r.is_none());
    }

    #[test]
    fn a_steps_key_names_its_cell() {
        assert_eq!(
            cell_of_key("local/s1/sleep/c20/cap-r300/2").as_deref(),
            Some("local/s1/sleep/c20")
        );
        assert_eq!(
            cell_of_key("a/s1/w/c4/cap-r2.5/Mprepared/1").as_deref(),
            Some("a/s1/w/c4/Mprepared")
        );
        assert_eq!(cell_of_key("a/s1/w/c4/r-/1"), None);
    }
}
