//! A campaign's `[[fault]]`s applied while a test runs: each at its time after the
//! run's start (promote a standby, an immediate shutdown or a SIGKILL of the primary,
//! replay paused or resumed, or a shell command), and the standbys' lag sampled on the
//! primary every second while it answers. What was done and measured goes into the
//! run's [`FailureCost`], with the outage the clients saw.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use pgsurge_engine::stop::StopFlag;
use pgsurge_observe::Pg;
use pgsurge_results::failure::{
    CommitTimeline, FailureCost, FaultApplied, LagSample, OutageWindow, COMMIT_BUCKET_US,
};
use pgsurge_server::Cluster;

use crate::spec::FaultSpec;
use crate::target::LiveTarget;

/// How long a shell command of `action = "command"` may run.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

/// What happened beside a run: the faults as applied, the lag samples, and when the
/// run started (Unix µs).
pub struct Beside {
    /// The faults, in the order applied.
    pub faults: Vec<FaultApplied>,
    /// The standbys' lag per second.
    pub lag: Vec<LagSample>,
    /// The run's start, Unix epoch µs.
    pub start_unix_us: i64,
}

/// Runs `run` with the faults applied at their times and the lag sampled beside it
/// (none without faults).
pub fn during<T>(
    faults: &[FaultSpec],
    target: &LiveTarget,
    stop: &StopFlag,
    run: impl FnOnce() -> T,
) -> (T, Option<Beside>) {
    if faults.is_empty() {
        return (run(), None);
    }
    let done = AtomicBool::new(false);
    let start = Instant::now();
    let start_unix_us = unix_us();
    std::thread::scope(|scope| {
        let applier = scope.spawn(|| apply_all(faults, target, start, &done, stop));
        let sampler = scope.spawn(|| sample_lag(target, start, &done));
        let out = run();
        done.store(true, Ordering::SeqCst);
        let faults = applier.join().unwrap_or_default();
        let lag = sampler.join().unwrap_or_default();
        let beside = Beside {
            faults,
            lag,
            start_unix_us,
        };
        (out, Some(beside))
    })
}

fn unix_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// Sleeps until `until` unless the run ends first; false when it ended.
fn wait_until(until: Instant, done: &AtomicBool, stop: &StopFlag) -> bool {
    loop {
        if done.load(Ordering::SeqCst) || stop.is_raised() {
            return false;
        }
        let now = Instant::now();
        if now >= until {
            return true;
        }
        std::thread::sleep((until - now).min(Duration::from_millis(20)));
    }
}

fn apply_all(
    faults: &[FaultSpec],
    target: &LiveTarget,
    start: Instant,
    done: &AtomicBool,
    stop: &StopFlag,
) -> Vec<FaultApplied> {
    let mut order: Vec<(f64, &FaultSpec)> = faults
        .iter()
        .map(|f| (f.at.seconds().unwrap_or(0.0), f))
        .collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut applied = Vec::new();
    for (at_s, f) in order {
        if !wait_until(start + Duration::from_secs_f64(at_s), done, stop) {
            break;
        }
        let error = apply(f, target).err();
        applied.push(FaultApplied {
            at_s,
            action: f.action.clone(),
            done_unix_us: unix_us(),
            error,
        });
    }
    applied
}

/// The standby a fault names (`replica = N`, 1 by default).
fn replica<'a>(f: &FaultSpec, target: &'a LiveTarget) -> Result<&'a Cluster, String> {
    let n = f.replica.unwrap_or(1) as usize;
    target
        .replicas
        .get(n.wrapping_sub(1))
        .ok_or_else(|| format!("target \"{}\" has no replica{n}", target.name))
}

fn primary(target: &LiveTarget) -> Result<&Cluster, String> {
    target
        .cluster
        .as_ref()
        .ok_or_else(|| format!("target \"{}\" is not a throwaway server", target.name))
}

