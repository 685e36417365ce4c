//! What a running campaign tells, as typed events, and who listens. The campaign's
//! runner emits an [`Event`] at each step (a test planned, started, each of its
//! seconds, run again after an outage, ended; a target started, stopped, unreachable; a hook run; the set ended)
//! through an [`Emitter`]; the consumers turn them into what they keep or show: the
//! store writes each ended test and the set's status ([`store_writer`]), the terminal
//! draws its progress bar ([`progress`]), a live view or a test keeps what it needs.
//! A consumer depends on this crate, not on the campaign that emits.
//!
//! | module | owns |
//! |---|---|
//! | [`second`] | one second of a running test: its rate and latency percentiles, exact from the second's histogram |
//! | [`store_writer`] | the store as a consumer: ended tests, outages, leftover hooks, the set's status, and what a page is told of each event (for `campaign watch`) |
//! | [`progress`] | the terminal as a consumer: the progress bar and the lines said above it |
//! | [`recorder`] | a consumer that keeps the kind and test of every event (for tests and checks) |
//! | [`told`] | what a page is told of each event: owned and masked, kept by the store for a reader in another process |

#![warn(missing_docs)]

pub mod progress;
pub mod recorder;
pub mod second;
pub mod store_writer;
pub mod told;

use std::time::Duration;

use pgsurge_store::{RunWrite, Store, StoreError};

pub use progress::Progress;
pub use recorder::Recorder;
pub use second::Second;
pub use store_writer::StoreWriter;
pub use told::Told;

/// One test of a campaign invocation, as events name it.
#[derive(Debug, Clone, Copy)]
pub struct TestRef<'a> {
    /// Its place in the invocation, from 1.
    pub n: usize,
    /// Tests planned in the invocation so far.
    pub of: usize,
    /// Its key (`local/s10/tpcb-like/c4/r-/1`).
    pub key: &'a str,
    /// Its target's name (the key's first part).
    pub target: &'a str,
    /// Its repeat, from 1 (the key's last part).
    pub repeat: u32,
}

impl TestRef<'_> {
    /// `[3/12] local/s10/tpcb-like/c4/r-/1`.
    pub fn head(&self) -> String {
        format!("[{}/{}] {}", self.n, self.of, self.key)
    }

    /// Its cell: the key without its target and its repeat (`s10/tpcb-like/c4/r-`),
    /// what `compare` matches across targets.
    pub fn cell(&self) -> &str {
        let rest = self
            .key
            .strip_prefix(self.target)
            .and_then(|r| r.strip_prefix('/'))
            .unwrap_or(self.key);
        rest.rsplit_once('/').map_or(rest, |(cell, _)| cell)
    }

    /// `[3/12] local/s10/tpcb-like/c4/r-/1: {what}`.
    pub fn line(&self, what: impl std::fmt::Display) -> String {
        format!("{}: {what}", self.head())
    }
}

/// What happened to a target's server during an outage.
#[derive(Debug, Clone, Copy)]
pub enum Outage<'a> {
    /// The server stopped answering (`reason`, password masked); it is waited for up
    /// to `wait`.
    Unreachable {
        /// Why, from the failed test or the probe.
        reason: &'a str,
        /// How long it is waited for.
        wait: Duration,
    },
    /// Still waiting, `elapsed` of `wait`.
    Waiting {
        /// Waited so far.
        elapsed: Duration,
        /// How long it is waited for.
        wait: Duration,
    },
    /// The server answers again after `after`: the test `key` runs again.
    Back {
        /// How long it was away.
        after: Duration,
        /// The test run again.
        key: &'a str,
    },
    /// Still unreachable when the wait ended: its remaining tests fail. `message`
    /// says so, and is kept with the set.
    Down {
        /// What is said and kept.
        message: &'a str,
    },
}

