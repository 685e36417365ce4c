//! `pgsurge workload check`: the pack's consistency conditions, each a query that
//! returns the rows violating it.

use pgsurge_wire::Connection;

use crate::error::WorkloadError;
use crate::pack::Pack;

/// At most this many violating rows are kept per condition (the count is exact).
pub const ROWS_SHOWN: usize = 20;

/// One condition's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckOutcome {
    /// The condition's name.
    pub name: String,
    /// The result's column names.
    pub columns: Vec<String>,
    /// Up to [`ROWS_SHOWN`] violating rows (NULL as `NULL`).
    pub rows: Vec<Vec<String>>,
    /// How many rows violate it.
    pub violations: usize,
}

impl CheckOutcome {
    /// Whether the condition holds.
    pub fn holds(&self) -> bool {
        self.violations == 0
    }
}

/// Runs every condition of `pack` on `conn`, in manifest order.
pub fn run_checks(pack: &Pack, conn: &mut Connection) -> Result<Vec<CheckOutcome>, WorkloadError> {
    let mut out = Vec::new();
    for c in &pack.manifest.checks {
        let results = conn
            .simple_query(&c.query)
            .map_err(|e| WorkloadError::Sql {
                file: format!("check \"{}\"", c.name),
                message: e.to_string().trim_end().to_string(),
            })?;
        let last = results.into_iter().last().unwrap_or_default();
        let violations = last.rows.len();
        let rows = last
            .rows
            .into_iter()
            .take(ROWS_SHOWN)
            .map(|r| {
                r.into_iter()
                    .map(|v| v.unwrap_or_else(|| "NULL".to_string()))
                    .collect()
            })
            .collect();
        out.push(CheckOutcome {
            name: c.name.clone(),
            columns: last.columns,
            rows,
            violations,
        });
    }
    Ok(out)
}

/// The text `workload check` prints: one line per condition, and under a violated
/// one the rows that violate it.
pub fn render(outcomes: &[CheckOutcome]) -> String {
    let mut s = String::new();
    for o in outcomes {
        if o.holds() {
            s.push_str(&format!("ok        {}\n", o.name));
            continue;
        }
        s.push_str(&format!(
            "VIOLATED  {} ({} row{})\n",
            o.name,
            o.violations,
            if o.violations == 1 { "" } else { "s" }
        ));
        s.push_str(&format!("          {}\n", o.columns.join(" | ")));
        for r in &o.rows {
            s.push_str(&format!("          {}\n", r.join(" | ")));
        }
        if o.violations > o.rows.len() {
            s.push_str(&format!(
                "          … and {} more\n",
                o.violations - o.rows.len()
            ));
        }
    }
    s
}
