//! Owns the built-in scripts (`tpcb-like`, `simple-update`, `select-only`), their lookup
//! by unambiguous prefix, the `NAME@WEIGHT` syntax of `-b`/`-f`, and the texts of
//! `-b list` and `--show-script`.

use std::fmt::Write as _;

/// A built-in script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Builtin {
    /// Name used with `-b` (`tpcb-like`, …).
    pub name: &'static str,
    /// Description shown as `transaction type:` (`<builtin: TPC-B (sort of)>`).
    pub desc: &'static str,
    /// Script text (each line ends with a newline).
    pub script: &'static str,
}

/// The built-in scripts in pgbench's order.
pub const BUILTINS: [Builtin; 3] = [
    Builtin {
        name: "tpcb-like",
        desc: "<builtin: TPC-B (sort of)>",
        script: "\\set aid random(1, 100000 * :scale)\n\
\\set bid random(1, 1 * :scale)\n\
\\set tid random(1, 10 * :scale)\n\
\\set delta random(-5000, 5000)\n\
BEGIN;\n\
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n\
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n\
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;\n\
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;\n\
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);\n\
END;\n",
    },
    Builtin {
        name: "simple-update",
        desc: "<builtin: simple update>",
        script: "\\set aid random(1, 100000 * :scale)\n\
\\set bid random(1, 1 * :scale)\n\
\\set tid random(1, 10 * :scale)\n\
\\set delta random(-5000, 5000)\n\
BEGIN;\n\
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n\
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n\
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);\n\
END;\n",
    },
    Builtin {
        name: "select-only",
        desc: "<builtin: select only>",
        script: "\\set aid random(1, 100000 * :scale)\n\
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n",
    },
];

/// Most scripts pgbench accepts (`at most 128 SQL scripts are allowed`).
pub const MAX_SCRIPTS: usize = 128;

/// The `-b list` text (pgbench writes it to stderr): header, one aligned line per
/// script, and an empty line.
pub fn builtin_list_text() -> String {
    let mut s = String::from("Available builtin scripts:\n");
    for b in &BUILTINS {
        let _ = writeln!(s, "  {:>13}: {}", b.name, b.desc);
    }
    s.push('\n');
    s
}

/// The `--show-script` text (stderr): `-- name: desc`, the script, and an empty line.
pub fn show_script_text(b: &Builtin) -> String {
    format!("-- {}: {}\n{}\n", b.name, b.desc, b.script)
}

/// A builtin name that matches no script or several.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuiltinError {
    /// No builtin name starts with the given text.
    #[error("no builtin script found for name \"{0}\"")]
    NotFound(String),
    /// Several builtin names start with the given text.
    #[error("ambiguous builtin name: {count} builtin scripts found for prefix \"{name}\"")]
    Ambiguous {
        /// How many matched.
        count: usize,
        /// The prefix given.
        name: String,
    },
}

impl BuiltinError {
    /// Everything pgbench prints on stderr for this error (then exit 1): the error line
    /// and the list of builtin scripts.
    pub fn stderr_text(&self) -> String {
        format!("pgbench: error: {self}\n{}", builtin_list_text())
    }
}

/// Finds a builtin by name or unambiguous prefix (the empty name matches all: ambiguous).
pub fn find_builtin(name: &str) -> Result<&'static Builtin, BuiltinError> {
    let mut found = BUILTINS.iter().filter(|b| b.name.starts_with(name));
    match (found.next(), found.clone().count()) {
        (Some(b), 0) => Ok(b),
        (None, _) => Err(BuiltinError::NotFound(name.to_string())),
        (Some(_), more) => Err(BuiltinError::Ambiguous {
            count: more + 1,
            name: name.to_string(),
        }),
    }
}

/// A bad `@weight` suffix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WeightError {
    /// Not an integer (the text includes the `@`).
    #[error("invalid weight specification: {0}")]
    Invalid(String),
    /// Outside `0..=2147483647`.
    #[error("weight specification out of range (0 .. 2147483647): {0}")]
    OutOfRange(i64),
}

/// Splits `NAME[@W]` at the last `@` (pgbench's `parseScriptWeight`); the weight is 1
/// when absent.
pub fn parse_weight(option: &str) -> Result<(String, i32), WeightError> {
    let Some(at) = option.rfind('@') else {
        return Ok((option.to_string(), 1));
    };
    let spec = &option[at + 1..];
    let (value, end, overflow) = crate::cnum::strtol_prefix(spec);
    if overflow || end == 0 || end != spec.len() {
        return Err(WeightError::Invalid(option[at..].to_string()));
    }
    if !(0..=i64::from(i32::MAX)).contains(&value) {
        return Err(WeightError::OutOfRange(value));
    }
    Ok((option[..at].to_string(), value as i32))
}

/// Alias of [`parse_weight`] kept for callers that think of it as splitting.
pub fn split_weight(option: &str) -> Result<(String, i32), WeightError> {
    parse_weight(option)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_text_matches_observed() {
        assert_eq!(
            builtin_list_text(),
            "Available builtin scripts:\n      tpcb-like: <builtin: TPC-B (sort of)>\n  simple-update: <builtin: simple update>\n    select-only: <builtin: select only>\n\n"
        );
    }

    #[test]
    fn show_script_matches_observed() {
        let b = find_builtin("select").unwrap();
        assert_eq!(
            show_script_text(b),
            "-- select-only: <builtin: select only>\n\\set aid random(1, 100000 * :scale)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n\n"
        );
    }

    #[test]
    fn lookup() {
        assert_eq!(find_builtin("tpcb").unwrap().name, "tpcb-like");
        assert_eq!(find_builtin("simple-update").unwrap().name, "simple-update");
        assert_eq!(
            find_builtin("s").unwrap_err().to_string(),
            "ambiguous builtin name: 2 builtin scripts found for prefix \"s\""
        );
        assert_eq!(
            find_builtin("").unwrap_err().to_string(),
            "ambiguous builtin name: 3 builtin scripts found for prefix \"\""
        );
        let e = find_builtin("foo").unwrap_err();
        assert_eq!(
            e.stderr_text(),
            format!(
                "pgbench: error: no builtin script found for name \"foo\"\n{}",
                builtin_list_text()
            )
        );
        assert!(find_builtin("tpcb-likex").is_err());
    }

    #[test]
    fn weights() {
        assert_eq!(parse_weight("tpcb-like"), Ok(("tpcb-like".into(), 1)));
        assert_eq!(parse_weight("x@0"), Ok(("x".into(), 0)));
        assert_eq!(parse_weight("filen@me@3"), Ok(("filen@me".into(), 3)));
        assert_eq!(parse_weight("a@ +5"), Ok(("a".into(), 5)));
        assert_eq!(
            parse_weight("tpcb-like@x").unwrap_err().to_string(),
            "invalid weight specification: @x"
        );
        assert_eq!(
            parse_weight("a@").unwrap_err().to_string(),
            "invalid weight specification: @"
        );
        assert_eq!(
            parse_weight("a@1x").unwrap_err().to_string(),
            "invalid weight specification: @1x"
        );
        assert_eq!(
            parse_weight("tpcb-like@-2").unwrap_err().to_string(),
            "weight specification out of range (0 .. 2147483647): -2"
        );
        assert_eq!(
            parse_weight("tpcb-like@3000000000")
                .unwrap_err()
                .to_string(),
            "weight specification out of range (0 .. 2147483647): 3000000000"
        );
        assert_eq!(
            parse_weight("a@99999999999999999999")
                .unwrap_err()
                .to_string(),
            "invalid weight specification: @99999999999999999999"
        );
    }
}
