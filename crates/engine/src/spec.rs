//! [`RunSpec`]: the typed, validated description of one benchmark run — what every
//! caller (the pgbench command line, campaigns, quickstart, tests) hands to
//! [`crate::run`]. Values are kept in the units the engine uses (latency limit in µs,
//! rate in transactions per second, duration in seconds); scripts are parsed once, when
//! the [`RunScript`] is built.
//!
//! Two ways in, and no third: `pgsurge-args` converts a parsed pgbench command line
//! (`BenchOptions::into_run_spec`), every other caller starts from [`RunSpec::new`]
//! (pgbench's defaults) and sets fields. [`RunSpec::validate`] applies pgbench's
//! consistency rules to the result; [`crate::run`] calls it before starting anything,
//! so a spec built in code cannot ask for what the command line would refuse.
//!
//! What the database looks like (scale, partitioning, server version) is found out by
//! [`crate::layout::detect`], the same way for every caller, and stored in
//! [`RunSpec::database`].

use std::path::PathBuf;

use pgsurge_init::PartitionMethod;
use pgsurge_script::Script;
use pgsurge_wire::ConnConfig;

pub use pgsurge_script::QueryMode;

/// One script of the run with its weight, parsed once.
#[derive(Debug, Clone)]
pub struct RunScript {
    /// pgbench's description: `<builtin: TPC-B (sort of)>` or the file name as given
    /// (printed as `transaction type:` / `SQL script N:`).
    pub desc: String,
    /// Relative weight (`@W`); 0 means never chosen. The weights of a run must not sum
    /// to 0.
    pub weight: u32,
    /// The script text, kept for the result document and the store.
    pub text: String,
    /// The parsed script; [`RunScript::parse`] and [`RunScript::builtin`] keep it in
    /// step with `text`.
    pub script: Script,
}

impl RunScript {
    /// Parses `text` as a script named `desc` (a file name, usually).
    pub fn parse(desc: &str, text: &str, weight: u32) -> Result<RunScript, SpecError> {
        let script = pgsurge_script::parse_script(desc, text)
            .map_err(|e| SpecError(format!("script \"{desc}\": {e}")))?;
        Ok(RunScript {
            desc: desc.to_string(),
            weight,
            text: text.to_string(),
            script,
        })
    }

    /// A built-in script (`tpcb-like`, `simple-update`, `select-only`, or a prefix of
    /// exactly one of them, as `-b` accepts).
    pub fn builtin(name: &str, weight: u32) -> Result<RunScript, SpecError> {
        let builtin = pgsurge_script::find_builtin(name).map_err(|e| SpecError(e.to_string()))?;
        RunScript::parse(builtin.desc, builtin.script, weight)
    }
}

/// How each transaction's script is drawn from the run's scripts (`--mix`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mix {
    /// pgbench's weighted random draw per transaction.
    #[default]
    Random,
    /// A card deck per client: `weight` cards per script, shuffled, dealt one per
    /// transaction and reshuffled when empty, so every deck's worth of a client's
    /// transactions holds the weights exactly (TPC-C's deck, clause 5.2.4.2).
    Deck,
}

/// The most cards a deck may hold (the total weight of a `--mix=deck` run).
pub const MAX_DECK_CARDS: u64 = 10_000;

impl Mix {
    /// `random` or `deck`.
    pub fn parse(s: &str) -> Option<Mix> {
        match s {
            "random" => Some(Mix::Random),
            "deck" => Some(Mix::Deck),
            _ => None,
        }
    }

    /// Its name, as `--mix` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Mix::Random => "random",
            Mix::Deck => "deck",
        }
    }
}

/// A script's pauses around each of its transactions, in µs: the keying time before
/// it and the mean of the think time after it (negative exponential, truncated at 10
/// times the mean), as TPC-C's terminals pause (clause 5.2.5). Neither counts in the
/// transaction's latency.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pauses {
    /// Keying time before the transaction.
    pub keying_us: i64,
    /// Mean think time after the transaction.
    pub think_mean_us: i64,
}

/// How long the run lasts (`-t` / `-T`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunLimit {
    /// Transactions per client (`-t`, pgbench's default is 10).
    Transactions(u32),
    /// Seconds of running (`-T`).
    Duration(u32),
}

