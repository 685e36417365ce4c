//! The reader thread of a replay: reads the logs ([`LogFiles`]) into events
//! ([`Assembler`]), keeps this generator's share of the sessions, and hands each event
//! to the driver thread of its session in batches. It reads ahead of the replay, but in
//! a paced replay no further than [`HORIZON_US`] of schedule, and never more than the
//! channels hold: a log of any length replays in bounded memory.
//!
//! Nothing is allocated per statement once the replay is under way: the drivers send
//! the batches back ([`Returns`]), emptied or holding the statements they played, and
//! the reader fills them again, and the statements' buffers, with the next events.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, OnceLock};

use pgsurge_replay::check::SKIPPED_EXAMPLES;
use pgsurge_replay::events::Event;
use pgsurge_replay::fidelity::Counts;
use pgsurge_replay::fingerprint::Fingerprints;
use pgsurge_replay::limits::Limits;
use pgsurge_replay::log::{LogFiles, Unreadable};
use pgsurge_replay::sessions::{describe, Assembler, ReadCounts};
use pgsurge_replay::{Pacing, Share};

use crate::clock::RunClock;
use crate::stop::StopFlag;

/// Events per batch handed to a driver.
pub const BATCH: usize = 512;

/// How far ahead of the schedule a paced replay reads (µs).
const HORIZON_US: i64 = 2_000_000;

/// What the reader hands back when the logs are read.
pub struct ReaderEnd {
    /// The logged side of the fidelity report.
    pub logged: Counts,
    /// The log's fingerprints.
    pub fingerprints: Fingerprints,
    /// What was read.
    pub counts: ReadCounts,
    /// Unreadable lines skipped.
    pub skipped: u64,
    /// The first of them, quoted.
    pub skipped_examples: Vec<String>,
    /// The first unreadable line, when they are not skipped: the replay ends.
    pub unreadable: Option<String>,
    /// Offset of the last event played (µs).
    pub span_us: i64,
}

/// What the reader needs.
pub struct ReaderCtx {
    /// The logs.
    pub files: LogFiles,
    /// Their paths, for messages.
    pub paths: Arc<[PathBuf]>,
    /// `--skip-unreadable`.
    pub skip_unreadable: bool,
    /// The replay's pacing (a paced replay reads no further than its horizon).
    pub pacing: Pacing,
    /// This generator's share of the sessions.
    pub share: Option<Share>,
    /// The bounds on what the logs can make the replay hold.
    pub limits: Limits,
    /// One channel per driver thread; a session's events go to thread `session % n`.
    pub senders: Vec<SyncSender<Vec<Event>>>,
    /// The batches the drivers send back (see [`Returns`]).
    pub returns: Receiver<Vec<Event>>,
    /// The run clock.
    pub clock: RunClock,
    /// The schedule's start on the run clock, set once the first events are read.
    pub start: Arc<OnceLock<i64>>,
    /// Raised when the first events are ready (or the logs are read).
    pub ready: SyncSender<()>,
    /// The caller's stop.
    pub stop: StopFlag,
    /// Raised by the reader when a line cannot be read: the drivers stop.
    pub halt: StopFlag,
}

/// Reads the logs to their end (or until the replay stops).
pub fn read(ctx: ReaderCtx) -> ReaderEnd {
    let ReaderCtx {
        mut files,
        paths,
        skip_unreadable,
        pacing,
        share,
        limits,
        senders,
        returns,
        clock,
        start,
        ready,
        stop,
        halt,
    } = ctx;
    let mut asm = Assembler::with_share(share).with_limits(&limits);
    let mut end = ReaderEnd {
        logged: Counts::default(),
        fingerprints: Fingerprints::new(),
        counts: ReadCounts::default(),
        skipped: 0,
        skipped_examples: Vec::new(),
        unreadable: None,
        span_us: 0,
    };
    let mut out = Dispatch {
        batches: senders.iter().map(|_| Vec::with_capacity(BATCH)).collect(),
        empties: Vec::new(),
        sent_since_returns: true,
        returns,
        senders,
        ready: Some(ready),
        span_us: 0,
        gone: false,
    };
    while let Some(entry) = files.next() {
        if stop.is_raised() || halt.is_raised() || out.gone {
            break;
        }
        let pushed = entry.and_then(|e| {
            let pushed = asm.push(&e);
            files.recycle(e);
            pushed
        });
        if let Err(u) = pushed {
            if !skip(&mut end, &u, &paths, skip_unreadable) {
                halt.raise();
                break;
            }
        }
        while let Some(ev) = asm.pop() {
            out.event(ev, pacing, &clock, &start, &stop);
        }
        if out.sent_since_returns {
            out.take_returns(&mut asm);
        }
    }
    if end.unreadable.is_none() && !stop.is_raised() {
        asm.finish();
        while let Some(ev) = asm.pop() {
            out.event(ev, pacing, &clock, &start, &stop);
        }
    }
    out.flush_all();
    out.open();
    end.span_us = out.span_us;
    let (logged, fingerprints, counts) = asm.into_parts();
    end.logged = logged;
    end.fingerprints = fingerprints;
    end.counts = counts;
    end
}

