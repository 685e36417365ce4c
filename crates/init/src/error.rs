//! `InitError`: every way `-i` can fail, rendered exactly as pgbench prints it.
//!
//! This module owns the failure texts only; deciding when a failure happens is
//! the runner's job. Every init failure makes pgbench exit with status 1.

use std::fmt::Write as _;

/// An initialization failure. [`InitError::render`] gives the exact stderr
/// lines pgbench prints for it; the exit status is always 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InitError {
    /// The initialization connection could not be opened (the caller connects;
    /// this variant lets it print pgbench's two lines). `message` is libpq's text.
    #[error("{message}")]
    Connect {
        /// libpq-style connection failure text.
        message: String,
    },
    /// A statement failed (pgbench's `executeStatement`).
    #[error("query failed: {message}")]
    QueryFailed {
        /// libpq-style error text (`ERROR:  …`, possibly with `LINE 1:` lines).
        message: String,
        /// The statement that failed, as sent.
        sql: String,
    },
    /// `COPY … FROM STDIN` did not enter copy-in mode.
    #[error("unexpected copy in result: {message}")]
    CopyStart {
        /// libpq-style error text.
        message: String,
    },
    /// Copy data could not be sent (connection lost while streaming rows).
    #[error("PQputline failed")]
    CopySend {
        /// What went wrong at the transport level (not printed by pgbench).
        cause: String,
    },
    /// The server rejected the copied data when the copy ended. libpq prints
    /// the server's error as a notice first, then pgbench fails.
    #[error("PQendcopy failed")]
    CopyEnd {
        /// libpq-style server error text, printed raw before the error line.
        message: String,
    },
    /// A character in the step string that is no initialization step.
    #[error("unrecognized initialization step \"{0}\"")]
    UnknownStep(char),
}

impl InitError {
    /// The process exit status pgbench uses for this failure (always 1).
    pub fn exit_code(&self) -> i32 {
        1
    }

    /// The exact stderr text pgbench prints for this failure, each line ending
    /// in `\n`, with the `pgbench: ` program prefix.
    pub fn render(&self) -> String {
        self.render_as("pgbench")
    }

    /// Like [`InitError::render`] with another program name in the prefix.
    pub fn render_as(&self, progname: &str) -> String {
        let mut out = String::new();
        match self {
            InitError::Connect { message } => {
                log_line(&mut out, progname, "error", message);
                log_line(
                    &mut out,
                    progname,
                    "error",
                    "could not create connection for initialization",
                );
            }
            InitError::QueryFailed { message, sql } => {
                log_line(
                    &mut out,
                    progname,
                    "error",
                    &format!("query failed: {message}"),
                );
                log_line(&mut out, progname, "detail", &format!("Query was: {sql}"));
            }
            InitError::CopyEnd { message } => {
                // libpq hands the server's error to its default notice
                // processor, which prints it raw, newline-terminated.
                out.push_str(message.trim_end_matches('\n'));
                out.push('\n');
                log_line(&mut out, progname, "error", &self.to_string());
            }
            InitError::CopyStart { .. }
            | InitError::CopySend { .. }
            | InitError::UnknownStep(_) => {
                log_line(&mut out, progname, "error", &self.to_string());
            }
        }
        out
    }
}

/// One line of PostgreSQL's frontend logging: `prog: level: message\n`, with
/// one trailing newline of the message dropped (libpq texts end in one).
fn log_line(out: &mut String, progname: &str, level: &str, message: &str) {
    let message = message.strip_suffix('\n').unwrap_or(message);
    let _ = writeln!(out, "{progname}: {level}: {message}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_failed_renders_error_and_detail() {
        let e = InitError::QueryFailed {
            message: "ERROR:  tablespace \"nope\" does not exist\n".into(),
            sql: "create table pgbench_history(tid int) tablespace \"nope\"".into(),
        };
        assert_eq!(
            e.render(),
            "pgbench: error: query failed: ERROR:  tablespace \"nope\" does not exist\n\
             pgbench: detail: Query was: create table pgbench_history(tid int) tablespace \"nope\"\n"
        );
        assert_eq!(e.exit_code(), 1);
    }

    #[test]
    fn multi_line_server_message_keeps_inner_newlines() {
        let e = InitError::QueryFailed {
            message: "ERROR:  syntax error\nLINE 1: x\n        ^\n".into(),
            sql: "x".into(),
        };
        assert_eq!(
            e.render(),
            "pgbench: error: query failed: ERROR:  syntax error\nLINE 1: x\n        ^\n\
             pgbench: detail: Query was: x\n"
        );
    }

    #[test]
    fn copy_end_prints_server_text_raw_first() {
        let e = InitError::CopyEnd {
            message: "ERROR:  boom\n".into(),
        };
        assert_eq!(
            e.render(),
            "ERROR:  boom\npgbench: error: PQendcopy failed\n"
        );
    }

    #[test]
    fn connect_failure_has_two_lines() {
        let e = InitError::Connect {
            message: "connection to server on socket \"/tmp/.s.PGSQL.1\" failed: No such file or directory\n".into(),
        };
        let text = e.render_as("pgbench");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[1],
            "pgbench: error: could not create connection for initialization"
        );
        assert!(lines[0].starts_with("pgbench: error: connection to server"));
    }

    #[test]
    fn unknown_step_message() {
        assert_eq!(
            InitError::UnknownStep('x').render(),
            "pgbench: error: unrecognized initialization step \"x\"\n"
        );
    }
}
