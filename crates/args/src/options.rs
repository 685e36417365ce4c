//! The validated result of parsing a pgbench command line: plain data, turned into the
//! engine's [`RunSpec`] ([`BenchOptions::into_run_spec`]) or the `-i` options. Owns no
//! parsing logic; see `parser.rs` for how each field is set.

use std::path::PathBuf;

use pgsurge_engine::{
    DatabaseInfo, ErrorSpec, OutputSpec, ProgressSpec, RunLimit as EngineLimit, RunScript, RunSpec,
    TxnLogSpec,
};
use pgsurge_wire::ConnConfig;

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
    /// `--hdr-log-unit=us|ns`: the unit of the HDR log's values (default µs).
    pub hdr_log_unit: pgsurge_results::HdrLogUnit,
    /// `--store[=LOCATION]`: store the run in a results store; `Some(None)` is the
    /// default store (`$PGSURGE_STORE` or `./pgsurge-results.db`).
    pub store: Option<Option<String>>,
    /// `--set=NAME`: the store's set that receives the run (default `adhoc`).
    pub set: Option<String>,
    /// `--group=NAME`: the run is one generator of the distributed run NAME; the
    /// store's group set of that name receives it, keyed by the generator's index.
    pub group: Option<String>,
    /// `--start-at`, `--generator-*`: this process as one generator of a distributed run.
    pub generator: crate::generator::GeneratorOptions,
    /// `--cpus=LIST`: the CPUs the client threads run on.
    pub cpus: Option<pgsurge_affinity::CpuList>,
    /// `--generator-split`: `-c`, `-R` and a numeric seed are the distributed run's
    /// totals; this generator runs its share of them (see `generator.rs`). Already
    /// applied to the clients, rate and seed of [`BenchOptions`].
    pub generator_split: bool,
    /// `--workload=NAME|DIR`: a workload pack, as given.
    pub workload: Option<String>,
    /// `--mix=random|deck`: how each transaction's script is drawn; `None`: the
    /// workload pack's `mix`, else `random` (pgbench's draw).
    pub mix: Option<pgsurge_engine::Mix>,
    /// `--costs`: measure the run's per-transaction costs (server and client CPU,
    /// context switches, WAL, buffers, temporary bytes), report them and put them in
    /// `--json` (`txn_costs`).
    pub costs: bool,
    /// `--reconnect`: a client whose connection is lost (or whose server refuses writes
    /// or cancels its statement) counts its transaction as failed by class, connects
    /// again and goes on; the report gives the stretch without a commit around the
    /// first lost connection.
    pub reconnect: bool,
    /// `--check-commits=TABLE`: after a `--reconnect` run, the transactions each client
    /// was told were committed are looked for in TABLE (columns `client_id`, `txn_seq`,
    /// written by the script) on the server the connection reaches; those missing are
    /// counted as acknowledged commits lost.
    pub check_commits: Option<String>,
    /// `--replica-file=FILE[@W]`: the scripts (by index among all scripts) whose
    /// transactions each client runs on its second connection, to a standby.
    pub replica_scripts: Vec<usize>,
    /// `--profile[=HZ]`: profile the server's processes and the client on the CPU over
    /// the run, at HZ samples per second per running thread.
    pub profile_hz: Option<u32>,
    /// `--live[=ADDR]`: the address of the run's live page (`127.0.0.1:8642` when
    /// the option is given without one).
    pub live: Option<String>,
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
    /// `--workload`: the pack, read and checked.
    pub workload: Option<pgsurge_workload::Pack>,
    /// What the pack gives the run (its scripts, the run's variables, mix and
    /// pauses), joined to it in [`BenchOptions::into_run_spec`].
    pub pack_run: Option<pgsurge_workload::run::PackRun>,
}

/// `-i --workload`: what the pack's loader needs besides the connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadInit {
    /// `--workload`'s value.
    pub pack: String,
    /// `-s`: units of the pack's scale.
    pub scale: u32,
    /// The random seed the data derives from (`--random-seed`, else pgbench's default).
    pub seed: u64,
    /// `-D NAME=VALUE`: the pack's parameters as the loader sees them.
    pub variables: Vec<(String, String)>,
}

