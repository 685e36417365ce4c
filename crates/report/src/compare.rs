//! The comparison of two groups of cells (A and B): per matrix cell, medians, the
//! relative change of TPS and of p99 latency with a 95 % confidence interval, a
//! Mann–Whitney p-value, a verdict, warnings, and a geometric-mean summary row.
//!
//! Verdict rule: with at least two repeats per side, B is `faster` when the whole
//! confidence interval of the change lies on the better side of zero (higher TPS, lower
//! latency), `slower` when it lies on the worse side, and `~` otherwise. With fewer
//! repeats no interval exists and the verdict is `?`. Owns no I/O.

use crate::cells::{Cell, CellKey};
use crate::stats::{geometric_mean, mann_whitney, median, relative_change};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Smallest change a comparison should be able to see; a wider interval is flagged.
pub const DETECTABLE_CHANGE: f64 = 0.02;
/// Confidence level of the intervals.
pub const CONFIDENCE: f64 = 0.95;

/// Outcome for one metric of one cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// B is better (more TPS, or less latency).
    Faster,
    /// B is worse.
    Slower,
    /// No significant difference.
    Same,
    /// Too few repeats to tell.
    Unknown,
}

impl Verdict {
    /// Text used in tables.
    pub fn symbol(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::Same => "~",
            Verdict::Unknown => "?",
        }
    }
}

/// Comparison of one metric (TPS or p99 latency) in one cell.
#[derive(Debug, Clone, Serialize)]
pub struct MetricComparison {
    /// Median over A's repeats.
    pub a_median: f64,
    /// Median over B's repeats.
    pub b_median: f64,
    /// Relative change of B against A (ratio of geometric means − 1); None if a side is empty.
    pub change: Option<f64>,
    /// Lower bound of the 95 % interval of the change.
    pub ci_low: Option<f64>,
    /// Upper bound.
    pub ci_high: Option<f64>,
    /// Two-sided Mann–Whitney p-value.
    pub p_value: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
}

/// One row of the comparison.
#[derive(Debug, Clone, Serialize)]
pub struct CompareRow {
    /// The matrix cell.
    pub key: CellKey,
    /// Its label.
    pub label: String,
    /// Repeats on A.
    pub a_n: usize,
    /// Repeats on B.
    pub b_n: usize,
    /// Throughput (higher is better).
    pub tps: MetricComparison,
    /// p99 latency in ms (lower is better); None when no run stored it.
    pub p99_ms: Option<MetricComparison>,
    /// Human-readable warnings about this cell.
    pub warnings: Vec<String>,
}

/// A whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// What A is.
    pub a_label: String,
    /// What B is.
    pub b_label: String,
    /// Cells present on both sides.
    pub rows: Vec<CompareRow>,
    /// Cells present on one side only.
    pub unmatched: Vec<String>,
    /// Geometric mean over cells of median TPS ratios, minus 1.
    pub tps_geomean_change: Option<f64>,
    /// Geometric mean over cells of median p99 ratios, minus 1.
    pub p99_geomean_change: Option<f64>,
    /// Verdict counts for TPS: (faster, slower, same, unknown).
    pub tps_verdicts: [usize; 4],
    /// Noise floor from an A/A comparison, if one was given: the widest half-width of
    /// its TPS intervals.
    pub noise_floor: Option<f64>,
}

fn compare_metric(a: &[f64], b: &[f64], higher_is_better: bool) -> MetricComparison {
    let rc = relative_change(a, b, CONFIDENCE);
    let change = rc.map(|r| r.estimate).or_else(|| {
        let (ma, mb) = (median(a), median(b));
        (ma > 0.0 && mb.is_finite()).then(|| mb / ma - 1.0)
    });
    let verdict = match rc {
        None => Verdict::Unknown,
        Some(r) => {
            let better = if higher_is_better {
                r.low > 0.0
            } else {
                r.high < 0.0
            };
            let worse = if higher_is_better {
                r.high < 0.0
            } else {
                r.low > 0.0
            };
            if better {
                Verdict::Faster
            } else if worse {
                Verdict::Slower
            } else {
                Verdict::Same
            }
        }
    };
    MetricComparison {
        a_median: median(a),
        b_median: median(b),
        change,
        ci_low: rc.map(|r| r.low),
        ci_high: rc.map(|r| r.high),
        p_value: mann_whitney(a, b).map(|m| m.p_value),
        verdict,
    }
}

