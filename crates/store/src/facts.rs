//! Names of the per-test facts a campaign stores in `run_facts` (see
//! `migrations/0005_run_facts.sql`), so writers, `results show` and the report agree.

/// Where the server host's `os.*` metrics came from: `local`, `node_exporter`,
/// `pg_read_file` or `none` (not measured: no `os.*` series is stored).
pub const SERVER_HOST_METRICS_SOURCE: &str = "server_host_metrics_source";
/// `true` when the client was the bottleneck (decided by the campaign's client sampler).
pub const CLIENT_BOUND: &str = "client_bound";
/// Why the test is client-bound, in words.
pub const CLIENT_BOUND_REASON: &str = "client_bound_reason";
/// `true` when this test (re)built the pgbench tables before it ran.
pub const INIT_PERFORMED: &str = "init_performed";
/// `client` or `server`: how `-i` generated the data.
pub const INIT_METHOD: &str = "init_method";
/// Seconds the initialization took.
pub const INIT_DURATION_S: &str = "init_duration_s";
/// Why the tables were (or were not) initialized.
pub const INIT_REASON: &str = "init_reason";
/// Filesystem type of the server's data directory (`unknown` when not readable).
pub const DATA_DIR_FSTYPE: &str = "data_dir_fstype";
/// `true` when the data directory is in memory (tmpfs, ramfs): no real I/O happened.
pub const DATA_DIR_IN_MEMORY: &str = "data_dir_in_memory";
/// `pg_stat_statements <version>` when the test's statements were read, else
/// `none (<why>)`, e.g. `none (pg_stat_statements not installed)`.
pub const STATEMENTS_SOURCE: &str = crate::activity::STATEMENTS_SOURCE;
/// The statements of the benchmark database that took the most execution time during
/// the test: a JSON array of [`crate::activity::TopStatement`].
pub const STATEMENTS_TOP: &str = crate::activity::STATEMENTS_TOP;
/// The inputs of the campaign the test ran in, each with a digest of its bytes (or its
/// commit id): a JSON object, e.g. `{"script q.sql": "<sha256>", "target \"pg\" commit": "<id>"}`.
pub const CAMPAIGN_INPUTS: &str = "campaign_inputs";
/// The build of a target built from source: `<source>` with `+ <patch> (<sha256 prefix>)`
/// per patch, e.g. `git checkout /src at 1a2b3c4d5e6f (master) + fix.patch (9f8e7d6c)`.
pub const BUILD_SOURCE: &str = "build_source";
/// The commit id of a target built from a git checkout.
pub const BUILD_COMMIT: &str = "build_commit";
/// `pg_config --configure` of a target built from source.
pub const BUILD_CONFIGURE: &str = "build_configure";
/// The compiler's version line of a target built from source.
pub const BUILD_COMPILER: &str = "build_compiler";
/// The cache key of a target built from source.
pub const BUILD_KEY: &str = "build_key";
/// The seed of a layout build (`[repeats] builds`): the order in which `lld` placed
/// the build's input sections. Builds of one source with different seeds differ in
/// code layout only.
pub const BUILD_LAYOUT_SEED: &str = "build_layout_seed";
/// SHA-256 of the build's `postgres` binary (hex).
pub const BUILD_POSTGRES_SHA256: &str = "build_postgres_sha256";
/// The wall time the build took, in seconds (when it was made; a cached build keeps
/// the time it took then): the cost of repeating the builds level.
pub const BUILD_SECONDS: &str = "build_seconds";
/// Build options that make timings meaningless (`--enable-cassert`, `-O0`, …), or
/// `debug_assertions=on` as the server reports it; absent when there are none.
pub const TIMING_HAZARDS: &str = "timing_hazards";
/// `true` when a checkpoint ran inside the test's measured window and the window is
/// shorter than a checkpoint cycle (`checkpoint_timeout`), so the test saw part of the
/// cycle instead of its average.
pub const CHECKPOINT_IN_SHORT_WINDOW: &str = "checkpoint_in_short_window";
/// `true` when an autovacuum worker was active during the test's measured window.
pub const AUTOVACUUM_IN_WINDOW: &str = "autovacuum_in_window";
/// `true` when the `-R` schedule lag grew over the test: the server fell behind the rate.
pub const LAG_GROWING: &str = "lag_growing";

/// The server start a test ran in: the server's `pg_postmaster_start_time()` as epoch
/// seconds (`1795000000.123456`), when it was the same before and after the test. Runs
/// with the same value ran in one start of one server; a restart or a fresh cluster
/// is another.
pub const SERVER_START: &str = "server_start";

/// The wall time, in seconds, from asking for the server the test ran on to its
/// accepting connections (throwaway servers): with the data loaded into it
/// (`init_duration_s`), the cost of repeating the server-starts level.
pub const START_SECONDS: &str = "start_seconds";

/// `[repeats] until`: the precision the test's cell reached when the campaign stopped
/// repeating it, the same on every run of the cell: the JSON of
/// `pgsurge_analysis::precision::CellPrecision`, e.g.
/// `{"target":0.02,"half_width":0.013,"repeats":4,"budget_spent":false,"inconclusive":false}`.
pub const REPEATS_UNTIL: &str = "repeats_until";

/// A replay's whole fidelity report (the JSON of `pgsurge replay --json`).
pub const REPLAY_REPORT: &str = "replay_report";
/// The SHA-256s of a replay's log files, in order, joined by commas: two replays of the
/// same log have the same.
pub const REPLAY_LOG_SHA256: &str = "replay_log_sha256";
