//! The index's comparisons: every further target of a set against its first (with its
//! A/A twin as the noise floor), every set against the first, each rendered with the
//! words and columns of `pgsurge compare`.

use super::ReportError;
use crate::cells::Cell;
use crate::compare::{
    compare, preamble, repeat_rows, row_cells, workload_table, Along, Comparison, Dimension,
    Verdict, COLUMNS, REPEAT_COLUMNS,
};
use crate::html::{escape, table};
use pgsurge_store::Set;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Comparisons: targets within a set, and sets against the first set (empty when there
/// is nothing to compare).
pub(super) fn comparisons_section(
    sets: &[Set],
    cells: &[Cell],
    target_order: &BTreeMap<i64, Vec<String>>,
    flames: &mut crate::flames::Flames,
) -> Result<String, ReportError> {
    let mut body = String::new();
    for c in &comparisons(sets, cells, target_order) {
        body.push_str(&comparison_html(c));
        body.push_str(&flames.comparison_html(c)?);
    }
    Ok(body)
}

/// Comparisons the index shows: every further target of a set against its first target
/// (targets in the campaign file's order: A is the first), and (when several sets exist)
/// every set against the first one. A target whose name ends in " (A-A)" (as `aa_check`
/// names it) is the A/A noise check of the target it repeats. Labels are those `pgsurge
/// compare` gives the same sides (`SET · TARGET`, `SET`).
pub(crate) fn comparisons(
    sets: &[Set],
    cells: &[Cell],
    target_order: &BTreeMap<i64, Vec<String>>,
) -> Vec<Comparison> {
    let mut out = Vec::new();
    for s in sets {
        let in_set: Vec<&Cell> = cells.iter().filter(|c| c.set_id == s.id).collect();
        let mut targets: Vec<String> = target_order.get(&s.id).cloned().unwrap_or_default();
        for c in &in_set {
            if !targets.contains(&c.target) {
                targets.push(c.target.clone());
            }
        }
        targets.retain(|t| in_set.iter().any(|c| &c.target == t));
        let of = |t: &str| -> Vec<Cell> {
            in_set
                .iter()
                .filter(|c| c.target == t)
                .map(|c| (*c).clone())
                .collect()
        };
        let label = |t: &str| format!("{} · {t}", s.record.name);
        let real: Vec<&String> = targets.iter().filter(|t| !t.ends_with(" (A-A)")).collect();
        if let Some(first) = real.first() {
            let aa_name = format!("{first} (A-A)");
            let aa = targets.contains(&aa_name).then(|| {
                compare(
                    &label(first),
                    &of(first),
                    &label(&aa_name),
                    &of(&aa_name),
                    &Along::targets(),
                )
            });
            for other in real.iter().skip(1) {
                let mut c = compare(
                    &label(first),
                    &of(first),
                    &label(other),
                    &of(other),
                    &Along::targets(),
                );
                if let Some(aa) = &aa {
                    c = c.with_noise_floor(aa);
                }
                out.push(c);
            }
            if let Some(aa) = aa {
                out.push(aa);
            }
        }
    }
    if sets.len() > 1 {
        let first = &sets[0];
        let a: Vec<Cell> = cells
            .iter()
            .filter(|c| c.set_id == first.id)
            .cloned()
            .collect();
        for s in &sets[1..] {
            let b: Vec<Cell> = cells.iter().filter(|c| c.set_id == s.id).cloned().collect();
            let c = compare(
                &first.record.name,
                &a,
                &s.record.name,
                &b,
                &Along(vec![Dimension::Set]),
            );
            if !c.cells.is_empty() {
                out.push(c);
            }
        }
    }
    out
}

/// The HTML section of one comparison: the same title, notes, columns, summary and
/// noise floor as `pgsurge compare`'s text.
pub fn comparison_html(c: &Comparison) -> String {
    let mut s = format!("<h3 class=\"comparison\">{}</h3>", escape(&c.title));
    s.push_str("<p class=\"muted\">");
    s.push_str(
        &preamble(c)
            .iter()
            .map(|l| escape(l))
            .collect::<Vec<_>>()
            .join("<br>"),
    );
    s.push_str("</p>");
    let rows: Vec<Vec<String>> = c
        .cells
        .iter()
        .map(|r| {
            let text = row_cells(r);
            let verdict = |v: Option<Verdict>, t: &str| match v {
                Some(v) => format!(
                    "<span class=\"{}\">{}</span>",
                    match v {
                        Verdict::Faster => "faster",
                        Verdict::Slower => "slower",
                        _ => "same",
                    },
                    escape(t)
                ),
                None => String::new(),
            };
            let mut row: Vec<String> = text.iter().map(|t| escape(t)).collect();
            row[7] = verdict(Some(r.tps.verdict), &text[7]);
            row[12] = verdict(r.p99_ms.as_ref().map(|p| p.verdict), &text[12]);
            row.push(format!(
                "<span class=\"warn\">{}</span>",
                escape(&r.warnings.join("; "))
            ));
            row
        })
        .collect();
    let mut header: Vec<String> = COLUMNS.iter().map(|h| h.to_string()).collect();
    header.push("warnings".into());
    s.push_str(&table(&header, &rows));
    if !c.cells.is_empty() {
        // Each side's repeats as plain statistics: the table a patch's author posts.
        s.push_str(
            "<p class=\"muted\">Repeats of each side: arithmetic mean, median, min, max and \
             standard deviation of tps and of average latency (ms).</p>",
        );
        let repeats: Vec<Vec<String>> = c
            .cells
            .iter()
            .flat_map(repeat_rows)
            .map(|r| r.iter().map(|t| escape(t)).collect())
            .collect();
        s.push_str(&table(&REPEAT_COLUMNS.map(String::from), &repeats));
    }
    if let Some(rows) = workload_table(c) {
        s.push_str(
            "<p class=\"muted\">Workload metrics (higher is better; geometric means of the \
             repeats, compared as tps).</p>",
        );
        let body: Vec<Vec<String>> = rows[1..]
            .iter()
            .map(|r| r.iter().map(|t| escape(t)).collect())
            .collect();
        s.push_str(&table(rows[0].as_ref(), &body));
    }
    if let Some(rows) = crate::compare::costs_table(c) {
        s.push_str(
            "<p class=\"muted\">Per-transaction costs (lower is better; geometric means of \
             the repeats, compared as tps).</p>",
        );
        let body: Vec<Vec<String>> = rows[1..]
            .iter()
            .map(|r| r.iter().map(|t| escape(t)).collect())
            .collect();
        s.push_str(&table(rows[0].as_ref(), &body));
    }
    let _ = write!(s, "<p class=\"summary\">{}", escape(&c.summary_text()));
    if let Some(n) = c.noise_floor_text() {
        let _ = write!(s, "<br>{}", escape(&n));
    }
    s.push_str("</p>");
    if !c.cells.is_empty() {
        let _ = write!(
            s,
            "<p class=\"muted\">How each tps verdict was reached ({}):</p><ul class=\"basis\">",
            escape(c.verdict_rule)
        );
        for r in &c.cells {
            let _ = write!(
                s,
                "<li>{}: {}</li>",
                escape(&r.label),
                escape(&r.tps.basis_text())
            );
        }
        s.push_str("</ul>");
    }
    if !c.only_in_a.is_empty() || !c.only_in_b.is_empty() {
        let _ = write!(
            s,
            "<p class=\"muted\">Not compared: only in A: {}; only in B: {}</p>",
            escape(&c.only_in_a.join(", ")),
            escape(&c.only_in_b.join(", "))
        );
    }
    s
}