/// Compares cells of A with the cells of B that have the same key (targets and sets are
/// ignored in the match: each side is one group).
pub fn compare(a_label: &str, a: &[Cell], b_label: &str, b: &[Cell]) -> Comparison {
    let index = |cells: &[Cell]| {
        let mut m: BTreeMap<CellKey, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
        for c in cells {
            let e = m.entry(c.key.clone()).or_default();
            e.0.extend(&c.tps);
            e.1.extend(&c.p99_ms);
        }
        m
    };
    let (ia, ib) = (index(a), index(b));
    let mut rows = Vec::new();
    let mut unmatched = Vec::new();
    let (mut tps_ratios, mut p99_ratios) = (Vec::new(), Vec::new());
    let mut counts = [0usize; 4];
    for (key, (a_tps, a_p99)) in &ia {
        let Some((b_tps, b_p99)) = ib.get(key) else {
            unmatched.push(format!("{} (only in A)", key.label()));
            continue;
        };
        let tps = compare_metric(a_tps, b_tps, true);
        let p99_ms =
            (!a_p99.is_empty() && !b_p99.is_empty()).then(|| compare_metric(a_p99, b_p99, false));
        let mut warnings = Vec::new();
        if a_tps.len() < 3 || b_tps.len() < 3 {
            warnings.push(format!(
                "fewer than 3 repeats (A {}, B {})",
                a_tps.len(),
                b_tps.len()
            ));
        }
        if let (Some(lo), Some(hi)) = (tps.ci_low, tps.ci_high) {
            let half = (hi - lo) / 2.0;
            if half > DETECTABLE_CHANGE {
                warnings.push(format!(
                    "noise too high to see a 2 % change (interval ±{:.1} %)",
                    half * 100.0
                ));
            }
        }
        if tps.a_median > 0.0 && tps.b_median > 0.0 {
            tps_ratios.push(tps.b_median / tps.a_median);
        }
        if let Some(p) = &p99_ms {
            if p.a_median > 0.0 && p.b_median > 0.0 {
                p99_ratios.push(p.b_median / p.a_median);
            }
        }
        counts[match tps.verdict {
            Verdict::Faster => 0,
            Verdict::Slower => 1,
            Verdict::Same => 2,
            Verdict::Unknown => 3,
        }] += 1;
        rows.push(CompareRow {
            label: key.label(),
            key: key.clone(),
            a_n: a_tps.len(),
            b_n: b_tps.len(),
            tps,
            p99_ms,
            warnings,
        });
    }
    for key in ib.keys().filter(|k| !ia.contains_key(*k)) {
        unmatched.push(format!("{} (only in B)", key.label()));
    }
    let gm = |r: &[f64]| (!r.is_empty()).then(|| geometric_mean(r) - 1.0);
    Comparison {
        a_label: a_label.to_string(),
        b_label: b_label.to_string(),
        tps_geomean_change: gm(&tps_ratios),
        p99_geomean_change: gm(&p99_ratios),
        rows,
        unmatched,
        tps_verdicts: counts,
        noise_floor: None,
    }
}

impl Comparison {
    /// Records the noise floor measured by an A/A comparison of the same machine.
    pub fn with_noise_floor(mut self, aa: &Comparison) -> Self {
        self.noise_floor = aa
            .rows
            .iter()
            .filter_map(|r| Some((r.tps.ci_high? - r.tps.ci_low?) / 2.0))
            .fold(None, |acc: Option<f64>, h| {
                Some(acc.map_or(h, |a| a.max(h)))
            });
        self
    }
}

/// `+9.4%` style.
pub fn pct(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{:+.1}%", v * 100.0),
        _ => "–".into(),
    }
}

/// `[+7.1%, +11.8%]` style.
pub fn interval(lo: Option<f64>, hi: Option<f64>) -> String {
    match (lo, hi) {
        (Some(l), Some(h)) => format!("[{}, {}]", pct(Some(l)), pct(Some(h))),
        _ => "–".into(),
    }
}

fn p_text(p: Option<f64>) -> String {
    p.map(|p| format!("{p:.3}")).unwrap_or_else(|| "–".into())
}

