//! The bounds on what a log can make a replay hold in memory, whatever the log holds:
//! the longest entry read ([`Limits::entry_bytes`]) and the number of statement
//! fingerprints counted apart ([`Limits::fingerprints`]) and of statement shapes
//! remembered ([`Limits::shapes`]).
//!
//! The defaults are past anything a real log holds: PostgreSQL refuses a query string
//! of 1 GB or more, so a longer entry cannot be a statement it ran; and
//! `pg_stat_statements` keeps 5,000 statements by default, half the fingerprints counted
//! apart here. `PGSURGE_REPLAY_ENTRY_LIMIT`, `PGSURGE_REPLAY_FINGERPRINT_LIMIT`
//! and `PGSURGE_REPLAY_SHAPE_LIMIT` lower them (for tests: a small bound is reached by
//! a small log).

use std::sync::OnceLock;

/// The bounds of one replay or `--check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest log entry (bytes of its lines, or of its csvlog record): a longer one is an
    /// unreadable line, read past without being held.
    pub entry_bytes: usize,
    /// Fingerprints counted apart; the statements of further ones are counted together
    /// in one row ([`crate::fingerprint::OTHER`]).
    pub fingerprints: usize,
    /// Statement shapes whose fingerprint is remembered; a statement of a further shape
    /// is fingerprinted again each time it is read (slower, no more memory).
    pub shapes: usize,
}

/// PostgreSQL's own bound on a query string (`MaxAllocSize`, 1 GB).
pub const ENTRY_BYTES: usize = 1 << 30;

/// Fingerprints counted apart by default.
pub const FINGERPRINTS: usize = 10_000;

/// Statement shapes remembered by default.
pub const SHAPES: usize = 200_000;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            entry_bytes: ENTRY_BYTES,
            fingerprints: FINGERPRINTS,
            shapes: SHAPES,
        }
    }
}

impl Limits {
    /// The defaults, each lowered by its environment variable when that holds a
    /// positive number smaller than the default (read once per process).
    pub fn current() -> Limits {
        static LIMITS: OnceLock<Limits> = OnceLock::new();
        *LIMITS.get_or_init(|| {
            let d = Limits::default();
            Limits {
                entry_bytes: lowered("PGSURGE_REPLAY_ENTRY_LIMIT", d.entry_bytes),
                fingerprints: lowered("PGSURGE_REPLAY_FINGERPRINT_LIMIT", d.fingerprints),
                shapes: lowered("PGSURGE_REPLAY_SHAPE_LIMIT", d.shapes),
            }
        })
    }
}

fn lowered(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .map_or(default, |n| n.min(default))
}
