//! The open-files check pgbench 18 makes when it reads `-c`: each client needs a
//! socket, plus three for stdio. Compares with the hard limit and raises the soft
//! limit when needed (pgbench 17 and older only compared with the soft limit).

use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};

/// What went wrong, as the lines pgbench prints (error, then optional hint).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RlimitError {
    /// The `error:` line.
    pub message: String,
    /// The `hint:` line, if any.
    pub hint: Option<String>,
}

const HINT: &str = "Reduce number of clients, or use limit/ulimit to increase the system limit.";

/// `RLIM_INFINITY` on Linux; rustix reports it as `None`.
fn raw(limit: Option<u64>) -> u64 {
    limit.unwrap_or(u64::MAX)
}

/// pgbench's error when the hard limit is below what is needed.
fn beyond_limit(needed: impl std::fmt::Display, max: u64) -> RlimitError {
    RlimitError {
        message: format!(
            "need at least {needed} open files, but system limit is {}",
            max as i64
        ),
        hint: Some(HINT.to_string()),
    }
}

/// pgbench's error when the soft limit could not be raised.
fn cannot_raise(needed: impl std::fmt::Display, e: rustix::io::Errno) -> RlimitError {
    let e = std::io::Error::from_raw_os_error(e.raw_os_error());
    RlimitError {
        message: format!(
            "need at least {needed} open files, but couldn't raise the limit: {}",
            crate::diag::strerror(&e)
        ),
        hint: Some(HINT.to_string()),
    }
}

/// Checks (and if needed raises) RLIMIT_NOFILE for `nclients` clients.
pub fn ensure_open_files(nclients: i32) -> Result<(), RlimitError> {
    // C computes `nclients + 3` in int; near INT_MAX it wraps, and the comparison with
    // the unsigned rlim_t sign-extends it. Mirror that so the message is pgbench's.
    let needed = nclients.wrapping_add(3);
    let needed_unsigned = i64::from(needed) as u64;
    let lim = getrlimit(Resource::Nofile);
    let max = raw(lim.maximum);
    let cur = raw(lim.current);
    if max < needed_unsigned {
        return Err(beyond_limit(needed, max));
    }
    if cur < needed_unsigned {
        let new = Rlimit {
            current: Some(needed_unsigned),
            maximum: lim.maximum,
        };
        if let Err(e) = setrlimit(Resource::Nofile, new) {
            return Err(cannot_raise(needed, e));
        }
    }
    Ok(())
}

/// The descriptors this process has open now (`/proc/self/fd`, less the one that reads
/// it); 3 (the standard streams) if it cannot be read.
pub fn open_descriptors() -> u64 {
    match std::fs::read_dir("/proc/self/fd") {
        Ok(dir) => (dir.count() as u64).saturating_sub(1),
        Err(_) => 3,
    }
}

/// Makes room for a run: `needed` descriptors it cannot do without (those open now,
/// one socket per client, one poll set per thread, its log files) and `wanted` with
/// the ones it can do without (timers, whose absence only coarsens wake-ups, and the
/// sockets of cancel requests). Raises the soft limit up to the hard one as far as
/// `wanted` asks; fails, in pgbench's words, only when even `needed` is beyond the
/// hard limit.
pub fn ensure_run_files(needed: u64, wanted: u64) -> Result<(), RlimitError> {
    let lim = getrlimit(Resource::Nofile);
    let max = raw(lim.maximum);
    let cur = raw(lim.current);
    if max < needed {
        return Err(beyond_limit(needed, max));
    }
    let target = wanted.max(needed).min(max);
    if cur < target {
        let new = Rlimit {
            current: Some(target),
            maximum: lim.maximum,
        };
        if let Err(e) = setrlimit(Resource::Nofile, new) {
            if cur < needed {
                return Err(cannot_raise(needed, e));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_descriptors_counts_a_new_one() {
        let before = open_descriptors();
        let f = std::fs::File::open("/proc/self/status").unwrap();
        assert_eq!(open_descriptors(), before + 1);
        drop(f);
        assert_eq!(open_descriptors(), before);
    }

    #[test]
    fn small_client_counts_pass() {
        assert_eq!(ensure_open_files(1), Ok(()));
    }

    #[test]
    fn beyond_the_hard_limit_fails_with_pgbench_text() {
        let max = getrlimit(Resource::Nofile).maximum;
        let Some(max) = max else { return }; // unlimited: nothing can exceed it
        let n = i32::try_from(max).unwrap_or(i32::MAX - 3);
        let e = ensure_open_files(n).expect_err("above the hard limit");
        assert_eq!(
            e.message,
            format!(
                "need at least {} open files, but system limit is {}",
                n.wrapping_add(3),
                max
            )
        );
        assert_eq!(e.hint.as_deref(), Some(HINT));
    }
}
