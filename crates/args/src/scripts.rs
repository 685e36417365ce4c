//! Bridge to the script crate: builtin scripts (`-b`, `-N`, `-S`, `--show-script`,
//! `-b list`), parsing script text with `pgsurge_script::parse_script`, and the
//! query-mode rewrite. The script crate owns the builtin texts and the language; this
//! module only decides when they are called, in pgbench's order.

use pgsurge_script::ScriptError;
pub use pgsurge_script::{Builtin, Script};

/// The `-b list` text (also printed after a lookup error), ending with an empty line.
pub fn list_text() -> String {
    pgsurge_script::builtin_list_text()
}

/// The `--show-script` text.
pub fn show_text(b: &Builtin) -> String {
    pgsurge_script::show_script_text(b)
}

/// pgbench's `findBuiltin`: `name` may be any prefix matching exactly one script.
/// On failure, returns the `error:` message (the list follows it on stderr).
pub fn find_builtin(name: &[u8]) -> Result<&'static Builtin, String> {
    pgsurge_script::find_builtin(&String::from_utf8_lossy(name)).map_err(|e| e.to_string())
}

/// A script pgbench would reject while loading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError {
    /// The `error:` line's message.
    pub message: String,
    /// Lines printed raw after it (the command and the caret line of a syntax error).
    pub context: Vec<String>,
    /// True for `\if` structure errors, which pgbench checks after the limit on the
    /// number of scripts (syntax errors and empty scripts come before it).
    pub conditional: bool,
}

/// Parses a script (`desc` is the builtin description or the file name as given).
pub fn compile(desc: &str, text: &str) -> Result<Script, CompileError> {
    pgsurge_script::parse_script(desc, text).map_err(|e| CompileError {
        message: pgsurge_script::script_display(&e.to_string()).into_owned(),
        context: e
            .stderr_lines()
            .into_iter()
            .skip(1)
            .map(|l| pgsurge_script::script_display(&l).into_owned())
            .collect(),
        conditional: matches!(e, ScriptError::Condition { .. }),
    })
}

/// Rewrites every SQL command for the query mode (pgbench's `postprocess_sql_command`),
/// which can fail with `statement has too many arguments (maximum is 255): …`.
/// Returns the `error:` message on failure.
pub fn prepare(script: &mut Script, mode: crate::QueryMode) -> Result<(), String> {
    script.prepare(mode).map_err(|e| e.to_string())
}