/// The per-transaction log (`-l`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TxnLogSpec {
    /// File name prefix (`--log-prefix`); `None` writes `pgbench_log.<pid>[.<thread>]`.
    pub prefix: Option<String>,
    /// Fraction of transactions logged (`--sampling-rate`), in (0, 1]; `None` logs all.
    pub sampling_rate: Option<f64>,
    /// Aggregate lines every N seconds (`--aggregate-interval`) instead of one line per
    /// transaction. Excludes `sampling_rate`.
    pub aggregate_interval_s: Option<u32>,
}

/// Progress reporting (`-P`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgressSpec {
    /// Seconds between progress lines on stderr, at least 1.
    pub interval_s: u32,
    /// `--progress-timestamp`: Unix time with ms instead of the elapsed seconds.
    pub timestamp: bool,
}

/// What the run writes or reports besides pgbench's summary: pgbench's logs and
/// progress lines, and pgsurge's opt-in measurements. All off by default.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OutputSpec {
    /// `-P`.
    pub progress: Option<ProgressSpec>,
    /// `-l` with its options.
    pub txn_log: Option<TxnLogSpec>,
    /// `-r`: per-command latencies (and failures) in the report.
    pub per_command: bool,
    /// `--percentiles`: latency percentiles to report, each in (0, 100]. Also makes the
    /// run keep latency histograms.
    pub percentiles: Option<Vec<f64>>,
    /// `--json=FILE` (`-` = stdout), written by the caller from the [`crate::RunResult`];
    /// the run collects the per-interval series it needs when this is set.
    pub json: Option<PathBuf>,
    /// `--hdr-log=FILE`: an HdrHistogram interval log written during the run.
    pub hdr_log: Option<PathBuf>,
    /// `--hdr-log-unit`: the unit of the log's values (µs unless ns was asked for).
    pub hdr_log_unit: pgsurge_results::HdrLogUnit,
}

/// How client errors are handled and told (`--max-tries` lives in [`RunSpec`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ErrorSpec {
    /// `--failures-detailed`: serialization and deadlock failures counted apart.
    pub failures_detailed: bool,
    /// `--verbose-errors`: a line for every failed try.
    pub verbose_errors: bool,
    /// `--exit-on-abort`: the first aborted client ends the whole run with
    /// [`crate::EngineError::ExitOnAbort`] (and no result).
    pub exit_on_abort: bool,
    /// `--debug`: trace lines for every message sent and received.
    pub debug: bool,
    /// `--reconnect` (pgsurge's own): a client whose connection is lost counts the
    /// transaction under way as failed (connection lost, read-only, cancelled), opens
    /// a new connection (through a multi-host conninfo, to whichever server accepts
    /// it) and goes on.
    pub reconnect: bool,
}

/// What the database under test looks like, found out before the run by
/// [`crate::layout::detect`] (or known to the caller); printed in the report and stored.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DatabaseInfo {
    /// `:scale` and the report's scaling factor.
    pub scale: i64,
    /// Partitioning of `pgbench_accounts` (`None` when it is not partitioned).
    pub partition_method: PartitionMethod,
    /// Number of partitions of `pgbench_accounts` (0 when not partitioned).
    pub partitions: u32,
    /// The server's `server_version` parameter, when known.
    pub server_version: Option<String>,
}

/// This process as one load generator of a distributed run (`--start-at`,
/// `--generator-*`). All unset by default: the run is then pgbench's.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GeneratorOptions {
    /// `--start-at=TIME`: the wall-clock instant (Unix epoch µs) at which every client
    /// starts, after all connections are open. `None`: start as soon as connected.
    pub start_at_unix_us: Option<i64>,
    /// `--generator-name=NAME` (default: the host name, filled in by the engine).
    pub name: Option<String>,
    /// `--generator-index=I`: 0-based position among `--generator-count` generators.
    pub index: Option<u32>,
    /// `--generator-count=N`: number of generators in the run.
    pub count: Option<u32>,
}

impl GeneratorOptions {
    /// True when any generator option was given (the result then records a
    /// `generator` section).
    pub fn is_set(&self) -> bool {
        self.start_at_unix_us.is_some()
            || self.name.is_some()
            || self.index.is_some()
            || self.count.is_some()
    }
}

