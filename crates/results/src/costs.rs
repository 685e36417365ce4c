//! Per-transaction costs of a run's measured window: what the server and the client
//! spent (CPU, context switches) and what the server wrote and read (WAL, shared
//! buffers, temporary files), each divided by the run's transactions. The values are
//! measured around the run by `pgsurge-observe` (`costs`); this module names them and
//! carries them in the [`crate::RunResult`] (`txn_costs` in `--json`).

use serde::{Deserialize, Serialize};

/// One cost a run can carry: its name in `--json` and the store, its unit per
/// transaction, and what it counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CostKind {
    /// Name (`server_cpu_user_us`).
    pub name: &'static str,
    /// Unit of one transaction's share (`µs`, `bytes`, `count`).
    pub unit: &'static str,
    /// What it counts, in words.
    pub description: &'static str,
}

/// Every cost, in the order outputs list them.
pub const COST_KINDS: &[CostKind] = &[
    CostKind {
        name: "server_cpu_user_us",
        unit: "µs",
        description: "user CPU time of the server's processes (postmaster, backends, auxiliary processes)",
    },
    CostKind {
        name: "server_cpu_system_us",
        unit: "µs",
        description: "system CPU time of the server's processes",
    },
    CostKind {
        name: "server_context_switches",
        unit: "count",
        description: "context switches (voluntary and involuntary) of the server's processes",
    },
    CostKind {
        name: "client_cpu_user_us",
        unit: "µs",
        description: "user CPU time of the pgsurge process",
    },
    CostKind {
        name: "client_cpu_system_us",
        unit: "µs",
        description: "system CPU time of the pgsurge process",
    },
    CostKind {
        name: "client_context_switches",
        unit: "count",
        description: "context switches (voluntary and involuntary) of the pgsurge process",
    },
    CostKind {
        name: "wal_bytes",
        unit: "bytes",
        description: "WAL bytes generated (pg_stat_wal.wal_bytes)",
    },
    CostKind {
        name: "wal_records",
        unit: "count",
        description: "WAL records generated (pg_stat_wal.wal_records)",
    },
    CostKind {
        name: "shared_blks_hit",
        unit: "count",
        description: "shared buffer hits in the benchmark database (pg_stat_database.blks_hit)",
    },
    CostKind {
        name: "shared_blks_read",
        unit: "count",
        description: "blocks read into shared buffers in the benchmark database (pg_stat_database.blks_read)",
    },
    CostKind {
        name: "temp_bytes",
        unit: "bytes",
        description: "bytes written to temporary files in the benchmark database (pg_stat_database.temp_bytes)",
    },
];

/// The [`CostKind`] called `name`.
pub fn cost_kind(name: &str) -> Option<&'static CostKind> {
    COST_KINDS.iter().find(|k| k.name == name)
}

/// The costs of one run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TxnCosts {
    /// The transactions the totals are divided by (the run's successful transactions).
    pub transactions: u64,
    /// The costs measured, in [`COST_KINDS`] order.
    pub costs: Vec<TxnCost>,
    /// The costs that could not be measured, each with why
    /// (`server_cpu_user_us: the server does not run on this machine`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<String>,
}

/// One measured cost.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TxnCost {
    /// A [`CostKind`] name.
    pub name: String,
    /// The total over the measured window.
    #[serde(deserialize_with = "crate::nullable::nullable_f64")]
    pub total: f64,
    /// `total / transactions` (`null` in JSON without transactions).
    #[serde(deserialize_with = "crate::nullable::nullable_f64")]
    pub per_txn: f64,
}

impl TxnCosts {
    /// Costs from totals over a window of `transactions` transactions, in
    /// [`COST_KINDS`] order; a total of an unknown name is dropped.
    pub fn from_totals(
        transactions: u64,
        totals: &[(&str, f64)],
        unavailable: Vec<String>,
    ) -> TxnCosts {
        let costs = COST_KINDS
            .iter()
            .filter_map(|k| {
                let (_, total) = totals.iter().find(|(n, _)| *n == k.name)?;
                Some(TxnCost {
                    name: k.name.to_string(),
                    total: *total,
                    per_txn: if transactions > 0 {
                        total / transactions as f64
                    } else {
                        f64::NAN
                    },
                })
            })
            .collect();
        TxnCosts {
            transactions,
            costs,
            unavailable,
        }
    }

    /// The per-transaction value of `name`, when measured.
    pub fn per_txn(&self, name: &str) -> Option<f64> {
        self.costs
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.per_txn)
    }

    /// The report's lines: one per cost, then what could not be measured.
    pub fn render(&self) -> String {
        let mut s = format!(
            "per-transaction costs (over {} transactions):\n",
            self.transactions
        );
        for c in &self.costs {
            let unit = cost_kind(&c.name).map_or("", |k| k.unit);
            let unit = if unit == "count" { "" } else { unit };
            s.push_str(&format!("  {:<24} {:>12.3} {unit}\n", c.name, c.per_txn));
        }
        for u in &self.unavailable {
            s.push_str(&format!("  not measured: {u}\n"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_are_divided_by_the_transactions_in_the_kinds_order() {
        let c = TxnCosts::from_totals(
            200,
            &[
                ("wal_bytes", 100_000.0),
                ("server_cpu_user_us", 50_000.0),
                ("nope", 1.0),
            ],
            vec!["temp_bytes: why".into()],
        );
        let names: Vec<&str> = c.costs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["server_cpu_user_us", "wal_bytes"]);
        assert_eq!(c.per_txn("wal_bytes"), Some(500.0));
        assert_eq!(c.per_txn("server_cpu_user_us"), Some(250.0));
        assert_eq!(c.per_txn("temp_bytes"), None);
        let text = c.render();
        assert!(text.contains("over 200 transactions"), "{text}");
        assert!(text.contains("not measured: temp_bytes: why"), "{text}");
    }
}
