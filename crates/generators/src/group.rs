//! Results without shared disks: generators started with `pgsurge bench --store URL
//! --group NAME --generator-index I --generator-count N` write their result into a
//! results store (a PostgreSQL one when they run on different machines), as runs of a
//! set of kind `group`. `pgsurge dist wait` is the coordinator: it waits until the
//! group holds N generators (or a timeout), merges them exactly as `pgsurge merge`
//! merges files, and, given the benchmarked server, compares the server's commit count
//! over the run with the merged transaction count. [`merge_group`] is the same merge
//! for `pgsurge results show` of a group.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use pgsurge_results::RunResult;
use pgsurge_store::{generator_test_key, set_kind, RunFilter, Store};

use crate::merge::{merge, MergedRun};
use crate::merge_cli::{write_merged_json, write_merged_report};
use crate::MergeError;

/// The generators of a group, read from the store: (label, result) by generator index.
pub fn group_results(
    store: &mut Store,
    set_id: i64,
) -> Result<Vec<(String, RunResult)>, MergeError> {
    let store_error = |e: pgsurge_store::StoreError| MergeError::Launch(e.to_string());
    let mut runs = store
        .list_runs(&RunFilter {
            set_id: Some(set_id),
            ..Default::default()
        })
        .map_err(store_error)?;
    runs.sort_by_key(|r| r.record.seq);
    let mut out = Vec::with_capacity(runs.len());
    for r in runs {
        let label = r.record.test_key.clone();
        let json = r.record.result_json.ok_or_else(|| {
            MergeError::Launch(format!("run {} ({label}) has no result document", r.id))
        })?;
        let result: RunResult = serde_json::from_value(json).map_err(|e| MergeError::File {
            path: PathBuf::from(format!("run {}", r.id)),
            msg: format!("not a pgsurge result document: {e}"),
        })?;
        out.push((label, result));
    }
    Ok(out)
}

/// Merges every generator stored in the group `set_id`.
pub fn merge_group(store: &mut Store, set_id: i64) -> Result<MergedRun, MergeError> {
    let (labels, results): (Vec<String>, Vec<RunResult>) =
        group_results(store, set_id)?.into_iter().unzip();
    merge(&results, &labels)
}

/// The newest group named `name` in the store, if any.
pub fn find_group(store: &mut Store, name: &str) -> pgsurge_store::Result<Option<i64>> {
    Ok(store
        .list_sets()?
        .into_iter()
        .filter(|s| s.record.kind == set_kind::GROUP && s.record.name == name)
        .map(|s| s.id)
        .max())
}

/// `pgsurge dist wait` options.
#[derive(Debug, Parser)]
#[command(
    name = "pgsurge dist wait",
    about = "Wait for the generators of a distributed run in a results store, then merge them"
)]
pub struct WaitArgs {
    /// The results store the generators write to (`--store` of their `pgsurge bench`).
    #[arg(long, value_name = "LOCATION")]
    pub store: String,
    /// The group name (`--group` of the generators).
    #[arg(long, value_name = "NAME")]
    pub group: String,
    /// How many generators to wait for (`--generator-count`).
    #[arg(long, short = 'n', value_name = "N")]
    pub generators: u32,
    /// Give up after this long without all of them (seconds, or e.g. "10m").
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    pub timeout: String,
    /// The benchmarked database (conninfo or URI): its commits over the run are compared
    /// with the merged transaction count. Start `dist wait` before the generators' start.
    #[arg(long, value_name = "CONNINFO")]
    pub server: Option<String>,
    /// Allowed difference between the server's commits and the merged count, percent.
    #[arg(long, value_name = "PCT", default_value_t = 1.0)]
    pub tolerance: f64,
    /// Also write the merged result as a JSON document ("-" = stdout, instead of the report).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

fn parse_timeout(t: &str) -> Result<Duration, String> {
    if let Ok(secs) = t.trim().parse::<f64>() {
        if secs >= 0.0 && secs.is_finite() {
            return Ok(Duration::from_secs_f64(secs));
        }
    }
    humantime::parse_duration(t.trim()).map_err(|e| format!("--timeout \"{t}\": {e}"))
}

/// Reads the database's committed transactions over one session that stays inside a
/// transaction block, so the reads add no commits of their own: a session per read
/// would commit its queries, and each read would then see the one before it, so the
/// count would never settle and the reads would be counted as the run's.
struct CommitReader {
    conn: pgsurge_wire::Connection,
}

impl CommitReader {
    fn open(conninfo: &str) -> Result<CommitReader, String> {
        let cfg = pgsurge_wire::ConnConfig::parse(conninfo).map_err(|e| e.to_string())?;
        let mut conn = pgsurge_wire::Connection::connect(&cfg).map_err(|e| {
            pgsurge_wire::redact::redact_with(
                e.to_string().trim_end(),
                &pgsurge_wire::redact::passwords(conninfo),
            )
        })?;
        conn.simple_query("BEGIN").map_err(|e| e.to_string())?;
        Ok(CommitReader { conn })
    }

