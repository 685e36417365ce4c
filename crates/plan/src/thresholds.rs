//! Campaign `[thresholds]`: CI gates checked on every stored test of the set.
//!
//! ```toml
//! [thresholds]
//! p99 = "< 20ms"
//! tps = "> 5000"
//! failures = "== 0"
//! ```
//!
//! Keys name a measure of a run ([`METRICS`]); values are a comparison (`<`, `<=`,
//! `>`, `>=`, `==`) and a number, with a time unit (`us`, `ms`, `s`) for latencies and
//! lag (default ms). A test whose measure is missing (e.g. lag without a rate) fails
//! the check with a message saying so.

use pgsurge_store::Run;

/// The measures a threshold can name, with the unit of the stored value.
pub const METRICS: &[(&str, Unit)] = &[
    ("tps", Unit::Count),
    ("latency_mean", Unit::Ms),
    ("p50", Unit::Ms),
    ("p90", Unit::Ms),
    ("p95", Unit::Ms),
    ("p99", Unit::Ms),
    ("p999", Unit::Ms),
    ("latency_max", Unit::Ms),
    ("lag_mean", Unit::Ms),
    ("lag_max", Unit::Ms),
    ("failures", Unit::Count),
    ("skipped", Unit::Count),
    ("late", Unit::Count),
    ("commit_mismatch_pct", Unit::Count),
];

/// The measures that are counts of transactions (whole numbers).
const WHOLE: &[&str] = &["failures", "skipped", "late"];

/// How a measure's value is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A plain number.
    Count,
    /// Milliseconds; thresholds may say `us`, `ms` or `s`.
    Ms,
}

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
}

impl Op {
    fn text(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Eq => "==",
        }
    }

    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Eq => a == b,
        }
    }
}

/// One parsed threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// The measure's name (a key of [`METRICS`]).
    pub metric: String,
    /// How the measured value must compare with the bound (`<`, `<=`, `>`, `>=`).
    pub op: Op,
    /// The bound in the stored unit (ms for latencies).
    pub bound: f64,
    /// The text as written, for messages.
    pub text: String,
    unit: Unit,
}

/// Parses `key = "OP NUMBER[UNIT]"`.
pub fn parse(metric: &str, text: &str) -> Result<Threshold, String> {
    let unit = METRICS
        .iter()
        .find(|(m, _)| *m == metric)
        .map(|(_, u)| *u)
        .ok_or_else(|| {
            let names: Vec<&str> = METRICS.iter().map(|(m, _)| *m).collect();
            format!("unknown measure \"{metric}\" (valid: {})", names.join(", "))
        })?;
    let t = text.trim();
    let (op, rest) = [
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("==", Op::Eq),
        ("<", Op::Lt),
        (">", Op::Gt),
    ]
    .iter()
    .find_map(|(p, op)| t.strip_prefix(p).map(|r| (*op, r.trim())))
    .ok_or_else(|| format!("\"{text}\": start with <, <=, >, >= or =="))?;
    let split = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == 'e'))
        .unwrap_or(rest.len());
    let (num, suffix) = rest.split_at(split);
    let n: f64 = num
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| format!("\"{text}\": \"{num}\" is not a number"))?;
    let factor = match (unit, suffix.trim()) {
        (Unit::Count, "") => 1.0,
        (Unit::Count, s) => {
            return Err(format!("\"{text}\": {metric} takes no unit (got \"{s}\")"))
        }
        (Unit::Ms, "" | "ms") => 1.0,
        (Unit::Ms, "us" | "µs") => 0.001,
        (Unit::Ms, "s") => 1000.0,
        (Unit::Ms, s) => {
            return Err(format!(
                "\"{text}\": unknown unit \"{s}\" (use us, ms or s)"
            ))
        }
    };
    let bound = n * factor;
    // Every measure is 0 or more, and the counts are whole numbers: a check that no
    // test can pass is a mistake in the file, refused before anything runs.
    let never = match op {
        Op::Lt if bound <= 0.0 => Some(format!("{metric} is never below 0")),
        Op::Le | Op::Eq if bound < 0.0 => Some(format!("{metric} is never negative")),
        Op::Eq if WHOLE.contains(&metric) && bound.fract() != 0.0 => {
            Some(format!("{metric} is a whole number"))
        }
        _ => None,
    };
    if let Some(why) = never {
        return Err(format!("\"{text}\" can never pass: {why}"));
    }
    Ok(Threshold {
        metric: metric.to_string(),
        op,
        bound,
        text: format!("{} {}", op.text(), rest),
        unit,
    })
}

fn value(run: &Run, metric: &str) -> Option<f64> {
    let d = &run.record;
    let i = |v: Option<i64>| v.map(|x| x as f64);
    match metric {
        "tps" => d.tps,
        "latency_mean" => d.latency_mean_ms,
        "p50" => d.latency_p50_ms,
        "p90" => d.latency_p90_ms,
        "p95" => d.latency_p95_ms,
        "p99" => d.latency_p99_ms,
        "p999" => d.latency_p999_ms,
        "latency_max" => d.latency_max_ms,
        "lag_mean" => d.lag_mean_ms,
        "lag_max" => d.lag_max_ms,
        "failures" => i(d.failures),
        "skipped" => i(d.skipped),
        "late" => i(d.late),
        "commit_mismatch_pct" => d.commit_mismatch_pct,
        _ => None,
    }
}

