//! The validated result of parsing a pgbench command line: plain data the engine and
//! the `-i` code consume. Owns no parsing logic; see `parser.rs` for how each field is set.

use std::path::PathBuf;

use crate::seed::RandomSeed;

/// The script type stored in [`ScriptEntry`]: the parsed pgbench script.
pub use crate::scripts::Script;

/// Connection parameters as pgbench passes them to libpq (`PQconnectdbParams` with
/// `expand_dbname`). Unset fields are `None`: libpq defaults and `PG*` variables apply.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Connection {
    /// `-h/--host`, verbatim (may be a comma-separated list or a socket directory).
    pub host: Option<String>,
    /// `-p/--port`, verbatim (pgbench does not validate it).
    pub port: Option<String>,
    /// `-U/--username`.
    pub user: Option<String>,
    /// The database name, always set, resolved as pgbench does: `-d/--dbname`, else the
    /// positional argument, else `$PGDATABASE` (non-empty), else `$PGUSER` (non-empty),
    /// else the effective OS user name. May be a `key=value` conninfo string or a
    /// `postgresql://` URI (pgbench passes it with `expand_dbname=true`).
    pub dbname: String,
}

/// `-M/--protocol` (the script crate's type: it rewrites SQL for the mode).
pub use pgsurge_script::QueryMode;

/// Where a script came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptOrigin {
    /// `-b NAME`, `-N`, `-S`, or the default `tpcb-like`: the full builtin name.
    Builtin(&'static str),
    /// `-f FILE`.
    File(PathBuf),
    /// `-f -`.
    Stdin,
}

/// One script to run, in command-line order.
#[derive(Debug, Clone)]
pub struct ScriptEntry {
    /// pgbench's description: `<builtin: TPC-B (sort of)>` or the file name as given
    /// (without the `@W` suffix). Printed as `transaction type:` / `SQL script N:`.
    pub desc: String,
    /// Relative weight (0..=i32::MAX). Zero means the script is never chosen.
    pub weight: u32,
    /// The script text as read (files decoded lossily as UTF-8).
    pub text: String,
    /// Where it came from.
    pub origin: ScriptOrigin,
    /// The parsed script (already post-processed for the query mode when the script
    /// crate offers that).
    pub script: Script,
}

/// How long the benchmark runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunLimit {
    /// `-t N` (default 10): transactions per client.
    Transactions(u32),
    /// `-T N`: seconds.
    Duration(u32),
}

/// pgsurge's own opt-in options. All off by default; without them, pgsurge's output
/// is pgbench's.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Extensions {
    /// `--percentiles[=LIST]`: latency percentiles to report (e.g. `[50.0, 90.0, 99.0,
    /// 99.9]`, the default list when the option is given without a value). `None`: off.
    pub percentiles: Option<Vec<f64>>,
    /// `--json=FILE`: write the JSON result document to FILE (`-` = stdout).
    pub json: Option<PathBuf>,
    /// `--hdr-log=FILE`: write an HdrHistogram interval log to FILE.
    pub hdr_log: Option<PathBuf>,
    /// `--start-at`, `--generator-*`: this process as one generator of a distributed run.
    pub generator: crate::generator::GeneratorOptions,
}

/// Default list of `--percentiles` without a value.
pub const DEFAULT_PERCENTILES: [f64; 4] = [50.0, 90.0, 99.0, 99.9];