/// Applies one fault.
fn apply(f: &FaultSpec, target: &LiveTarget) -> Result<(), String> {
    match f.action.as_str() {
        "promote" => replica(f, target)?.promote().map_err(|e| e.to_string()),
        "pause-replay" => replica(f, target)?
            .pause_replay(true)
            .map_err(|e| e.to_string()),
        "resume-replay" => replica(f, target)?
            .pause_replay(false)
            .map_err(|e| e.to_string()),
        "stop" => primary(target)?
            .stop_immediate(Duration::from_secs(30))
            .then_some(())
            .ok_or_else(|| "the primary did not stop within 30 s".to_string()),
        "kill" => primary(target)?
            .kill()
            .then_some(())
            .ok_or_else(|| "the primary did not die within 10 s".to_string()),
        "command" => {
            let command = f.command.as_deref().unwrap_or_default();
            let env = vec![("PGSURGE_TARGET".to_string(), target.name.clone())];
            let outcome = crate::hooks::run_hook("fault", command, &env, COMMAND_TIMEOUT);
            if outcome.exit == Some(0) {
                Ok(())
            } else {
                Err(format!(
                    "`{command}` exited with {:?}: {}",
                    outcome.exit,
                    outcome.output.trim()
                ))
            }
        }
        other => Err(format!("unknown fault action \"{other}\"")),
    }
}

/// The standbys' lag, read on the primary once a second until the run ends or the
/// primary stops answering.
fn sample_lag(target: &LiveTarget, start: Instant, done: &AtomicBool) -> Vec<LagSample> {
    let mut out = Vec::new();
    if target.replicas.is_empty() {
        return out;
    }
    let Ok(mut pg) = Pg::connect(&target.monitor) else {
        return out;
    };
    let sql = "SELECT application_name, \
               pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::bigint, \
               extract(epoch FROM replay_lag)::float8 \
               FROM pg_stat_replication ORDER BY application_name";
    let mut next = start + Duration::from_secs(1);
    let never = StopFlag::new();
    while wait_until(next, done, &never) {
        let t_s = start.elapsed().as_secs_f64();
        let Ok(rows) = pg.rows(sql) else { break };
        for row in rows {
            let text = |i: usize| row.get(i).cloned().flatten();
            out.push(LagSample {
                t_s,
                replica: text(0).unwrap_or_default(),
                bytes: text(1).and_then(|b| b.parse().ok()).unwrap_or(0),
                seconds: text(2).and_then(|s| s.parse().ok()),
            });
        }
        next += Duration::from_secs(1);
    }
    out
}

/// Puts the run's failure cost into `result`, and marks the target for a restart: its
/// servers are not what they were.
/// The monitored primary may be gone: `snapshot` reads the counters where the clients
/// ended, when it can.
pub fn record<S>(
    beside: Beside,
    result: &mut pgsurge_results::RunResult,
    target: &mut LiveTarget,
    snapshot: impl FnOnce(&mut Pg, &LiveTarget) -> crate::error::Result<S>,
) -> Option<S> {
    result.failure_cost = Some(cost(beside, result.commit_timeline.as_ref()));
    target.faulted = true;
    target.current_data = None;
    let mut pg = Pg::connect(&target.conn).ok()?;
    snapshot(&mut pg, target).ok()
}

/// The run's failure cost: the outage the clients saw from the first fault on, the
/// faults and the lag.
pub fn cost(beside: Beside, timeline: Option<&CommitTimeline>) -> FailureCost {
    let first_fault_us = beside
        .faults
        .first()
        .map(|f| beside.start_unix_us + (f.at_s * 1e6) as i64);
    let outage = timeline.and_then(|t| {
        let from_s = first_fault_us.map_or(0.0, |f| (f - t.origin_unix_us) as f64 / 1e6);
        let bucket_s = COMMIT_BUCKET_US as f64 / 1e6;
        pgsurge_analysis::outage::outage(&t.counts, bucket_s, from_s).map(|o| {
            OutageWindow::from_seconds(
                t.origin_unix_us,
                o.last_commit_before_s,
                o.first_commit_after_s,
                o.steady_tps,
                o.recovery_s,
            )
        })
    });
    FailureCost {
        outage,
        faults: beside.faults,
        lag: beside.lag,
        ..Default::default()
    }
}
