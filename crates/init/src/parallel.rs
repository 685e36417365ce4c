//! `--init-jobs` (a pgsurge extension): the heavy part of `-i` spread over
//! several connections, with the same table contents as a serial run.
//!
//! The small tables and every step other than `g`, `G`, `v` and `p` stay on the
//! caller's connection. What is split, and how:
//!
//! * loading `pgbench_accounts` (`g` and `G`): one task per partition for
//!   range partitions (when there are at least as many partitions as jobs),
//!   each truncating its partition and loading it with `COPY … FREEZE`, so the
//!   partitions come out exactly as a serial load leaves them; otherwise
//!   contiguous `aid` ranges, one per job, into the table itself;
//! * `v`: each table, and each partition of `pgbench_accounts`, vacuumed on
//!   its own connection, the partitioned parent analyzed afterwards;
//! * `p`: each partition's primary key built on its own connection, then the
//!   parent's, which adopts them; an unpartitioned `pgbench_accounts` gets
//!   the server's parallel index build instead.
//!
//! A batch of tasks runs on `jobs` worker threads, each with its own session;
//! the calling thread prints progress and the workers' notices, and cancels
//! every worker's statement when one fails or the run is interrupted. Unlike a
//! serial `g`, the small tables are committed before `pgbench_accounts` is
//! loaded (other sessions cannot write a table truncated in an open
//! transaction).

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use crate::ddl;
use crate::error::InitError;
use crate::progress::TableProgress;
use crate::rows::{GeneratedTable, RowWriter};
use crate::runner::{copy_failed, query_failed, InitContext, COPY_CHUNK_BYTES, ROWS_PER_BATCH};
use crate::session::{Canceller, Fill, InitSession, SessionError};
use crate::spec::{InitSpec, PartitionMethod, NACCOUNTS};

/// Opens one worker session (a new connection to the same database).
pub type OpenSession<'a> =
    dyn Fn() -> Result<Box<dyn InitSession + Send>, SessionError> + Sync + 'a;

/// How many connections the heavy steps use, and how to open them.
pub struct Parallel<'a> {
    /// Worker connections, at least 2 (1 means a serial run: use no
    /// `Parallel` at all).
    pub jobs: usize,
    /// Opens each worker's connection; a failure fails the step with
    /// pgbench's connection-failure lines.
    pub open: &'a OpenSession<'a>,
}

/// One unit of work for a worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Task {
    /// Statements run in order on one connection.
    Sql(Vec<String>),
    /// One slice of `pgbench_accounts` copied in one transaction; with
    /// `freeze`, its table (a partition) is truncated first in that
    /// transaction and loaded with `COPY … FREEZE`.
    Copy { slice: Slice, freeze: bool },
}

/// Rows of `pgbench_accounts` that one task loads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Slice {
    /// `pgbench_accounts` or one of its partitions.
    pub table: String,
    /// The 0-based rows `first..end` (row k has `aid` k+1)…
    pub first: i64,
    /// (exclusive end)…
    pub end: i64,
    /// …and of those only the ones whose `aid` hashes to this
    /// `(modulus, remainder)`: the rows of one hash partition.
    pub hash: Option<(u64, u64)>,
}

impl Slice {
    /// Whether this slice is one whole partition (which one job may truncate
    /// and freeze), not a piece of a table other jobs also load.
    pub fn is_partition(&self) -> bool {
        self.table != "pgbench_accounts"
    }
}

