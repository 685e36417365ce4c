//! What the live page shows, kept up to date from a campaign's events: the plan (done,
//! running, left, the time left), the running test's seconds (one attempt's: a test
//! run again after an outage starts its series again, the attempts cut short said
//! apart), the verdict of each ended test, the targets and their outages, the lines said. Errors and lines are
//! masked before they are kept: no password reaches the page.

use std::sync::{Arc, Mutex};

use pgsurge_events::{Consumer, Event, Told};
use pgsurge_store::run_status;
use pgsurge_wire::redact::redact;
use serde::Serialize;

/// Seconds of the running test the page keeps (its chart's width).
const SECONDS_KEPT: usize = 600;
/// Lines said that the page keeps, newest last.
const LINES_KEPT: usize = 50;

/// One test of the plan.
#[derive(Debug, Clone, Serialize)]
pub struct TestRow {
    /// Its key.
    pub key: String,
    /// `planned`, `running`, `ok`, `failed`.
    pub status: String,
    /// Seconds it is planned to take.
    pub planned_s: u64,
    /// Its target's name.
    pub target: String,
    /// Its cell: the key without its target and its repeat.
    pub cell: String,
    /// Its repeat, from 1.
    pub repeat: u32,
    /// Its rate, once ended ok.
    pub tps: Option<f64>,
    /// Its mean latency (ms), once ended ok.
    pub latency_mean_ms: Option<f64>,
    /// Its p99 latency (ms), once ended ok.
    pub latency_p99_ms: Option<f64>,
    /// Why it failed (masked).
    pub error: Option<String>,
}

/// One second of the running test.
#[derive(Debug, Clone, Serialize)]
pub struct SecondRow {
    /// End of the second, seconds since its run began.
    pub elapsed_s: f64,
    /// A warm-up second.
    pub warmup: bool,
    /// Transactions per second.
    pub tps: f64,
    /// Mean latency, ms.
    pub latency_mean_ms: f64,
    /// p50, p90, p95, p99 (ms), from the second's own histogram.
    pub percentiles: Vec<(f64, f64)>,
    /// Failed transactions.
    pub failures: u64,
}

/// An attempt of the running test that an outage cut short: its seconds are not the
/// test's and are not shown with them; the page says how far it got.
#[derive(Debug, Clone, Serialize)]
pub struct CutShort {
    /// The attempt, from 1.
    pub attempt: u32,
    /// Seconds of it the page was told.
    pub seconds: usize,
    /// Where its last second ended, seconds since its run began.
    pub elapsed_s: f64,
}

/// What the page shows.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LiveState {
    /// The set's id and name, once claimed.
    pub set_id: Option<i64>,
    /// The set's name.
    pub set_name: String,
    /// Tests stored before this invocation.
    pub already_stored: usize,
    /// Tests in the plan of this invocation.
    pub tests: Vec<TestRow>,
    /// The running test's key.
    pub running: Option<String>,
    /// What the runner does now.
    pub doing: String,
    /// The running test's attempt whose seconds are shown: 1, or more once an outage
    /// made the test run again (0 before any test started).
    pub attempt: u32,
    /// The running test's attempts cut short by an outage, oldest first.
    pub cut_short: Vec<CutShort>,
    /// The running test's seconds (the last [`SECONDS_KEPT`]), of its attempt
    /// [`LiveState::attempt`] only.
    pub seconds: Vec<SecondRow>,
    /// The running test's newest waits (`pg.wait.*` less its prefix: sessions in each),
    /// most sessions first.
    pub waits: Vec<(String, f64)>,
    /// The running test's newest figures of the server's host (`os.*`), by name.
    pub host: Vec<(String, f64)>,
    /// Why the server's host has no figures, when they are not sampled.
    pub host_note: Option<String>,
    /// The verdicts of the cells finished on the plan's first two targets.
    pub verdicts: Vec<crate::verdict::CellVerdict>,
    /// Tests ended in this invocation.
    pub done: usize,
    /// Tests not started yet.
    pub left: usize,
    /// Seconds the plan still needs: the tests not ended, less what the running one
    /// has run.
    pub time_left_s: u64,
    /// Targets up: name → `up`, `stopped`, `unreachable`, `down`.
    pub targets: Vec<(String, String)>,
    /// Outages, as said.
    pub outages: Vec<String>,
    /// Lines said (warnings, notes), masked.
    pub lines: Vec<String>,
    /// The set's status once the invocation ended.
    pub ended: Option<String>,
    /// Events taken (the page shows it moving).
    pub events: u64,
    /// What the page says of where its figures come from, when they come from a store
    /// (`campaign watch`): the store, or that no campaign runs in it.
    pub note: Option<String>,
}

impl LiveState {
    fn row(&mut self, key: &str) -> Option<&mut TestRow> {
        self.tests.iter_mut().find(|t| t.key == key)
    }