/// Counts an unreadable line; false when the replay must end.
fn skip(end: &mut ReaderEnd, u: &Unreadable, paths: &[PathBuf], skipping: bool) -> bool {
    let text = format!("{}: {}", describe(u.at, paths), u.reason);
    if !skipping {
        end.unreadable = Some(text);
        return false;
    }
    end.skipped += 1;
    if end.skipped_examples.len() < SKIPPED_EXAMPLES {
        end.skipped_examples.push(text);
    }
    true
}

/// The batches being filled for the drivers.
struct Dispatch {
    senders: Vec<SyncSender<Vec<Event>>>,
    batches: Vec<Vec<Event>>,
    /// Batches sent back, emptied, to be filled again.
    empties: Vec<Vec<Event>>,
    /// A batch went out since the returns were last taken.
    sent_since_returns: bool,
    returns: Receiver<Vec<Event>>,
    ready: Option<SyncSender<()>>,
    span_us: i64,
    /// A driver is gone (the replay ended): reading stops.
    gone: bool,
}

impl Dispatch {
    /// Hands `ev` to its driver, after the wait a paced replay's horizon asks for.
    fn event(
        &mut self,
        ev: Event,
        pacing: Pacing,
        clock: &RunClock,
        start: &OnceLock<i64>,
        stop: &StopFlag,
    ) {
        let no = ev.session();
        let offset = ev.offset_us();
        self.span_us = self.span_us.max(offset);
        if let (Pacing::Speed(speed), Some(&t0)) = (pacing, start.get()) {
            let due = t0 + (offset as f64 / speed) as i64;
            if due - clock.now() > HORIZON_US {
                self.flush_all();
                while !stop.is_raised() && due - clock.now() > HORIZON_US {
                    let wait = (due - clock.now() - HORIZON_US).clamp(1_000, 100_000);
                    stop.wait(std::time::Duration::from_micros(wait as u64));
                }
            }
        }
        let n = self.senders.len();
        let t = no as usize % n;
        self.batches[t].push(ev);
        if self.batches[t].len() >= BATCH {
            self.flush(t);
        }
    }

    fn flush(&mut self, t: usize) {
        if self.batches[t].is_empty() {
            return;
        }
        let next = self
            .empties
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(BATCH));
        let batch = std::mem::replace(&mut self.batches[t], next);
        if self.senders[t].send(batch).is_err() {
            self.gone = true;
        }
        self.sent_since_returns = true;
        self.open();
    }

    fn flush_all(&mut self) {
        for t in 0..self.batches.len() {
            self.flush(t);
        }
    }

    /// Takes the batches the drivers sent back: the statements in them give their
    /// buffers to the assembler, and the batches are filled again.
    fn take_returns(&mut self, asm: &mut Assembler) {
        self.sent_since_returns = false;
        while let Ok(mut batch) = self.returns.try_recv() {
            for ev in batch.drain(..) {
                asm.recycle(ev);
            }
            self.empties.push(batch);
        }
    }

    /// Tells the replay its first events are there.
    fn open(&mut self) {
        if let Some(r) = self.ready.take() {
            let _ = r.send(());
        }
    }
}

/// A driver's way back to the reader: the batches it took, emptied, and the statements
/// it played, in batches of their own, so that the reader fills them again instead of
/// allocating. What the reader cannot take (it ended) is dropped.
pub struct Returns {
    tx: SyncSender<Vec<Event>>,
    /// Statements played, going back.
    played: Vec<Event>,
    /// Emptied batches, to carry the statements played.
    empties: Vec<Vec<Event>>,
}

/// Emptied batches a driver keeps for the statements it plays.
const KEPT_EMPTIES: usize = 2;

impl Returns {
    /// Sends back on `tx`.
    pub fn new(tx: SyncSender<Vec<Event>>) -> Self {
        Returns {
            tx,
            played: Vec::new(),
            empties: Vec::new(),
        }
    }

    /// A batch whose events were all taken.
    pub fn emptied(&mut self, batch: Vec<Event>) {
        debug_assert!(batch.is_empty());
        if self.empties.len() < KEPT_EMPTIES {
            self.empties.push(batch);
        } else {
            let _ = self.tx.try_send(batch);
        }
    }

    /// An event played (a statement sent and answered, or not sent): its buffers go back.
    pub fn played(&mut self, ev: Event) {
        if self.played.capacity() == 0 {
            match self.empties.pop() {
                Some(b) => self.played = b,
                None => return,
            }
        }
        self.played.push(ev);
        if self.played.len() == self.played.capacity() {
            let _ = self.tx.try_send(std::mem::take(&mut self.played));
        }
    }
}
