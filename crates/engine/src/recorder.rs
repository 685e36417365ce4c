//! The real [`Recorder`]: feeds each thread's `pgsurge-results` statistics (and through
//! them the shared progress counters), and the thread's `-l` transaction or aggregate log.

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
    clock: RunClock,
}

impl ThreadRecorder {
    /// Wraps `stats` (and `log`).
    pub fn new(stats: ThreadStats, log: Option<ThreadLog>, clock: RunClock) -> Self {
        ThreadRecorder {
            stats,
            log,
            log_error: None,
            clock,
        }
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
    }
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
}
