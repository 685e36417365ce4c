//! `pgsurge campaign watch`: the live page of a campaign running in another process,
//! from what its store keeps of its events (`live_events`), read every second through
//! a read-only connection. The page follows the newest set that has events (or the
//! set asked for), and says when the campaign's process is gone.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pgsurge_events::Told;
use pgsurge_store::{set_status, Store, StoreError};
use pgsurge_wire::redact::redact;

use crate::{serve, LiveError, LiveState};

/// How often the store is read.
const EVERY: Duration = Duration::from_secs(1);

/// A store being watched, and the state of the page drawn from it.
pub struct Watch {
    store: Store,
    /// The set asked for, if one was.
    asked: Option<i64>,
    /// The set followed.
    set: Option<i64>,
    /// The last event read.
    after: i64,
    state: Arc<Mutex<LiveState>>,
}

impl Watch {
    /// Opens `location` read-only. Refused: what is not a results store, a store SQLite
    /// can read only as a snapshot (its directory not writable here), a store too old
    /// to keep live events, a set `set` (id or name) it does not hold.
    pub fn open(location: &str, set: Option<&str>) -> Result<Watch, LiveError> {
        let mut store = Store::open_read_only(location)?;
        if store.reads_a_snapshot() {
            return Err(LiveError::Snapshot {
                location: store.location().to_string(),
            });
        }
        if !store.keeps_live_events() {
            return Err(LiveError::NoLiveEvents {
                location: store.location().to_string(),
                version: store.schema_version()?,
            });
        }
        let asked = set.map(|s| store.resolve_set(s)).transpose()?;
        Ok(Watch {
            store,
            asked,
            set: None,
            after: 0,
            state: Arc::default(),
        })
    }

    /// The page's state, shared with its server.
    pub fn shared(&self) -> Arc<Mutex<LiveState>> {
        Arc::clone(&self.state)
    }

    /// Reads what the store holds that was not read yet into the page's state.
    pub fn read(&mut self) -> Result<(), StoreError> {
        let newest = match self.asked {
            Some(id) => Some(id),
            None => self.store.newest_live_set()?,
        };
        let Some(set) = newest else {
            self.lock().note = Some(format!(
                "watching {}: no campaign has run in it yet",
                self.store.location()
            ));
            return Ok(());
        };
        if self.set != Some(set) {
            self.set = Some(set);
            self.after = 0;
            *self.lock() = LiveState::default();
        }
        let events = self.store.live_events(set, self.after)?;
        let status = self.store.set(set)?.record.status;
        let holder = self.store.set_lock_holder(set)?;
        let note = match holder.filter(|h| h.is_alive()) {
            Some(h) => format!(
                "watching {}: set {set}, written by process {} on {}",
                self.store.location(),
                h.pid,
                h.host
            ),
            None if status == set_status::RUNNING => format!(
                "watching {}: set {set} is marked running, but no process holds it (the \
                 campaign was killed, or its machine went down)",
                self.store.location()
            ),
            None => format!("watching {}: set {set}", self.store.location()),
        };
        self.after = events.last().map_or(self.after, |e| e.id);
        let mut state = self.lock();
        for event in events {
            // A row this build cannot read (a newer pgsurge's event) is left out.
            if let Ok(told) = serde_json::from_str::<Told>(&event.body) {
                state.take(&told);
            }
        }
        if state.ended.is_none() && status != set_status::RUNNING {
            // Ended without telling (a campaign that failed): the set's status says how.
            state.end(&status);
        }
        state.note = Some(note);
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LiveState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Serves on `addr` the page of the campaign running into the store at `location`
/// (its set `set`, or the newest that has events), saying where on stderr, until the
/// process is ended. A store that cannot be read later is said on the page.
pub fn watch(
    location: &str,
    set: Option<&str>,
    addr: &str,
) -> Result<std::convert::Infallible, LiveError> {
    let mut watched = Watch::open(location, set)?;
    watched.read()?;
    let server = serve(addr, watched.shared())?;
    eprintln!(
        "live view: {} (watching {})",
        server.url(),
        watched.store.location()
    );
    loop {
        std::thread::sleep(EVERY);
        if let Err(e) = watched.read() {
            watched.lock().note = Some(redact(&format!("cannot read the store: {e}")));
        }
    }
}
