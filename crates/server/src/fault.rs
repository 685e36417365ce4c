//! The faults a throwaway topology takes while a load runs on it ([`Fault`]): a
//! standby promoted, its replay paused or resumed, the primary shut down immediately,
//! killed with its processes or restarted in place, a delay on a standby's link,
//! applied to a primary and its standbys.

use std::time::Duration;

use crate::cluster::Cluster;
use crate::error::{Result, ServerError};

/// How long an immediate shutdown of the primary may take.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// One fault, named as a campaign names it (`promote`, `stop`, `kill`, `restart`,
/// `pause-replay`, `resume-replay`); a standby by its number (1 = `replica1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// `pg_promote` on the standby: it ends recovery and accepts writes.
    Promote(usize),
    /// WAL replay paused on the standby (WAL keeps arriving).
    PauseReplay(usize),
    /// WAL replay resumed on the standby.
    ResumeReplay(usize),
    /// Immediate shutdown of the primary (SIGQUIT: no checkpoint).
    Stop,
    /// SIGKILL of the primary's postmaster and every process of its group.
    Kill,
    /// Fast shutdown of the primary and a start of the same data directory on the same
    /// port ([`Cluster::restart`]).
    Restart,
    /// What goes both ways between the standby and the primary held `delay_us` (0
    /// removes it), through the relay the standby streams through
    /// ([`Cluster::set_link_delay`]).
    LinkDelay {
        /// The standby (1 = `replica1`).
        replica: usize,
        /// The delay, µs.
        delay_us: u64,
    },
}

impl Fault {
    /// The fault an action names, on standby `replica` (1 when not given) for those
    /// acting on a standby; None for an action that is not a server's fault.
    pub fn parse(action: &str, replica: Option<usize>) -> Option<Fault> {
        let n = replica.unwrap_or(1);
        Some(match action {
            "promote" => Fault::Promote(n),
            "pause-replay" => Fault::PauseReplay(n),
            "resume-replay" => Fault::ResumeReplay(n),
            "stop" => Fault::Stop,
            "kill" => Fault::Kill,
            "restart" => Fault::Restart,
            _ => return None,
        })
    }

    /// The standby it acts on (1-based), if it acts on one.
    pub fn replica(self) -> Option<usize> {
        match self {
            Fault::Promote(n) | Fault::PauseReplay(n) | Fault::ResumeReplay(n) => Some(n),
            Fault::LinkDelay { replica, .. } => Some(replica),
            Fault::Stop | Fault::Kill | Fault::Restart => None,
        }
    }

    /// Applies the fault to `primary` or to one of `replicas`, and returns when it is
    /// done (the standby promoted, the primary's postmaster gone, or back and accepting
    /// connections).
    pub fn apply(self, primary: &Cluster, replicas: &[Cluster]) -> Result<()> {
        let standby = |n: usize| {
            replicas.get(n.wrapping_sub(1)).ok_or_else(|| {
                ServerError::Invalid(format!(
                    "no replica{n}: the primary has {} standbys",
                    replicas.len()
                ))
            })
        };
        let gone = |done: bool, what: &str| {
            done.then_some(())
                .ok_or_else(|| ServerError::CommandFailed {
                    what: format!("{what} the primary on port {}", primary.port()),
                    detail: "its postmaster is still running".to_string(),
                })
        };
        match self {
            Fault::Promote(n) => standby(n)?.promote(),
            Fault::PauseReplay(n) => standby(n)?.pause_replay(true),
            Fault::ResumeReplay(n) => standby(n)?.pause_replay(false),
            Fault::Stop => gone(primary.stop_immediate(STOP_TIMEOUT), "stopping"),
            Fault::Kill => gone(primary.kill(), "killing"),
            Fault::Restart => primary.restart(),
            Fault::LinkDelay { replica, delay_us } => {
                standby(replica)?.set_link_delay(Duration::from_micros(delay_us))
            }
        }
    }
}