/// The typed, validated description of one run. See the module documentation for how
/// to build one.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// Connection parameters of every client connection (password included once known).
    pub conn: ConnConfig,
    /// Scripts in `-b`/`-f` order, never empty.
    pub scripts: Vec<RunScript>,
    /// Number of clients (`-c`), at least 1.
    pub clients: u32,
    /// Driver threads (`-j`), 1..=`clients`.
    pub threads: u32,
    /// `-t` or `-T`.
    pub limit: RunLimit,
    /// `-M`.
    pub query_mode: QueryMode,
    /// `-R`: target rate of the whole run in transactions per second (> 0), spread
    /// evenly over the threads; `None` runs unthrottled.
    pub rate_tps: Option<f64>,
    /// `-L` in µs (> 0): later transactions count as late, and under `-R` transactions
    /// already that late when due are skipped. `None`: no limit.
    pub latency_limit_us: Option<i64>,
    /// `--max-tries`: tries per transaction on serialization/deadlock failures; 0 is
    /// unlimited (only with a latency limit or a duration).
    pub max_tries: u32,
    /// `-C`: a new connection per transaction.
    pub connect_per_transaction: bool,
    /// `-D NAME=VALUE` in definition order (values as text, as pgbench stores them).
    pub variables: Vec<(String, String)>,
    /// The seed every random stream derives from (`--random-seed`).
    pub random_seed: u64,
    /// Error handling.
    pub errors: ErrorSpec,
    /// Logs, progress and measurements.
    pub output: OutputSpec,
    /// What setup found in the database under test: scale, partitioning, server version.
    pub database: DatabaseInfo,
    /// Identity and start instant as one generator of a distributed run.
    pub generator: GeneratorOptions,
    /// How each transaction's script is drawn.
    pub mix: Mix,
    /// Keying and think times, one entry per script in [`RunSpec::scripts`]' order;
    /// empty: none.
    pub pauses: Vec<Pauses>,
    /// When a client reads its connection right after sending a request.
    pub early_read: EarlyRead,
    /// Scripts whose transactions run on a standby (`--replica-file`), by index in
    /// [`RunSpec::scripts`]; empty: every transaction runs on the server `conn` reaches.
    /// Each client then holds a second connection, to the first server of `conn`'s host
    /// list that is in recovery, and sends these scripts' transactions on it.
    pub replica_scripts: Vec<usize>,
}

/// When a client reads its connection right after sending a request, instead of
/// waiting for the poller to report the answer.
///
/// Sending a request wakes the backend that serves it. On a machine whose cores the
/// clients share with the server, that backend often runs at once on the sending
/// thread's core and has answered by the time the send returns. Reading then lets the
/// client go on to its next request with the backend's and its own state still in
/// cache; left for the poller, the answer waits until the thread has served every
/// other client that was ready, by which time both are cold. pgbench reads after
/// every send (libpq's `PQconsumeInput` before `PQisBusy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EarlyRead {
    /// After a send that took at least [`EarlyRead::SLOW_SEND`]: the thread was off its
    /// core meanwhile, and the answer is likely there. A send that returns at once
    /// costs no read that would find nothing.
    #[default]
    AfterSlowSend,
    /// After every send, as pgbench does.
    Always,
}

impl EarlyRead {
    /// A send that takes this long was not a plain system call: the thread waited for
    /// its core (a send that returns at once takes 1–7 µs, one that a backend's whole
    /// answer interrupted 16 µs and more).
    pub const SLOW_SEND: std::time::Duration = std::time::Duration::from_micros(16);

    /// The send time, in ns, from which a client reads at once.
    pub fn after_ns(self) -> i64 {
        match self {
            EarlyRead::AfterSlowSend => EarlyRead::SLOW_SEND.as_nanos() as i64,
            EarlyRead::Always => 0,
        }
    }
}

/// A [`RunSpec`] that describes no valid run (what would be valid is in the message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SpecError(pub String);

impl RunSpec {
    /// A run of `scripts` against `conn` with pgbench's defaults: 1 client, 1 thread,
    /// 10 transactions, simple protocol, no throttling, one try, seed 0, no outputs, and
    /// an unknown database (scale 1). Set the fields, then [`crate::run`] it.
    pub fn new(conn: ConnConfig, scripts: Vec<RunScript>) -> RunSpec {
        RunSpec {
            conn,
            scripts,
            clients: 1,
            threads: 1,
            limit: RunLimit::Transactions(10),
            query_mode: QueryMode::Simple,
            rate_tps: None,
            latency_limit_us: None,
            max_tries: 1,
            connect_per_transaction: false,
            variables: Vec::new(),
            random_seed: 0,
            errors: ErrorSpec::default(),
            output: OutputSpec::default(),
            database: DatabaseInfo {
                scale: 1,
                ..DatabaseInfo::default()
            },
            generator: GeneratorOptions::default(),
            mix: Mix::Random,
            pauses: Vec::new(),
            early_read: EarlyRead::default(),
            replica_scripts: Vec::new(),
        }
    }