/// Where the rows of `pgbench_accounts` go. With at least `jobs` partitions,
/// one slice per partition (its key range, or its hash remainder); otherwise
/// the `aid` range is cut into `jobs` contiguous pieces.
pub(crate) fn account_slices(spec: &InitSpec, jobs: usize) -> Vec<Slice> {
    let rows = NACCOUNTS * i64::from(spec.scale);
    let partitions = i64::from(spec.partitions);
    let per_partition = partitions >= jobs as i64;
    match spec.effective_partition_method() {
        PartitionMethod::Range if per_partition => {
            // The bounds `partition_statements` gives each range partition.
            let part_size = (rows + partitions - 1) / partitions;
            (1..=partitions)
                .map(|p| Slice {
                    table: format!("pgbench_accounts_{p}"),
                    first: ((p - 1) * part_size).min(rows),
                    end: if p == partitions {
                        rows
                    } else {
                        (p * part_size).min(rows)
                    },
                    hash: None,
                })
                .collect()
        }
        PartitionMethod::Hash if per_partition => (1..=partitions)
            .map(|p| Slice {
                table: format!("pgbench_accounts_{p}"),
                first: 0,
                end: rows,
                // Partition p has remainder p-1 (see `partition_statements`).
                hash: Some((partitions as u64, (p - 1) as u64)),
            })
            .collect(),
        _ => {
            let pieces = jobs as i64;
            (0..pieces)
                .map(|k| Slice {
                    table: "pgbench_accounts".to_owned(),
                    first: rows * k / pieces,
                    end: rows * (k + 1) / pieces,
                    hash: None,
                })
                .collect()
        }
    }
}

/// The server-side (`G`) insert of one slice: the server generates the rows
/// (and for a hash partition keeps those of its remainder).
pub(crate) fn server_side_insert(slice: &Slice) -> String {
    let mut sql = format!(
        "insert into {}(aid,bid,abalance,filler) select aid, (aid - 1) / {NACCOUNTS} + 1, 0, '' from generate_series({}, {}) as aid",
        slice.table,
        slice.first + 1,
        slice.end
    );
    if let Some((modulus, remainder)) = slice.hash {
        sql.push_str(&format!(
            " where satisfies_hash_partition('pgbench_accounts'::regclass, {modulus}, {remainder}, aid)"
        ));
    }
    sql
}

/// The hash partition remainder PostgreSQL gives an `aid` (an `int4` or
/// `int8` key) among `modulus` partitions: the extended hash of the integer
/// with the partitioning seed, combined as for a one-column key, modulo
/// `modulus`. The server checks every row against its partition's
/// constraint, so a mistake here fails the load instead of misplacing rows.
pub(crate) fn hash_partition(aid: i64, modulus: u64) -> u64 {
    const PARTITION_SEED: u64 = 0x7A5B_2236_7996_DCFD;
    // hashint8extended folds the high half into the low one (so an int4 key
    // hashes like an int8 key of the same value).
    let high = (aid >> 32) as u32;
    let low = aid as u32 ^ if aid >= 0 { high } else { !high };
    let hash = hash_u32_extended(low, PARTITION_SEED);
    // hash_combine64(0, hash) for the only key column.
    let row_hash = hash.wrapping_add(0x49a0_f4dd_15e5_a8e3);
    row_hash % modulus
}

/// PostgreSQL's `hash_bytes_uint32_extended`: Bob Jenkins' lookup3 on one
/// 32-bit word, with a 64-bit seed.
fn hash_u32_extended(k: u32, seed: u64) -> u64 {
    let init = 0x9e37_79b9u32.wrapping_add(4).wrapping_add(3_923_095);
    let mut v = [init; 3];
    if seed != 0 {
        v[0] = v[0].wrapping_add((seed >> 32) as u32);
        v[1] = v[1].wrapping_add(seed as u32);
        lookup3_mix(&mut v);
    }
    v[0] = v[0].wrapping_add(k);
    lookup3_final(&mut v);
    (u64::from(v[1]) << 32) | u64::from(v[2])
}

/// lookup3's `mix`: six rounds of `x -= y; x ^= rot(y, r); y += z` over the
/// state words `[a, b, c]`.
fn lookup3_mix(v: &mut [u32; 3]) {
    const ROUNDS: [(usize, usize, usize, u32); 6] = [
        (0, 2, 1, 4),
        (1, 0, 2, 6),
        (2, 1, 0, 8),
        (0, 2, 1, 16),
        (1, 0, 2, 19),
        (2, 1, 0, 4),
    ];
    for (x, y, z, r) in ROUNDS {
        v[x] = v[x].wrapping_sub(v[y]);
        v[x] ^= v[y].rotate_left(r);
        v[y] = v[y].wrapping_add(v[z]);
    }
}

