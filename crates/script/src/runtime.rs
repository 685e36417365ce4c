//! Owns the run-time helpers of meta commands and result storage that the engine calls:
//! resolving a `\sleep` duration, assembling a `\shell`/`\setshell` command line with
//! variable substitution and checking `\setshell` output, and storing `\gset`/`\aset`
//! columns. The engine does the sleeping, runs the process and reads the server.

use crate::cnum::{atoi, strtol_prefix};
use crate::script::{SleepAmount, SleepSpec, SqlMeta};
use crate::vars::{is_c_space, VarError, Variables};

/// A `\sleep` that cannot be resolved (pgbench then aborts the client with
/// `… (sleep) …; execution of meta-command failed`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SleepError {
    /// `sleep: undefined variable "x"` (`argv0` as typed).
    #[error("{argv0}: undefined variable \"{var}\"")]
    Undefined {
        /// Command name as typed.
        argv0: String,
        /// Variable name.
        var: String,
    },
    /// `sleep: invalid sleep time "abc" for variable "x"`.
    #[error("{argv0}: invalid sleep time \"{value}\" for variable \"{var}\"")]
    Invalid {
        /// Command name as typed.
        argv0: String,
        /// The variable's text.
        value: String,
        /// Variable name.
        var: String,
    },
}

/// Resolves a `\sleep` to microseconds with pgbench's int32 arithmetic (`atoi`, wrapping
/// multiplication). A negative result means no sleep.
pub fn sleep_usec(spec: &SleepSpec, argv0: &str, vars: &mut Variables) -> Result<i32, SleepError> {
    let amount = match &spec.amount {
        SleepAmount::Literal(v) => *v,
        SleepAmount::Variable(var) => {
            let Some(text) = vars.get_text(var) else {
                return Err(SleepError::Undefined {
                    argv0: argv0.to_string(),
                    var: var.clone(),
                });
            };
            let v = atoi(&text);
            if v == 0 && !text.as_bytes().first().is_some_and(u8::is_ascii_digit) {
                return Err(SleepError::Invalid {
                    argv0: argv0.to_string(),
                    value: text,
                    var: var.clone(),
                });
            }
            v
        }
    };
    Ok(amount.wrapping_mul(spec.unit.factor()))
}

/// A `\shell`/`\setshell` failure; the message starts with the shell command's name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShellError {
    /// `<cmd>: undefined variable ":x"`.
    #[error("{cmd}: undefined variable \"{arg}\"")]
    Undefined {
        /// Shell command name (first word).
        cmd: String,
        /// The argument as written (with its colon).
        arg: String,
    },
    /// `<cmd>: shell command is too long` (255 bytes or more).
    #[error("{0}: shell command is too long")]
    TooLong(String),
    /// `<cmd>: shell command must return an integer (not "<output>")`.
    #[error("{cmd}: shell command must return an integer (not \"{output}\")")]
    NotAnInteger {
        /// Shell command name.
        cmd: String,
        /// What it printed (first line, at most 63 bytes).
        output: String,
    },
}

/// Most bytes of an assembled shell command line plus one (pgbench's buffer).
const SHELL_COMMAND_SIZE: usize = 256;

/// Assembles the command line of `\shell` (`words` = command and arguments) or
/// `\setshell` (the words after the variable), joined with single spaces: `:x` → value
/// of `x`, `::x` → `:x`, other words literal.
pub fn shell_command(
    words: &[String],
    vars: &mut Variables,
    out: &mut String,
) -> Result<(), ShellError> {
    out.clear();
    let cmd = words.first().map(String::as_str).unwrap_or("");
    let mut value = String::new();
    for (i, w) in words.iter().enumerate() {
        let arg: &str = if !w.starts_with(':') {
            w
        } else if w.as_bytes().get(1) == Some(&b':') {
            &w[1..]
        } else {
            value.clear();
            if !vars.get_as_text(&w[1..], &mut value) {
                return Err(ShellError::Undefined {
                    cmd: cmd.to_string(),
                    arg: w.clone(),
                });
            }
            &value
        };
        if out.len() + arg.len() + usize::from(i > 0) >= SHELL_COMMAND_SIZE - 1 {
            return Err(ShellError::TooLong(cmd.to_string()));
        }
        if i > 0 {
            out.push(' ');
        }
        out.push_str(arg);
    }
    Ok(())
}

