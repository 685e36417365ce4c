//! Why a verdict (or a capacity figure) may not hold: the reasons found in the stored
//! data of the runs it rests on, stated beside it.
//!
//! A reason does not change the verdict; it says what the numbers measured besides
//! the server under test (the client, a checkpoint, a warm-up that never ended) or why
//! they are too few to lean on. `pgsurge compare --fail-on=invalid` refuses a gate on
//! a comparison that has any.

use serde::Serialize;

/// Fewest repeats per side below which a verdict is stated as weak.
pub const MIN_REPEATS: usize = 3;

/// What the runs of one side of a cell showed: counts of runs with each condition.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Evidence {
    /// Runs.
    pub runs: usize,
    /// Runs in which the client was the bottleneck (its CPU near its cores, or
    /// `Client:ClientRead` dominating the server's waits).
    pub client_bound: usize,
    /// Runs whose `-R` schedule lag grew over the run (the server fell behind the rate).
    pub lag_growing: usize,
    /// Runs with failed transactions.
    pub with_failures: usize,
    /// Runs with retried transactions.
    pub with_retries: usize,
    /// Runs that never reached a steady state (throughput still drifting at the end).
    pub not_steady: usize,
    /// Runs with a checkpoint inside their measured window, shorter than a checkpoint
    /// cycle (a run sees a part of the cycle, not its average).
    pub checkpoint_in_window: usize,
    /// Runs with an autovacuum worker active inside their measured window.
    pub autovacuum_in_window: usize,
    /// Runs against a build with assertions or without optimization.
    pub debug_build: usize,
}

impl Evidence {
    /// The evidence of both sides together.
    pub fn plus(self, o: Evidence) -> Evidence {
        Evidence {
            runs: self.runs + o.runs,
            client_bound: self.client_bound + o.client_bound,
            lag_growing: self.lag_growing + o.lag_growing,
            with_failures: self.with_failures + o.with_failures,
            with_retries: self.with_retries + o.with_retries,
            not_steady: self.not_steady + o.not_steady,
            checkpoint_in_window: self.checkpoint_in_window + o.checkpoint_in_window,
            autovacuum_in_window: self.autovacuum_in_window + o.autovacuum_in_window,
            debug_build: self.debug_build + o.debug_build,
        }
    }
}

/// What a reason is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Fewer than [`MIN_REPEATS`] repeats on a side.
    FewRepeats,
    /// The client was the limit.
    ClientBound,
    /// `-R` schedule lag grew.
    LagGrowing,
    /// Failed transactions.
    Failures,
    /// Retried transactions.
    Retries,
    /// Not steady.
    NotSteady,
    /// A checkpoint inside a short window.
    Checkpoint,
    /// Autovacuum inside the window.
    Autovacuum,
    /// A debug build.
    DebugBuild,
}

/// One reason a verdict may not hold, with how many runs of each side it concerns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reason {
    /// What it is about.
    pub kind: Kind,
    /// Runs of A concerned (for [`Kind::FewRepeats`]: A's repeats).
    pub a: usize,
    /// Runs of B concerned.
    pub b: usize,
    /// In words.
    pub text: String,
}

