//! Owns [`ScriptError`]: every way pgbench rejects a script while loading it, rendered
//! exactly as pgbench prints it on stderr (exit status 1).

/// A script rejected at load time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptError {
    /// A syntax error in a meta command (pgbench's `syntax_error`).
    #[error("{source_name}:{line}: {message}")]
    Syntax {
        /// Script name (file name as given, or the builtin's description).
        source_name: String,
        /// 1-based line of the backslash.
        line: usize,
        /// Message including ` (more)` and ` in command "cmd"` parts.
        message: String,
        /// The command's source text, printed raw after the error line when known.
        context: Option<String>,
        /// 0-based column of the caret within `context`.
        column: Option<usize>,
    },
    /// The script has no command at all.
    #[error("empty command list for script \"{0}\"")]
    Empty(String),
    /// A static `\if` structure error; `command` is 1-based.
    #[error("condition error in script \"{source_name}\" command {command}: {message}")]
    Condition {
        /// Script name.
        source_name: String,
        /// 1-based command number (number of commands + 1 for a missing `\endif`).
        command: usize,
        /// e.g. `\if without matching \endif`.
        message: String,
    },
}

impl ScriptError {
    /// The file/line/column this error refers to, when it has one.
    pub fn location(&self) -> Option<(&str, usize, Option<usize>)> {
        match self {
            ScriptError::Syntax {
                source_name,
                line,
                column,
                ..
            } => Some((source_name, *line, *column)),
            _ => None,
        }
    }

    /// Every stderr line pgbench prints for this error, without newlines: the first is
    /// `pgbench: error: …`, then (for syntax errors) the command text and the caret line.
    pub fn stderr_lines(&self) -> Vec<String> {
        let mut out = vec![format!("pgbench: error: {self}")];
        if let ScriptError::Syntax {
            context: Some(ctx),
            column,
            ..
        } = self
        {
            // the context may span continuation lines; pgbench prints it as is
            out.extend(ctx.split('\n').map(str::to_string));
            if let Some(c) = column {
                out.push(format!("{}^ error found here", " ".repeat(*c)));
            }
        }
        out
    }

    /// [`ScriptError::stderr_lines`] joined, each line ending with `\n`.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for l in self.stderr_lines() {
            s.push_str(&l);
            s.push('\n');
        }
        s
    }
}
