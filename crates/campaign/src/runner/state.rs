//! What the test loop shares and keeps: the invocation's context, the state carried
//! from one test to the next, and the sink a test's outcome goes to (the store, the
//! counts, the terminal).

use std::collections::BTreeMap;
use std::time::Duration;

use indicatif::ProgressBar;
use pgsurge_engine::StopFlag;
use pgsurge_store::Store;

use super::options::Outcome;
use super::progress::say;
use crate::error::Result;
use crate::target_lock::TargetLock;

/// What every test of one invocation shares.
pub(super) struct RunCtx<'a> {
    pub(super) set_id: i64,
    pub(super) pb: &'a ProgressBar,
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
    /// Progress-bar units (seconds) one test is planned to take.
    pub(super) per_test: u64,
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

/// Whether the loop goes on after a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flow {
    Next,
    Stop,
}

/// Where a test's outcome goes: the store, the invocation's counts and the terminal.
pub(super) struct Sink<'s> {
    pub(super) store: &'s mut Store,
    pub(super) out: &'s mut Outcome,
    pub(super) pb: &'s ProgressBar,
    pub(super) quiet: bool,
    pub(super) set_id: i64,
}

impl Sink<'_> {
    pub(super) fn say(&self, line: &str) {
        say(self.pb, self.quiet, line);
    }

    /// Stores a test that failed, counts it, and says `line` when there is one.
    pub(super) fn fail(
        &mut self,
        write: pgsurge_store::RunWrite,
        line: Option<String>,
    ) -> Result<()> {
        self.out
            .run_ids
            .push(self.store.write_run_replacing(&write)?);
        self.out.failed += 1;
        if let Some(line) = line {
            self.say(&line);
        }
        Ok(())
    }
}
