//! The report's capacity section: for each set of a campaign with `[capacity]`, each
//! cell's search recomputed from the stored runs (`pgsurge_plan::capacity`, as
//! `results show` prints it): the answer, the reasons it may not hold, and every step
//! with its verdict and its own reasons.
//!
//! Owns the section's markup only; the search and its judging are `analysis`'s.

use std::fmt::Write;

use pgsurge_plan::capacity::{capacity_of_set, stored_section};
use pgsurge_store::{Set, Store, StoreError};

use crate::html::{escape, num, table};

/// The section, or empty when no set of `sets` searched for capacity.
pub fn capacity_section(store: &mut Store, sets: &[Set]) -> Result<String, StoreError> {
    let mut body = String::new();
    for set in sets {
        let Some(cap) = set.record.spec.as_deref().and_then(stored_section) else {
            continue;
        };
        for r in capacity_of_set(store, set.id, &cap.objective())? {
            let class = if r.validity.is_empty() {
                "capacity"
            } else {
                "capacity invalid"
            };
            let _ = write!(
                body,
                "<div class=\"{class}\"><p class=\"answer\">{}</p>",
                escape(&r.line())
            );
            let header: Vec<String> = [
                "rate (tps)",
                "verdict",
                "median (ms)",
                "mean tps",
                "why",
                "may not hold",
            ]
            .iter()
            .map(|h| h.to_string())
            .collect();
            let rows: Vec<Vec<String>> = r
                .steps
                .iter()
                .map(|s| {
                    let reasons: Vec<String> = s.validity.iter().map(|v| escape(&v.text)).collect();
                    vec![
                        num(s.rate, 1),
                        if s.pass { "passes" } else { "fails" }.to_string(),
                        num(s.median_ms, 3),
                        num(s.mean_tps, 1),
                        escape(&s.why),
                        format!("<span class=\"warn\">{}</span>", reasons.join("; ")),
                    ]
                })
                .collect();
            body.push_str(&table(&header, &rows));
            body.push_str("</div>");
        }
    }
    if body.is_empty() {
        return Ok(body);
    }
    Ok(format!("<h2>Capacity</h2>{body}"))
}