/// The reasons a comparison of the runs behind `a` and `b` may not hold.
pub fn reasons(a: &Evidence, b: &Evidence) -> Vec<Reason> {
    let mut out = Vec::new();
    if a.runs < MIN_REPEATS || b.runs < MIN_REPEATS {
        out.push(Reason {
            kind: Kind::FewRepeats,
            a: a.runs,
            b: b.runs,
            text: format!(
                "fewer than {MIN_REPEATS} repeats (A {}, B {})",
                a.runs, b.runs
            ),
        });
    }
    /// A kind, how many runs of a side it concerns, its words (`{}`: the counts).
    type Counted = (Kind, fn(&Evidence) -> usize, &'static str);
    let counted: [Counted; 8] = [
        (
            Kind::ClientBound,
            |e| e.client_bound,
            "client-bound runs ({}): they measure the client, not the server",
        ),
        (
            Kind::LagGrowing,
            |e| e.lag_growing,
            "schedule lag growing ({}): the server fell behind the -R rate",
        ),
        (
            Kind::Failures,
            |e| e.with_failures,
            "runs with failed transactions ({})",
        ),
        (
            Kind::Retries,
            |e| e.with_retries,
            "runs with retried transactions ({})",
        ),
        (
            Kind::NotSteady,
            |e| e.not_steady,
            "not steady ({}): throughput still drifting at the end of the run",
        ),
        (
            Kind::Checkpoint,
            |e| e.checkpoint_in_window,
            "a checkpoint inside a window shorter than a checkpoint cycle ({}): runs see part of the cycle",
        ),
        (
            Kind::Autovacuum,
            |e| e.autovacuum_in_window,
            "autovacuum ran inside the measured window ({})",
        ),
        (
            Kind::DebugBuild,
            |e| e.debug_build,
            "debug build ({}): assertions or no optimization make timings meaningless",
        ),
    ];
    for (kind, count, text) in counted {
        let (ca, cb) = (count(a), count(b));
        if ca + cb > 0 {
            let runs = format!("A {ca} of {}, B {cb} of {}", a.runs, b.runs);
            out.push(Reason {
                kind,
                a: ca,
                b: cb,
                text: text.replace("{}", &runs),
            });
        }
    }
    out
}

/// The reasons a figure over the runs behind `e` (one side: a capacity step, a cell's
/// own figures) may not hold; [`Kind::FewRepeats`] only when `repeats_matter`.
pub fn reasons_one_side(e: &Evidence, repeats_matter: bool) -> Vec<Reason> {
    reasons(e, e)
        .into_iter()
        .filter(|r| repeats_matter || r.kind != Kind::FewRepeats)
        .map(|mut r| {
            r.b = 0;
            r.text = one_side_text(&r, e);
            r
        })
        .collect()
}

fn one_side_text(r: &Reason, e: &Evidence) -> String {
    let pair = format!("A {} of {}, B {} of {}", r.a, e.runs, r.a, e.runs);
    if r.kind == Kind::FewRepeats {
        return format!("fewer than {MIN_REPEATS} repeats ({})", e.runs);
    }
    r.text.replace(&pair, &format!("{} of {}", r.a, e.runs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_condition_is_named_with_its_counts_and_none_when_clean() {
        let clean = Evidence {
            runs: 5,
            ..Evidence::default()
        };
        assert!(reasons(&clean, &clean).is_empty());
        let a = Evidence {
            runs: 2,
            client_bound: 1,
            not_steady: 2,
            debug_build: 2,
            ..Evidence::default()
        };
        let r = reasons(&a, &clean);
        let kinds: Vec<Kind> = r.iter().map(|r| r.kind).collect();
        assert_eq!(
            kinds,
            [
                Kind::FewRepeats,
                Kind::ClientBound,
                Kind::NotSteady,
                Kind::DebugBuild
            ]
        );
        assert_eq!(r[0].text, "fewer than 3 repeats (A 2, B 5)");
        assert_eq!(
            r[1].text,
            "client-bound runs (A 1 of 2, B 0 of 5): they measure the client, not the server"
        );
    }

    #[test]
    fn one_side_reasons_name_the_runs_once() {
        let e = Evidence {
            runs: 3,
            with_failures: 1,
            ..Evidence::default()
        };
        let r = reasons_one_side(&e, false);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].text, "runs with failed transactions (1 of 3)");
        let few = Evidence {
            runs: 1,
            ..Evidence::default()
        };
        assert!(reasons_one_side(&few, false).is_empty());
        assert_eq!(
            reasons_one_side(&few, true)[0].text,
            "fewer than 3 repeats (1)"
        );
    }
}
