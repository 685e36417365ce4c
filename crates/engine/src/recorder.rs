//! The real [`Recorder`]: feeds each thread's `pgsurge-results` statistics (and through
//! them the shared progress counters), and the thread's `-l` transaction or aggregate log.

use pgsurge_results::failure::{AckRecorder, COMMIT_BUCKET_US};
use pgsurge_results::stats::{FailureKind, ThreadStats, TxnOutcome, TxnSample};
use pgsurge_results::txnlog::{AggregateLogWriter, TxnLogEntry, TxnLogWriter};

use crate::client::{Recorder, TxnEnd, TxnStatus};
use crate::clock::RunClock;

/// A thread's `-l` output.
pub enum ThreadLog {
    /// One line per transaction, sampled with the thread's `sample` stream.
    PerTxn {
        /// Buffered writer of this thread's log file (`pgbench_log.PID[.N]`).
        writer: TxnLogWriter,
        /// `--sampling-rate` (0 = log everything).
        sampling_rate: f64,
        /// The thread's sample stream.
        sample: pgsurge_script::Prng,
    },
    /// `--aggregate-interval`.
    Aggregate(AggregateLogWriter),
}

/// Statistics and logs of one driver thread.
pub struct ThreadRecorder {
    /// The thread's statistics.
    pub stats: ThreadStats,
    /// Its log, if `-l`.
    pub log: Option<ThreadLog>,
    /// First log write error (reported at the end).
    pub log_error: Option<std::io::Error>,
    /// `--reconnect`: commits per [`COMMIT_BUCKET_US`] of the run clock.
    pub commits: Option<Vec<u32>>,
    /// `--reconnect`: the transactions each client was told were committed.
    pub acks: AckRecorder,
    /// `--reconnect`: when the thread's first transaction failed with its connection
    /// lost, µs of the run clock (the outage is the stretch without a commit around it).
    pub first_lost: Option<i64>,
    /// `--replica-file`: per second of the run clock, the transactions committed on a
    /// standby and the stale ones among them.
    pub replica_reads: Vec<[u32; 2]>,
    clock: RunClock,
}

impl ThreadRecorder {
    /// Wraps `stats` (and `log`).
    pub fn new(stats: ThreadStats, log: Option<ThreadLog>, clock: RunClock) -> Self {
        ThreadRecorder {
            stats,
            log,
            log_error: None,
            commits: None,
            acks: AckRecorder::default(),
            first_lost: None,
            replica_reads: Vec::new(),
            clock,
        }
    }

    /// Counts commits per [`COMMIT_BUCKET_US`] and notes the first lost connection
    /// (`--reconnect`: the outage is the stretch without a commit around it).
    pub fn with_commit_timeline(mut self) -> Self {
        self.commits = Some(Vec::new());
        self
    }

    /// Adds `-C` connection time (µs).
    pub fn connection_time(&mut self, us: i64) {
        self.stats.record_connection(us.max(0) as u64);
    }
}

fn outcome(s: TxnStatus) -> TxnOutcome {
    match s {
        TxnStatus::Success => TxnOutcome::Success,
        TxnStatus::Skipped => TxnOutcome::Skipped,
        TxnStatus::Serialization => TxnOutcome::Failed(FailureKind::Serialization),
        TxnStatus::Deadlock => TxnOutcome::Failed(FailureKind::Deadlock),
        TxnStatus::ConnectionLost => TxnOutcome::Failed(FailureKind::ConnectionLost),
        TxnStatus::ReadOnly => TxnOutcome::Failed(FailureKind::ReadOnly),
        TxnStatus::Cancelled => TxnOutcome::Failed(FailureKind::Cancelled),
    }
}

/// Adds a successful transaction to its bucket (the vector grows as the run goes on)
/// and to its client's acknowledged transactions.
#[cold]
#[inline(never)]
fn count_commit(commits: &mut Vec<u32>, acks: &mut AckRecorder, t: &TxnEnd) {
    if t.status != TxnStatus::Success || t.now < 0 {
        return;
    }
    acks.acknowledged(t.client as u32, t.txn_no);
    let i = (t.now / COMMIT_BUCKET_US) as usize;
    if commits.len() <= i {
        commits.resize(i + 1 + i / 4, 0);
    }
    commits[i] += 1;
}

/// The thread's first transaction failed with its connection lost, at `now`: once per
/// run at most, on the way to reconnecting.
#[cold]
#[inline(never)]
fn note_first_lost(first_lost: &mut Option<i64>, now: i64) {
    *first_lost = Some(now.max(0));
}

impl Recorder for ThreadRecorder {
    #[inline]
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.pgsurge")]
    fn txn(&mut self, t: &TxnEnd) {
        let outcome = outcome(t.status);
        self.stats.record_txn(&TxnSample {
            script: t.script,
            outcome,
            tries: t.tries,
            latency_us: t.latency_us as f64,
            lag_us: t.lag_us as f64,
        });
        if let Some(commits) = &mut self.commits {
            count_commit(commits, &mut self.acks, t);
            if t.status == TxnStatus::ConnectionLost && self.first_lost.is_none() {
                note_first_lost(&mut self.first_lost, t.now);
            }
        }
        let Some(log) = &mut self.log else { return };
        let entry = TxnLogEntry {
            client_id: t.client as u32,
            txn_no: t.txn_no as u64,
            script: t.script,
            outcome,
            latency_us: t.latency_us as f64,
            lag_us: t.lag_us as f64,
            tries: t.tries,
            now_epoch_us: self.clock.to_epoch_us(t.now),
        };
        let r = match log {
            ThreadLog::PerTxn {
                writer,
                sampling_rate,
                sample,
            } => {
                if *sampling_rate != 0.0 && sample.double() > *sampling_rate {
                    return;
                }
                writer.log(&entry)
            }
            ThreadLog::Aggregate(w) => w.log(&entry),
        };
        if let Err(e) = r {
            self.log_error.get_or_insert(e);
        }
    }

    #[inline]
    fn command_latency(&mut self, script: usize, cmd: usize, us: i64) {
        self.stats.record_command(script, cmd, us as f64);
    }

    fn command_failure(&mut self, script: usize, cmd: usize) {
        self.stats.record_command_failure(script, cmd);
    }

    fn command_retry(&mut self, script: usize, cmd: usize) {
        self.stats.record_command_retry(script, cmd);
    }

    fn replica_read(&mut self, stale: bool, now: i64) {
        let i = (now.max(0) / 1_000_000) as usize;
        if self.replica_reads.len() <= i {
            self.replica_reads.resize(i + 1, [0, 0]);
        }
        let c = &mut self.replica_reads[i];
        c[0] += 1;
        c[1] += u32::from(stale);
    }
}
