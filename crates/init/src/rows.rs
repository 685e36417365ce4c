//! COPY text rows for client-side generation (`g`), written straight into a
//! reusable buffer without allocating per row.
//!
//! Row formats (text COPY, one row per line), k = 0-based row number:
//! branches `k+1 \t 0 \t \N`, tellers `k+1 \t k/10+1 \t 0 \t \N`,
//! accounts `k+1 \t k/100000+1 \t 0 \t ` (empty filler, blank-padded by the
//! server). This module knows nothing about progress or sending.

use crate::spec::{NACCOUNTS, NBRANCHES, NTELLERS};

/// The three tables client-side generation fills, in fill order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeneratedTable {
    /// `pgbench_branches`, 1 row per scale unit.
    Branches,
    /// `pgbench_tellers`, 10 rows per scale unit.
    Tellers,
    /// `pgbench_accounts`, 100000 rows per scale unit.
    Accounts,
}

impl GeneratedTable {
    /// Fill order used by pgbench (parents first, in case foreign keys exist).
    pub const ALL: [GeneratedTable; 3] = [
        GeneratedTable::Branches,
        GeneratedTable::Tellers,
        GeneratedTable::Accounts,
    ];

    /// The table name.
    pub fn name(self) -> &'static str {
        match self {
            GeneratedTable::Branches => "pgbench_branches",
            GeneratedTable::Tellers => "pgbench_tellers",
            GeneratedTable::Accounts => "pgbench_accounts",
        }
    }

    /// Rows per scale unit.
    pub fn base(self) -> i64 {
        match self {
            GeneratedTable::Branches => NBRANCHES,
            GeneratedTable::Tellers => NTELLERS,
            GeneratedTable::Accounts => NACCOUNTS,
        }
    }
}

/// Produces the rows of one table in order, in batches.
pub struct RowWriter {
    table: GeneratedTable,
    next: i64,
    total: i64,
    id: itoa::Buffer,
    /// The parent id text (`k/base+1`) and the row number where it changes,
    /// so the division and formatting happen once per parent, not per row.
    parent_digits: [u8; 20],
    parent_len: usize,
    parent_until: i64,
}

impl RowWriter {
    /// A writer for all `base * scale` rows of `table`.
    pub fn new(table: GeneratedTable, scale: i32) -> Self {
        RowWriter {
            table,
            next: 0,
            total: table.base() * i64::from(scale),
            id: itoa::Buffer::new(),
            parent_digits: [0; 20],
            parent_len: 0,
            parent_until: 0,
        }
    }

    /// A writer for the 0-based rows `first..end` of `table` (`end` clamped to the
    /// table's size): one slice of a parallel load, with the same row text a full
    /// writer produces for those rows.
    pub fn range(table: GeneratedTable, scale: i32, first: i64, end: i64) -> Self {
        let mut w = RowWriter::new(table, scale);
        w.total = end.min(w.total);
        w.next = first.min(w.total);
        w
    }

    /// Number of rows written so far (for a [`RowWriter::range`], the 0-based row
    /// number reached).
    pub fn rows_done(&self) -> i64 {
        self.next
    }

    /// Total number of rows.
    pub fn total(&self) -> i64 {
        self.total
    }

    /// Whether every row has been written.
    pub fn is_done(&self) -> bool {
        self.next >= self.total
    }

    /// Like [`RowWriter::write_until`], but writes only the rows whose id
    /// (`k+1`) `keep` accepts; returns how many it wrote. For `pgbench_accounts`
    /// loaded one hash partition at a time.
    pub fn write_kept_until(
        &mut self,
        buf: &mut Vec<u8>,
        until: i64,
        keep: &dyn Fn(i64) -> bool,
    ) -> i64 {
        let until = until.min(self.total);
        let mut written = 0;
        while self.next < until {
            let k = self.next;
            if keep(k + 1) {
                // One row through the ordinary writer keeps the text identical.
                self.write_until(buf, k + 1);
                written += 1;
            } else {
                self.next += 1;
            }
        }
        written
    }

