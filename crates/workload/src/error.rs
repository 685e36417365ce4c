//! [`WorkloadError`]: everything that can go wrong with a pack, each naming what it
//! concerns (the pack's file, the SQL step, the check).

/// A pack that cannot be found, read, loaded, run or checked.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// No built-in pack of that name and no such directory.
    #[error(
        "no workload \"{0}\": not a built-in pack ({1}) and not a directory with a workload.toml"
    )]
    NotFound(String, String),
    /// A file of a pack directory could not be read.
    #[error("{file}: {message}")]
    Read {
        /// The file.
        file: String,
        /// Why.
        message: String,
    },
    /// The manifest is malformed.
    #[error("{file}: {message}")]
    Manifest {
        /// The manifest file.
        file: String,
        /// Where (line, key) and why.
        message: String,
    },
    /// A script of the pack does not parse.
    #[error("{message}")]
    Script {
        /// The script file.
        file: String,
        /// pgbench's error text, naming the file and the line.
        message: String,
    },
    /// A connection could not be opened.
    #[error("{0}")]
    Connect(String),
    /// A statement failed on the server.
    #[error("{file}: {message}")]
    Sql {
        /// The SQL file, or what the statement was for.
        file: String,
        /// The server's message.
        message: String,
    },
    /// The scale query did not give a positive integer.
    #[error("cannot find the scale of workload \"{pack}\": {message}")]
    Scale {
        /// The pack.
        pack: String,
        /// Why.
        message: String,
    },
    /// The database holds no marker of a finished load of the pack's loader.
    #[error("workload {pack} is not loaded: {message}")]
    NotLoaded {
        /// The pack.
        pack: String,
        /// Why.
        message: String,
    },
    /// A run's parameter has a value the pack cannot use.
    #[error("workload {pack}: parameter {name}: {message}")]
    Parameter {
        /// The pack.
        pack: String,
        /// The parameter.
        name: String,
        /// Why.
        message: String,
    },
    /// The loading was interrupted.
    #[error("loading was canceled")]
    Canceled,
    /// A file could not be written (`workload new`).
    #[error("{path}: {message}")]
    Write {
        /// The path.
        path: String,
        /// Why.
        message: String,
    },
}

/// pgbench's lines for a script error (the file and line, the command, the caret),
/// without its `pgbench: error: ` prefix: the caller prints its own.
pub(crate) fn script_message(e: &pgsurge_script::ScriptError) -> String {
    let lines = e.stderr_lines();
    let mut text = lines.join("\n");
    if let Some(rest) = text.strip_prefix("pgbench: error: ") {
        text = rest.to_string();
    }
    text
}
