//! What the test loop shares and keeps: the invocation's context, the state carried
//! from one test to the next, a test's place in the invocation, and the sink a test's
//! outcome goes to (the events, which the store and the terminal consume, and the
//! counts).

use std::collections::BTreeMap;
use std::time::Duration;

use pgsurge_engine::StopFlag;
use pgsurge_events::{Emitter, Event, TestRef};

use super::options::Outcome;
use crate::error::Result;
use crate::matrix::TestPlan;
use crate::target_lock::TargetLock;

/// What every test of one invocation shares.
pub(super) struct RunCtx<'a> {
    pub(super) set_id: i64,
    pub(super) stop: &'a StopFlag,
    pub(super) quiet: bool,
    /// The server locks of the campaign's existing-server targets.
    pub(super) locks: &'a mut [Option<TargetLock>],
    /// The `set_start` hook's facts, once it has run in this invocation.
    pub(super) set_start_facts: Option<Vec<pgsurge_store::FactRecord>>,
    /// The campaign's inputs ([`inputs::fact`]), stored with every test.
    pub(super) inputs: pgsurge_store::FactRecord,
}

/// What the test loop keeps from one test to the next.
pub(super) struct LoopState {
    /// The `set_start` hook's facts, stored with every test.
    pub(super) set_start_facts: Vec<pgsurge_store::FactRecord>,
    /// How long an outage is waited out.
    pub(super) wait: Duration,
    /// The store's location, for distributed generators that write to it.
    pub(super) store_location: String,
    /// Targets given up on after an outage longer than `wait`: their remaining tests
    /// fail (a server back by then runs them) without a message each.
    pub(super) down: Vec<bool>,
    /// Swept settings a throwaway target did not start with, and why.
    pub(super) not_started: BTreeMap<(usize, Vec<(String, String)>), String>,
    /// Seconds of loading per unit of scale, learnt from the last load (for its ETA).
    pub(super) secs_per_scale: f64,
}

/// One test of the loop: its place in the invocation and its plan.
pub(super) struct TestAt<'p> {
    /// Its number, from 1.
    pub(super) n: usize,
    /// Tests in this invocation.
    pub(super) of: usize,
    pub(super) plan: &'p TestPlan,
    pub(super) target: &'p str,
}

impl TestAt<'_> {
    /// The test as events name it.
    pub(super) fn test(&self) -> TestRef<'_> {
        TestRef {
            n: self.n,
            of: self.of,
            key: &self.plan.key,
            target: self.target,
            repeat: self.plan.repeat,
        }
    }
}

/// Whether the loop goes on after a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flow {
    Next,
    Stop,
}

/// Where a test's outcome goes: the events (the store, the terminal, other consumers)
/// and the invocation's counts.
pub(super) struct Sink<'s, 'e> {
    pub(super) events: &'s mut Emitter<'e>,
    pub(super) out: &'s mut Outcome,
    pub(super) quiet: bool,
    pub(super) set_id: i64,
}

impl Sink<'_, '_> {
    pub(super) fn say(&mut self, line: &str) -> Result<()> {
        Ok(self.events.say(line)?)
    }

    /// What the runner does now, for `at`.
    pub(super) fn doing(&mut self, at: &TestAt<'_>, what: &str) -> Result<()> {
        let test = Some(at.test());
        Ok(self.events.emit(Event::Doing { test, what })?)
    }

    /// Ends a test: stored (by the store's consumer), its id kept, its outcome said
    /// when `said`.
    pub(super) fn ended(
        &mut self,
        at: &TestAt<'_>,
        write: &pgsurge_store::RunWrite,
        said: bool,
    ) -> Result<()> {
        let test = at.test();
        self.events.emit(Event::TestEnded { test, write, said })?;
        self.out.run_ids.extend(self.events.last_run_id());
        Ok(())
    }

    /// Ends a test that failed before it ran, and counts it.
    pub(super) fn fail(
        &mut self,
        at: &TestAt<'_>,
        write: pgsurge_store::RunWrite,
        said: bool,
    ) -> Result<()> {
        self.ended(at, &write, said)?;
        self.out.failed += 1;
        Ok(())
    }
}
