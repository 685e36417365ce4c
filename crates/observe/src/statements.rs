//! The statements a test spent its time in, from `pg_stat_statements` when the
//! extension is installed in the benchmark database: a snapshot just before the
//! measured run and one after it, both on a short connection to the benchmark
//! database (closed before the server counters are read, so its few transactions are
//! settled before the test's commits are counted); the statements of that database
//! with the largest execution-time delta are stored with the test as facts
//! ([`pgsurge_store::activity::STATEMENTS_TOP`]). Without the extension the test says
//! so ([`pgsurge_store::activity::STATEMENTS_SOURCE`] = `none (…)`).

use std::collections::BTreeMap;

use pgsurge_store::activity::{TopStatement, STATEMENTS_SOURCE, STATEMENTS_TOP};
use pgsurge_store::FactRecord;

use pgsurge_wire::ConnConfig;

use crate::sql_session::Pg;

/// Statements kept per test.
pub const TOP: usize = 10;
/// Characters of query text kept.
pub const QUERY_CHARS: usize = 200;
/// Marks pgsurge's own queries, which are left out of the top statements.
const MARK: &str = "/* pgsurge:";

/// One statement's cumulative numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Query text.
    pub query: String,
    /// `calls`.
    pub calls: f64,
    /// `total_exec_time` (`total_time` before pg_stat_statements 1.8), ms.
    pub total_ms: f64,
    /// `rows`.
    pub rows: f64,
}

/// Where the statements are read and what they were before the test.
#[derive(Debug)]
pub enum Before {
    /// The extension answered: the view, its version, the counters by `queryid`.
    Ready {
        /// The snapshot query.
        sql: String,
        /// `pg_extension.extversion`.
        version: String,
        /// `queryid` → numbers.
        entries: BTreeMap<String, Entry>,
    },
    /// Nothing to read: why (stored as `statements.source = none (why)`), and whether
    /// that is a problem worth a warning (not installed is not).
    Unavailable {
        /// Why.
        why: String,
        /// True for errors (a query failed), false when the extension is absent.
        error: bool,
    },
}

/// Finds `pg_stat_statements` in the database of `pg` and builds the snapshot query,
/// or says why there is none.
fn locate(pg: &mut Pg) -> Result<(String, String), Before> {
    let rows = pg
        .rows(
            "SELECT /* pgsurge:statements */ quote_ident(n.nspname) || '.pg_stat_statements', \
             e.extversion, EXISTS (SELECT 1 FROM pg_attribute a \
               WHERE a.attrelid = to_regclass(quote_ident(n.nspname) || '.pg_stat_statements') \
               AND a.attname = 'total_exec_time' AND NOT a.attisdropped) \
             FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace \
             WHERE e.extname = 'pg_stat_statements'",
        )
        .map_err(|e| Before::Unavailable {
            why: format!("looking for pg_stat_statements failed: {e}"),
            error: true,
        })?;
    let Some(row) = rows.into_iter().next() else {
        return Err(Before::Unavailable {
            why: "pg_stat_statements not installed".into(),
            error: false,
        });
    };
    let get = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
    let (relation, version) = (get(0), get(1));
    let time = if get(2) == "t" {
        "total_exec_time"
    } else {
        "total_time"
    };
    let sql = format!(
        "SELECT /* pgsurge:statements */ s.queryid::text, min(s.query), sum(s.calls)::float8, \
         sum(s.{time})::float8, sum(s.rows)::float8 FROM {relation} s \
         WHERE s.dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
         AND s.queryid IS NOT NULL GROUP BY s.queryid"
    );
    Ok((sql, version))
}

fn read(pg: &mut Pg, sql: &str) -> crate::error::Result<BTreeMap<String, Entry>> {
    let mut out = BTreeMap::new();
    for r in pg.rows(sql)? {
        let get = |i: usize| r.get(i).cloned().flatten();
        let num = |i: usize| get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        let (Some(id), Some(query)) = (get(0), get(1)) else {
            continue;
        };
        if query.contains(MARK) {
            continue;
        }
        out.insert(
            id,
            Entry {
                query,
                calls: num(2),
                total_ms: num(3),
                rows: num(4),
            },
        );
    }
    Ok(out)
}

fn unreadable(e: impl std::fmt::Display) -> Before {
    Before::Unavailable {
        why: format!("pg_stat_statements could not be read: {e}"),
        error: true,
    }
}

/// The snapshot before the measured run, on a connection to the benchmark database
/// (`conn`) that is closed on return.
pub fn before(conn: &ConnConfig) -> Before {
    let mut pg = match Pg::connect(conn) {
        Ok(pg) => pg,
        Err(e) => return unreadable(e),
    };
    let (sql, version) = match locate(&mut pg) {
        Ok(found) => found,
        Err(b) => return b,
    };
    match read(&mut pg, &sql) {
        Ok(entries) => Before::Ready {
            sql,
            version,
            entries,
        },
        Err(e) => unreadable(e),
    }
}

