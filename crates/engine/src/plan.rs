//! The run-time form of the scripts and settings the client state machine executes:
//! SQL pre-scanned for the query mode (templates for simple mode, `$n` text and parameter
//! names for extended/prepared, `P_<k>` names), meta commands reduced to the tags the
//! machine dispatches on, and the per-run switches that change its behaviour.
//!
//! Built once before the run (by `runspec`) from the parsed scripts; shared read-only by
//! every thread. Holds nothing mutable.

use crate::sqltext::{ParamSql, SqlTemplate};

/// pgbench's `-M`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryMode {
    /// One Query message with variables substituted as text.
    Simple,
    /// Unnamed Parse/Bind/Describe/Execute/Sync with text parameters.
    Extended,
    /// Named statements `P_<k>` prepared once per connection, then Bind/Describe/Execute/Sync.
    Prepared,
}

impl QueryMode {
    /// The name printed in the report (`query mode: …`).
    pub fn name(self) -> &'static str {
        match self {
            QueryMode::Simple => "simple",
            QueryMode::Extended => "extended",
            QueryMode::Prepared => "prepared",
        }
    }
}

/// A meta command as far as the state machine is concerned; evaluation of expressions,
/// shell commands and sleep durations is done by the [`crate::client::ScriptHost`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaTag {
    /// `\set`
    Set,
    /// `\setshell`
    SetShell,
    /// `\shell`
    Shell,
    /// `\sleep`
    Sleep,
    /// `\if`
    If,
    /// `\elif`
    Elif,
    /// `\else`
    Else,
    /// `\endif`
    Endif,
    /// `\startpipeline`
    StartPipeline,
    /// `\syncpipeline`
    SyncPipeline,
    /// `\endpipeline`
    EndPipeline,
}

/// How the rows of a SQL command's results are stored into variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capture {
    /// Variable name prefix (may be empty).
    pub prefix: String,
    /// `\aset` (every result, empty ones skipped) rather than `\gset` (last result, one row).
    pub all: bool,
}

/// The SQL text in the form the query mode sends.
#[derive(Debug, Clone)]
pub enum SqlForm {
    /// Simple protocol: text with `:var` substituted.
    Simple(SqlTemplate),
    /// Extended/prepared protocol: `$n` text and parameter names.
    Params(ParamSql),
}

/// A SQL command ready to send.
#[derive(Debug, Clone)]
pub struct SqlPlan {
    /// Text in the mode's form.
    pub form: SqlForm,
    /// Prepared statement name (`P_<k>`), prepared mode only.
    pub stmt_name: Option<Box<str>>,
    /// `\gset`/`\aset` attached to the command.
    pub capture: Option<Capture>,
}

/// What a command is.
#[derive(Debug, Clone)]
pub enum CommandKind {
    /// SQL sent to the server.
    Sql(SqlPlan),
    /// A meta command; `name` is argv\[0\] as typed (used in abort messages).
    Meta {
        /// Tag the machine dispatches on.
        tag: MetaTag,
        /// The command name as written (`set`, `SET`, …).
        name: Box<str>,
    },
}

/// One command of a script.
#[derive(Debug, Clone)]
pub struct CommandPlan {
    /// The first line as `-r` prints it.
    pub first_line: String,
    /// SQL or meta.
    pub kind: CommandKind,
}

/// One script with its weight.
#[derive(Debug, Clone)]
pub struct ScriptPlan {
    /// Description (`<builtin: TPC-B (sort of)>` or the file name).
    pub desc: String,
    /// `@weight`.
    pub weight: i64,
    /// Commands in order.
    pub commands: Vec<CommandPlan>,
}

/// Switches that change how clients run.
#[derive(Debug, Clone)]
pub struct MachineConfig {
    /// `-M`.
    pub mode: QueryMode,
    /// `-t` per client; 0 with `-T`.
    pub nxacts: i64,
    /// `-T` given.
    pub timed: bool,
    /// `-L` in µs, 0 = none.
    pub latency_limit_us: i64,
    /// `-R` given.
    pub throttle: bool,
    /// `--max-tries` (0 = unlimited).
    pub max_tries: u32,
    /// `-r`.
    pub per_command: bool,
    /// `--verbose-errors`.
    pub verbose_errors: bool,
    /// `-C`.
    pub connect_per_txn: bool,
    /// `--debug` trace lines.
    pub debug: bool,
}

impl Default for MachineConfig {
    fn default() -> Self {
        MachineConfig {
            mode: QueryMode::Simple,
            nxacts: 10,
            timed: false,
            latency_limit_us: 0,
            throttle: false,
            max_tries: 1,
            per_command: false,
            verbose_errors: false,
            connect_per_txn: false,
            debug: false,
        }
    }
}

/// Everything the clients of a run share.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Scripts in `-b`/`-f` order.
    pub scripts: Vec<ScriptPlan>,
    /// Sum of weights.
    pub total_weight: i64,
    /// Switches.
    pub config: MachineConfig,
}

impl Plan {
    /// Bundles scripts and settings, computing the total weight.
    pub fn new(scripts: Vec<ScriptPlan>, config: MachineConfig) -> Self {
        let total_weight = scripts.iter().map(|s| s.weight).sum();
        Plan {
            scripts,
            total_weight,
            config,
        }
    }
}
