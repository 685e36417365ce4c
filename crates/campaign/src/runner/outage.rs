//! Outages: a test that failed while its server was unreachable (restarting, the network
//! gone) is not the test's result; the server is waited for with back-off and the test
//! run again. A failure is an outage by its error's class (`pgsurge_wire::ErrorClass`,
//! carried up through the engine and the observers), never by its text.

use std::time::Duration;

use pgsurge_engine::StopFlag;
use pgsurge_events::progress::human_duration;
use pgsurge_events::{Event, Outage, Second};
use pgsurge_observe::Pg;
use pgsurge_store::run_status;
use pgsurge_wire::redact::redact;
use pgsurge_wire::{ConnConfig, ErrorClass};

use super::state::{LoopState, RunCtx, Sink, TestAt};
use crate::error::Result;
use crate::execute::{run_test, Interrupted, TestSetup};
use crate::spec::Campaign;
use crate::target::LiveTarget;

/// Runs the test; a failure while the server is unreachable (restarting, the network
/// gone) is not the test's result: the server is waited for and the test run again,
/// up to [`MAX_OUTAGE_RETRIES`] times, each new attempt told before its seconds. Each
/// second of its runs is told as it comes.
/// `None` on Ctrl-C.
pub(super) fn run_through_outages(
    campaign: &Campaign,
    setup: &TestSetup<'_>,
    at: &TestAt<'_>,
    target: &mut LiveTarget,
    ctx: &mut RunCtx<'_>,
    state: &mut LoopState,
    sink: &mut Sink<'_, '_>,
) -> Result<Option<pgsurge_store::RunWrite>> {
    let plan = at.plan;
    let mut retries = 0;
    loop {
        let mut told = Ok(());
        let mut on_interval = |second: &Second| {
            let test = at.test();
            if let (Ok(()), Err(e)) = (&told, sink.events.emit(Event::Interval { test, second })) {
                told = Err(e);
            }
        };
        let tested = run_test(setup, target, ctx.stop, &mut on_interval);
        told?;
        let (write, failure) = match tested {
            Ok(t) => (t.write, t.failure),
            Err(Interrupted::Stopped) => return Ok(None),
        };
        if write.run.status != run_status::FAILED || state.down[plan.target] {
            return Ok(Some(write));
        }
        let error = write.run.error.as_deref().unwrap_or("");
        let unreachable = probe(&target.conn).err();
        // A distributed test's failure quotes its generators (a kube Job's pods, a
        // process that hung or left no result), whose errors say nothing of the
        // server as seen from here: for it, only the probe tells an outage.
        let from_generators = campaign.spec.distributed.is_some();
        let lost = failure == Some(ErrorClass::Connection);
        if retries >= MAX_OUTAGE_RETRIES || (unreachable.is_none() && (from_generators || !lost)) {
            return Ok(Some(write));
        }
        let reason = unreachable.unwrap_or_else(|| first_line(error).to_string());
        let waited = wait_for_target(target, &reason, state.wait, sink, ctx.stop)?;
        let outage = match &waited {
            Waited::Back(after) => Outage::Back {
                after: *after,
                key: &plan.key,
            },
            Waited::Stopped => return Ok(None),
            // Kept with the set (results show), said once.
            Waited::Down(message) => Outage::Down { message },
        };
        let target = &target.name;
        sink.events.emit(Event::Outage { target, outage })?;
        retries += 1;
        if let Waited::Down(_) = waited {
            state.down[plan.target] = true;
            return Ok(Some(write));
        }
        // The cut-short attempt's seconds are not the test's: its series starts again.
        let attempt = retries + 1;
        sink.events.emit(Event::TestRunAgain {
            test: at.test(),
            attempt,
        })?;
    }
}

/// Times one test is run again after the server went away during it.
pub(super) const MAX_OUTAGE_RETRIES: u32 = 3;

/// Longest pause between two connection attempts while waiting out an outage.
pub(super) const MAX_BACKOFF: Duration = Duration::from_secs(5);

pub(super) enum Waited {
    /// The server answers again, after this long.
    Back(Duration),
    /// Ctrl-C.
    Stopped,
    /// Still unreachable when the wait ended: the message to show and store.
    Down(String),
}

/// Tries one connection; the reason (password masked) when there is none.
pub(super) fn probe(conn: &ConnConfig) -> std::result::Result<(), String> {
    Pg::connect(conn)
        .map(|_| ())
        .map_err(|e| first_line(&redact(&e.to_string())).to_string())
}

pub(super) fn first_line(s: &str) -> &str {
    s.lines().find(|l| !l.trim().is_empty()).unwrap_or(s).trim()
}

/// Waits (retrying with back-off) until `target` accepts a connection, for at most
/// `wait`, telling so.
pub(super) fn wait_for_target(
    target: &LiveTarget,
    reason: &str,
    wait: Duration,
    sink: &mut Sink<'_, '_>,
    stop: &StopFlag,
) -> Result<Waited> {
    let started = std::time::Instant::now();
    let name = &target.name;
    let outage = Outage::Unreachable { reason, wait };
    sink.events.emit(Event::Outage {
        target: name,
        outage,
    })?;
    let mut pause = Duration::from_millis(250);
    let mut last: String;
    loop {
        if stop.is_raised() {
            return Ok(Waited::Stopped);
        }
        match probe(&target.conn) {
            Ok(()) => return Ok(Waited::Back(started.elapsed())),
            Err(e) => last = e,
        }
        let elapsed = started.elapsed();
        if elapsed >= wait {
            return Ok(Waited::Down(format!(
                "target \"{name}\" stayed unreachable for {} ({last}): its remaining tests fail",
                human_duration(elapsed)
            )));
        }
        let outage = Outage::Waiting { elapsed, wait };
        sink.events.emit(Event::Outage {
            target: name,
            outage,
        })?;
        let slice = pause.min(wait - elapsed);
        let until = std::time::Instant::now() + slice;
        while std::time::Instant::now() < until && !stop.is_raised() {
            std::thread::sleep(Duration::from_millis(50));
        }
        pause = (pause * 2).min(MAX_BACKOFF);
    }
}
