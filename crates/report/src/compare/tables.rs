//! A comparison's figures as the words and table rows that its text, Markdown and the
//! report's HTML all print: percentages, intervals, the verdict table's columns and
//! rows, each side's repeats, the workload metrics and the per-transaction costs.

use super::{CompareRow, Comparison, RepeatStats};

/// `1 cell`, `2 cells`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A percentage with its sign, a true minus for negative values: `+832.0 %`, `−93.0 %`.
pub(super) fn signed_pct(v: f64) -> String {
    let text = format!("{:+.1} %", v * 100.0);
    match text.strip_prefix('-') {
        Some(rest) => format!("\u{2212}{rest}"),
        None => text,
    }
}

/// A confidence interval of a change, as printed: `±3.1 %` when it lies as far
/// below the change as above it (to the printed precision), else its two ends,
/// `[−93.0 %, +832.0 %]`, since a half-width would misstate a skewed interval.
pub fn spread_text(change: Option<f64>, lo: f64, hi: f64) -> String {
    if let Some(c) = change {
        let below = format!("{:.1}", (c - lo) * 100.0);
        let above = format!("{:.1}", (hi - c) * 100.0);
        if below == above {
            return format!("±{above} %");
        }
    }
    format!("[{}, {}]", signed_pct(lo), signed_pct(hi))
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

pub(super) fn p_text(p: Option<f64>) -> String {
    p.map(|p| format!("{p:.3}")).unwrap_or_else(|| "–".into())
}

/// A number for a table column, `–` when not finite.
pub fn value_text(v: f64, decimals: usize) -> String {
    if v.is_finite() {
        format!("{v:.decimals$}")
    } else {
        "–".into()
    }
}

/// Column headers of a comparison table (text and HTML).
pub const COLUMNS: [&str; 13] = [
    "cell", "A tps", "B tps", "n", "change", "95% CI", "p", "verdict", "A p99 ms", "B p99 ms",
    "change", "95% CI", "verdict",
];

/// The cells of one row, as text, in [`COLUMNS`] order.
pub fn row_cells(r: &CompareRow) -> [String; 13] {
    let (pa, pb, pc, pci, pv) = match &r.p99_ms {
        Some(p) => (
            value_text(p.a, 3),
            value_text(p.b, 3),
            pct(p.change),
            interval(p.ci_low, p.ci_high),
            p.verdict.name().to_string(),
        ),
        None => Default::default(),
    };
    [
        r.label.clone(),
        value_text(r.tps.a, 1),
        value_text(r.tps.b, 1),
        format!("{}/{}", r.a_n, r.b_n),
        pct(r.tps.change),
        interval(r.tps.ci_low, r.tps.ci_high),
        p_text(r.tps.p_value),
        r.tps.verdict.name().into(),
        pa,
        pb,
        pc,
        pci,
        pv,
    ]
}

/// The notes under the title: sides, dimensions, estimate (same words in text and HTML).
pub fn preamble(c: &Comparison) -> Vec<String> {
    let along: Vec<&str> = c.along.iter().map(|d| d.name()).collect();
    vec![
        format!("A: {}", c.a_label),
        format!("B: {}", c.b_label),
        format!(
            "compared along: {}; a cell is: {}",
            if along.is_empty() {
                "(sides as given)".to_string()
            } else {
                along.join(", ")
            },
            c.cell_dimensions.join(", ")
        ),
        format!(
            "A tps, B tps, A p99, B p99: geometric means of the repeats; {}",
            c.estimate
        ),
    ]
}

/// Headers of the repeats table (text and Markdown): per side, n and the plain
/// statistics of tps and of average latency.
pub const REPEAT_COLUMNS: [&str; 13] = [
    "cell",
    "side",
    "n",
    "tps mean",
    "median",
    "min",
    "max",
    "stddev",
    "avg ms mean",
    "median",
    "min",
    "max",
    "stddev",
];

/// The repeats table's two rows of a compared cell (A, then B), in [`REPEAT_COLUMNS`]
/// order.
pub fn repeat_rows(r: &CompareRow) -> [[String; 13]; 2] {
    let stats = |s: &RepeatStats, decimals: usize| {
        [
            value_text(s.mean, decimals),
            value_text(s.median, decimals),
            value_text(s.min, decimals),
            value_text(s.max, decimals),
            s.stddev
                .map(|v| value_text(v, decimals))
                .unwrap_or_else(|| "–".into()),
        ]
    };
    let side = |label: &str, t: &RepeatStats, l: Option<&RepeatStats>| {
        let tps = stats(t, 1);
        let lat = l.map(|l| stats(l, 3)).unwrap_or_default();
        [
            String::new(),
            label.to_string(),
            t.n.to_string(),
            tps[0].clone(),
            tps[1].clone(),
            tps[2].clone(),
            tps[3].clone(),
            tps[4].clone(),
            lat[0].clone(),
            lat[1].clone(),
            lat[2].clone(),
            lat[3].clone(),
            lat[4].clone(),
        ]
    };
    let lat = r.repeats.latency_avg_ms.as_ref();
    let mut a = side("A", &r.repeats.tps.a, lat.map(|p| &p.a));
    a[0] = r.label.clone();
    let b = side("B", &r.repeats.tps.b, lat.map(|p| &p.b));
    [a, b]
}

/// Headers of the workload metrics table (text and Markdown).
pub const WORKLOAD_COLUMNS: [&str; 9] = [
    "cell", "metric", "A", "B", "n", "change", "95% CI", "p", "verdict",
];

/// The workload metrics table's rows, header first; None when no cell has one.
pub fn workload_table(c: &Comparison) -> Option<Vec<[String; 9]>> {
    let mut rows: Vec<[String; 9]> = vec![WORKLOAD_COLUMNS.map(String::from)];
    for r in &c.cells {
        for w in &r.workload_metrics {
            let m = &w.comparison;
            rows.push([
                r.label.clone(),
                format!("{} ({})", w.name, w.unit),
                value_text(m.a, 1),
                value_text(m.b, 1),
                format!("{}/{}", w.a_n, w.b_n),
                pct(m.change),
                interval(m.ci_low, m.ci_high),
                p_text(m.p_value),
                m.verdict.name().into(),
            ]);
        }
    }
    (rows.len() > 1).then_some(rows)
}

/// Headers of the per-transaction costs table (text and Markdown).
pub const COSTS_COLUMNS: [&str; 9] = [
    "cell",
    "cost per transaction",
    "A",
    "B",
    "n",
    "change",
    "95% CI",
    "p",
    "verdict",
];

/// The per-transaction costs table's rows, header first; None when no cell has one.
/// A cost's verdict reads as tps's does: `slower` when B costs more.
pub fn costs_table(c: &Comparison) -> Option<Vec<[String; 9]>> {
    let mut rows: Vec<[String; 9]> = vec![COSTS_COLUMNS.map(String::from)];
    for r in &c.cells {
        for w in &r.txn_costs {
            let m = &w.comparison;
            let unit = if w.unit == "count" {
                String::new()
            } else {
                format!(" ({})", w.unit)
            };
            rows.push([
                r.label.clone(),
                format!("{}{unit}", w.name),
                value_text(m.a, 2),
                value_text(m.b, 2),
                format!("{}/{}", w.a_n, w.b_n),
                pct(m.change),
                interval(m.ci_low, m.ci_high),
                p_text(m.p_value),
                m.verdict.name().into(),
            ]);
        }
    }
    (rows.len() > 1).then_some(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skewed_intervals_print_their_ends_and_symmetric_ones_a_half_width() {
        assert_eq!(
            spread_text(Some(0.5), -0.93, 8.32),
            "[\u{2212}93.0 %, +832.0 %]"
        );
        assert_eq!(spread_text(Some(0.10), 0.05, 0.15), "±5.0 %");
        assert_eq!(spread_text(Some(-0.10), -0.20, 0.0), "±10.0 %");
        assert_eq!(spread_text(None, -0.2, 0.2), "[\u{2212}20.0 %, +20.0 %]");
    }
}
