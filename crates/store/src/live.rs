//! What a running campaign tells, kept for a reader in another process (`pgsurge
//! campaign watch`): one row of `live_events` per event, its body JSON with passwords
//! masked. A test's seconds go when the test is stored (its intervals are then the
//! run's); a set's rows go when an invocation starts it again. See
//! `migrations/0007_live_events.sql`.

use crate::error::Result;
use crate::schema::LIVE_EVENTS_SINCE;
use crate::value::Value;
use crate::Store;

/// The kind of a live event holding one second of a running test.
pub const INTERVAL_KIND: &str = "interval";

/// One stored live event.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveEvent {
    /// Its place: a reader asks for the events after the last id it read.
    pub id: i64,
    /// The event, JSON.
    pub body: String,
}

impl Store {
    /// True when the store keeps live events (schema version 7 on).
    pub fn keeps_live_events(&self) -> bool {
        self.version >= LIVE_EVENTS_SINCE
    }

    /// Keeps one event of the set `set_id` (about the test `test_key`, if any), its
    /// passwords masked, in a transaction of its own (or the caller's).
    pub fn add_live_event(
        &mut self,
        set_id: i64,
        kind: &str,
        test_key: Option<&str>,
        body: &serde_json::Value,
    ) -> Result<()> {
        if !self.keeps_live_events() {
            return Ok(());
        }
        let body = crate::redact_json(body).to_string();
        let params = [
            Value::Int(set_id),
            Value::Text(kind.into()),
            test_key.map_or(Value::Null, |k| Value::Text(k.into())),
            Value::Text(body),
        ];
        self.transaction(|b| {
            b.execute(
                "INSERT INTO live_events (set_id, kind, test_key, body) VALUES (?, ?, ?, ?)",
                &params,
            )?;
            Ok(())
        })
    }

    /// Forgets the live events of the set `set_id` (an invocation starts it again).
    pub fn clear_live_events(&mut self, set_id: i64) -> Result<()> {
        if !self.keeps_live_events() {
            return Ok(());
        }
        self.transaction(|b| {
            b.execute(
                "DELETE FROM live_events WHERE set_id = ?",
                &[Value::Int(set_id)],
            )?;
            Ok(())
        })
    }

    /// Forgets the seconds of the test `test_key` of the set `set_id`: it is stored, its
    /// intervals with it.
    pub fn clear_live_seconds(&mut self, set_id: i64, test_key: &str) -> Result<()> {
        if !self.keeps_live_events() {
            return Ok(());
        }
        self.transaction(|b| {
            b.execute(
                "DELETE FROM live_events WHERE set_id = ? AND test_key = ? AND kind = ?",
                &[
                    Value::Int(set_id),
                    Value::Text(test_key.into()),
                    Value::Text(INTERVAL_KIND.into()),
                ],
            )?;
            Ok(())
        })
    }

    /// The events of the set `set_id` after the event `after` (0: all), in order.
    pub fn live_events(&mut self, set_id: i64, after: i64) -> Result<Vec<LiveEvent>> {
        if !self.keeps_live_events() {
            return Ok(Vec::new());
        }
        self.backend
            .query(
                "SELECT id, body FROM live_events WHERE set_id = ? AND id > ? ORDER BY id",
                &[Value::Int(set_id), Value::Int(after)],
            )?
            .iter()
            .map(|r| {
                Ok(LiveEvent {
                    id: r.read(0, "live_events.id")?,
                    body: r.read(1, "live_events.body")?,
                })
            })
            .collect()
    }

    /// The newest set with live events, if any.
    pub fn newest_live_set(&mut self) -> Result<Option<i64>> {
        if !self.keeps_live_events() {
            return Ok(None);
        }
        let rows = self
            .backend
            .query("SELECT max(set_id) FROM live_events", &[])?;
        match rows.first() {
            Some(r) => r.read(0, "live_events.set_id"),
            None => Ok(None),
        }
    }
}