    fn target(&mut self, name: &str, status: &str) {
        match self.targets.iter_mut().find(|(n, _)| n == name) {
            Some(t) => t.1 = status.to_string(),
            None => self.targets.push((name.to_string(), status.to_string())),
        }
    }

    /// The waits and host figures sampled during a second, over the newest kept.
    fn sampled(&mut self, metrics: &[(String, f64)]) {
        for (name, value) in metrics {
            let (list, name) = match name.strip_prefix("pg.wait.") {
                Some(wait) => (&mut self.waits, wait),
                None => (&mut self.host, name.as_str()),
            };
            match list.iter_mut().find(|(n, _)| n == name) {
                Some(kept) => kept.1 = *value,
                None => list.push((name.to_string(), *value)),
            }
        }
        self.waits
            .sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
        self.host.sort_by(|x, y| x.0.cmp(&y.0));
    }

    /// The running test's series starts again: its seconds, waits and host figures.
    fn restart_series(&mut self) {
        self.seconds.clear();
        self.waits.clear();
        self.host.clear();
    }

    fn said(&mut self, line: &str) {
        self.lines.push(redact(line));
        if self.lines.len() > LINES_KEPT {
            self.lines.remove(0);
        }
    }

    fn count(&mut self) {
        self.done = self
            .tests
            .iter()
            .filter(|t| t.status == run_status::OK || t.status == run_status::FAILED)
            .count();
        self.left = self.tests.iter().filter(|t| t.status == "planned").count();
        // The seconds shown after a test ended are the ended test's, whose time is
        // no longer in the plan's.
        let running_s = match self.running {
            Some(_) => self
                .seconds
                .iter()
                .map(|s| s.elapsed_s.max(0.0))
                .fold(0.0, f64::max) as u64,
            None => 0,
        };
        let unended: u64 = self
            .tests
            .iter()
            .filter(|t| t.status != run_status::OK && t.status != run_status::FAILED)
            .map(|t| t.planned_s)
            .sum();
        self.time_left_s = unended.saturating_sub(running_s);
    }

    /// Takes what a page is told of one event.
    pub fn take(&mut self, told: &Told) {
        self.events += 1;
        match told {
            Told::SetStarted {
                set_id,
                name,
                already_stored,
            } => {
                // An invocation starts (or starts again) the set: its plan is its own.
                self.set_id = Some(*set_id);
                self.set_name = name.clone();
                self.already_stored = *already_stored;
                self.tests.clear();
                self.seconds.clear();
                self.attempt = 0;
                self.cut_short.clear();
                self.running = None;
                self.ended = None;
            }
            Told::TestPlanned {
                key,
                planned_s,
                target,
                cell,
                repeat,
            } => self.tests.push(TestRow {
                key: key.clone(),
                status: "planned".into(),
                planned_s: *planned_s,
                target: target.clone(),
                cell: cell.clone(),
                repeat: *repeat,
                tps: None,
                latency_mean_ms: None,
                latency_p99_ms: None,
                error: None,
            }),
            Told::TestStarted { key } => {
                self.running = Some(key.clone());
                self.attempt = 1;
                self.cut_short.clear();
                self.restart_series();
                if let Some(r) = self.row(key) {
                    r.status = "running".into();
                }
            }
            Told::TestRunAgain { key, attempt } => {
                // What the cut-short attempt showed is said apart; the test's series
                // starts again with the new attempt's seconds, as its result will.
                if self.running.as_deref() == Some(key.as_str()) {
                    self.cut_short.push(CutShort {
                        attempt: attempt.saturating_sub(1),
                        seconds: self.seconds.len(),
                        elapsed_s: self.seconds.last().map_or(0.0, |s| s.elapsed_s),
                    });
                }
                self.running = Some(key.clone());
                self.attempt = *attempt;
                self.restart_series();
            }
            Told::Doing { what } => self.doing = redact(what),
            Told::Interval { second, .. } => {
                self.sampled(&second.metrics);
                self.seconds.push(SecondRow {
                    elapsed_s: second.elapsed_s,
                    warmup: second.warmup,
                    tps: second.tps,
                    latency_mean_ms: second.latency_mean_ms,
                    percentiles: second.percentiles.clone(),
                    failures: second.failures,
                });
                if self.seconds.len() > SECONDS_KEPT {
                    self.seconds.remove(0);
                }
            }
            Told::TestEnded {
                key,
                status,
                tps,
                latency_mean_ms,
                latency_p99_ms,
                error,
            } => {
                if let Some(r) = self.row(key) {
                    r.status = status.clone();
                    r.tps = *tps;
                    r.latency_mean_ms = *latency_mean_ms;
                    r.latency_p99_ms = *latency_p99_ms;
                    r.error = error.as_deref().map(redact);
                }
                self.running = None;
                self.verdicts = crate::verdict::of_tests(&self.tests);
            }
            Told::Target {
                target,
                state,
                outage,
            } => {
                self.target(target, state);
                if let Some(o) = outage {
                    self.outages.push(redact(o));
                }
            }
            Told::Said { line } => self.said(line),
            Told::SetEnded { status } => self.end(status),
        }
        self.count();
    }

