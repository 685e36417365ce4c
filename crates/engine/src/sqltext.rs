//! `:name` references in SQL commands, scanned once at start-up the way pgbench scans them
//! (purely textual, quotes not respected, runs of colons not followed by a name skipped so
//! `::casts` survive), into a form the hot path renders without re-scanning: a list of
//! literal/variable pieces for simple mode, and `$n` text plus parameter names for
//! extended/prepared mode.

use pgsurge_script::VarName;
use std::ops::Range;

/// One piece of a simple-mode SQL template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Bytes copied verbatim (a range of [`SqlTemplate::text`]).
    Literal(Range<usize>),
    /// A `:name` reference; the range covers `:name` in the original text, which is sent
    /// verbatim when the variable is undefined (pgbench leaves it alone).
    Variable {
        /// The variable name (without the colon).
        name: VarName,
        /// The `:name` bytes in the original text.
        raw: Range<usize>,
    },
}

/// A SQL command prepared for simple-mode substitution.
#[derive(Debug, Clone)]
pub struct SqlTemplate {
    /// The original command text.
    pub text: Box<[u8]>,
    /// Literal and variable pieces in order.
    pub pieces: Vec<Piece>,
}

/// A SQL command rewritten for the extended protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamSql {
    /// The text with each reference replaced by `$1`, `$2`, … in order of appearance.
    pub sql: String,
    /// `sql` as the bytes to send (the script file's bytes, see
    /// [`pgsurge_script::script_bytes`]).
    pub wire: Box<[u8]>,
    /// The variable name of each parameter (repeats get their own parameter).
    pub params: Vec<VarName>,
}

/// pgbench's limit: `MAX_ARGS - 1` parameters per statement.
pub const MAX_PARAMS: usize = 255;

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b >= 0x80
}

fn is_name_char(b: u8) -> bool {
    is_name_start(b) || b.is_ascii_digit()
}

/// Calls `on_ref(start, end)` for each `:name` (start at the colon) and returns nothing;
/// the scanning rules of pgbench's `parseVariable` loop.
fn scan_refs(text: &[u8], mut on_ref: impl FnMut(usize, usize)) {
    let mut p = 0;
    while p < text.len() {
        if text[p] != b':' {
            p += 1;
            continue;
        }
        let mut i = p + 1;
        if i < text.len() && is_name_start(text[i]) {
            while i < text.len() && is_name_char(text[i]) {
                i += 1;
            }
            on_ref(p, i);
            p = i;
        } else {
            while p < text.len() && text[p] == b':' {
                p += 1;
            }
        }
    }
}

impl SqlTemplate {
    /// Scans `text` (script text, see [`pgsurge_script::script_text`]) once; the pieces
    /// hold the bytes the script file had.
    pub fn new(text: &str) -> Self {
        let mut refs = Vec::new();
        scan_refs(text.as_bytes(), |s, e| refs.push((s, e)));
        let mut bytes = Vec::with_capacity(text.len());
        // `:` is ASCII and a name ends at an ASCII byte, so every cut is a char boundary
        let mut copy = |r: Range<usize>| {
            let start = bytes.len();
            bytes.extend_from_slice(&pgsurge_script::script_bytes(&text[r]));
            start..bytes.len()
        };
        let mut pieces = Vec::new();
        let mut lit_start = 0;
        for (s, e) in refs {
            if s > lit_start {
                pieces.push(Piece::Literal(copy(lit_start..s)));
            }
            pieces.push(Piece::Variable {
                name: VarName::new(&text[s + 1..e]),
                raw: copy(s..e),
            });
            lit_start = e;
        }
        if lit_start < text.len() {
            pieces.push(Piece::Literal(copy(lit_start..text.len())));
        }
        SqlTemplate {
            text: bytes.into(),
            pieces,
        }
    }