/// Checks `\setshell` output (the first line as `fgets` reads it, at most 63 bytes,
/// newline included): an integer with optional surrounding white space, truncated to
/// int32 like pgbench's `(int) strtol(…)`.
pub fn parse_shell_output(cmd: &str, output: &str) -> Result<i32, ShellError> {
    let (v, end, _) = strtol_prefix(output);
    let rest = &output.as_bytes()[end..];
    if output.is_empty() || !rest.iter().all(|&c| is_c_space(c)) {
        return Err(ShellError::NotAnInteger {
            cmd: cmd.to_string(),
            output: output.to_string(),
        });
    }
    Ok(v as i32)
}

/// The variable name a `\gset`/`\aset` column is stored under.
pub fn gset_variable_name(prefix: &str, column: &str) -> String {
    format!("{prefix}{column}")
}

/// Stores one column of the last row of a `\gset`/`\aset` result (NULL as the empty
/// string, as pgbench does). The error message is printed by the engine, followed by
/// `client N script S command C query Q: error storing into variable NAME`.
pub fn store_result_column(
    meta: &SqlMeta,
    vars: &mut Variables,
    column: &str,
    value: Option<&str>,
) -> Result<(), VarError> {
    let (context, prefix) = match meta {
        SqlMeta::Gset { prefix } => ("gset", prefix.as_str()),
        SqlMeta::Aset { prefix } => ("aset", prefix.as_str()),
        SqlMeta::None => return Ok(()),
    };
    let name = gset_variable_name(prefix, column);
    vars.set_string(context, &name, value.unwrap_or(""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::SleepUnit;

    #[test]
    fn sleep_resolution() {
        let mut v = Variables::new();
        let lit = SleepSpec {
            amount: SleepAmount::Literal(10),
            unit: SleepUnit::Millis,
        };
        assert_eq!(sleep_usec(&lit, "sleep", &mut v), Ok(10_000));
        let var = SleepSpec {
            amount: SleepAmount::Variable("d".into()),
            unit: SleepUnit::Micros,
        };
        assert_eq!(
            sleep_usec(&var, "sleep", &mut v).unwrap_err().to_string(),
            "sleep: undefined variable \"d\""
        );
        v.set_string("option", "d", "abc").unwrap();
        assert_eq!(
            sleep_usec(&var, "sleep", &mut v).unwrap_err().to_string(),
            "sleep: invalid sleep time \"abc\" for variable \"d\""
        );
        v.set_string("option", "d", "250").unwrap();
        assert_eq!(sleep_usec(&var, "sleep", &mut v), Ok(250));
        v.set_int("set", "d", -3).unwrap();
        // "-3": atoi gives -3 (non-zero), so accepted and means no sleep
        assert_eq!(sleep_usec(&var, "sleep", &mut v), Ok(-3));
    }

    #[test]
    fn shell_assembly() {
        let mut v = Variables::new();
        v.set_int("set", "n", 42).unwrap();
        let words: Vec<String> = ["echo", ":n", "::n", "x"].map(String::from).to_vec();
        let mut out = String::new();
        shell_command(&words, &mut v, &mut out).unwrap();
        assert_eq!(out, "echo 42 :n x");
        let words: Vec<String> = ["echo", ":nope"].map(String::from).to_vec();
        assert_eq!(
            shell_command(&words, &mut v, &mut out)
                .unwrap_err()
                .to_string(),
            "echo: undefined variable \":nope\""
        );
        let long = vec!["echo".to_string(), "x".repeat(250)];
        assert_eq!(
            shell_command(&long, &mut v, &mut out)
                .unwrap_err()
                .to_string(),
            "echo: shell command is too long"
        );
    }

    #[test]
    fn shell_output() {
        assert_eq!(parse_shell_output("echo", "12\n"), Ok(12));
        assert_eq!(parse_shell_output("echo", "  -7  \n"), Ok(-7));
        assert_eq!(
            parse_shell_output("echo", "notanumber\n")
                .unwrap_err()
                .to_string(),
            "echo: shell command must return an integer (not \"notanumber\n\")"
        );
        assert!(parse_shell_output("echo", "").is_err());
        assert_eq!(parse_shell_output("echo", "4294967297\n"), Ok(1));
    }

    #[test]
    fn gset_storage() {
        let mut v = Variables::new();
        let m = SqlMeta::Gset {
            prefix: "p_".into(),
        };
        store_result_column(&m, &mut v, "one", Some("1")).unwrap();
        assert_eq!(v.get_text("p_one").as_deref(), Some("1"));
        store_result_column(&m, &mut v, "n", None).unwrap();
        assert_eq!(v.get_text("p_n").as_deref(), Some(""));
        let m = SqlMeta::Gset {
            prefix: String::new(),
        };
        assert_eq!(
            store_result_column(&m, &mut v, "?column?", Some("1"))
                .unwrap_err()
                .to_string(),
            "gset: invalid variable name: \"?column?\""
        );
    }
}
