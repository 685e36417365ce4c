//! Replaying a PostgreSQL log ([`ReplaySpec`]) against a server: a reader thread
//! (`reader`) turns the logs into events and hands each session's to one driver thread
//! (`driver`), which plays them on its own connections at their times; at the end the
//! logged and replayed counts become the fidelity report ([`ReplayReport`]).
//!
//! This is the engine's second kind of run beside `run` (pgbench scripts): it shares the
//! run clock, the stop flag and its wake-up, cancel requests and the common start of
//! distributed runs, and nothing of the pgbench client's hot path.
//!
//! | module | owns |
//! |---|---|
//! | [`reader`] | logs → events, this generator's share, read-ahead bounds, batches and statement buffers sent back by the drivers |
//! | `driver` | one thread's sessions: connections, timing, order, answers, tally |

mod driver;
pub mod reader;

use std::path::PathBuf;
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use pgsurge_replay::check::{fill_digests, log_files, settings};
use pgsurge_replay::fidelity::ReplayTally;
use pgsurge_replay::log::{LogFiles, OpenError};
use pgsurge_replay::report::{
    fingerprint_rows, replay_summary, LagReport, ReadSummary, ReplayReport, ReplaySummary,
    REPORT_VERSION,
};
use pgsurge_replay::{Order, ReplaySpec};

use crate::clock::RunClock;
use crate::stop::StopFlag;

/// Batches queued per driver thread (each of `reader::BATCH` events).
const CHANNEL_BATCHES: usize = 32;

/// Batches a driver may have taken and not sent back yet: those its sessions' queues
/// hold (`driver::QUEUED_LIMIT` events) and a few being filled.
const RETURNED_BATCHES: usize = driver::QUEUED_LIMIT / reader::BATCH + 8;

/// Why a replay could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The spec breaks a rule.
    #[error("{0}")]
    Invalid(String),
    /// The logs cannot be opened.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// A line of the logs cannot be read (and `--skip-unreadable` was not given).
    #[error("{0} (--skip-unreadable skips such lines and counts them)")]
    Unreadable(String),
    /// Threads could not be started.
    #[error("{0}")]
    Setup(String),
}

/// Replays `spec`; `stop` ends it early (the report then covers what was sent).
pub fn replay(spec: &ReplaySpec, stop: &StopFlag) -> Result<ReplayReport, ReplayError> {
    spec.validate().map_err(ReplayError::Invalid)?;
    let mut files = LogFiles::open(&spec.logs, spec.format, &spec.log_line_prefix)?;
    files.limit_entries(spec.limits.entry_bytes);
    let mut logs = log_files(spec, files.formats());
    let digests = files.digests();
    let paths: Arc<[PathBuf]> = spec.logs.clone().into();
    let threads = match spec.order {
        Order::Strict { .. } => 1,
        Order::Independent => spec.threads,
    };
    let clock = RunClock::new();
    let start = Arc::new(OnceLock::new());
    let (ready_tx, ready_rx) = sync_channel(1);
    let mut senders = Vec::new();
    let mut receivers = Vec::new();
    // Every batch a driver can hold fits in the way back, so none is dropped there.
    let (returns_tx, returns_rx) = sync_channel(threads * (CHANNEL_BATCHES + RETURNED_BATCHES));
    for _ in 0..threads {
        let (tx, rx) = sync_channel(CHANNEL_BATCHES);
        senders.push(tx);
        receivers.push(rx);
    }
    // The replay's own stop: an unreadable line, a stall, a thread that failed. The
    // caller's stop is watched beside it (and never raised here).
    let halt = StopFlag::new();
    let reader_ctx = reader::ReaderCtx {
        files,
        paths: Arc::clone(&paths),
        skip_unreadable: spec.skip_unreadable,
        pacing: spec.pacing,
        share: spec.share,
        limits: spec.limits,
        senders,
        returns: returns_rx,
        clock,
        start: Arc::clone(&start),
        ready: ready_tx,
        stop: stop.clone(),
        halt: halt.clone(),
    };
    let reader = std::thread::Builder::new()
        .name("pgsurge-replay-read".into())
        .spawn(move || reader::read(reader_ctx))
        .map_err(|e| ReplayError::Setup(format!("could not start the reader thread: {e}")))?;
    // The schedule starts once the first events are read (or at the common start).
    let _ = ready_rx.recv();
    let start_us = match spec.start_at_epoch_us {
        Some(at) => at - clock.to_epoch_us(0),
        None => clock.now() + 1_000,
    };
    let _ = start.set(start_us);
    if spec.start_at_epoch_us.is_some() {
        while clock.now() < start_us && !stop.is_raised() {
            stop.wait(Duration::from_micros(
                (start_us - clock.now()).clamp(1, 100_000) as u64,
            ));
        }
    }
    let mut drivers = Vec::new();
    for (t, events) in receivers.into_iter().enumerate() {
        let ctx = driver::DriverCtx {
            events,
            clock,
            start_us,
            pacing: spec.pacing,
            order: spec.order,
            target: spec.target.clone(),
            stop: stop.clone(),
            halt: halt.clone(),
            paths: Arc::clone(&paths),
            returns: reader::Returns::new(returns_tx.clone()),
        };
        let h = std::thread::Builder::new()
            .name(format!("pgsurge-replay-{t}"))
            .spawn(move || driver::drive(ctx))
            .map_err(|e| ReplayError::Setup(format!("could not start a driver thread: {e}")));
        match h {
            Ok(h) => drivers.push(h),
            Err(e) => {
                halt.raise();
                return Err(e);
            }
        }
    }
    let mut tally = ReplayTally::default();
    let mut ended_early = None;
    for h in drivers {
        match h.join() {
            Ok(end) => {
                tally.merge(&end.tally);
                if ended_early.is_none() {
                    ended_early = end.ended_early;
                }
                // One driver's stall or failure ends the replay.
                if ended_early.is_some() {
                    halt.raise();
                }
            }
            Err(_) => ended_early = Some("a driver thread panicked".into()),
        }
    }
    let elapsed_s = (clock.now() - start_us).max(0) as f64 / 1e6;
    let read = reader
        .join()
        .map_err(|_| ReplayError::Setup("the reader thread panicked".into()))?;
    if let Some(u) = read.unreadable {
        return Err(ReplayError::Unreadable(u));
    }
    fill_digests(&mut logs, &digests);
    let settings = settings(spec, threads);
    let scheduled = !settings.max;
    Ok(ReplayReport {
        format: "pgsurge-replay".into(),
        version: REPORT_VERSION,
        logs,
        settings,
        read: ReadSummary::from_counts(
            &read.counts,
            read.skipped,
            read.skipped_examples,
            read.fingerprints.limit_reached(),
        ),
        replay: ReplaySummary {
            start_time_unix_us: clock.to_epoch_us(start_us),
            ..replay_summary(&tally, elapsed_s, read.span_us as f64 / 1e6)
        },
        lag: LagReport::of(&tally.lag, scheduled),
        fingerprints: fingerprint_rows(read.fingerprints.table(), &read.logged, &tally.counts),
        ended_early,
    })
}
