//! One writer per set: a campaign claims its set (finding or creating it and taking its
//! lock row in one exclusive transaction) and keeps the lock alive with a heartbeat
//! from a thread with its own connection; a second campaign on the same set is refused
//! while the holder lives. See `migrations/0004_set_locks.sql`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub use crate::error::LockHolder;
use crate::error::{Result, StoreError};
use crate::model::{now_epoch, now_rfc3339, SetRecord};
use crate::value::{ToValue, Value};
use crate::Store;

/// How often a holder refreshes its heartbeat.
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(5);

/// A lock whose heartbeat is older than this is taken over (its holder is gone or cut
/// off), whatever host it was on.
pub const STALE_AFTER: Duration = Duration::from_secs(60);

/// A held set lock: refreshed by a background thread, released when dropped (or by
/// [`SetLock::release`]).
#[derive(Debug)]
pub struct SetLock {
    set_id: i64,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SetLock {
    /// The locked set.
    pub fn set_id(&self) -> i64 {
        self.set_id
    }

    /// Releases the lock now (deletes its row) and stops the heartbeat.
    pub fn release(mut self) {
        self.stop_heartbeat();
    }

    fn stop_heartbeat(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for SetLock {
    fn drop(&mut self) {
        self.stop_heartbeat();
    }
}

/// This machine's host name (as stored in lock rows).
pub fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

fn random_token() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

impl LockHolder {
    /// True when the holder still counts: a fresh heartbeat, and on this host a
    /// process with its pid.
    pub fn is_alive(&self) -> bool {
        if self.heartbeat_age_s > STALE_AFTER.as_secs_f64() {
            return false;
        }
        if self.host == this_host() {
            return self.pid == i64::from(std::process::id())
                || i32::try_from(self.pid).is_ok_and(pgsurge_supervisor::is_alive);
        }
        true
    }
}

impl Store {
    /// Finds the newest set with `set`'s kind, name and spec hash, or creates it, and
    /// finds or creates `target` (its `set_id` is filled in) in it — in one exclusive
    /// transaction, so processes starting together (the generators of a distributed
    /// run) share one set and one target. Returns (set id, target id).
    pub fn find_or_create_set_with_target(
        &mut self,
        set: &SetRecord,
        target: &crate::TargetRecord,
    ) -> Result<(i64, i64)> {
        self.backend.begin_exclusive()?;
        let found = (|| -> Result<(i64, i64)> {
            let b = &mut *self.backend;
            let existing = b
                .query(
                    "SELECT id FROM sets WHERE kind = ? AND name = ? AND spec_hash = ? \
                     ORDER BY id DESC LIMIT 1",
                    &[
                        set.kind.to_value(),
                        set.name.to_value(),
                        set.spec_hash.clone().to_value(),
                    ],
                )?
                .first()
                .map(|r| r.read::<i64>(0, "sets.id"))
                .transpose()?;
            let set_id = match existing {
                Some(id) => id,
                None => crate::write::insert_set(b, set)?,
            };
            let rows = b.query(
                "SELECT id FROM targets WHERE set_id = ? AND name = ?",
                &[Value::Int(set_id), target.name.to_value()],
            )?;
            let target_id = match rows.first() {
                Some(r) => r.read(0, "targets.id")?,
                None => {
                    let mut t = target.clone();
                    t.set_id = set_id;
                    crate::write::insert_target(b, &t)?
                }
            };
            Ok((set_id, target_id))
        })();
        match found {
            Ok(ids) => {
                self.backend.end_exclusive(true)?;
                Ok(ids)
            }
            Err(e) => {
                let _ = self.backend.end_exclusive(false);
                Err(e)
            }
        }
    }

    /// Who holds `set_id` now (alive or not), if anyone.
    pub fn set_lock_holder(&mut self, set_id: i64) -> Result<Option<LockHolder>> {
        if self.version < 4 {
            return Ok(None);
        }
        let rows = self.backend.query(
            "SELECT host, pid, acquired_at, heartbeat_epoch FROM set_locks WHERE set_id = ?",
            &[Value::Int(set_id)],
        )?;
        let Some(r) = rows.first() else {
            return Ok(None);
        };
        let hb: f64 = r.read(3, "set_locks.heartbeat_epoch")?;
        Ok(Some(LockHolder {
            host: r.read(0, "set_locks.host")?,
            pid: r.read(1, "set_locks.pid")?,
            acquired_at: r.read(2, "set_locks.acquired_at")?,
            heartbeat_age_s: (now_epoch() - hb).max(0.0),
        }))
    }

    /// Finds the newest set with `record`'s kind, name and spec hash (unless `new_set`)
    /// or creates one from `record`, and locks it — all in one exclusive transaction,
    /// so two campaigns started at once cannot both create or both take the set.
    /// Fails with [`StoreError::SetBusy`] when a live process holds it.
    pub fn claim_set(&mut self, record: &SetRecord, new_set: bool) -> Result<(i64, SetLock)> {
        if self.version < 4 {
            return Err(StoreError::BadLocation(format!(
                "store {} is at schema version {}; set locks need version 4",
                self.location(),
                self.version
            )));
        }
        let token = random_token();
        let host = this_host();
        let pid = i64::from(std::process::id());
        self.backend.begin_exclusive()?;
        let claimed = self.claim_in_transaction(record, new_set, &host, pid, &token);
        let set_id = match claimed {
            Ok(id) => {
                self.backend.end_exclusive(true)?;
                id
            }
            Err(e) => {
                let _ = self.backend.end_exclusive(false);
                return Err(e);
            }
        };
        let stop = Arc::new(AtomicBool::new(false));
        let thread = if self.raw_location == ":memory:" {
            // No other process can see an in-memory store, and nothing could release the
            // row later (SetLock holds no connection): a lock row would only make the next
            // campaign of this process refuse the set it just finished.
            self.release_row(set_id, &token)?;
            None
        } else {
            // The heartbeat's own connection, opened now so a failure is reported here.
            let mut hb = match Store::open(&self.raw_location) {
                Ok(s) => s,
                Err(e) => {
                    let _ = self.release_row(set_id, &token);
                    return Err(e);
                }
            };
            let stop = stop.clone();
            let token = token.clone();
            Some(std::thread::spawn(move || {
                let mut last = std::time::Instant::now();
                while !stop.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(100));
                    if last.elapsed() >= HEARTBEAT_EVERY {
                        last = std::time::Instant::now();
                        let _ = hb.backend.execute(
                            "UPDATE set_locks SET heartbeat_epoch = ? WHERE set_id = ? AND token = ?",
                            &[Value::Real(now_epoch()), Value::Int(set_id), token.to_value()],
                        );
                    }
                }
                let _ = hb.release_row(set_id, &token);
            }))
        };
        Ok((
            set_id,
            SetLock {
                set_id,
                stop,
                thread,
            },
        ))
    }

    fn claim_in_transaction(
        &mut self,
        record: &SetRecord,
        new_set: bool,
        host: &str,
        pid: i64,
        token: &str,
    ) -> Result<i64> {
        let existing = if new_set {
            None
        } else {
            self.backend
                .query(
                    "SELECT id FROM sets WHERE kind = ? AND name = ? AND spec_hash = ? \
                     ORDER BY id DESC LIMIT 1",
                    &[
                        record.kind.to_value(),
                        record.name.to_value(),
                        record.spec_hash.clone().to_value(),
                    ],
                )?
                .first()
                .map(|r| r.read::<i64>(0, "sets.id"))
                .transpose()?
        };
        let set_id = match existing {
            Some(id) => {
                if let Some(holder) = self.set_lock_holder(id)? {
                    if holder.is_alive() {
                        return Err(StoreError::SetBusy { set_id: id, holder });
                    }
                }
                self.backend
                    .execute("DELETE FROM set_locks WHERE set_id = ?", &[Value::Int(id)])?;
                id
            }
            None => crate::write::insert_set(self.backend.as_mut(), record)?,
        };
        self.backend.execute(
            "INSERT INTO set_locks (set_id, host, pid, token, acquired_at, heartbeat_epoch) \
             VALUES (?, ?, ?, ?, ?, ?)",
            &[
                Value::Int(set_id),
                host.to_value(),
                Value::Int(pid),
                token.to_value(),
                now_rfc3339().to_value(),
                Value::Real(now_epoch()),
            ],
        )?;
        Ok(set_id)
    }

    fn release_row(&mut self, set_id: i64, token: &str) -> Result<()> {
        self.backend.execute(
            "DELETE FROM set_locks WHERE set_id = ? AND token = ?",
            &[Value::Int(set_id), token.to_value()],
        )?;
        Ok(())
    }
}