/// A step of a running campaign.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// The set the tests go to: claimed or resumed, `planned` tests in its matrix of
    /// which `already_stored` were stored by an earlier invocation.
    SetStarted {
        /// The set's id.
        set_id: i64,
        /// The set's name.
        name: &'a str,
        /// Tests in the matrix.
        planned: usize,
        /// Tests stored before this invocation.
        already_stored: usize,
    },
    /// A test this invocation will run, planned to take about `planned_s` seconds.
    TestPlanned {
        /// The test.
        test: TestRef<'a>,
        /// Seconds it is planned to take (run, warm-up and its overhead).
        planned_s: u64,
    },
    /// A test's steps begin (its target started, its data loaded, its hooks, its run).
    TestStarted {
        /// The test.
        test: TestRef<'a>,
    },
    /// A test's run starts again after an outage cut its earlier attempt short: the
    /// seconds that follow are the new attempt's, from 0, and the test's result is the
    /// last attempt's.
    TestRunAgain {
        /// The test.
        test: TestRef<'a>,
        /// The attempt that starts, from 2.
        attempt: u32,
    },
    /// What the runner is doing now (loading a scale, a hook, starting a target).
    Doing {
        /// The test it is for, when there is one.
        test: Option<TestRef<'a>>,
        /// What it does.
        what: &'a str,
    },
    /// One second (one sampling interval) of a test's run, warm-up included.
    Interval {
        /// The test.
        test: TestRef<'a>,
        /// Its figures.
        second: &'a Second,
    },
    /// A test ended, ran or failed: `write` is what is stored of it. `said` is false
    /// for a failure already told (its target given up on).
    TestEnded {
        /// The test.
        test: TestRef<'a>,
        /// Its record, as stored.
        write: &'a RunWrite,
        /// Whether the terminal says its outcome.
        said: bool,
    },
    /// A target's server is up for the campaign.
    TargetStarted {
        /// The target's name.
        target: &'a str,
        /// The swept settings it started with (`shared_buffers=1GB`), if any.
        settings: &'a str,
        /// Where its host's metrics come from, and why none when none.
        host_metrics: &'a str,
        /// Its warnings, said once.
        warnings: &'a [String],
    },
    /// A target's throwaway server was stopped (or an existing one let go).
    TargetStopped {
        /// The target's name.
        target: &'a str,
    },
    /// A target's server during an outage.
    Outage {
        /// The target's name.
        target: &'a str,
        /// What happened.
        outage: Outage<'a>,
    },
    /// A hook ran.
    HookRan {
        /// `set_start`, `before_test`, `after_test`.
        hook: &'a str,
        /// The test it ran around (none for `set_start`).
        test: Option<TestRef<'a>>,
        /// Its failure, if it failed.
        failure: Option<&'a str>,
        /// The warning of processes it left running (they were killed).
        leftover: Option<&'a str>,
    },
    /// A line for whoever tells people (a warning, a capacity step's verdict).
    Said {
        /// The line (masked and made terminal-safe by who shows it).
        line: &'a str,
    },
    /// The invocation ended: the set is `status` (`complete`, `incomplete`…),
    /// `finished` when nothing is left to run.
    SetEnded {
        /// The set's id.
        set_id: i64,
        /// Its status.
        status: &'a str,
        /// True when every planned test is stored.
        finished: bool,
    },
}

impl Event<'_> {
    /// The event's kind, as a word: `set_started`, `test_planned`, `test_started`,
    /// `test_run_again`, `doing`, `interval`, `test_ended`, `target_started`, `target_stopped`,
    /// `outage`, `hook_ran`, `said`, `set_ended`.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::SetStarted { .. } => "set_started",
            Event::TestPlanned { .. } => "test_planned",
            Event::TestStarted { .. } => "test_started",
            Event::TestRunAgain { .. } => "test_run_again",
            Event::Doing { .. } => "doing",
            Event::Interval { .. } => "interval",
            Event::TestEnded { .. } => "test_ended",
            Event::TargetStarted { .. } => "target_started",
            Event::TargetStopped { .. } => "target_stopped",
            Event::Outage { .. } => "outage",
            Event::HookRan { .. } => "hook_ran",
            Event::Said { .. } => "said",
            Event::SetEnded { .. } => "set_ended",
        }
    }

    /// The test the event is about, when it is about one.
    pub fn test(&self) -> Option<TestRef<'_>> {
        match self {
            Event::TestPlanned { test, .. }
            | Event::TestStarted { test }
            | Event::TestRunAgain { test, .. }
            | Event::Interval { test, .. }
            | Event::TestEnded { test, .. } => Some(*test),
            Event::Doing { test, .. } | Event::HookRan { test, .. } => *test,
            _ => None,
        }
    }
}

/// Who listens to a campaign's events. A consumer that shows or keeps something for
/// people cannot fail the campaign: what it cannot do, it leaves out.
pub trait Consumer {
    /// Takes one event, in the order they happen.
    fn take(&mut self, event: &Event<'_>);
}

/// The runner's side: the store first (what it keeps must be kept before anything
/// says so; its error ends the campaign), then every other consumer in turn.
pub struct Emitter<'a> {
    store: StoreWriter<'a>,
    consumers: Vec<&'a mut dyn Consumer>,
}

impl<'a> Emitter<'a> {
    /// An emitter writing to `store` for the set `set_id`, telling `consumers`.
    pub fn new(store: &'a mut Store, set_id: i64, consumers: Vec<&'a mut dyn Consumer>) -> Self {
        Emitter {
            store: StoreWriter::new(store, set_id),
            consumers,
        }
    }

    /// Tells everyone `event`: the store, then the others.
    pub fn emit(&mut self, event: Event<'_>) -> Result<(), StoreError> {
        self.store.take(&event)?;
        for c in &mut self.consumers {
            c.take(&event);
        }
        Ok(())
    }

    /// Tells everyone a line (`Event::Said`).
    pub fn say(&mut self, line: &str) -> Result<(), StoreError> {
        self.emit(Event::Said { line })
    }

    /// The store, for what the runner reads from it (and the set's own rows).
    pub fn store(&mut self) -> &mut Store {
        self.store.store()
    }

    /// The id of the test the store wrote last.
    pub fn last_run_id(&self) -> Option<i64> {
        self.store.last_run_id()
    }
}
