//! Bridge to the script crate: builtin script lookup (`-b`, `-N`, `-S`, `--show-script`,
//! `-b list`) and turning script text into the script crate's parsed form, with
//! pgbench's texts for every failure. Owns no script syntax.

/// Placeholder for the script crate's parsed script until its API lands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    /// The source text.
    pub text: String,
}

/// One builtin script: name, description (`transaction type:`) and text.
pub struct Builtin {
    /// Full name (`tpcb-like`).
    pub name: &'static str,
    /// Description (`<builtin: TPC-B (sort of)>`).
    pub desc: &'static str,
    /// Script text; every line ends with a newline.
    pub text: &'static str,
}

/// pgbench's builtin scripts in its order (the order matters for `-b list`).
pub const BUILTINS: [Builtin; 3] = [
    Builtin {
        name: "tpcb-like",
        desc: "<builtin: TPC-B (sort of)>",
        text: "\\set aid random(1, 100000 * :scale)\n\
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
        text: "\\set aid random(1, 100000 * :scale)\n\
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
        text: "\\set aid random(1, 100000 * :scale)\n\
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n",
    },
];

/// The `-b list` text (also printed after a lookup error), ending with an empty line.
pub fn list_text() -> String {
    let mut s = String::from("Available builtin scripts:\n");
    for b in &BUILTINS {
        s.push_str(&format!("  {:>13}: {}\n", b.name, b.desc));
    }
    s.push('\n');
    s
}

/// The `--show-script` text.
pub fn show_text(b: &Builtin) -> String {
    format!("-- {}: {}\n{}\n", b.name, b.desc, b.text)
}

/// Why a builtin name did not resolve; the message line pgbench prints (the list
/// follows it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupError {
    /// No name starts with the given prefix.
    NotFound(String),
    /// Several do.
    Ambiguous(usize, String),
}

impl LookupError {
    /// The `error:` line.
    pub fn message(&self) -> String {
        match self {
            LookupError::NotFound(n) => format!("no builtin script found for name \"{n}\""),
            LookupError::Ambiguous(k, n) => {
                format!("ambiguous builtin name: {k} builtin scripts found for prefix \"{n}\"")
            }
        }
    }
}

/// pgbench's `findBuiltin`: `name` may be any prefix matching exactly one script.
pub fn find_builtin(name: &[u8]) -> Result<&'static Builtin, LookupError> {
    let matches: Vec<&Builtin> = BUILTINS
        .iter()
        .filter(|b| b.name.as_bytes().starts_with(name))
        .collect();
    let shown = || String::from_utf8_lossy(name).into_owned();
    match matches.len() {
        1 => Ok(matches[0]),
        0 => Err(LookupError::NotFound(shown())),
        k => Err(LookupError::Ambiguous(k, shown())),
    }
}

/// A script that failed to parse: the complete stderr text pgbench prints for it
/// (the `pgbench: error: …` line and any context lines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError {
    /// Exactly what goes to stderr.
    pub stderr: String,
}

/// Parses a script (`desc` is the builtin description or the file name as given).
/// Reports pgbench's syntax errors and `empty command list for script`.
pub fn compile(desc: &str, text: &str) -> Result<Script, CompileError> {
    // Placeholder until the script crate's parser is in: a script with no non-blank,
    // non-comment line is empty.
    let has_command = text.lines().any(|l| {
        let t = l.trim();
        !t.is_empty() && !t.starts_with("--")
    });
    if !has_command {
        return Err(CompileError {
            stderr: format!("pgbench: error: empty command list for script \"{desc}\"\n"),
        });
    }
    Ok(Script {
        text: text.to_string(),
    })
}

/// Rewrites every SQL command for the query mode (pgbench's `postprocess_sql_command`),
/// which can fail with `statement has too many arguments (maximum is 255): …`.
/// Returns the `error:` message on failure.
pub fn prepare(script: &mut Script, mode: crate::QueryMode) -> Result<(), String> {
    let _ = (script, mode);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_prefixes() {
        assert_eq!(find_builtin(b"tpcb").map(|b| b.name), Ok("tpcb-like"));
        assert_eq!(find_builtin(b"si").map(|b| b.name), Ok("simple-update"));
        assert_eq!(
            find_builtin(b"s").map(|b| b.name),
            Err(LookupError::Ambiguous(2, "s".into()))
        );
        assert_eq!(
            find_builtin(b"").map(|b| b.name),
            Err(LookupError::Ambiguous(3, String::new()))
        );
        assert_eq!(
            find_builtin(b"tpcb-like-x").map(|b| b.name),
            Err(LookupError::NotFound("tpcb-like-x".into()))
        );
    }

    #[test]
    fn list_matches_pgbench_layout() {
        assert_eq!(
            list_text(),
            "Available builtin scripts:\n      tpcb-like: <builtin: TPC-B (sort of)>\n  simple-update: <builtin: simple update>\n    select-only: <builtin: select only>\n\n"
        );
    }
}
