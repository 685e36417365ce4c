//! Statement fingerprints: PostgreSQL's own parser (libpg_query, through the `pg_query`
//! crate) says which statements are the same but for their constants. Parsing costs
//! tens of µs, so it runs once per statement *shape* ([`crate::sqlscan`]): a log of
//! millions of statements of a few hundred shapes parses a few hundred times.
//!
//! A statement the parser refuses (a syntax error the log recorded) gets a fingerprint
//! of its shape, marked as such.
//!
//! The table is bounded ([`Limits`]): past its limit of fingerprints, the statements of
//! further ones are counted together under [`OTHER`]; past its limit of shapes, a
//! statement of a further shape is parsed again each time it is read.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::limits::Limits;
use crate::sqlscan::Scan;

/// The fingerprint of the statements whose own fingerprint came after the table was
/// full: one row for all of them.
pub const OTHER: &str = "other";

/// Index of a fingerprint in a [`Fingerprints`] table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FpId(pub u32);

/// Longest normalised text kept per fingerprint (characters).
const TEXT_LIMIT: usize = 2000;

/// One fingerprint: its id as pg_query gives it and a normalised example.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// pg_query's fingerprint in hex (16 digits); for a statement the parser refused,
    /// `shape:` and the hash of its tokens.
    pub id: String,
    /// The first statement seen with it, constants replaced by `$n`.
    pub text: String,
}

/// The fingerprints of a log, assigned as statements are read.
#[derive(Debug)]
pub struct Fingerprints {
    by_shape: HashMap<u64, FpId>,
    by_value: HashMap<String, FpId>,
    table: Vec<Fingerprint>,
    /// The row of [`OTHER`], once a fingerprint found the table full.
    other: Option<FpId>,
    /// Fingerprints counted apart.
    limit: usize,
    /// Shapes remembered.
    shape_limit: usize,
}

impl Default for Fingerprints {
    fn default() -> Self {
        Self::new()
    }
}

impl Fingerprints {
    /// An empty table, bounded by [`Limits::current`].
    pub fn new() -> Self {
        let l = Limits::current();
        Self::with_limits(l.fingerprints, l.shapes)
    }

    /// An empty table of at most `fingerprints` fingerprints counted apart, remembering
    /// at most `shapes` shapes.
    pub fn with_limits(fingerprints: usize, shapes: usize) -> Self {
        Fingerprints {
            by_shape: HashMap::new(),
            by_value: HashMap::new(),
            table: Vec::new(),
            other: None,
            limit: fingerprints.max(1),
            shape_limit: shapes,
        }
    }

    /// The limit of fingerprints counted apart, when the log had more (their
    /// statements are counted under [`OTHER`]).
    pub fn limit_reached(&self) -> Option<usize> {
        self.other.map(|_| self.limit)
    }

    /// The fingerprint of `sql`, whose scan is `scan`.
    pub fn of(&mut self, sql: &str, scan: &Scan) -> FpId {
        if let Some(&id) = self.by_shape.get(&scan.shape) {
            return id;
        }
        let (key, parsed) = match pg_query::fingerprint(sql) {
            Ok(fp) => (fp.hex, true),
            Err(_) => (format!("shape:{:016x}", scan.shape), false),
        };
        let id = match self.by_value.get(&key) {
            Some(&id) => id,
            None if self.by_value.len() < self.limit => {
                // The example is normalised only for a fingerprint the table keeps.
                let text = if parsed {
                    pg_query::normalize(sql).unwrap_or_else(|_| sql.to_string())
                } else {
                    sql.to_string()
                };
                let id = FpId(self.table.len() as u32);
                self.table.push(Fingerprint {
                    id: key.clone(),
                    text: shorten(text.trim()),
                });
                self.by_value.insert(key, id);
                id
            }
            None => self.other(),
        };
        if self.by_shape.len() < self.shape_limit {
            self.by_shape.insert(scan.shape, id);
        }
        id
    }

    /// The row of the statements past the limit.
    fn other(&mut self) -> FpId {
        *self.other.get_or_insert_with(|| {
            self.table.push(Fingerprint {
                id: OTHER.into(),
                text: format!(
                    "(the statements of every fingerprint past the first {})",
                    self.limit
                ),
            });
            FpId(self.table.len() as u32 - 1)
        })
    }

    /// The table, indexed by [`FpId`].
    pub fn table(&self) -> &[Fingerprint] {
        &self.table
    }

    /// Takes the table.
    pub fn into_table(self) -> Vec<Fingerprint> {
        self.table
    }
}

fn shorten(s: &str) -> String {
    match s.char_indices().nth(TEXT_LIMIT) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlscan::scan;

    fn fp(t: &mut Fingerprints, sql: &str) -> FpId {
        t.of(sql, &scan(sql))
    }

    #[test]
    fn statements_differing_in_constants_share_a_fingerprint() {
        let mut t = Fingerprints::new();
        let a = fp(
            &mut t,
            "UPDATE pgbench_accounts SET abalance = abalance + 5 WHERE aid = 7;",
        );
        let b = fp(
            &mut t,
            "UPDATE pgbench_accounts SET abalance = abalance + -2937 WHERE aid = 12;",
        );
        let c = fp(
            &mut t,
            "update pgbench_accounts set abalance = abalance + $1 where aid = $2",
        );
        assert_eq!(a, b);
        assert_eq!(a, c);
        let d = fp(
            &mut t,
            "SELECT abalance FROM pgbench_accounts WHERE aid = 7;",
        );
        assert_ne!(a, d);
        assert_eq!(t.table().len(), 2);
        assert_eq!(t.table()[a.0 as usize].id.len(), 16);
        assert!(
            t.table()[d.0 as usize].text.contains("$1"),
            "{:?}",
            t.table()
        );
    }

    #[test]
    fn statements_the_parser_refuses_get_their_shape() {
        let mut t = Fingerprints::new();
        let a = fp(&mut t, "selec 1");
        let b = fp(&mut t, "selec 2");
        assert_eq!(a, b);
        assert!(t.table()[a.0 as usize].id.starts_with("shape:"));
    }

    #[test]
    fn fingerprints_past_the_limit_share_one_row() {
        let mut t = Fingerprints::with_limits(2, 3);
        let a = fp(&mut t, "select a from t where x = 1");
        let b = fp(&mut t, "select b from t where x = 1");
        assert_eq!(t.limit_reached(), None);
        let c = fp(&mut t, "select c from t where x = 1");
        let d = fp(&mut t, "select d from t where x = 1");
        assert_eq!(t.limit_reached(), Some(2));
        assert_eq!(c, d, "past the limit, one row");
        assert_ne!(a, b);
        assert_ne!(c, a);
        assert_eq!(t.table().len(), 3);
        assert_eq!(t.table()[c.0 as usize].id, OTHER);
        // Shapes past their limit are fingerprinted again, to the same rows.
        assert_eq!(t.by_shape.len(), 3);
        assert_eq!(fp(&mut t, "select b from t where x = 7"), b);
        assert_eq!(fp(&mut t, "select e from t where x = 1"), c);
        assert_eq!(t.by_shape.len(), 3);
        assert_eq!(t.table().len(), 3);
    }
}
