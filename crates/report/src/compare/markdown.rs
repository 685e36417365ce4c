//! `pgsurge compare --format markdown`: the comparison as Markdown tables, every name
//! and label escaped.

use super::tables::{costs_table, repeat_rows, row_cells, workload_table};
use super::{CompareRow, Comparison};
use std::fmt::Write;

/// `pgsurge compare --format markdown`: the comparison in the narrow form a mailing-list
/// post or a pull request holds: one table of the verdicts (tps and p99 latency, each
/// with its change, 95 % interval and verdict; the tps p-value), one of each side's
/// repeats (tps), then the summary, the noise floor and the warnings. The means are
/// named for what they are: geometric in the verdicts, arithmetic in the repeats.
pub fn render_markdown(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "**{}**\n", md_escape(&c.title));
    let _ = writeln!(
        out,
        "A: {} · B: {}\n",
        md_escape(&c.a_label),
        md_escape(&c.b_label)
    );
    if !c.cells.is_empty() {
        let _ = writeln!(
            out,
            "| cell | A tps | B tps | change [95% CI] | p | verdict | p99 change [95% CI] | p99 verdict |"
        );
        let _ = writeln!(out, "|:--|--:|--:|--:|--:|:--|--:|:--|");
        for r in &c.cells {
            let t = row_cells(r);
            let with_ci = |change: &str, ci: &str| {
                if change.is_empty() {
                    String::new()
                } else {
                    format!("{change} {ci}")
                }
            };
            // row_cells: cell, A, B, n, change, CI, p, verdict, A p99, B p99, change, CI,
            // verdict.
            let cells = [
                t[0].clone(),
                t[1].clone(),
                t[2].clone(),
                with_ci(&t[4], &t[5]),
                t[6].clone(),
                t[7].clone(),
                with_ci(&t[10], &t[11]),
                t[12].clone(),
            ]
            .map(|c| md_escape(&c));
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
        let _ = writeln!(
            out,
            "\nA tps, B tps: geometric means of each side's repeats; {}; p: two-sided, \
             of the tps change; p99: the 99th percentile of latency (lower is better), its change \
             and interval made as tps's.\n",
            c.estimate
        );
        let _ = writeln!(
            out,
            "Each side's repeats (tps; mean: arithmetic mean; stddev: sample standard deviation):\n"
        );
        let _ = writeln!(
            out,
            "| cell | side | n | mean | median | min | max | stddev |"
        );
        let _ = writeln!(out, "|:--|:--|--:|--:|--:|--:|--:|--:|");
        for r in &c.cells {
            for row in repeat_rows(r) {
                let cells: Vec<String> = row[..8].iter().map(|c| md_escape(c)).collect();
                let _ = writeln!(out, "| {} |", cells.join(" | "));
            }
        }
    }
    if let Some(table) = workload_table(c) {
        let _ = writeln!(
            out,
            "\nWorkload metrics (higher is better; A, B: geometric means of the repeats):\n"
        );
        for (i, row) in table.iter().enumerate() {
            let cells: Vec<String> = row.iter().map(|c| md_escape(c)).collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
            if i == 0 {
                let _ = writeln!(out, "|:--|:--|--:|--:|--:|--:|:-:|--:|:--|");
            }
        }
    }
    if let Some(table) = costs_table(c) {
        let _ = writeln!(
            out,
            "\nPer-transaction costs (lower is better; A, B: geometric means of the repeats):\n"
        );
        for (i, row) in table.iter().enumerate() {
            let cells: Vec<String> = row.iter().map(|c| md_escape(c)).collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
            if i == 0 {
                let _ = writeln!(out, "|:--|:--|--:|--:|--:|--:|:-:|--:|:--|");
            }
        }
    }
    out.push_str(&crate::explain::text_section(c, true));
    let _ = writeln!(out, "\n{}", md_escape(&c.summary_text()));
    if let Some(n) = c.noise_floor_text() {
        let _ = writeln!(out, "\n{}", md_escape(&n));
    }
    let _ = writeln!(
        out,
        "\nHow each tps verdict was reached ({}):\n",
        c.verdict_rule
    );
    for r in &c.cells {
        let _ = writeln!(
            out,
            "* {}: {}",
            md_escape(&r.label),
            md_escape(&r.tps.basis_text())
        );
    }
    let warned: Vec<&CompareRow> = c.cells.iter().filter(|r| !r.warnings.is_empty()).collect();
    if !warned.is_empty() {
        out.push('\n');
        for r in warned {
            let _ = writeln!(
                out,
                "* {}: {}",
                md_escape(&r.label),
                md_escape(&r.warnings.join("; "))
            );
        }
    }
    for (side, only) in [("A", &c.only_in_a), ("B", &c.only_in_b)] {
        if !only.is_empty() {
            let _ = writeln!(out, "\nOnly in {side}: {}", md_escape(&only.join(", ")));
        }
    }
    out
}

/// Text safe in Markdown, table cells included: `&`, `<` and `>` become entities (a
/// name holding HTML renders as text, not as markup), `|` is escaped and a line break
/// becomes a blank. Every name and label of a comparison is rendered through it.
pub(super) fn md_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '|' => out.push_str("\\|"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}