    /// Scripts routed to a standby: existing ones, at most 128 (a bit each), and never
    /// with `-C` (a client keeps its two connections for the whole run).
    fn check_replica_scripts(&self) -> Result<(), SpecError> {
        if self.replica_scripts.is_empty() {
            return Ok(());
        }
        if let Some(i) = self
            .replica_scripts
            .iter()
            .find(|&&i| i >= self.scripts.len().min(128))
        {
            return Err(SpecError(format!(
                "script {i} routed to a standby: the run has {} scripts (at most 128 can be)",
                self.scripts.len()
            )));
        }
        if self.connect_per_transaction {
            return Err(SpecError(
                "scripts run on a standby keep their connections: not with -C".into(),
            ));
        }
        Ok(())
    }

    /// Checks the rules pgbench's command line enforces, for specs built in code.
    pub fn validate(&self) -> Result<(), SpecError> {
        let fail = |m: String| Err(SpecError(m));
        if self.scripts.is_empty() {
            return fail("a run needs at least one script".into());
        }
        if self
            .scripts
            .iter()
            .map(|s| u64::from(s.weight))
            .sum::<u64>()
            == 0
        {
            return fail("total script weight must not be zero".into());
        }
        if self.scripts.iter().any(|s| s.weight > i32::MAX as u32) {
            return fail(format!("script weights must be at most {}", i32::MAX));
        }
        if self.mix == Mix::Deck {
            let cards: u64 = self.scripts.iter().map(|s| u64::from(s.weight)).sum();
            if cards > MAX_DECK_CARDS {
                return fail(format!(
                    "a card deck holds one card per unit of script weight: the total weight {cards} is more than {MAX_DECK_CARDS} cards (use smaller weights)"
                ));
            }
        }
        if !self.pauses.is_empty() {
            if self.pauses.len() != self.scripts.len() {
                return fail(format!(
                    "keying and think times are given for {} scripts, the run has {}",
                    self.pauses.len(),
                    self.scripts.len()
                ));
            }
            if self
                .pauses
                .iter()
                .any(|p| p.keying_us < 0 || p.think_mean_us < 0)
            {
                return fail("keying and think times must not be negative".into());
            }
        }
        if self.clients == 0 {
            return fail("the number of clients must be at least 1".into());
        }
        self.check_replica_scripts()?;
        if self.threads == 0 || self.threads > self.clients {
            return fail(format!(
                "the number of threads must be between 1 and the number of clients ({}), not {}",
                self.clients, self.threads
            ));
        }
        match self.limit {
            RunLimit::Transactions(0) => {
                return fail("the number of transactions per client must be at least 1".into())
            }
            RunLimit::Duration(0) => return fail("the duration must be at least 1 s".into()),
            _ => {}
        }
        if let Some(r) = self.rate_tps {
            if !(r.is_finite() && r > 0.0) {
                return fail(format!(
                    "the rate must be a positive number of tps, not {r}"
                ));
            }
        }
        if let Some(l) = self.latency_limit_us {
            if l <= 0 {
                return fail(format!("the latency limit must be positive, not {l} µs"));
            }
        }
        if self.max_tries == 0
            && self.latency_limit_us.is_none()
            && matches!(self.limit, RunLimit::Transactions(_))
        {
            return fail("unlimited tries (max_tries 0) need a latency limit or a duration".into());
        }
        let out = &self.output;
        if let Some(p) = &out.progress {
            if p.interval_s == 0 {
                return fail("the progress interval must be at least 1 s".into());
            }
        }
        if let Some(log) = &out.txn_log {
            if let Some(r) = log.sampling_rate {
                if !(r > 0.0 && r <= 1.0) {
                    return fail(format!("the sampling rate must be in (0, 1], not {r}"));
                }
            }
            if log.aggregate_interval_s == Some(0) {
                return fail("the aggregate interval must be at least 1 s".into());
            }
            if log.sampling_rate.is_some() && log.aggregate_interval_s.is_some() {
                return fail("sampling and aggregated logging cannot be combined".into());
            }
        }
        if let Some(ps) = &out.percentiles {
            if let Some(p) = ps.iter().find(|p| !(**p > 0.0 && **p <= 100.0)) {
                return fail(format!("percentiles must be in (0, 100], not {p}"));
            }
        }
        if let (Some(index), Some(count)) = (self.generator.index, self.generator.count) {
            if index >= count {
                return fail(format!(
                    "the generator index ({index}) must be less than the generator count ({count})"
                ));
            }
        }
        Ok(())
    }

