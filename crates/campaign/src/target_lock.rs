//! One campaign per server at a time. Two campaigns benchmarking the same existing server
//! at once spoil each other's results, whichever stores they write to, so the lock lives
//! on the server: a session-level advisory lock held by a connection of its own for as
//! long as the campaign uses the target. Its `application_name` says who holds it, so
//! the refusal can name the other campaign. The lock goes with the session, so a killed
//! campaign or a restarted server never leaves it behind.
//!
//! Advisory locks belong to one database, and so does the refusal: a campaign on another
//! database of the same server is not refused (test suites and shared servers run
//! several at once), but the whole cluster's `pg_locks` is checked for it, and it is
//! reported as a warning stored with the set, since both share the server's CPU and
//! disks. Throwaway servers are private to their campaign and take no lock.

use pgsurge_observe::sql_session::literal;
use pgsurge_observe::{ObserveError, Pg};
use pgsurge_wire::ConnConfig;

/// The advisory lock key (two `int4`): "pgsg" and 1.
const KEY: (i32, i32) = (0x7067_7367, 1);

/// Why the lock could not be taken.
#[derive(Debug, Clone, PartialEq)]
pub enum LockError {
    /// Another campaign holds the server; the message names it.
    Busy(String),
    /// The server could not be asked (down, unreachable, refused): try again later.
    Unreachable(String),
}

/// A held lock: released when dropped (its session ends).
pub struct TargetLock {
    pg: Pg,
    neighbours: Vec<String>,
}

impl std::fmt::Debug for TargetLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TargetLock").finish_non_exhaustive()
    }
}

/// What the holder's session is called: the campaign, the host and the process.
pub fn holder_label(campaign: &str) -> String {
    let mut label = format!(
        "pgsurge campaign \"{campaign}\" pid {} on {}",
        std::process::id(),
        pgsurge_store::this_host()
    );
    // application_name keeps at most 63 bytes
    while label.len() > 63 {
        label.pop();
    }
    label
}

impl TargetLock {
    /// Takes the lock of the server behind `conn` for the campaign `holder`
    /// ([`holder_label`]); `target` names the target in messages.
    pub fn acquire(conn: &ConnConfig, target: &str, holder: &str) -> Result<TargetLock, LockError> {
        let mut pg = Pg::connect(conn).map_err(|e| LockError::Unreachable(e.to_string()))?;
        let unreachable = |e: ObserveError| LockError::Unreachable(e.to_string());
        pg.exec(&format!("SET application_name = {}", literal(holder)))
            .map_err(unreachable)?;
        let (k1, k2) = KEY;
        let got = pg
            .value(&format!("SELECT pg_try_advisory_lock({k1}, {k2})"))
            .map_err(unreachable)?;
        // Sessions of other campaigns holding the key, in this database (when we did not
        // get it) or in another one.
        let others = pg
            .rows(&format!(
                "SELECT coalesce(a.application_name, ''), coalesce(d.datname, ''), \
                 coalesce(to_char(a.backend_start, 'YYYY-MM-DD HH24:MI:SS TZ'), ''), \
                 l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
                 FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid \
                 LEFT JOIN pg_database d ON d.oid = l.database \
                 WHERE l.locktype = 'advisory' AND l.classid = {k1} AND l.objid = {k2} \
                 AND l.objsubid = 2 AND l.granted AND l.pid <> pg_backend_pid() \
                 AND coalesce(a.application_name, '') <> {}",
                literal(holder)
            ))
            .map_err(unreachable)?;
        let describe = |row: &Vec<Option<String>>| {
            let field = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
            let name = match field(0) {
                n if n.is_empty() => "another pgsurge campaign".to_string(),
                n => n,
            };
            format!("{name} (database \"{}\", since {})", field(1), field(2))
        };
        let (here, elsewhere): (Vec<_>, Vec<_>) = others
            .iter()
            .partition(|row| row.get(3).cloned().flatten().as_deref() == Some("t"));
        if got.as_deref() == Some("t") || here.is_empty() {
            // Granted, or held by another target of this campaign on the same database
            // (an A-A twin, a second target naming the same server).
            let neighbours = elsewhere
                .into_iter()
                .map(|row| {
                    format!(
                        "target \"{target}\": {} is benchmarking another database of the same \
                         server at the same time; the results of both may be affected",
                        describe(row)
                    )
                })
                .collect();
            return Ok(TargetLock { pg, neighbours });
        }
        Err(LockError::Busy(format!(
            "target \"{target}\" is being benchmarked by {}; two campaigns on one database \
             would spoil each other's results: wait for it to end, then run this one again",
            describe(here[0])
        )))
    }

    /// Other campaigns that were benchmarking other databases of the same server when
    /// the lock was taken (a warning, not a refusal).
    pub fn neighbours(&self) -> &[String] {
        &self.neighbours
    }

    /// True while the lock's session is alive (a restarted server ends it).
    pub fn is_held(&mut self) -> bool {
        self.pg.value("SELECT 1").is_ok()
    }
}

/// Keeps `slot` holding the server's lock: checks a held lock's session and takes the
/// lock again when it was lost (the server restarted) or never taken (the server was
/// down at the start). Only [`LockError::Busy`] is returned; an unreachable server is
/// left to the test, which waits out outages.
pub fn hold(
    slot: &mut Option<TargetLock>,
    conn: &ConnConfig,
    target: &str,
    holder: &str,
) -> Result<(), String> {
    if let Some(lock) = slot {
        if lock.is_held() {
            return Ok(());
        }
        *slot = None;
    }
    match TargetLock::acquire(conn, target, holder) {
        Ok(lock) => {
            *slot = Some(lock);
            Ok(())
        }
        Err(LockError::Busy(m)) => Err(m),
        Err(LockError::Unreachable(_)) => Ok(()),
    }
}
