//! `pgsurge compare`'s text: the verdict table aligned in columns, then the workload
//! metrics, costs, explanations, each side's repeats, the summary, how each verdict was
//! reached, acknowledged commits lost, warnings and the cells only one side has.

use super::tables::{
    costs_table, preamble, repeat_rows, row_cells, workload_table, COLUMNS, REPEAT_COLUMNS,
};
use super::{CompareRow, Comparison};
use pgsurge_results::failure::AcknowledgedCommits;
use std::fmt::Write;

/// Rows aligned in columns: the first `left` columns to the left, the others to the right.
pub(super) fn aligned<const N: usize>(rows: &[[String; N]], left: usize) -> String {
    let mut widths = [0usize; N];
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(widths).enumerate() {
            let sep = if i == 0 { "" } else { "  " };
            if i < left {
                let _ = write!(line, "{sep}{cell:<w$}");
            } else {
                let _ = write!(line, "{sep}{cell:>w$}");
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// The text printed by `pgsurge compare`.
pub fn render_text(c: &Comparison) -> String {
    let mut rows: Vec<[String; 13]> = vec![COLUMNS.map(String::from)];
    rows.extend(c.cells.iter().map(row_cells));
    let mut out = String::new();
    let _ = writeln!(out, "{}", c.title);
    for l in preamble(c) {
        let _ = writeln!(out, "{l}");
    }
    out.push('\n');
    out.push_str(&aligned(&rows, 1));
    if let Some(table) = workload_table(c) {
        let _ = writeln!(
            out,
            "\nworkload metrics (higher is better; geometric means of the repeats, compared as tps)"
        );
        out.push_str(&aligned(&table, 2));
    }
    if let Some(table) = costs_table(c) {
        let _ = writeln!(
            out,
            "\nper-transaction costs (lower is better; geometric means of the repeats, compared as tps)"
        );
        out.push_str(&aligned(&table, 2));
    }
    out.push_str(&crate::explain::text_section(c, false));
    if !c.cells.is_empty() {
        let _ = writeln!(
            out,
            "\nrepeats of each side: mean, median, min, max and standard deviation of tps and of average latency (ms)"
        );
        let mut rows: Vec<[String; 13]> = vec![REPEAT_COLUMNS.map(String::from)];
        rows.extend(c.cells.iter().flat_map(repeat_rows));
        out.push_str(&aligned(&rows, 2));
    }
    let _ = writeln!(out, "\n{}", c.summary_text());
    if let Some(n) = c.noise_floor_text() {
        let _ = writeln!(out, "{n}");
    }
    if !c.cells.is_empty() {
        let _ = writeln!(
            out,
            "\nhow each tps verdict was reached ({}):",
            c.verdict_rule
        );
        for r in &c.cells {
            let _ = writeln!(out, "  {}: {}", r.label, r.tps.basis_text());
        }
    }
    out.push_str(&acknowledged_text(c));
    let warned: Vec<&CompareRow> = c.cells.iter().filter(|r| !r.warnings.is_empty()).collect();
    if !warned.is_empty() {
        let _ = writeln!(out, "\nwarnings:");
        for r in warned {
            let _ = writeln!(out, "  {}: {}", r.label, r.warnings.join("; "));
        }
    }
    if !c.only_in_a.is_empty() {
        let _ = writeln!(out, "\nonly in A: {}", c.only_in_a.join(", "));
    }
    if !c.only_in_b.is_empty() {
        let _ = writeln!(out, "only in B: {}", c.only_in_b.join(", "));
    }
    out
}

/// `compare`'s lines on the acknowledged commits lost, one per compared cell that
/// checked them on a side; nothing when no cell did.
pub(super) fn acknowledged_text(c: &Comparison) -> String {
    let rows: Vec<String> = c
        .cells
        .iter()
        .filter_map(|r| {
            let lost = r.acknowledged_lost?;
            let side = |name: &str, a: Option<AcknowledgedCommits>| {
                format!(
                    "{name} {}",
                    a.map_or("not checked".to_string(), |a| a.text())
                )
            };
            Some(format!(
                "  {}: {}, {}\n",
                r.label,
                side("A", lost.a),
                side("B", lost.b)
            ))
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    format!(
        "\nacknowledged commits lost after the faults (summed over the repeats that checked them):\n{}",
        rows.concat()
    )
}