/// The text table printed by `pgsurge compare`.
pub fn render_text(c: &Comparison) -> String {
    let mut rows: Vec<[String; 13]> = vec![[
        "cell".into(),
        "A tps".into(),
        "B tps".into(),
        "n".into(),
        "change".into(),
        "95% CI".into(),
        "p".into(),
        "verdict".into(),
        "A p99 ms".into(),
        "B p99 ms".into(),
        "change".into(),
        "95% CI".into(),
        "verdict".into(),
    ]];
    for r in &c.rows {
        let (pa, pb, pc, pci, pv) = match &r.p99_ms {
            Some(p) => (
                format!("{:.3}", p.a_median),
                format!("{:.3}", p.b_median),
                pct(p.change),
                interval(p.ci_low, p.ci_high),
                p.verdict.symbol().to_string(),
            ),
            None => Default::default(),
        };
        rows.push([
            r.label.clone(),
            format!("{:.1}", r.tps.a_median),
            format!("{:.1}", r.tps.b_median),
            format!("{}/{}", r.a_n, r.b_n),
            pct(r.tps.change),
            interval(r.tps.ci_low, r.tps.ci_high),
            p_text(r.tps.p_value),
            r.tps.verdict.symbol().into(),
            pa,
            pb,
            pc,
            pci,
            pv,
        ]);
    }
    let mut widths = [0usize; 13];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let _ = writeln!(out, "A: {}\nB: {}\n", c.a_label, c.b_label);
    for row in &rows {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(widths).enumerate() {
            if i == 0 {
                let _ = write!(line, "{cell:<w$}");
            } else {
                let _ = write!(line, "  {cell:>w$}");
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let _ = writeln!(
        out,
        "\ngeometric mean of B/A: tps {}, p99 latency {}   ({} faster, {} slower, {} ~, {} ?)",
        pct(c.tps_geomean_change),
        pct(c.p99_geomean_change),
        c.tps_verdicts[0],
        c.tps_verdicts[1],
        c.tps_verdicts[2],
        c.tps_verdicts[3]
    );
    if let Some(n) = c.noise_floor {
        let _ = writeln!(out, "noise floor (A/A): ±{:.1} %", n * 100.0);
    }
    let warned: Vec<&CompareRow> = c.rows.iter().filter(|r| !r.warnings.is_empty()).collect();
    if !warned.is_empty() {
        let _ = writeln!(out, "\nwarnings:");
        for r in warned {
            let _ = writeln!(out, "  {}: {}", r.label, r.warnings.join("; "));
        }
    }
    if !c.unmatched.is_empty() {
        let _ = writeln!(out, "\nnot compared: {}", c.unmatched.join(", "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cells::Percentiles;

    fn cell(target: &str, clients: i64, tps: &[f64], p99: &[f64]) -> Cell {
        Cell {
            set_id: 1,
            target: target.into(),
            key: CellKey {
                script: "select-only".into(),
                scale: 10,
                clients,
                rate_milli: 0,
                query_mode: "prepared".into(),
            },
            run_ids: vec![],
            tps: tps.to_vec(),
            p99_ms: p99.to_vec(),
            tps_median: median(tps),
            tps_min: 0.0,
            tps_max: 0.0,
            latency_ms: Percentiles::default(),
            lag_mean_ms: None,
            failed: 0,
        }
    }

    #[test]
    fn verdicts_follow_the_interval() {
        let a = vec![
            cell(
                "a",
                1,
                &[1000.0, 1010.0, 995.0, 1003.0],
                &[2.0, 2.1, 2.05, 2.02],
            ),
            cell("a", 2, &[500.0, 510.0, 490.0], &[1.0, 1.0, 1.0]),
            cell("a", 4, &[2000.0, 2010.0, 1990.0], &[]),
            cell("a", 8, &[100.0], &[]),
        ];
        let b = vec![
            cell(
                "b",
                1,
                &[1100.0, 1090.0, 1112.0, 1105.0],
                &[1.5, 1.55, 1.52, 1.51],
            ),
            cell("b", 2, &[505.0, 495.0, 500.0], &[1.0, 1.01, 0.99]),
            cell("b", 4, &[1800.0, 1810.0, 1795.0], &[]),
            cell("b", 16, &[100.0], &[]),
        ];
        let c = compare("A", &a, "B", &b);
        assert_eq!(c.rows.len(), 3);
        assert_eq!(c.rows[0].tps.verdict, Verdict::Faster);
        assert_eq!(c.rows[0].p99_ms.as_ref().unwrap().verdict, Verdict::Faster);
        assert_eq!(c.rows[1].tps.verdict, Verdict::Same);
        assert!(c.rows[1]
            .warnings
            .iter()
            .any(|w| w.contains("noise too high")));
        assert_eq!(c.rows[2].tps.verdict, Verdict::Slower);
        assert!(c.rows[2].p99_ms.is_none());
        assert_eq!(c.tps_verdicts, [1, 1, 1, 0]);
        assert_eq!(c.unmatched.len(), 2);
        // Geometric mean of the median ratios 1102.5/1001.5, 500/500, 1800/2000.
        let expected = ((1102.5f64 / 1001.5) * 1.0 * 0.9).powf(1.0 / 3.0) - 1.0;
        assert!((c.tps_geomean_change.unwrap() - expected).abs() < 1e-12);
        let text = render_text(&c);
        assert!(text.contains("faster") && text.contains("slower"));
        assert!(text.contains("not compared: select-only s=10 c=8 prepared (only in A)"));
    }

    #[test]
    fn single_runs_give_unknown_and_a_warning() {
        let c = compare(
            "A",
            &[cell("a", 1, &[10.0], &[])],
            "B",
            &[cell("b", 1, &[12.0], &[])],
        );
        assert_eq!(c.rows[0].tps.verdict, Verdict::Unknown);
        assert!((c.rows[0].tps.change.unwrap() - 0.2).abs() < 1e-12);
        assert!(c.rows[0].warnings[0].contains("fewer than 3 repeats"));
    }

    #[test]
    fn noise_floor_is_widest_aa_half_width() {
        let a = vec![cell("a", 1, &[100.0, 104.0, 98.0], &[])];
        let b = vec![cell("a", 1, &[101.0, 99.0, 103.0], &[])];
        let aa = compare("A", &a, "A'", &b);
        let half = (aa.rows[0].tps.ci_high.unwrap() - aa.rows[0].tps.ci_low.unwrap()) / 2.0;
        let c = compare("A", &a, "B", &b).with_noise_floor(&aa);
        assert_eq!(c.noise_floor, Some(half));
        assert!(render_text(&c).contains("noise floor (A/A)"));
    }
}