/// lookup3's `final`: seven rounds of `x ^= y; x -= rot(y, r)`.
fn lookup3_final(v: &mut [u32; 3]) {
    const ROUNDS: [(usize, usize, u32); 7] = [
        (2, 1, 14),
        (0, 2, 11),
        (1, 0, 25),
        (2, 1, 16),
        (0, 2, 4),
        (1, 0, 14),
        (2, 1, 24),
    ];
    for (x, y, r) in ROUNDS {
        v[x] ^= v[y];
        v[x] = v[x].wrapping_sub(v[y].rotate_left(r));
    }
}

/// Names of the partitions of `pgbench_accounts` (empty when unpartitioned).
pub(crate) fn partition_names(spec: &InitSpec) -> Vec<String> {
    if !spec.is_partitioned() {
        return Vec::new();
    }
    (1..=spec.partitions)
        .map(|p| format!("pgbench_accounts_{p}"))
        .collect()
}

/// Runs `tasks` on `par.jobs` worker sessions (fewer when there are fewer
/// tasks). With `progress`, counts copied rows into it and prints its lines
/// from this thread. Returns the first failure; the other workers' running
/// statements are cancelled then, and nothing more is started.
pub(crate) fn run_tasks(
    par: &Parallel<'_>,
    spec: &InitSpec,
    tasks: &[Task],
    ctx: &InitContext<'_>,
    mut progress: Option<&mut TableProgress>,
    err: &mut dyn Write,
) -> Result<(), InitError> {
    let shared = Shared {
        next_task: AtomicUsize::new(0),
        rows_copied: AtomicI64::new(0),
        stop: AtomicBool::new(false),
        interrupted: ctx.cancel,
        first_error: Mutex::new(None),
        cancellers: Mutex::new(Vec::new()),
        notices: Mutex::new(Vec::new()),
        scale: spec.scale,
    };
    let workers = par.jobs.min(tasks.len()).max(1);
    let mut reported = 0i64;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| scope.spawn(|| work(par, tasks, &shared)))
            .collect();
        loop {
            let finished = handles.iter().all(|h| h.is_finished());
            if shared.should_stop() {
                shared.cancel_all();
            }
            for notice in shared.take_notices() {
                let _ = err.write_all(notice.as_bytes());
            }
            if let Some(p) = progress.as_deref_mut() {
                let copied = shared.rows_copied.load(Ordering::Relaxed);
                reported = report_progress(p, reported, copied, ctx, err);
            }
            if finished {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    for notice in shared.take_notices() {
        let _ = err.write_all(notice.as_bytes());
    }
    let failure = shared
        .first_error
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(p) = progress {
        p.finish(err);
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// State the workers and the reporting thread share during one batch.
struct Shared<'a> {
    next_task: AtomicUsize,
    /// Rows of `pgbench_accounts` sent so far by all workers.
    rows_copied: AtomicI64,
    /// Set when a task failed: no new task starts, copies end early.
    stop: AtomicBool,
    /// The run's interrupt flag (Ctrl-C), when it has one.
    interrupted: Option<&'a AtomicBool>,
    first_error: Mutex<Option<InitError>>,
    cancellers: Mutex<Vec<Canceller>>,
    notices: Mutex<Vec<String>>,
    scale: i32,
}

impl Shared<'_> {
    fn should_stop(&self) -> bool {
        self.stop.load(Ordering::Acquire)
            || self
                .interrupted
                .is_some_and(|flag| flag.load(Ordering::Acquire))
    }

    fn fail(&self, e: InitError) {
        if let Ok(mut slot) = self.first_error.lock() {
            slot.get_or_insert(e);
        }
        self.stop.store(true, Ordering::Release);
    }

    /// Cancels every worker's running statement. Called again on every round
    /// while stopping, so a statement started just before the stop is caught
    /// too; a cancel request for an idle session does nothing.
    fn cancel_all(&self) {
        if let Ok(list) = self.cancellers.lock() {
            for cancel in list.iter() {
                cancel();
            }
        }
    }

    fn take_notices(&self) -> Vec<String> {
        self.notices
            .lock()
            .map(|mut list| std::mem::take(&mut *list))
            .unwrap_or_default()
    }
}

/// One worker: opens its session, then takes tasks until none is left or the
/// batch stops.
fn work(par: &Parallel<'_>, tasks: &[Task], shared: &Shared<'_>) {
    let mut session = match (par.open)() {
        Ok(s) => s,
        Err(e) => {
            shared.fail(InitError::Connect { message: e.message });
            return;
        }
    };
    if let (Some(cancel), Ok(mut list)) = (session.canceller(), shared.cancellers.lock()) {
        list.push(cancel);
    }
    while !shared.should_stop() {
        let Some(task) = tasks.get(shared.next_task.fetch_add(1, Ordering::Relaxed)) else {
            break;
        };
        let result = run_task(&mut *session, task, shared);
        let notices = session.take_notices();
        if let Ok(mut list) = shared.notices.lock() {
            list.extend(notices);
        }
        if let Err(e) = result {
            shared.fail(e);
            break;
        }
    }
}

fn run_task(
    session: &mut dyn InitSession,
    task: &Task,
    shared: &Shared<'_>,
) -> Result<(), InitError> {
    match task {
        Task::Sql(statements) => {
            for sql in statements {
                if shared.should_stop() {
                    break;
                }
                session.execute(sql).map_err(|e| query_failed(e, sql))?;
            }
            Ok(())
        }
        Task::Copy { slice, freeze } => copy_slice(session, slice, *freeze, shared),
    }
}

fn copy_slice(
    session: &mut dyn InitSession,
    slice: &Slice,
    freeze: bool,
    shared: &Shared<'_>,
) -> Result<(), InitError> {
    let table = slice.table.as_str();
    let exec = |session: &mut dyn InitSession, sql: &str| {
        session.execute(sql).map_err(|e| query_failed(e, sql))
    };
    exec(session, "begin")?;
    if freeze {
        exec(session, &format!("truncate table {table}"))?;
    }
    let sql = ddl::copy_statement(table, freeze);
    let mut rows = RowWriter::range(
        GeneratedTable::Accounts,
        shared.scale,
        slice.first,
        slice.end,
    );
    let mut stopped = false;
    let mut fill = |buf: &mut Vec<u8>| -> Fill {
        while !rows.is_done() && buf.len() < COPY_CHUNK_BYTES {
            if shared.should_stop() {
                stopped = true;
                break;
            }
            let before = rows.rows_done();
            let until = before + ROWS_PER_BATCH;
            let written = match slice.hash {
                None => {
                    rows.write_until(buf, until);
                    rows.rows_done() - before
                }
                Some((modulus, remainder)) => rows
                    .write_kept_until(buf, until, &|aid| hash_partition(aid, modulus) == remainder),
            };
            shared.rows_copied.fetch_add(written, Ordering::Relaxed);
        }
        if rows.is_done() || stopped {
            buf.extend_from_slice(b"\\.\n");
            Fill::Done
        } else {
            Fill::More
        }
    };
    let copied = session.copy_in(&sql, &mut fill);
    if stopped {
        // Whatever was copied must not be committed.
        let _ = session.execute("rollback");
        return Err(InitError::CopyEnd {
            message: "ERROR:  canceling statement due to user request\n".into(),
        });
    }
    copied.map_err(copy_failed)?;
    exec(session, "commit")
}

/// Prints the progress lines due for `copied` rows, after `reported` rows were
/// reported; returns the new `reported`. Normal mode prints every multiple of
/// 100000 rows (several at once when workers are fast); `-q` mode looks at the
/// clock at the last multiple of 100 reached, as a serial load does.
fn report_progress(
    progress: &mut TableProgress,
    reported: i64,
    copied: i64,
    ctx: &InitContext<'_>,
    err: &mut dyn Write,
) -> i64 {
    let every = progress.check_every();
    let reached = copied / every * every;
    if reached <= reported {
        return reported;
    }
    let now = ctx.clock.now_micros();
    if every == 100 {
        progress.rows_done(reached, now, err);
    } else {
        let mut j = reported + every;
        while j <= reached {
            progress.rows_done(j, now, err);
            j += every;
        }
    }
    reached
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(scale: i32, partitions: i32, method: PartitionMethod) -> InitSpec {
        InitSpec {
            scale,
            partitions,
            partition_method: method,
            ..InitSpec::default()
        }
    }

    fn bounds(slices: &[Slice]) -> Vec<(&str, i64, i64)> {
        slices
            .iter()
            .map(|s| (s.table.as_str(), s.first, s.end))
            .collect()
    }

    #[test]
    fn range_partitions_are_loaded_one_per_task_with_their_bounds() {
        // 3 partitions of 1,000,000 rows: part size 333,334 (rounded up).
        let slices = account_slices(&spec(10, 3, PartitionMethod::Range), 2);
        assert_eq!(
            bounds(&slices),
            vec![
                ("pgbench_accounts_1", 0, 333_334),
                ("pgbench_accounts_2", 333_334, 666_668),
                ("pgbench_accounts_3", 666_668, 1_000_000),
            ]
        );
        assert!(slices.iter().all(|s| s.hash.is_none() && s.is_partition()));
    }

    #[test]
    fn hash_partitions_are_loaded_one_per_task_by_remainder() {
        let slices = account_slices(&spec(2, 3, PartitionMethod::Hash), 3);
        let remainders: Vec<_> = slices.iter().map(|s| (s.table.as_str(), s.hash)).collect();
        assert_eq!(
            remainders,
            vec![
                ("pgbench_accounts_1", Some((3, 0))),
                ("pgbench_accounts_2", Some((3, 1))),
                ("pgbench_accounts_3", Some((3, 2))),
            ]
        );
        assert!(slices.iter().all(|s| s.first == 0 && s.end == 200_000));
    }

    #[test]
    fn hash_routing_matches_postgresql() {
        // Read back from PostgreSQL 15: 1..20 inserted into a table
        // hash-partitioned by an int column into 3 partitions, each row's
        // partition remainder.
        let expected = [2, 0, 1, 0, 2, 0, 1, 0, 2, 1, 2, 2, 1, 1, 0, 0, 2, 0, 0, 0];
        let ours: Vec<u64> = (1..=20).map(|aid| hash_partition(aid, 3)).collect();
        assert_eq!(ours, expected);
        // bigint keys (scale 20000 and up) beyond 32 bits, 5 partitions.
        for (aid, remainder) in [
            (1, 0),
            (2_147_483_648, 1),
            (4_294_967_295, 4),
            (4_294_967_296, 0),
            (5_000_000_000, 0),
            (9_999_999_999, 3),
            (214_748_364_700_000, 2),
        ] {
            assert_eq!(hash_partition(aid, 5), remainder, "aid {aid}");
        }
    }

    #[test]
    fn other_layouts_are_cut_into_one_aid_range_per_job() {
        for s in [
            spec(3, 0, PartitionMethod::None),
            spec(3, 4, PartitionMethod::Hash),
            // Fewer partitions than jobs: ranges, not partitions.
            spec(3, 1, PartitionMethod::Range),
        ] {
            let slices = account_slices(&s, 5);
            assert_eq!(slices.len(), 5, "{s:?}");
            assert_eq!(
                bounds(&slices[..2]),
                vec![
                    ("pgbench_accounts", 0, 60_000),
                    ("pgbench_accounts", 60_000, 120_000)
                ],
                "{s:?}"
            );
            assert!(slices.iter().all(|s| !s.is_partition() && s.hash.is_none()));
        }
        // Uneven division still covers every row exactly once.
        let slices = account_slices(&spec(1, 0, PartitionMethod::None), 3);
        assert_eq!(slices[0].first, 0);
        assert_eq!(slices[2].end, 100_000);
        assert!(slices.windows(2).all(|w| w[0].end == w[1].first));
    }

    #[test]
    fn server_side_insert_covers_the_slice() {
        let slice = Slice {
            table: "pgbench_accounts_2".into(),
            first: 100,
            end: 200,
            hash: None,
        };
        assert_eq!(
            server_side_insert(&slice),
            "insert into pgbench_accounts_2(aid,bid,abalance,filler) select aid, (aid - 1) / 100000 + 1, 0, '' from generate_series(101, 200) as aid"
        );
        let hashed = Slice {
            hash: Some((3, 1)),
            ..slice
        };
        assert!(server_side_insert(&hashed).ends_with(
            "as aid where satisfies_hash_partition('pgbench_accounts'::regclass, 3, 1, aid)"
        ));
    }
}
