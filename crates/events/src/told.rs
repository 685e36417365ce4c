//! A campaign's events as a page shows them: owned, masked, and only what is shown.
//! The live view of the campaign's own process takes them as they come; the store's
//! consumer keeps each as one row (`live_events`), which `campaign watch` reads in
//! another process into the same page.

use pgsurge_wire::redact::redact;
use serde::{Deserialize, Serialize};

use crate::{Event, Outage, Second};

/// What a page is told of one event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Told {
    /// The set the tests go to.
    SetStarted {
        /// Its id.
        set_id: i64,
        /// Its name.
        name: String,
        /// Tests stored before this invocation.
        already_stored: usize,
    },
    /// A test this invocation will run.
    TestPlanned {
        /// Its key.
        key: String,
        /// Seconds it is planned to take.
        planned_s: u64,
        /// Its target's name.
        #[serde(default)]
        target: String,
        /// Its cell: the key without its target and its repeat.
        #[serde(default)]
        cell: String,
        /// Its repeat, from 1.
        #[serde(default)]
        repeat: u32,
    },
    /// A test's steps begin.
    TestStarted {
        /// Its key.
        key: String,
    },
    /// A test's run starts again after an outage: its seconds start again from 0.
    TestRunAgain {
        /// Its key.
        key: String,
        /// The attempt that starts, from 2.
        attempt: u32,
    },
    /// What the runner does now.
    Doing {
        /// What (masked).
        what: String,
    },
    /// One second of the running test.
    Interval {
        /// The test's key.
        key: String,
        /// Its figures.
        second: Second,
    },
    /// A test ended: its verdict as stored.
    TestEnded {
        /// Its key.
        key: String,
        /// `ok` or `failed`.
        status: String,
        /// Its rate.
        tps: Option<f64>,
        /// Its mean latency, ms.
        latency_mean_ms: Option<f64>,
        /// Its p99 latency, ms.
        latency_p99_ms: Option<f64>,
        /// Why it failed (masked).
        error: Option<String>,
    },
    /// A target is `up`, `stopped`, `unreachable` or `down`.
    Target {
        /// Its name.
        target: String,
        /// Its state.
        state: String,
        /// What happened, said as an outage, when it is one (masked).
        outage: Option<String>,
    },
    /// A line said (a warning, a hook's failure), masked.
    Said {
        /// The line.
        line: String,
    },
    /// The invocation ended with the set `status`.
    SetEnded {
        /// The set's status.
        status: String,
    },
}

impl Told {
    /// What a page is told of `event`; `None` for what no page shows (a wait still
    /// under way, a hook that went well).
    pub fn of(event: &Event<'_>) -> Option<Told> {
        let target = |target: &str, state: &str, outage: Option<String>| Told::Target {
            target: target.to_string(),
            state: state.into(),
            outage: outage.map(|o| redact(&o)),
        };
        Some(match event {
            Event::SetStarted {
                set_id,
                name,
                already_stored,
                ..
            } => Told::SetStarted {
                set_id: *set_id,
                name: (*name).to_string(),
                already_stored: *already_stored,
            },
            Event::TestPlanned { test, planned_s } => Told::TestPlanned {
                key: test.key.to_string(),
                planned_s: *planned_s,
                target: test.target.to_string(),
                cell: test.cell().to_string(),
                repeat: test.repeat,
            },
            Event::TestStarted { test } => Told::TestStarted {
                key: test.key.to_string(),
            },
            Event::TestRunAgain { test, attempt } => Told::TestRunAgain {
                key: test.key.to_string(),
                attempt: *attempt,
            },
            Event::Doing { what, .. } => Told::Doing { what: redact(what) },
            Event::Interval { test, second } => Told::Interval {
                key: test.key.to_string(),
                second: (*second).clone(),
            },
            Event::TestEnded { test, write, .. } => {
                let run = &write.run;
                Told::TestEnded {
                    key: test.key.to_string(),
                    status: run.status.clone(),
                    tps: run.tps,
                    latency_mean_ms: run.latency_mean_ms,
                    latency_p99_ms: run.latency_p99_ms,
                    error: run.error.as_deref().map(redact),
                }
            }
            Event::TargetStarted { target: t, .. } => target(t, "up", None),
            Event::TargetStopped { target: t } => target(t, "stopped", None),
            Event::Outage { target: t, outage } => match outage {
                Outage::Unreachable { reason, .. } => target(
                    t,
                    "unreachable",
                    Some(format!("{t}: unreachable ({reason})")),
                ),
                Outage::Waiting { .. } => return None,
                Outage::Back { after, key } => target(
                    t,
                    "up",
                    Some(format!(
                        "{t}: back after {:.0} s, {key} run again",
                        after.as_secs_f64()
                    )),
                ),
                Outage::Down { message } => target(t, "down", Some((*message).to_string())),
            },
            Event::HookRan {
                hook,
                failure: Some(f),
                ..
            } => Told::Said {
                line: redact(&format!("hook {hook} failed: {f}")),
            },
            Event::HookRan { .. } => return None,
            Event::Said { line } => Told::Said { line: redact(line) },
            Event::SetEnded { status, .. } => Told::SetEnded {
                status: (*status).to_string(),
            },
        })
    }

    /// The key of the test it is about, if any.
    pub fn key(&self) -> Option<&str> {
        match self {
            Told::TestPlanned { key, .. }
            | Told::TestStarted { key }
            | Told::TestRunAgain { key, .. }
            | Told::Interval { key, .. }
            | Told::TestEnded { key, .. } => Some(key),
            _ => None,
        }
    }

    /// Its kind, as the store keeps it (`interval` for a second: see
    /// [`pgsurge_store::INTERVAL_KIND`]).
    pub fn kind(&self) -> &'static str {
        match self {
            Told::SetStarted { .. } => "set_started",
            Told::TestPlanned { .. } => "test_planned",
            Told::TestStarted { .. } => "test_started",
            Told::TestRunAgain { .. } => "test_run_again",
            Told::Doing { .. } => "doing",
            Told::Interval { .. } => pgsurge_store::INTERVAL_KIND,
            Told::TestEnded { .. } => "test_ended",
            Told::Target { .. } => "target",
            Told::Said { .. } => "said",
            Told::SetEnded { .. } => "set_ended",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What is kept reads back as it was told.
    #[test]
    fn a_told_event_reads_back_from_its_json() {
        let told = Told::TestEnded {
            key: "t/1".into(),
            status: "failed".into(),
            tps: None,
            latency_mean_ms: Some(1.5),
            latency_p99_ms: None,
            error: Some("boom".into()),
        };
        let json = serde_json::to_value(&told).unwrap();
        assert_eq!(json["kind"], "test_ended");
        assert_eq!(serde_json::from_value::<Told>(json).unwrap(), told);
    }

    /// A test's cell is its key without its target (which may hold a `/`) and repeat.
    #[test]
    fn a_tests_cell_leaves_out_its_target_and_repeat() {
        let test = crate::TestRef {
            n: 1,
            of: 2,
            key: "eu/db1/s10/tpcb-like/c4/r-/shared_buffers=1GB/3",
            target: "eu/db1",
            repeat: 3,
        };
        assert_eq!(test.cell(), "s10/tpcb-like/c4/r-/shared_buffers=1GB");
    }

    /// A line quoting a connection string is masked before anyone is told.
    #[test]
    fn a_said_line_is_masked() {
        let Some(Told::Said { line }) = Told::of(&Event::Said {
            line: "cannot connect: host=h password=sekrit-pw",
        }) else {
            panic!("a line is told");
        };
        assert!(!line.contains("sekrit-pw"), "{line}");
    }
}