    /// `-t`: transactions per client (`None` for a timed run).
    pub fn transactions_per_client(&self) -> Option<u32> {
        match self.limit {
            RunLimit::Transactions(n) => Some(n),
            RunLimit::Duration(_) => None,
        }
    }

    /// The run's duration in seconds (`None` for a run limited by transactions).
    pub fn duration_s(&self) -> Option<u32> {
        match self.limit {
            RunLimit::Duration(s) => Some(s),
            RunLimit::Transactions(_) => None,
        }
    }
}

impl RunSpec {
    /// The pgbench options (connection excluded) that describe this run, for showing a
    /// user how to reproduce it with pgbench or `pgsurge bench` (campaigns store it as
    /// the test's command line). pgsurge never parses it back: callers hand the
    /// [`RunSpec`] itself to the engine.
    pub fn pgbench_args(&self) -> Vec<String> {
        let mut args = vec![
            format!("--client={}", self.clients),
            format!("--jobs={}", self.threads),
        ];
        args.push(match self.limit {
            RunLimit::Transactions(n) => format!("--transactions={n}"),
            RunLimit::Duration(s) => format!("--time={s}"),
        });
        args.push(format!("--protocol={}", self.query_mode.name()));
        if let Some(rate) = self.rate_tps {
            args.push(format!("--rate={rate}"));
        }
        if let Some(us) = self.latency_limit_us {
            args.push(format!("--latency-limit={}", us as f64 / 1000.0));
        }
        if self.max_tries != 1 {
            args.push(format!("--max-tries={}", self.max_tries));
        }
        if self.connect_per_transaction {
            args.push("--connect".into());
        }
        for (name, value) in &self.variables {
            args.push(format!("--define={name}={value}"));
        }
        for (i, script) in self.scripts.iter().enumerate() {
            let builtin = pgsurge_script::BUILTINS
                .iter()
                .find(|b| b.desc == script.desc);
            args.push(match builtin {
                Some(b) => format!("--builtin={}@{}", b.name, script.weight),
                None if self.replica_scripts.contains(&i) => {
                    format!("--replica-file={}@{}", script.desc, script.weight)
                }
                None => format!("--file={}@{}", script.desc, script.weight),
            });
        }
        args.push(format!("--random-seed={}", self.random_seed));
        let errors = &self.errors;
        for (on, flag) in [
            (errors.failures_detailed, "--failures-detailed"),
            (errors.verbose_errors, "--verbose-errors"),
            (errors.exit_on_abort, "--exit-on-abort"),
            (errors.debug, "--debug"),
            (errors.reconnect, "--reconnect"),
            (self.output.per_command, "--report-per-command"),
        ] {
            if on {
                args.push(flag.into());
            }
        }
        let out = &self.output;
        if let Some(p) = out.progress {
            args.push(format!("--progress={}", p.interval_s));
            if p.timestamp {
                args.push("--progress-timestamp".into());
            }
        }
        if let Some(log) = &out.txn_log {
            args.push("--log".into());
            if let Some(prefix) = &log.prefix {
                args.push(format!("--log-prefix={prefix}"));
            }
            if let Some(rate) = log.sampling_rate {
                args.push(format!("--sampling-rate={rate}"));
            }
            if let Some(secs) = log.aggregate_interval_s {
                args.push(format!("--aggregate-interval={secs}"));
            }
        }
        if let Some(ps) = &out.percentiles {
            let list: Vec<String> = ps.iter().map(f64::to_string).collect();
            args.push(format!("--percentiles={}", list.join(",")));
        }
        if let Some(path) = &out.json {
            args.push(format!("--json={}", path.display()));
        }
        if let Some(path) = &out.hdr_log {
            args.push(format!("--hdr-log={}", path.display()));
        }
        if self.mix == Mix::Deck {
            args.push("--mix=deck".into());
        }
        args
    }

