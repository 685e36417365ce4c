//! The standbys' replication lag beside a run ([`LagSampler`]): read on the primary
//! once a second from `pg_stat_replication`, in bytes of WAL not yet replayed and in
//! time (`replay_lag`; both, since the time lag hides a stalled replay), until the run
//! ends or the primary stops answering.

use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pgsurge_results::failure::LagSample;
use pgsurge_wire::ConnConfig;

use crate::sql_session::Pg;

const LAG_SQL: &str = "SELECT application_name, \
                       pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::bigint, \
                       extract(epoch FROM replay_lag)::float8 \
                       FROM pg_stat_replication ORDER BY application_name";

/// A thread reading the standbys' lag on the primary every second.
pub struct LagSampler {
    done: Sender<()>,
    thread: JoinHandle<Vec<LagSample>>,
}

impl LagSampler {
    /// Starts sampling on the primary `primary`; the first sample is taken a second
    /// after now, and sample times are seconds after now.
    pub fn start(primary: &ConnConfig) -> LagSampler {
        let (done, rx) = channel::<()>();
        let primary = primary.clone();
        let start = Instant::now();
        let thread = std::thread::spawn(move || {
            let mut out = Vec::new();
            let Ok(mut pg) = Pg::connect(&primary) else {
                return out;
            };
            let mut next = start + Duration::from_secs(1);
            loop {
                let wait = next.saturating_duration_since(Instant::now());
                if rx.recv_timeout(wait) != Err(RecvTimeoutError::Timeout) {
                    return out;
                }
                let Ok(samples) = read(&mut pg, start.elapsed().as_secs_f64()) else {
                    return out;
                };
                out.extend(samples);
                next += Duration::from_secs(1);
            }
        });
        LagSampler { done, thread }
    }

    /// Stops sampling and returns the samples, in time order.
    pub fn finish(self) -> Vec<LagSample> {
        let _ = self.done.send(());
        self.thread.join().unwrap_or_default()
    }
}

/// One reading of every standby's lag on the primary `pg`, stamped `t_s`.
pub fn read(pg: &mut Pg, t_s: f64) -> crate::Result<Vec<LagSample>> {
    Ok(pg
        .rows(LAG_SQL)?
        .iter()
        .map(|row| sample(t_s, row))
        .collect())
}

fn sample(t_s: f64, row: &[Option<String>]) -> LagSample {
    let text = |i: usize| row.get(i).cloned().flatten();
    LagSample {
        t_s,
        replica: text(0).unwrap_or_default(),
        bytes: text(1).and_then(|b| b.parse().ok()).unwrap_or(0),
        seconds: text(2).and_then(|s| s.parse().ok()),
    }
}
