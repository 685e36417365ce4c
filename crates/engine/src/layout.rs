//! What the pgbench tables look like before a run: the scale (rows of
//! `pgbench_branches`) and how `pgbench_accounts` is partitioned, found with pgbench's
//! own queries. One function for every caller: `pgsurge bench` (which prints pgbench's
//! messages for the errors) and campaigns (which store them as the test's failure).
//!
//! Reads only; prints nothing.

use pgsurge_init::PartitionMethod;
use pgsurge_wire::Connection;

/// The scale and partitioning found in the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// `count(*)` of `pgbench_branches`, which is the scale `-i -s` created.
    pub scale: i64,
    /// Partitioning of the first `pgbench_accounts` on the search path.
    pub partition_method: PartitionMethod,
    /// Its number of partitions (0 when not partitioned).
    pub partitions: u32,
}

/// Why the layout could not be found. Display gives pgbench's `error:` message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// Counting `pgbench_branches` failed (`undefined_table` when it is missing).
    #[error("could not count number of branches: {message}")]
    CountFailed {
        /// The server's message, as libpq prints it.
        message: String,
        /// The SQLSTATE, when the server sent one.
        sqlstate: Option<String>,
    },
    /// The count was not a non-negative number.
    #[error("invalid count(*) from pgbench_branches: \"{0}\"")]
    InvalidCount(String),
    /// No `pgbench_accounts` on the search path.
    #[error("no pgbench_accounts table found in \"search_path\"")]
    NoAccountsTable,
    /// `pg_partitioned_table.partstrat` was neither range nor hash.
    #[error("unexpected partition method: \"{0}\"")]
    UnexpectedPartitionMethod(String),
}

impl LayoutError {
    /// True when the tables are missing: pgbench then hints at running `pgbench -i`.
    pub fn suggests_init(&self) -> bool {
        match self {
            LayoutError::CountFailed { sqlstate, .. } => sqlstate.as_deref() == Some("42P01"),
            LayoutError::NoAccountsTable => true,
            _ => false,
        }
    }
}

/// pgbench's query for the partitioning of the first `pgbench_accounts` on the search
/// path: its position there, the strategy, and the number of partitions.
const PARTITION_QUERY: &str = "select o.n, p.partstrat, pg_catalog.count(i.inhparent) from pg_catalog.pg_class as c join pg_catalog.pg_namespace as n on (n.oid = c.relnamespace) cross join lateral (select pg_catalog.array_position(pg_catalog.current_schemas(true), n.nspname)) as o(n) left join pg_catalog.pg_partitioned_table as p on (p.partrelid = c.oid) left join pg_catalog.pg_inherits as i on (c.oid = i.inhparent) where c.relname = 'pgbench_accounts' and o.n is not null group by 1, 2 order by 1 asc limit 1";

/// Finds the scale and partitioning, in pgbench's order: count the branches, then look
/// at the accounts table. A failing partition query is ignored (partitioning then
/// unknown, reported as none), as pgbench does.
pub fn detect(conn: &mut Connection) -> Result<Layout, LayoutError> {
    let scale = match conn.simple_query("select count(*) from pgbench_branches") {
        Ok(res) => {
            let text = res.first().and_then(|r| r.get(0, 0)).unwrap_or("");
            match text.trim().parse::<i64>() {
                Ok(n) if n >= 0 => n,
                _ => return Err(LayoutError::InvalidCount(text.to_string())),
            }
        }
        Err(e) => {
            return Err(LayoutError::CountFailed {
                message: e.pq_message().trim_end().to_string(),
                sqlstate: e.code().map(str::to_string),
            })
        }
    };
    let mut layout = Layout {
        scale,
        partition_method: PartitionMethod::None,
        partitions: 0,
    };
    let Ok(res) = conn.simple_query(PARTITION_QUERY) else {
        return Ok(layout);
    };
    let Some(row) = res.first().filter(|r| r.get(0, 0).is_some()) else {
        return Err(LayoutError::NoAccountsTable);
    };
    layout.partition_method = match row.get(0, 1) {
        None | Some("") => PartitionMethod::None,
        Some("r") => PartitionMethod::Range,
        Some("h") => PartitionMethod::Hash,
        Some(other) => return Err(LayoutError::UnexpectedPartitionMethod(other.to_string())),
    };
    layout.partitions = row.get(0, 2).and_then(|s| s.parse().ok()).unwrap_or(0);
    Ok(layout)
}