    /// The count now: the statistics snapshot is cleared first, so each read is fresh
    /// although the transaction stays open.
    fn read(&mut self) -> Result<i64, String> {
        let r = self
            .conn
            .simple_query(
                "SELECT pg_stat_clear_snapshot(); \
                 SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()",
            )
            .map_err(|e| e.to_string())?;
        r.iter()
            .rev()
            .find_map(|res| res.get(0, 0))
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| "pg_stat_database gave no xact_commit".into())
    }

    /// The server's clock now.
    fn server_now(&mut self) -> Result<String, String> {
        let r = self
            .conn
            .simple_query("SELECT clock_timestamp()::text")
            .map_err(|e| e.to_string())?;
        r.iter()
            .find_map(|res| res.get(0, 0))
            .map(str::to_string)
            .ok_or_else(|| "the server gave no time".into())
    }

    /// How many other client sessions of the database started at `since` or later
    /// (a role that may not see other users' sessions sees no start time, and none).
    fn sessions_since(&mut self, since: &str) -> Result<i64, String> {
        let sql = format!(
            "SELECT pg_stat_clear_snapshot(); \
             SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
             AND backend_type = 'client backend' AND pid <> pg_backend_pid() \
             AND backend_start >= {}::timestamptz",
            pgsurge_wire::quote_literal(since)
        );
        let r = self.conn.simple_query(&sql).map_err(|e| e.to_string())?;
        r.iter()
            .rev()
            .find_map(|res| res.get(0, 0))
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| "pg_stat_activity gave no count".into())
    }
}

impl Drop for CommitReader {
    fn drop(&mut self) {
        // Ends the block without a commit (a rollback is not counted as one).
        let _ = self.conn.simple_query("ROLLBACK");
    }
}

/// The database's committed transactions now, and the server's clock (to tell the
/// sessions that connect from then on from those that were there before).
fn commits(conninfo: &str) -> Result<(i64, String), String> {
    let mut reader = CommitReader::open(conninfo)?;
    let since = reader.server_now()?;
    Ok((reader.read()?, since))
}

/// How long [`settled_commits`] waits for the generators' sessions to end.
const SESSIONS_END_WAIT: Duration = Duration::from_secs(30);

/// The server's commits after the generators. First every session that connected to
/// the database since `since` has ended (at most [`SESSIONS_END_WAIT`]): a session's
/// statistics reach the shared views before it leaves `pg_stat_activity` (PostgreSQL
/// 15 and later), and on a busy machine a backend can exit well after its client.
/// Then reads until two reads a moment apart agree (older servers pass statistics
/// through a collector process).
fn settled_commits(conninfo: &str, since: &str) -> Result<i64, String> {
    let mut reader = CommitReader::open(conninfo)?;
    let deadline = std::time::Instant::now() + SESSIONS_END_WAIT;
    while reader.sessions_since(since)? > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut last = reader.read()?;
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(700));
        let now = reader.read()?;
        if now == last {
            return Ok(now);
        }
        last = now;
    }
    Ok(last)
}

