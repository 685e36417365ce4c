//! The store as a consumer of a campaign's events: each ended test written in one
//! transaction (replacing an earlier failure of the same key), an outage that gave up
//! on a target and a hook's leftover processes kept as the set's warnings, and the
//! set's status when the invocation ends. What a page shows of each event is kept too
//! (`live_events`, one small row, a second of a running test included), for `campaign
//! watch` in another process; a test's seconds leave with the transaction that stores
//! the test.

use pgsurge_store::{now_rfc3339, Store, StoreError, WarningRecord};

use crate::{Event, Outage, Told};

/// Warning code of a hook that left processes running (they were killed).
pub const HOOK_LEFTOVER: &str = "hook_leftover";

/// Writes what a campaign's events say is to be kept.
pub struct StoreWriter<'s> {
    store: &'s mut Store,
    set_id: i64,
    last_run_id: Option<i64>,
}

impl<'s> StoreWriter<'s> {
    /// A writer into `store`, for the set `set_id`.
    pub fn new(store: &'s mut Store, set_id: i64) -> Self {
        StoreWriter {
            store,
            set_id,
            last_run_id: None,
        }
    }

    /// Writes what `event` says is kept.
    pub fn take(&mut self, event: &Event<'_>) -> Result<(), StoreError> {
        let told = Told::of(event);
        match event {
            Event::TestEnded { test, write, .. } => {
                let set_id = self.set_id;
                let id = self.store.all_or_nothing(|s| {
                    let id = s.write_run_replacing(write)?;
                    s.clear_live_seconds(set_id, test.key)?;
                    if let Some(t) = &told {
                        keep(s, set_id, t)?;
                    }
                    Ok::<_, StoreError>(id)
                })??;
                self.last_run_id = Some(id);
                return Ok(());
            }
            Event::SetStarted { .. } => self.store.clear_live_events(self.set_id)?,
            Event::Outage {
                outage: Outage::Down { message },
                ..
            } => self.set_warning("outage", message)?,
            Event::HookRan {
                test: None,
                leftover: Some(message),
                ..
            } => self.set_warning(HOOK_LEFTOVER, message)?,
            Event::SetEnded {
                set_id,
                status,
                finished,
            } => {
                let at = finished.then(now_rfc3339);
                self.store.set_set_status(*set_id, status, at.as_deref())?;
            }
            _ => {}
        }
        match &told {
            Some(t) => keep(self.store, self.set_id, t),
            None => Ok(()),
        }
    }

    fn set_warning(&mut self, code: &str, message: &str) -> Result<(), StoreError> {
        self.store.add_warning(&WarningRecord {
            set_id: Some(self.set_id),
            run_id: None,
            code: code.into(),
            message: message.into(),
            created_at: now_rfc3339(),
        })?;
        Ok(())
    }

    /// The store itself.
    pub fn store(&mut self) -> &mut Store {
        self.store
    }

    /// The id of the test written last.
    pub fn last_run_id(&self) -> Option<i64> {
        self.last_run_id
    }
}

/// Keeps what a page is told of an event, for a reader in another process.
fn keep(store: &mut Store, set_id: i64, told: &Told) -> Result<(), StoreError> {
    let body = serde_json::to_value(told).unwrap_or_default();
    store.add_live_event(set_id, told.kind(), told.key(), &body)
}