/// Everything a benchmark run needs from the command line (pgbench without `-i`).
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Connection parameters.
    pub connection: Connection,
    /// Scripts in command-line order (never empty: `tpcb-like` when none was given).
    pub scripts: Vec<ScriptEntry>,
    /// True when any script is a builtin (`-b`, `-N`, `-S` or the default): pgbench
    /// then takes the scale from the database and warns if `-s` was given.
    pub internal_script_used: bool,
    /// `-M`.
    pub query_mode: QueryMode,
    /// `-c` (default 1).
    pub clients: u32,
    /// `-j` (default 1), already clamped to `clients`.
    pub threads: u32,
    /// `-t` / `-T` (default `Transactions(10)`).
    pub limit: RunLimit,
    /// `-C`: a new connection per transaction.
    pub connect_per_transaction: bool,
    /// `-n`: no vacuum/truncate before the run.
    pub no_vacuum: bool,
    /// `-v`: also vacuum pgbench_accounts before the run.
    pub vacuum_all: bool,
    /// `-s` as given (default 1).
    pub scale: u32,
    /// Whether `-s` was given.
    pub scale_given: bool,
    /// `-l`.
    pub log: bool,
    /// `--log-prefix` (only allowed with `-l`); `None` means `pgbench_log`.
    pub log_prefix: Option<String>,
    /// `--sampling-rate` in (0, 1]; 0 when not given.
    pub sampling_rate: f64,
    /// `--aggregate-interval` in seconds; 0 when not given.
    pub aggregate_interval: u32,
    /// `-R` in transactions per second as given; `None` when not throttled.
    pub rate: Option<f64>,
    /// pgbench's `throttle_delay`: mean µs between transactions *per thread*
    /// (`1e6 / rate * threads`); 0 when not throttled.
    pub throttle_delay_us: f64,
    /// `-L` converted as pgbench does (`(int64)(ms * 1000)` µs); 0 when not given.
    pub latency_limit_us: i64,
    /// `-P` seconds; 0 when off.
    pub progress_secs: u32,
    /// `--progress-timestamp`.
    pub progress_timestamp: bool,
    /// `-r`.
    pub report_per_command: bool,
    /// `--max-tries` (default 1); 0 means unlimited (allowed only with `-L` or `-T`).
    pub max_tries: u32,
    /// `--failures-detailed`.
    pub failures_detailed: bool,
    /// `--verbose-errors`.
    pub verbose_errors: bool,
    /// `--exit-on-abort`.
    pub exit_on_abort: bool,
    /// The random seed in force after `PGBENCH_RANDOM_SEED` and `--random-seed`.
    pub random_seed: RandomSeed,
    /// `-D NAME=VALUE` in first-definition order; a repeated name overwrites the value.
    pub variables: Vec<(String, String)>,
    /// Number of `--debug` occurrences (each lowers the log level one step).
    pub debug_level: u32,
    /// pgsurge extensions.
    pub extensions: Extensions,
    /// Long names (without `--`) of the options given, short or long, in order of first
    /// appearance, e.g. `["client", "rate", "json"]`. Lets the engine refuse, by name,
    /// an option whose behaviour it does not implement yet instead of ignoring it.
    pub options_given: Vec<&'static str>,
}

/// `--partition-method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PartitionMethod {
    /// No partitioning (`--partitions` 0).
    #[default]
    None,
    /// `range` (default when `--partitions` > 0).
    Range,
    /// `hash`.
    Hash,
}

/// Everything `pgbench -i` needs from the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct InitOptions {
    /// Connection parameters.
    pub connection: Connection,
    /// Steps to run, in order, from `dtgGvpf` and spaces, after pgbench's adjustments:
    /// `-n` turns every `v` into a space, `--foreign-keys` appends `f` if absent.
    pub steps: String,
    /// `-s` (default 1).
    pub scale: u32,
    /// `-F` (10..=100, default 100).
    pub fillfactor: u32,
    /// `--partitions` (default 0).
    pub partitions: u32,
    /// `--partition-method`; `Range` by default when `partitions > 0`, `None` when 0.
    pub partition_method: PartitionMethod,
    /// `--tablespace`.
    pub tablespace: Option<String>,
    /// `--index-tablespace`.
    pub index_tablespace: Option<String>,
    /// `--unlogged-tables`.
    pub unlogged_tables: bool,
    /// `-q`.
    pub quiet: bool,
    /// Number of `--debug` occurrences.
    pub debug_level: u32,
}
