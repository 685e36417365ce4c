//! Outages: a test that failed while its server was unreachable (restarting, the network
//! gone) is not the test's result; the server is waited for with back-off and the test
//! run again. A failure is an outage by its error's class (`pgsurge_wire::ErrorClass`,
//! carried up through the engine and the observers), never by its text.

use std::time::Duration;

use indicatif::ProgressBar;
use pgsurge_engine::StopFlag;
use pgsurge_observe::Pg;
use pgsurge_store::{now_rfc3339, run_status, WarningRecord};
use pgsurge_wire::redact::redact;
use pgsurge_wire::{ConnConfig, ErrorClass};

use super::progress::{say, TestAt};
use super::state::{LoopState, RunCtx, Sink};
use crate::error::Result;
use crate::execute::{run_test, Interrupted, TestSetup};
use crate::spec::Campaign;
use crate::target::LiveTarget;

/// Runs the test; a failure while the server is unreachable (restarting, the network
/// gone) is not the test's result: the server is waited for and the test run again,
/// up to [`MAX_OUTAGE_RETRIES`] times. `None` on Ctrl-C.
pub(super) fn run_through_outages(
    campaign: &Campaign,
    setup: &TestSetup<'_>,
    at: &TestAt<'_>,
    target: &mut LiveTarget,
    ctx: &mut RunCtx<'_>,
    state: &mut LoopState,
    sink: &mut Sink<'_>,
) -> Result<Option<pgsurge_store::RunWrite>> {
    let plan = at.plan;
    let pb = sink.pb;
    let (base, per_test) = (at.base, state.per_test);
    let mut ticks = 0u64;
    let mut on_interval = |iv: &pgsurge_results::IntervalSample| {
        ticks += 1;
        pb.set_position((base + ticks).min(base + per_test));
        pb.set_message(at.line(format!("{:.0} tps, {:.2} ms", iv.tps, iv.latency_ms)));
    };
    let mut retries = 0;
    loop {
        let (write, failure) = match run_test(setup, target, ctx.stop, &mut on_interval) {
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
        match wait_for_target(target, &reason, state.wait, pb, sink.quiet, ctx.stop) {
            Waited::Back(after) => {
                retries += 1;
                sink.say(&format!(
                    "target \"{}\" is back after {:.0} s: running {} again",
                    target.name,
                    after.as_secs_f64(),
                    plan.key
                ));
            }
            Waited::Stopped => return Ok(None),
            Waited::Down(message) => {
                state.down[plan.target] = true;
                sink.say(&message);
                // Kept with the set (results show), printed once.
                sink.store.add_warning(&WarningRecord {
                    set_id: Some(sink.set_id),
                    run_id: None,
                    code: "outage".into(),
                    message,
                    created_at: now_rfc3339(),
                })?;
                return Ok(Some(write));
            }
        }
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
/// `wait`, saying so once.
pub(super) fn wait_for_target(
    target: &LiveTarget,
    reason: &str,
    wait: Duration,
    pb: &ProgressBar,
    quiet: bool,
    stop: &StopFlag,
) -> Waited {
    let started = std::time::Instant::now();
    say(
        pb,
        quiet,
        &format!(
            "target \"{}\" is unreachable ({reason}); waiting up to {} for it to come back",
            target.name,
            human_duration(wait)
        ),
    );
    let mut pause = Duration::from_millis(250);
    let mut last: String;
    loop {
        if stop.is_raised() {
            return Waited::Stopped;
        }
        match probe(&target.conn) {
            Ok(()) => return Waited::Back(started.elapsed()),
            Err(e) => last = e,
        }
        let elapsed = started.elapsed();
        if elapsed >= wait {
            return Waited::Down(format!(
                "target \"{}\" stayed unreachable for {} ({last}): its remaining tests fail",
                target.name,
                human_duration(elapsed)
            ));
        }
        pb.set_message(format!(
            "waiting for target \"{}\" ({} of {})",
            target.name,
            human_duration(elapsed),
            human_duration(wait)
        ));
        let slice = pause.min(wait - elapsed);
        let until = std::time::Instant::now() + slice;
        while std::time::Instant::now() < until && !stop.is_raised() {
            std::thread::sleep(Duration::from_millis(50));
        }
        pause = (pause * 2).min(MAX_BACKOFF);
    }
}

pub(super) fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{:.0}s", d.as_secs_f64())
    }
}