/// Entry point of `pgsurge dist wait ARGS`; returns the exit code.
pub fn wait_main(args: &[OsString]) -> i32 {
    let a = match pgsurge_command::parse::<WaitArgs>("pgsurge dist wait", args) {
        Ok(a) => a,
        Err(status) => return status,
    };
    match run_wait(&a) {
        Ok(code) => code,
        Err(e) => {
            eprintln!(
                "pgsurge dist wait: error: {}",
                pgsurge_wire::redact::redact(&e)
            );
            1
        }
    }
}

/// Why [`wait_for_group`] returned without a merge.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WaitError {
    /// The timeout passed before every generator was stored.
    #[error(
        "group \"{group}\" in {store}: {stored} of {expected} generators stored after {after}; \
         missing generator index(es): {}",
        join_indexes(missing)
    )]
    TimedOut {
        /// The group's name.
        group: String,
        /// The store, its password masked.
        store: String,
        /// Generators stored when it gave up.
        stored: usize,
        /// Generators waited for.
        expected: u32,
        /// The timeout, as `humantime` writes it (`1m 30s`).
        after: String,
        /// Generator indexes not stored.
        missing: Vec<u32>,
    },
    /// `should_stop` said to stop waiting.
    #[error("stopped while waiting for group \"{0}\"")]
    Stopped(String),
    /// The store could not be read, or the group not merged.
    #[error("{0}")]
    Failed(String),
}