    /// Appends rows up to (excluding) 0-based row `until` (clamped to the
    /// total) to `buf`.
    pub fn write_until(&mut self, buf: &mut Vec<u8>, until: i64) {
        let until = until.min(self.total);
        match self.table {
            GeneratedTable::Branches => {
                while self.next < until {
                    buf.extend_from_slice(self.id.format(self.next + 1).as_bytes());
                    buf.extend_from_slice(b"\t0\t\\N\n");
                    self.next += 1;
                }
            }
            GeneratedTable::Tellers | GeneratedTable::Accounts => {
                let suffix: &[u8] = if self.table == GeneratedTable::Tellers {
                    b"\t0\t\\N\n"
                } else {
                    b"\t0\t\n"
                };
                let base = self.table.base();
                while self.next < until {
                    if self.next >= self.parent_until {
                        let parent = self.next / base + 1;
                        let mut text = itoa::Buffer::new();
                        let digits = text.format(parent).as_bytes();
                        self.parent_len = digits.len();
                        self.parent_digits[..digits.len()].copy_from_slice(digits);
                        self.parent_until = parent * base;
                    }
                    let stop = until.min(self.parent_until);
                    let parent = &self.parent_digits[..self.parent_len];
                    while self.next < stop {
                        buf.extend_from_slice(self.id.format(self.next + 1).as_bytes());
                        buf.push(b'\t');
                        buf.extend_from_slice(parent);
                        buf.extend_from_slice(suffix);
                        self.next += 1;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_rows(table: GeneratedTable, scale: i32) -> String {
        let mut w = RowWriter::new(table, scale);
        let mut buf = Vec::new();
        // Uneven batch sizes must not change the output.
        let mut step = 1;
        while !w.is_done() {
            let until = w.rows_done() + step;
            w.write_until(&mut buf, until);
            step = step * 3 + 1;
        }
        String::from_utf8(buf).expect("rows are ASCII")
    }

    #[test]
    fn branches_rows() {
        assert_eq!(
            all_rows(GeneratedTable::Branches, 3),
            "1\t0\t\\N\n2\t0\t\\N\n3\t0\t\\N\n"
        );
    }

    #[test]
    fn tellers_rows() {
        let text = all_rows(GeneratedTable::Tellers, 2);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 20);
        assert_eq!(lines[0], "1\t1\t0\t\\N");
        assert_eq!(lines[9], "10\t1\t0\t\\N");
        assert_eq!(lines[10], "11\t2\t0\t\\N");
        assert_eq!(lines[19], "20\t2\t0\t\\N");
    }

    #[test]
    fn accounts_rows_match_the_formula_everywhere() {
        let text = all_rows(GeneratedTable::Accounts, 3);
        let mut n = 0i64;
        for (k, line) in text.lines().enumerate() {
            let k = k as i64;
            assert_eq!(line, format!("{}\t{}\t0\t", k + 1, k / 100_000 + 1));
            n += 1;
        }
        assert_eq!(n, 300_000);
        assert!(text.ends_with("300000\t3\t0\t\n"));
    }

    #[test]
    fn ranges_concatenate_to_the_whole_table() {
        let whole = all_rows(GeneratedTable::Accounts, 2);
        let mut parts = Vec::new();
        for (first, end) in [(0, 70_001), (70_001, 150_000), (150_000, 999_999)] {
            let mut w = RowWriter::range(GeneratedTable::Accounts, 2, first, end);
            while !w.is_done() {
                let until = w.rows_done() + 4096;
                w.write_until(&mut parts, until);
            }
        }
        assert_eq!(String::from_utf8(parts).expect("ascii"), whole);
    }

    #[test]
    fn kept_rows_are_the_full_rows_filtered() {
        let whole = all_rows(GeneratedTable::Accounts, 2);
        let keep = |aid: i64| aid % 7 == 3;
        let mut w = RowWriter::new(GeneratedTable::Accounts, 2);
        let mut buf = Vec::new();
        let mut written = 0;
        while !w.is_done() {
            let until = w.rows_done() + 5000;
            written += w.write_kept_until(&mut buf, until, &keep);
        }
        let expected: Vec<&str> = whole
            .lines()
            .filter(|line| keep(line.split('\t').next().unwrap().parse().unwrap()))
            .collect();
        assert_eq!(written, expected.len() as i64);
        assert_eq!(
            String::from_utf8(buf).unwrap().lines().collect::<Vec<_>>(),
            expected
        );
    }

    #[test]
    fn write_until_clamps_to_total() {
        let mut w = RowWriter::new(GeneratedTable::Branches, 2);
        let mut buf = Vec::new();
        w.write_until(&mut buf, 10);
        assert!(w.is_done());
        assert_eq!(w.rows_done(), 2);
        assert_eq!(buf, b"1\t0\t\\N\n2\t0\t\\N\n");
    }
}