    /// The invocation ended with the set `status`.
    pub(crate) fn end(&mut self, status: &str) {
        self.ended = Some(status.to_string());
        self.running = None;
        self.doing.clear();
    }
}

/// The consumer that keeps a [`LiveState`] shared with the page's server.
#[derive(Debug, Clone, Default)]
pub struct Live {
    state: Arc<Mutex<LiveState>>,
}

impl Live {
    /// A live state to share with [`crate::serve`].
    pub fn new() -> Self {
        Self::default()
    }

    /// The state, shared.
    pub fn shared(&self) -> Arc<Mutex<LiveState>> {
        Arc::clone(&self.state)
    }

    /// The state, locked (a panic elsewhere leaves it as it was).
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, LiveState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The state now, as JSON.
    pub fn json(state: &Mutex<LiveState>) -> String {
        let s = state.lock().unwrap_or_else(|p| p.into_inner());
        serde_json::to_string(&*s).unwrap_or_else(|_| "{}".into())
    }
}

impl Consumer for Live {
    fn take(&mut self, event: &Event<'_>) {
        if let Some(told) = Told::of(event) {
            let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
            s.take(&told);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgsurge_events::Second;

    fn second(elapsed_s: f64) -> Second {
        Second {
            elapsed_s,
            epoch_s: 0.0,
            duration_s: 1.0,
            warmup: false,
            tps: 10.0,
            transactions: 10,
            failures: 0,
            latency_mean_ms: 1.0,
            percentiles: Vec::new(),
            latency_max_ms: None,
            metrics: Vec::new(),
        }
    }

    /// The time left is the planned seconds of the tests not ended less what the
    /// running one has run: it falls as a test runs and when it ends, never rises
    /// between two tests, and is 0 once every test has ended.
    #[test]
    fn the_time_left_falls_as_tests_run_and_end() {
        let mut s = LiveState::default();
        for key in ["a", "b"] {
            s.take(&Told::TestPlanned {
                key: key.into(),
                planned_s: 10,
                target: "t".into(),
                cell: key.into(),
                repeat: 1,
            });
        }
        assert_eq!((s.left, s.time_left_s), (2, 20));
        s.take(&Told::TestStarted { key: "a".into() });
        for t in 1..=4 {
            s.take(&Told::Interval {
                key: "a".into(),
                second: second(f64::from(t)),
            });
        }
        assert_eq!((s.left, s.done, s.time_left_s), (1, 0, 16));
        let ended = |key: &str| Told::TestEnded {
            key: key.into(),
            status: run_status::OK.into(),
            tps: Some(10.0),
            latency_mean_ms: Some(1.0),
            latency_p99_ms: Some(2.0),
            error: None,
        };
        s.take(&ended("a"));
        assert_eq!((s.left, s.done, s.time_left_s), (1, 1, 10));
        s.take(&Told::TestStarted { key: "b".into() });
        assert_eq!((s.left, s.time_left_s), (0, 10));
        s.take(&ended("b"));
        assert_eq!((s.left, s.done, s.time_left_s), (0, 2, 0));
    }

    /// A test run again after an outage shows one attempt's seconds at a time: the
    /// new attempt's from 0, the cut-short one said apart with how far it got, and
    /// the time left counting the test's whole run again.
    #[test]
    fn a_test_run_again_starts_its_series_again() {
        let mut s = LiveState::default();
        s.take(&Told::TestPlanned {
            key: "a".into(),
            planned_s: 10,
            target: "t".into(),
            cell: "a".into(),
            repeat: 1,
        });
        s.take(&Told::TestStarted { key: "a".into() });
        let interval = |t: f64| Told::Interval {
            key: "a".into(),
            second: second(t),
        };
        for t in 1..=3 {
            s.take(&interval(f64::from(t)));
        }
        assert_eq!((s.attempt, s.seconds.len(), s.time_left_s), (1, 3, 7));
        s.take(&Told::TestRunAgain {
            key: "a".into(),
            attempt: 2,
        });
        assert_eq!((s.attempt, s.seconds.len(), s.time_left_s), (2, 0, 10));
        assert_eq!(s.cut_short.len(), 1);
        let cut = &s.cut_short[0];
        assert_eq!((cut.attempt, cut.seconds, cut.elapsed_s), (1, 3, 3.0));
        s.take(&interval(1.0));
        let elapsed: Vec<f64> = s.seconds.iter().map(|x| x.elapsed_s).collect();
        assert_eq!(elapsed, [1.0]);
        assert_eq!(s.running.as_deref(), Some("a"));
        // The next test starts with its own first attempt and nothing cut short.
        s.take(&Told::TestStarted { key: "b".into() });
        assert_eq!((s.attempt, s.cut_short.len(), s.seconds.len()), (1, 0, 0));
    }
}