/// The facts of the test: the snapshot after the run compared with `before`. The
/// second value is a problem to report as a warning.
pub fn after(before: Before, conn: &ConnConfig) -> (Vec<FactRecord>, Option<String>) {
    let none = |why: &str| vec![FactRecord::new(STATEMENTS_SOURCE, format!("none ({why})"))];
    let (sql, version, entries) = match before {
        Before::Ready {
            sql,
            version,
            entries,
        } => (sql, version, entries),
        Before::Unavailable { why, error } => {
            return (none(&why), error.then(|| format!("statements: {why}")))
        }
    };
    let after = match Pg::connect(conn).and_then(|mut pg| read(&mut pg, &sql)) {
        Ok(a) => a,
        Err(e) => {
            let why = format!("pg_stat_statements could not be read after the test: {e}");
            return (none(&why), Some(format!("statements: {why}")));
        }
    };
    let top = top_statements(&entries, &after, TOP);
    let json = serde_json::to_string(&top).unwrap_or_else(|_| "[]".into());
    (
        vec![
            FactRecord::new(STATEMENTS_SOURCE, format!("pg_stat_statements {version}")),
            FactRecord::new(STATEMENTS_TOP, json),
        ],
        None,
    )
}

/// The `n` statements with the largest execution-time delta from `before` to `after`
/// (a statement whose calls went down was evicted and counted again: its `after`
/// numbers are its delta), executed at least once in between.
pub fn top_statements(
    before: &BTreeMap<String, Entry>,
    after: &BTreeMap<String, Entry>,
    n: usize,
) -> Vec<TopStatement> {
    let mut deltas: Vec<Entry> = after
        .iter()
        .map(|(id, a)| match before.get(id) {
            Some(b) if b.calls <= a.calls => Entry {
                query: a.query.clone(),
                calls: a.calls - b.calls,
                total_ms: (a.total_ms - b.total_ms).max(0.0),
                rows: (a.rows - b.rows).max(0.0),
            },
            _ => a.clone(),
        })
        .filter(|d| d.calls > 0.0)
        .collect();
    let total: f64 = deltas.iter().map(|d| d.total_ms).sum();
    deltas.sort_by(|a, b| {
        b.total_ms
            .total_cmp(&a.total_ms)
            .then(b.calls.total_cmp(&a.calls))
            .then_with(|| a.query.cmp(&b.query))
    });
    deltas
        .into_iter()
        .take(n)
        .map(|d| TopStatement {
            query: short_query(&d.query),
            calls: d.calls.round() as i64,
            total_ms: d.total_ms,
            mean_ms: d.total_ms / d.calls,
            rows: d.rows.round() as i64,
            share_pct: (total > 0.0).then(|| 100.0 * d.total_ms / total),
        })
        .collect()
}

/// `query` on one line (white space collapsed), cut to [`QUERY_CHARS`] characters.
pub fn short_query(query: &str) -> String {
    let one_line = query.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= QUERY_CHARS {
        one_line
    } else {
        let mut s: String = one_line.chars().take(QUERY_CHARS - 1).collect();
        s.push('…');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(query: &str, calls: f64, total_ms: f64, rows: f64) -> Entry {
        Entry {
            query: query.into(),
            calls,
            total_ms,
            rows,
        }
    }

    #[test]
    fn deltas_rank_by_time_and_skip_idle_statements() {
        let before: BTreeMap<String, Entry> = [
            ("1".to_string(), e("SELECT pg_sleep($1)", 10.0, 500.0, 10.0)),
            ("2".to_string(), e("SELECT $1", 5.0, 1.0, 5.0)),
            (
                "3".to_string(),
                e("UPDATE t SET x = $1", 100.0, 90.0, 100.0),
            ),
        ]
        .into_iter()
        .collect();
        let after: BTreeMap<String, Entry> = [
            (
                "1".to_string(),
                e("SELECT pg_sleep($1)", 30.0, 1500.0, 30.0),
            ),
            ("2".to_string(), e("SELECT $1", 5.0, 1.0, 5.0)),
            // Evicted and seen again: 4 calls since.
            ("3".to_string(), e("UPDATE t SET x = $1", 4.0, 400.0, 4.0)),
            (
                "4".to_string(),
                e("INSERT  INTO h\n VALUES ($1)", 2.0, 100.0, 2.0),
            ),
        ]
        .into_iter()
        .collect();
        let top = top_statements(&before, &after, 10);
        let q: Vec<&str> = top.iter().map(|t| t.query.as_str()).collect();
        assert_eq!(
            q,
            [
                "SELECT pg_sleep($1)",
                "UPDATE t SET x = $1",
                "INSERT INTO h VALUES ($1)"
            ]
        );
        assert_eq!((top[0].calls, top[0].rows), (20, 20));
        assert!((top[0].total_ms - 1000.0).abs() < 1e-9);
        assert!((top[0].mean_ms - 50.0).abs() < 1e-9);
        assert!((top[0].share_pct.unwrap() - 1000.0 / 15.0).abs() < 1e-9);
        assert_eq!(top[1].calls, 4);
        assert_eq!(top_statements(&before, &after, 1).len(), 1);
    }

    #[test]
    fn long_queries_are_cut_on_a_character_boundary() {
        let long = "SELECT 'é' ".repeat(40);
        let s = short_query(&long);
        assert_eq!(s.chars().count(), QUERY_CHARS);
        assert!(s.ends_with('…'));
        assert_eq!(short_query("SELECT\n  1"), "SELECT 1");
    }
}
