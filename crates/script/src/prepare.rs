//! Owns how SQL text is prepared per query mode (pgbench's `parseQuery` and
//! `substituteVariables`): in simple mode `:name` references are replaced by variable
//! values at run time (undefined ones stay as written); in extended and prepared modes
//! every `:name` becomes `$1, $2, …` once, at load time, and values are sent as
//! parameters. Scanning is textual (quotes are not respected); colons not followed by a
//! name start (`::int`) are skipped.

use crate::script::{Command, Script};
use crate::vars::Variables;

/// Most parameters a statement may have in extended/prepared mode.
pub const MAX_PARAMS: usize = 255;

/// pgbench's `-M` query mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueryMode {
    /// One Query message with variables substituted into the text.
    #[default]
    Simple,
    /// Unnamed Parse/Bind/Describe/Execute/Sync with text parameters.
    Extended,
    /// Named prepared statements `P_<n>`, prepared once per connection.
    Prepared,
}

impl QueryMode {
    /// Parses `simple`, `extended` or `prepared` (exact, case-sensitive, as `-M`).
    pub fn parse(s: &str) -> Option<QueryMode> {
        match s {
            "simple" => Some(QueryMode::Simple),
            "extended" => Some(QueryMode::Extended),
            "prepared" => Some(QueryMode::Prepared),
            _ => None,
        }
    }

    /// The name the report prints (`query mode: …`).
    pub fn name(self) -> &'static str {
        match self {
            QueryMode::Simple => "simple",
            QueryMode::Extended => "extended",
            QueryMode::Prepared => "prepared",
        }
    }
}

/// A statement with more than [`MAX_PARAMS`] variable references (pgbench exits 1 with
/// `pgbench: error: ` + this message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("statement has too many arguments (maximum is 255): {sql}")]
pub struct PrepareError {
    /// The statement text as written.
    pub sql: String,
}

fn name_start(c: u8) -> bool {
    c >= 0x80 || c.is_ascii_alphabetic() || c == b'_'
}

fn name_char(c: u8) -> bool {
    name_start(c) || c.is_ascii_digit()
}

/// Length of the variable name right after the colon at `i` (0 if none).
fn var_name_len(b: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    if j < b.len() && name_start(b[j]) {
        j += 1;
        while j < b.len() && name_char(b[j]) {
            j += 1;
        }
    }
    j - (i + 1)
}

/// Calls `f(literal_text)` and `f_var(name)` over the SQL in order.
fn for_each_reference<'a>(
    sql: &'a str,
    mut text: impl FnMut(&'a str),
    mut var: impl FnMut(&'a str),
) {
    let b = sql.as_bytes();
    let mut lit_start = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] != b':' {
            i += 1;
            continue;
        }
        let n = var_name_len(b, i);
        if n == 0 {
            // skip the whole run of colons (`::int`)
            while i < b.len() && b[i] == b':' {
                i += 1;
            }
            continue;
        }
        text(&sql[lit_start..i]);
        var(&sql[i + 1..i + 1 + n]);
        i += 1 + n;
        lit_start = i;
    }
    text(&sql[lit_start..]);
}

/// Simple mode: appends `sql` to `out` with each defined `:name` replaced by the
/// variable's text; undefined references are left as written.
pub fn substitute_simple(sql: &str, vars: &mut Variables, out: &mut String) {
    let out = std::cell::RefCell::new(out);
    for_each_reference(
        sql,
        |t| out.borrow_mut().push_str(t),
        |name| {
            let mut o = out.borrow_mut();
            if !vars.get_as_text(name, &mut o) {
                o.push(':');
                o.push_str(name);
            }
        },
    );
}

/// Rewrites `:name` references to `$n`; returns the new text and the names.
pub(crate) fn parameterize(sql: &str) -> Result<(String, Vec<Box<str>>), PrepareError> {
    let mut out = String::with_capacity(sql.len());
    let mut names: Vec<Box<str>> = Vec::new();
    let out_cell = std::cell::RefCell::new(&mut out);
    let mut too_many = false;
    for_each_reference(
        sql,
        |t| out_cell.borrow_mut().push_str(t),
        |name| {
            if names.len() >= MAX_PARAMS {
                too_many = true;
                return;
            }
            names.push(name.into());
            let mut o = out_cell.borrow_mut();
            o.push('$');
            o.push_str(&names.len().to_string());
        },
    );
    if too_many {
        return Err(PrepareError {
            sql: sql.to_string(),
        });
    }
    Ok((out, names))
}

impl Script {
    /// Prepares every SQL command for `mode` (pgbench's `postprocess_sql_command`):
    /// simple mode keeps the text; extended and prepared rewrite `:name` to `$n` and
    /// record the parameter variables. Idempotent: always starts from the source text.
    pub fn prepare(&mut self, mode: QueryMode) -> Result<(), PrepareError> {
        for cmd in &mut self.commands {
            let Command::Sql(s) = cmd else { continue };
            match mode {
                QueryMode::Simple => {
                    s.sql = s.source.clone();
                    s.params.clear();
                }
                QueryMode::Extended | QueryMode::Prepared => {
                    let (sql, params) = parameterize(&s.source)?;
                    s.sql = sql;
                    s.params = params;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    const V1: &str = "SELECT :a AS a, ':a' AS quoted, :a::text AS cast, :d AS d, :b AS b, :n AS n, ':nosuch' AS undefined_lit";

    #[test]
    fn simple_substitution_matches_observed() {
        let mut v = Variables::new();
        v.set_int("set", "a", 5).unwrap();
        v.set_value("set", "d", Value::Double(2.5)).unwrap();
        v.set_value("set", "b", Value::Bool(true)).unwrap();
        v.set_value("set", "n", Value::Null).unwrap();
        let mut out = String::new();
        substitute_simple(V1, &mut v, &mut out);
        assert_eq!(out, "SELECT 5 AS a, '5' AS quoted, 5::text AS cast, 2.5 AS d, true AS b, NULL AS n, ':nosuch' AS undefined_lit");
    }

    #[test]
    fn extended_rewrite_matches_observed() {
        let (sql, names) = parameterize(V1).unwrap();
        assert_eq!(sql, "SELECT $1 AS a, '$2' AS quoted, $3::text AS cast, $4 AS d, $5 AS b, $6 AS n, '$7' AS undefined_lit");
        let names: Vec<&str> = names.iter().map(|s| &**s).collect();
        assert_eq!(names, ["a", "a", "a", "d", "b", "n", "nosuch"]);
    }

    #[test]
    fn too_many_params() {
        let sql: String = (0..256).map(|i| format!(":v{i} ")).collect();
        let e = parameterize(&sql).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("statement has too many arguments (maximum is 255): {sql}")
        );
        let ok: String = (0..255).map(|i| format!(":v{i} ")).collect();
        assert_eq!(parameterize(&ok).unwrap().1.len(), 255);
    }

    #[test]
    fn colons() {
        let mut v = Variables::new();
        v.set_int("set", "x", 1).unwrap();
        let mut out = String::new();
        substitute_simple("a::x :x: :::x :1 :", &mut v, &mut out);
        assert_eq!(out, "a::x 1: :::x :1 :");
    }
}