fn join_indexes(missing: &[u32]) -> String {
    missing
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A group waited for and merged.
#[derive(Debug)]
pub struct WaitedGroup {
    /// The group's set id in the store.
    pub set_id: i64,
    /// The merge of its generators.
    pub merged: MergedRun,
}

/// Polls the store at `location` every half second until the group `group` holds
/// `generators` generators, then merges them and marks the group complete. Gives up
/// after `timeout`, or as soon as `should_stop` returns true. `progress` hears each
/// new count of stored generators (from 1). `pgsurge dist wait` and a campaign's `kube`
/// launcher both wait with it.
pub fn wait_for_group(
    location: &str,
    group: &str,
    generators: u32,
    timeout: Duration,
    should_stop: &dyn Fn() -> bool,
    progress: &mut dyn FnMut(usize),
) -> Result<WaitedGroup, WaitError> {
    if generators == 0 {
        return Err(WaitError::Failed("no generators to wait for".into()));
    }
    let shown = pgsurge_store::redact_location(location);
    let failed = |e: String| WaitError::Failed(e);
    let deadline = Instant::now() + timeout;
    let mut announced = 0usize;
    let set_id = loop {
        // A fresh connection each round: the generators' writes are other sessions'.
        let mut store = Store::open(location).map_err(|e| failed(format!("{shown}: {e}")))?;
        let found = find_group(&mut store, group).map_err(|e| failed(e.to_string()))?;
        let stored = match found {
            Some(id) => store
                .stored_tests(id)
                .map_err(|e| failed(e.to_string()))?
                .into_iter()
                .map(|(k, _)| k)
                .collect::<Vec<_>>(),
            None => Vec::new(),
        };
        if let Some(id) = found {
            check_group_size(&mut store, id, group, generators, &stored)?;
        }
        if stored.len() != announced {
            announced = stored.len();
            progress(announced);
        }
        if let (Some(id), true) = (found, stored.len() >= generators as usize) {
            break id;
        }
        if Instant::now() >= deadline {
            return Err(WaitError::TimedOut {
                group: group.to_string(),
                store: shown.clone(),
                stored: stored.len(),
                expected: generators,
                after: humantime::format_duration(timeout).to_string(),
                missing: (0..generators)
                    .filter(|i| !stored.contains(&generator_test_key(*i, generators)))
                    .collect(),
            });
        }
        // Sleep in short steps, so that a stop is heard soon.
        let pause = Instant::now() + Duration::from_millis(500);
        while Instant::now() < pause {
            if should_stop() {
                return Err(WaitError::Stopped(group.to_string()));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let mut store = Store::open(location).map_err(|e| failed(format!("{shown}: {e}")))?;
    let merged = merge_group(&mut store, set_id).map_err(|e| failed(e.to_string()))?;
    if merged.generators.len() != generators as usize {
        return Err(failed(format!(
            "group \"{group}\" holds {} generators, not the {generators} waited for",
            merged.generators.len(),
        )));
    }
    let _ = store.set_set_status(
        set_id,
        pgsurge_store::set_status::COMPLETE,
        Some(&pgsurge_store::now_rfc3339()),
    );
    Ok(WaitedGroup { set_id, merged })
}

/// Refuses a group that is not a run of `generators` generators: one whose first
/// generator gave another `--generator-count`, or that holds a generator of another
/// count.
fn check_group_size(
    store: &mut Store,
    set_id: i64,
    group: &str,
    generators: u32,
    stored: &[String],
) -> Result<(), WaitError> {
    let set = store
        .set(set_id)
        .map_err(|e| WaitError::Failed(e.to_string()))?;
    if let Some(planned) = set.record.planned_tests {
        if planned != i64::from(generators) {
            return Err(WaitError::Failed(format!(
                "group \"{group}\" is a run of {planned} generators (--generator-count {planned}), \
                 not the {generators} waited for"
            )));
        }
    }
    let expected: Vec<String> = (0..generators)
        .map(|i| generator_test_key(i, generators))
        .collect();
    if let Some(other) = stored.iter().find(|k| !expected.contains(k)) {
        return Err(WaitError::Failed(format!(
            "group \"{group}\" holds \"{other}\", which is not a generator of a run of {generators}"
        )));
    }
    Ok(())
}

/// Runs `pgsurge dist wait`: 0 when merged, 1 on an error or a timeout, 3 when the
/// server's commits and the merged count differ by more than the tolerance.
pub fn run_wait(a: &WaitArgs) -> Result<i32, String> {
    if a.generators == 0 {
        return Err("--generators must be at least 1".into());
    }
    let timeout = parse_timeout(&a.timeout)?;
    let before = match &a.server {
        Some(s) => Some(commits(s)?),
        None => None,
    };
    let mut progress = |stored: usize| {
        eprintln!(
            "group \"{}\": {stored} of {} generators stored",
            a.group, a.generators
        );
    };
    let merged = wait_for_group(
        &a.store,
        &a.group,
        a.generators,
        timeout,
        &|| false,
        &mut progress,
    )
    .map_err(|e| e.to_string())?
    .merged;
    let to_stdout = a.json.as_deref().is_some_and(|p| p.as_os_str() == "-");
    if !to_stdout {
        let mut out = std::io::stdout().lock();
        if write_merged_report(&merged, &mut out).is_err() {
            return Ok(0); // a closed stdout is not an error
        }
    }
    if let Some(p) = &a.json {
        write_merged_json(&merged, p).map_err(|e| format!("writing {}: {e}", p.display()))?;
    }
    let mut code = 0;
    if let (Some(server), Some((before, since))) = (&a.server, before) {
        let after = settled_commits(server, &since)?;
        let server_commits = after - before;
        let clients = merged.result.totals.transactions as i64;
        let pct = if clients > 0 {
            (server_commits - clients).abs() as f64 * 100.0 / clients as f64
        } else {
            0.0
        };
        eprintln!(
            "server commits over the run: {server_commits}; merged client transactions: {clients} ({pct:.2} % apart)"
        );
        if pct > a.tolerance {
            eprintln!(
                "warning: the server counted {server_commits} commits and the generators {clients} transactions, more than {} % apart",
                a.tolerance
            );
            code = 3;
        }
    }
    Ok(code)
}