    /// [`RunSpec::pgbench_args`] as one shell command line, `pgbench … DBNAME`, each
    /// word quoted for a POSIX shell where needed.
    pub fn pgbench_command_line(&self, dbname: &str) -> String {
        self.command_line_as("pgbench", &[], |_| true, dbname)
    }

    /// The run as the shell command line `PROGRAM LEAD… ARGS… DBNAME`: `program` as
    /// given, then the words of `lead`, then those of [`RunSpec::pgbench_args`] that
    /// `keep` accepts, each word quoted for a POSIX shell where needed. A workload
    /// pack's run is `pgsurge bench --workload=NAME …` without the pack's own scripts.
    pub fn command_line_as(
        &self,
        program: &str,
        lead: &[String],
        keep: impl Fn(&str) -> bool,
        dbname: &str,
    ) -> String {
        let mut line = String::from(program);
        let args = self.pgbench_args();
        let kept = args.iter().map(String::as_str).filter(|a| keep(a));
        for word in lead.iter().map(String::as_str).chain(kept).chain([dbname]) {
            line.push(' ');
            line.push_str(&pgsurge_command::shell_word(word));
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> RunSpec {
        let conn = ConnConfig::parse("host=/nonexistent dbname=x").expect("valid conninfo");
        RunSpec::new(conn, vec![RunScript::builtin("select-only", 1).unwrap()])
    }

    #[test]
    fn builtin_scripts_are_found_by_prefix_and_parsed() {
        let s = RunScript::builtin("tpcb", 3).unwrap();
        assert_eq!(s.desc, "<builtin: TPC-B (sort of)>");
        assert_eq!(s.weight, 3);
        assert!(s.script.commands.len() > 5);
        assert!(RunScript::builtin("nosuch", 1).is_err());
    }

    #[test]
    fn defaults_are_valid_and_rules_are_enforced() {
        assert_eq!(spec().validate(), Ok(()));
        let mut s = spec();
        s.threads = 2;
        assert!(s.validate().unwrap_err().0.contains("threads"));
        let mut s = spec();
        s.scripts[0].weight = 0;
        assert!(s.validate().is_err());
        let mut s = spec();
        s.max_tries = 0;
        assert!(s.validate().is_err());
        s.limit = RunLimit::Duration(5);
        assert_eq!(s.validate(), Ok(()));
        let mut s = spec();
        s.rate_tps = Some(f64::NAN);
        assert!(s.validate().is_err());
        let mut s = spec();
        s.output.percentiles = Some(vec![50.0, 101.0]);
        assert!(s.validate().is_err());
        let mut s = spec();
        s.scripts.clear();
        assert!(s.validate().is_err());
    }

    #[test]
    fn a_deck_of_more_than_ten_thousand_cards_is_refused() {
        let mut s = spec();
        s.mix = Mix::Deck;
        s.scripts[0].weight = 10_000;
        assert_eq!(s.validate(), Ok(()));
        assert!(s.pgbench_command_line("db").contains(" --mix=deck "));
        s.scripts[0].weight = 10_001;
        let e = s.validate().unwrap_err().0;
        assert!(e.contains("10001") && e.contains("10000 cards"), "{e}");
        s.mix = Mix::Random;
        assert_eq!(s.validate(), Ok(()));
        assert!(!s.pgbench_command_line("db").contains("--mix"));
        s.pauses = vec![Pauses::default(); 2];
        assert!(s.validate().unwrap_err().0.contains("2 scripts"));
        s.pauses = vec![Pauses {
            keying_us: -1,
            think_mean_us: 0,
        }];
        assert!(s.validate().is_err());
    }

    #[test]
    fn command_line_names_builtins_and_quotes_words() {
        let mut s = spec();
        s.scripts
            .push(RunScript::parse("my script.sql", "SELECT 1;\n", 2).unwrap());
        s.latency_limit_us = Some(1500);
        s.variables.push(("who".into(), "it's".into()));
        let line = s.pgbench_command_line("db");
        assert!(
            line.starts_with("pgbench --client=1 --jobs=1 --transactions=10 "),
            "{line}"
        );
        assert!(line.contains(" --latency-limit=1.5 "), "{line}");
        assert!(
            line.contains(" --builtin=select-only@1 '--file=my script.sql@2' "),
            "{line}"
        );
        assert!(line.contains(" \"--define=who=it's\" "), "{line}");
        assert!(line.ends_with(" --random-seed=0 db"), "{line}");
    }
}