/// `--partition-method` (the init crate's type: one for the suite).
pub use pgsurge_init::PartitionMethod;

/// Everything `pgbench -i` needs from the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct InitOptions {
    /// Connection parameters.
    pub connection: Connection,
    /// What to initialize, in the init crate's type. Its `steps` are already adjusted
    /// as pgbench does (`-n` turns every `v` into a space, `--foreign-keys` appends `f`
    /// if absent); its `partition_method` is `Range` when `--partitions` > 0 and no
    /// method was given.
    pub spec: pgsurge_init::InitSpec,
    /// Number of `--debug` occurrences.
    pub debug_level: u32,
    /// `--init-jobs` (pgsurge extension): connections that load, vacuum and
    /// index `pgbench_accounts`; 1 (the default) runs pgbench's serial steps.
    pub init_jobs: u32,
    /// `--workload` (pgsurge extension): load this pack instead of pgbench's tables.
    pub workload: Option<WorkloadInit>,
}

impl BenchOptions {
    /// The run these options describe, for the engine: the command line's values in the
    /// engine's types (the parsed scripts move over, nothing is parsed again). `conn`
    /// is the resolved connection (the password, once prompted for, included);
    /// `database` is what setup found (see `pgsurge_engine::layout::detect`). A
    /// `--workload` pack is applied to the run as campaigns apply it
    /// ([`pgsurge_workload::run::PackRun`]).
    pub fn into_run_spec(self, conn: ConnConfig, database: DatabaseInfo) -> RunSpec {
        let scripts = self
            .scripts
            .into_iter()
            .map(|entry| RunScript {
                desc: entry.desc,
                weight: entry.weight,
                text: entry.text,
                script: entry.script,
            })
            .collect();
        let txn_log = self.log.then(|| TxnLogSpec {
            prefix: self.log_prefix,
            sampling_rate: (self.sampling_rate > 0.0).then_some(self.sampling_rate),
            aggregate_interval_s: (self.aggregate_interval > 0).then_some(self.aggregate_interval),
        });
        let progress = (self.progress_secs > 0).then_some(ProgressSpec {
            interval_s: self.progress_secs,
            timestamp: self.progress_timestamp,
        });
        let mut spec = RunSpec::new(conn, scripts);
        spec.clients = self.clients;
        spec.threads = self.threads;
        spec.limit = match self.limit {
            RunLimit::Transactions(n) => EngineLimit::Transactions(n),
            RunLimit::Duration(s) => EngineLimit::Duration(s),
        };
        spec.query_mode = self.query_mode;
        spec.rate_tps = self.rate;
        spec.latency_limit_us = (self.latency_limit_us > 0).then_some(self.latency_limit_us);
        spec.max_tries = self.max_tries;
        spec.connect_per_transaction = self.connect_per_transaction;
        spec.variables = self.variables;
        spec.random_seed = self.random_seed.value;
        spec.errors = ErrorSpec {
            failures_detailed: self.failures_detailed,
            verbose_errors: self.verbose_errors,
            exit_on_abort: self.exit_on_abort,
            debug: self.debug_level > 0,
            reconnect: self.extensions.reconnect,
        };
        spec.output = OutputSpec {
            progress,
            txn_log,
            per_command: self.report_per_command,
            percentiles: self.extensions.percentiles,
            json: self.extensions.json,
            hdr_log: self.extensions.hdr_log,
            hdr_log_unit: self.extensions.hdr_log_unit,
        };
        spec.database = database;
        spec.generator = self.extensions.generator;
        spec.mix = self.extensions.mix.unwrap_or_default();
        spec.replica_scripts = self.extensions.replica_scripts;
        if let Some(pack_run) = self.pack_run {
            pack_run.apply_to(&mut spec);
        }
        spec
    }
}
