//! The run-time form of the scripts and settings the client state machine executes:
//! SQL pre-scanned for the query mode (templates for simple mode, `$n` text and parameter
//! names for extended/prepared, `P_<k>` names), meta commands reduced to the tags the
//! machine dispatches on, and the per-run switches that change its behaviour.
//!
//! Built once before the run ([`build_plan`]) from the [`RunSpec`]'s parsed scripts; shared read-only by
//! every thread. Holds nothing mutable.

use pgsurge_script::{Command, SqlMeta};
use pgsurge_wire::codec::append;

use crate::spec::{Mix, RunLimit, RunSpec};
use crate::sqltext::{to_param_sql, ParamSql, SqlTemplate};
use crate::EngineError;

/// pgbench's `-M` (one type for the whole suite; defined by the script crate, which
/// rewrites SQL for it).
pub use pgsurge_script::QueryMode;

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
    /// The Bind message up to its first parameter (statement name, parameter count),
    /// encoded once; empty in simple mode.
    pub bind_head: Box<[u8]>,
}

impl SqlPlan {
    /// The plan of a command; `stmt_name` only in prepared mode.
    pub fn new(form: SqlForm, stmt_name: Option<Box<str>>, capture: Option<Capture>) -> Self {
        let bind_head = match &form {
            SqlForm::Simple(_) => Box::default(),
            SqlForm::Params(p) => append::bind_head(
                stmt_name.as_deref().unwrap_or("").as_bytes(),
                p.params.len() as u16,
            ),
        };
        SqlPlan {
            form,
            stmt_name,
            capture,
            bind_head,
        }
    }
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
        /// What `--debug` prints after `client N executing `: the backslash and
        /// pgbench's argv words (`\set a`, `\sleep 1 ms`).
        trace: Box<str>,
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
    /// Keying time before each of its transactions, in µs (0: none).
    pub keying_us: i64,
    /// Mean think time after each of its transactions, in µs (0: none).
    pub think_mean_us: i64,
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
    /// `--reconnect`: a lost connection is opened again and the run goes on.
    pub reconnect: bool,
    /// `--debug` trace lines.
    pub debug: bool,
    /// How scripts are drawn (`--mix`).
    pub mix: Mix,
    /// Bit `i`: script `i`'s transactions run on the client's standby connection
    /// (`--replica-file`); 0: a client has one connection.
    pub replica_scripts: u128,
}

impl MachineConfig {
    /// Script `script`'s transactions run on a standby.
    #[inline]
    pub fn on_replica(&self, script: usize) -> bool {
        script < 128 && self.replica_scripts >> script & 1 != 0
    }
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
            reconnect: false,
            debug: false,
            mix: Mix::Random,
            replica_scripts: 0,
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
    /// Whether a client needs its own pacing state ([`crate::client::Pacing`]): a card
    /// deck, or think times to draw.
    pub fn paced(&self) -> bool {
        self.config.mix == Mix::Deck
            || self
                .scripts
                .iter()
                .any(|s| s.keying_us > 0 || s.think_mean_us > 0)
    }
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

/// Builds the machine's plan from the spec: SQL pre-scanned for the query mode, `P_<k>`
/// names numbered across scripts in order, meta commands reduced to tags.
pub fn build_plan(spec: &RunSpec) -> Result<Plan, EngineError> {
    let mode = spec.query_mode;
    let mut prepared_count = 0usize;
    let mut scripts = Vec::with_capacity(spec.scripts.len());
    for (i, entry) in spec.scripts.iter().enumerate() {
        let pauses = spec.pauses.get(i).copied().unwrap_or_default();
        let mut commands = Vec::with_capacity(entry.script.commands.len());
        for command in &entry.script.commands {
            commands.push(CommandPlan {
                first_line: command.first_line().to_string(),
                kind: command_kind(command, mode, &mut prepared_count)?,
            });
        }
        scripts.push(ScriptPlan {
            desc: entry.desc.clone(),
            weight: i64::from(entry.weight),
            commands,
            keying_us: pauses.keying_us,
            think_mean_us: pauses.think_mean_us,
        });
    }
    let (nxacts, timed) = match spec.limit {
        RunLimit::Transactions(n) => (i64::from(n), false),
        RunLimit::Duration(_) => (0, true),
    };
    let config = MachineConfig {
        mode,
        nxacts,
        timed,
        latency_limit_us: spec.latency_limit_us.unwrap_or(0),
        throttle: spec.rate_tps.is_some(),
        max_tries: spec.max_tries,
        per_command: spec.output.per_command,
        verbose_errors: spec.errors.verbose_errors,
        connect_per_txn: spec.connect_per_transaction,
        reconnect: spec.errors.reconnect,
        debug: spec.errors.debug,
        mix: spec.mix,
        replica_scripts: spec
            .replica_scripts
            .iter()
            .filter(|&&i| i < 128)
            .fold(0, |bits, &i| bits | 1u128 << i),
    };
    Ok(Plan::new(scripts, config))
}

/// One command's plan; `prepared_count` numbers the prepared statements.
fn command_kind(
    command: &Command,
    mode: QueryMode,
    prepared_count: &mut usize,
) -> Result<CommandKind, EngineError> {
    let meta = match command {
        Command::Sql(sql) => {
            let form = match mode {
                QueryMode::Simple => SqlForm::Simple(SqlTemplate::new(&sql.source)),
                _ => SqlForm::Params(to_param_sql(&sql.source).map_err(|_| {
                    EngineError::Script(format!(
                        "statement has too many arguments (maximum is 255): {}",
                        sql.source
                    ))
                })?),
            };
            let stmt_name = (mode == QueryMode::Prepared).then(|| {
                let name = format!("P_{prepared_count}").into_boxed_str();
                *prepared_count += 1;
                name
            });
            let capture = match &sql.meta {
                SqlMeta::None => None,
                SqlMeta::Gset { prefix } => Some(Capture {
                    prefix: prefix.clone(),
                    all: false,
                }),
                SqlMeta::Aset { prefix } => Some(Capture {
                    prefix: prefix.clone(),
                    all: true,
                }),
            };
            return Ok(CommandKind::Sql(SqlPlan::new(form, stmt_name, capture)));
        }
        Command::Meta(meta) => meta,
    };
    use pgsurge_script::MetaKind as K;
    let tag = match &meta.kind {
        K::Set { .. } => MetaTag::Set,
        K::SetShell { .. } => MetaTag::SetShell,
        K::Shell { .. } => MetaTag::Shell,
        K::Sleep(_) => MetaTag::Sleep,
        K::If(_) => MetaTag::If,
        K::Elif(_) => MetaTag::Elif,
        K::Else => MetaTag::Else,
        K::EndIf => MetaTag::Endif,
        K::StartPipeline => MetaTag::StartPipeline,
        K::SyncPipeline => MetaTag::SyncPipeline,
        K::EndPipeline => MetaTag::EndPipeline,
    };
    Ok(CommandKind::Meta {
        tag,
        name: meta
            .argv
            .first()
            .cloned()
            .unwrap_or_default()
            .into_boxed_str(),
        trace: format!("\\{}", meta.argv.join(" ")).into_boxed_str(),
    })
}