/// One failed check.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    /// The test's identity.
    pub test_key: String,
    /// What failed, e.g. `p99 = 25.300 ms, not < 20ms`.
    pub message: String,
}

/// Checks every threshold on every run stored successfully; runs that failed are
/// reported by the campaign itself.
pub fn check(thresholds: &[Threshold], runs: &[Run]) -> Vec<Violation> {
    let mut out = Vec::new();
    for r in runs.iter().filter(|r| r.record.status == "ok") {
        for t in thresholds {
            let message = match value(r, &t.metric) {
                None => Some(format!("{}: not measured, so not {}", t.metric, t.text)),
                Some(v) if !t.op.holds(v, t.bound) => Some(match t.unit {
                    Unit::Ms => format!("{} = {v:.3} ms, not {}", t.metric, t.text),
                    Unit::Count => format!("{} = {v}, not {}", t.metric, t.text),
                }),
                Some(_) => None,
            };
            if let Some(message) = message {
                out.push(Violation {
                    test_key: r.record.test_key.clone(),
                    message,
                });
            }
        }
    }
    out
}

/// The summary printed when checks fail.
pub fn summary(violations: &[Violation], tests_checked: usize) -> String {
    let mut failing: Vec<&str> = violations.iter().map(|v| v.test_key.as_str()).collect();
    failing.dedup();
    let mut s = format!(
        "thresholds: {} of {tests_checked} tests failed\n",
        failing.len()
    );
    for v in violations {
        s.push_str(&format!("  {}: {}\n", v.test_key, v.message));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgsurge_store::RunRecord;

    fn run(key: &str, tps: f64, p99: Option<f64>) -> Run {
        Run {
            id: 1,
            record: RunRecord {
                test_key: key.into(),
                status: "ok".into(),
                tps: Some(tps),
                latency_p99_ms: p99,
                failures: Some(0),
                ..Default::default()
            },
        }
    }

    #[test]
    fn parses_comparisons_and_units() {
        let t = parse("p99", "< 20ms").unwrap();
        assert_eq!((t.op, t.bound), (Op::Lt, 20.0));
        assert_eq!(parse("p99", "<=1.5s").unwrap().bound, 1500.0);
        assert_eq!(parse("p99", "< 500us").unwrap().bound, 0.5);
        assert_eq!(parse("p99", "< 7").unwrap().bound, 7.0);
        assert_eq!(parse("tps", ">= 5000").unwrap().op, Op::Ge);
        assert_eq!(parse("failures", "== 0").unwrap().op, Op::Eq);
        for (m, bad) in [
            ("p99", "20ms"),
            ("p99", "< fast"),
            ("p99", "< 20 parsecs"),
            ("tps", "> 5000ms"),
            ("p98", "< 1"),
        ] {
            assert!(parse(m, bad).is_err(), "{m} = {bad} parsed");
        }
    }

    #[test]
    fn thresholds_that_can_never_pass_are_refused() {
        for (m, bad, why) in [
            ("p99", "< -5ms", "p99 is never below 0"),
            ("p99", "< 0", "p99 is never below 0"),
            ("latency_mean", "<= -1us", "latency_mean is never negative"),
            ("tps", "== -3", "tps is never negative"),
            ("failures", "== 0.5", "failures is a whole number"),
            ("late", "== 2.25", "late is a whole number"),
            (
                "commit_mismatch_pct",
                "< 0",
                "commit_mismatch_pct is never below 0",
            ),
        ] {
            let e = parse(m, bad).unwrap_err();
            assert_eq!(e, format!("\"{bad}\" can never pass: {why}"), "{m} = {bad}");
        }
        for (m, ok) in [
            ("failures", "== 0"),
            ("failures", "< 0.5"),
            ("p99", "<= 0"),
            ("tps", "> -1"),
            ("tps", "== 2.5"),
            ("commit_mismatch_pct", "<= 0.5"),
        ] {
            assert!(parse(m, ok).is_ok(), "{m} = {ok}");
        }
    }

    #[test]
    fn checks_each_test_and_names_the_failures() {
        let ts = vec![
            parse("p99", "< 20ms").unwrap(),
            parse("tps", "> 5000").unwrap(),
        ];
        let runs = vec![
            run("a/1", 6000.0, Some(10.0)),
            run("b/1", 4000.0, Some(25.0)),
            run("c/1", 7000.0, None),
        ];
        let v = check(&ts, &runs);
        assert_eq!(v.len(), 3, "{v:?}");
        assert_eq!(v[0].test_key, "b/1");
        assert_eq!(v[0].message, "p99 = 25.000 ms, not < 20ms");
        assert_eq!(v[1].message, "tps = 4000, not > 5000");
        assert!(v[2].message.contains("not measured"), "{:?}", v[2]);
        let s = summary(&v, runs.len());
        assert!(s.starts_with("thresholds: 2 of 3 tests failed\n"), "{s}");
        assert!(check(&ts, &runs[..1]).is_empty());
    }
}
