//! A consumer that keeps the kind of every event and the test it names, in order:
//! what a test checks the runner's sequence against.

use crate::{Consumer, Event};

/// One event as kept: its kind and the key of its test, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// [`Event::kind`].
    pub kind: &'static str,
    /// The key of the test it names.
    pub key: Option<String>,
    /// For `test_ended`: the stored status; for `set_ended`: the set's status; for
    /// `interval`: `warmup` or `measured`; for a hook: its name.
    pub detail: Option<String>,
}

/// Every event taken, in order.
#[derive(Debug, Default)]
pub struct Recorder {
    /// What was taken.
    pub events: Vec<Recorded>,
}

impl Consumer for Recorder {
    fn take(&mut self, event: &Event<'_>) {
        let detail = match event {
            Event::TestEnded { write, .. } => Some(write.run.status.clone()),
            Event::SetEnded { status, .. } => Some((*status).to_string()),
            Event::Interval { second, .. } => {
                Some(if second.warmup { "warmup" } else { "measured" }.into())
            }
            Event::HookRan { hook, .. } => Some((*hook).to_string()),
            _ => None,
        };
        self.events.push(Recorded {
            kind: event.kind(),
            key: event.test().map(|t| t.key.to_string()),
            detail,
        });
    }
}