    /// Renders into `out`; `write_var(name, out)` appends the variable's string form and
    /// returns false when the variable is undefined (then `:name` is kept verbatim).
    #[inline]
    pub fn render(
        &self,
        out: &mut Vec<u8>,
        mut write_var: impl FnMut(&VarName, &mut Vec<u8>) -> bool,
    ) {
        for piece in &self.pieces {
            match piece {
                Piece::Literal(r) => out.extend_from_slice(&self.text[r.clone()]),
                Piece::Variable { name, raw } => {
                    if !write_var(name, out) {
                        out.extend_from_slice(&self.text[raw.clone()]);
                    }
                }
            }
        }
    }
}

/// Rewrites `text` for the extended protocol; `Err(())` when it has more than
/// [`MAX_PARAMS`] references (pgbench: `statement has too many arguments`).
pub fn to_param_sql(text: &str) -> Result<ParamSql, TooManyParams> {
    let bytes = text.as_bytes();
    let mut sql = Vec::with_capacity(bytes.len());
    let mut params: Vec<VarName> = Vec::new();
    let mut last = 0;
    let mut too_many = false;
    scan_refs(bytes, |s, e| {
        if params.len() >= MAX_PARAMS {
            too_many = true;
            return;
        }
        sql.extend_from_slice(&bytes[last..s]);
        params.push(VarName::new(&String::from_utf8_lossy(&bytes[s + 1..e])));
        sql.extend_from_slice(format!("${}", params.len()).as_bytes());
        last = e;
    });
    if too_many {
        return Err(TooManyParams);
    }
    sql.extend_from_slice(&bytes[last..]);
    let sql = String::from_utf8_lossy(&sql).into_owned();
    Ok(ParamSql {
        wire: pgsurge_script::script_bytes(&sql).into(),
        sql,
        params,
    })
}

/// More than 255 variable references in one statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("statement has too many arguments (maximum is 255)")]
pub struct TooManyParams;

#[cfg(test)]
mod tests {
    use super::*;

    fn render(t: &SqlTemplate) -> String {
        let mut out = Vec::new();
        t.render(&mut out, |name, o| match name.as_str() {
            "a" => {
                o.extend_from_slice(b"5");
                true
            }
            "d" => {
                o.extend_from_slice(b"2.5");
                true
            }
            _ => false,
        });
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn simple_substitution_matches_observed_pgbench() {
        let t = SqlTemplate::new(
            "SELECT :a AS a, ':a' AS quoted, :a::text AS cast, :d AS d, ':nosuch' AS undefined_lit",
        );
        assert_eq!(
            render(&t),
            "SELECT 5 AS a, '5' AS quoted, 5::text AS cast, 2.5 AS d, ':nosuch' AS undefined_lit"
        );
    }

    #[test]
    fn colon_runs_and_casts_are_left_alone() {
        let t = SqlTemplate::new("select now()::date, :::a, x:1, :");
        assert_eq!(render(&t), "select now()::date, :::a, x:1, :");
    }

    #[test]
    fn extended_rewrite_numbers_every_reference() {
        let p = to_param_sql(
            "SELECT :a AS a, ':a' AS quoted, :a::text AS cast, :d AS d, :b AS b, :n AS n, ':nosuch' AS undefined_lit",
        )
        .unwrap();
        assert_eq!(
            p.sql,
            "SELECT $1 AS a, '$2' AS quoted, $3::text AS cast, $4 AS d, $5 AS b, $6 AS n, '$7' AS undefined_lit"
        );
        let names: Vec<&str> = p.params.iter().map(|s| &**s).collect();
        assert_eq!(names, ["a", "a", "a", "d", "b", "n", "nosuch"]);
    }

    #[test]
    fn too_many_params_rejected() {
        let sql: String = (0..256).map(|i| format!(":v{i},")).collect();
        assert_eq!(to_param_sql(&sql), Err(TooManyParams));
        let sql: String = (0..255).map(|i| format!(":v{i},")).collect();
        assert_eq!(to_param_sql(&sql).unwrap().params.len(), 255);
    }
}
