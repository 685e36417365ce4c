//! `[[fault]]`: what is done to a test's servers during its run, and the fault as a
//! run applies it.

use serde::{Deserialize, Serialize};

use super::DurationValue;

/// `[[fault]]`: something done to a test's servers at a time after its run started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// When, after the run's start: seconds or a duration (`"5s"`, `"1m30s"`).
    pub at: DurationValue,
    /// `promote` (a standby), `stop` (immediate shutdown of the primary), `kill`
    /// (SIGKILL of the primary and its processes), `restart` (the primary shut down
    /// fast and started again in place), `pause-replay`, `resume-replay` (on a
    /// standby), or `command` (a shell command: the fault on an existing server).
    pub action: String,
    /// The standby of `promote`, `pause-replay`, `resume-replay`: 1 (`replica1`, the
    /// default), 2…
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<u32>,
    /// `command`: the shell command (`sh -c`; `PGSURGE_TARGET` names the target).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// `delay`, `loss`: the network device whose outgoing packets are held or dropped
    /// (`tc netem`), e.g. a standby's end of the veth pair that leads to it; or
    /// `"replication"`: a standby's link held both ways by a relay in pgsurge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// `delay`, `loss`: the network namespace that holds `link`, if not pgsurge's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns: Option<String>,
    /// `delay` (and with `loss`): how long each packet is held (`"50ms"`; 0 and no
    /// loss removes the link's netem).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<DurationValue>,
    /// `loss` (and with `delay`): the share of packets dropped, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<f64>,
}

/// The actions of a `[[fault]]`.
pub const FAULT_ACTIONS: &[&str] = &[
    "promote",
    "stop",
    "kill",
    "restart",
    "pause-replay",
    "resume-replay",
    "delay",
    "loss",
    "command",
];

/// The `link` of a `delay` that the standbys' relay applies: a target with this
/// fault streams each standby through a relay in pgsurge (no netem needed).
pub const REPLICATION_LINK: &str = "replication";

/// Why a `[[fault]]` cannot be scheduled, by the key it is about; its text is the
/// message alone (the reader of the campaign file names the key).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FaultSpecError {
    /// Its time, `at`, is not a duration.
    #[error("{0}")]
    At(String),
    /// Its action, or a key the action takes, is not one a run can apply.
    #[error("{0}")]
    Action(String),
}

impl FaultSpecError {
    /// The key of the `[[fault]]` that is wrong: `at` or `action`.
    pub fn key(&self) -> &'static str {
        match self {
            FaultSpecError::At(_) => "at",
            FaultSpecError::Action(_) => "action",
        }
    }
}

impl FaultSpec {
    /// The fault at its time as a run applies it, or what is wrong with its time or
    /// its action.
    pub fn scheduled(&self) -> Result<pgsurge_faults::Scheduled, FaultSpecError> {
        let at_s = self.at.seconds().map_err(FaultSpecError::At)?;
        let action = self.action().map_err(FaultSpecError::Action)?;
        Ok(pgsurge_faults::Scheduled {
            at_s,
            name: self.action.clone(),
            action,
        })
    }

    /// What the fault does, or what is wrong with its action or the keys it takes.
    fn action(&self) -> Result<pgsurge_faults::Action, String> {
        use pgsurge_faults::Action;
        let replica = self.replica.map(|n| n as usize);
        let link_keys = self.link.is_some()
            || self.netns.is_some()
            || self.delay.is_some()
            || self.loss.is_some();
        let action = match (self.action.as_str(), &self.command) {
            ("command", Some(command)) => Action::Command(command.clone()),
            ("delay" | "loss", _) if self.link.as_deref() == Some(REPLICATION_LINK) => {
                Action::Server(self.relay_delay(replica.unwrap_or(1))?)
            }
            ("delay" | "loss", _) => Action::Link(self.link_fault()?),
            (other, _) if link_keys => {
                return Err(format!(
                    "link, netns, delay and loss are keys of action = \"delay\" or \"loss\", not of \"{other}\""
                ))
            }
            (other, _) => {
                Action::Server(pgsurge_server::Fault::parse(other, replica).ok_or_else(|| {
                    format!("\"{other}\" is not a fault ({})", FAULT_ACTIONS.join(", "))
                })?)
            }
        };
        Ok(action)
    }

    /// `delay` on `link = "replication"`: the standby's relay holds what goes both
    /// ways; a relay copies a stream, so it has no loss.
    fn relay_delay(&self, replica: usize) -> Result<pgsurge_server::Fault, String> {
        if self.loss.is_some() || self.action == "loss" || self.netns.is_some() {
            return Err(format!(
                "link = \"{REPLICATION_LINK}\" is the standbys' relay in pgsurge, a stream \
                 copy: it takes a delay, no loss and no netns (give loss on a network device)"
            ));
        }
        let delay_s = match &self.delay {
            Some(d) => d.seconds()?,
            None => return Err("needs delay = \"50ms\" (0 removes it)".into()),
        };
        if !(delay_s.is_finite() && (0.0..=60.0).contains(&delay_s)) {
            return Err(format!("a delay of {delay_s} s: give one from 0 to 60 s"));
        }
        let delay_us = (delay_s * 1e6).round() as u64;
        Ok(pgsurge_server::Fault::LinkDelay { replica, delay_us })
    }

    /// `delay` and `loss`: the link and its netem.
    fn link_fault(&self) -> Result<pgsurge_faults::LinkFault, String> {
        let device = self
            .link
            .clone()
            .ok_or("needs link = \"DEVICE\": the network device whose packets it holds or drops")?;
        let delay_s = match (&self.delay, self.action.as_str()) {
            (Some(d), _) => d.seconds()?,
            (None, "delay") => return Err("needs delay = \"50ms\" (0 removes it)".into()),
            (None, _) => 0.0,
        };
        let loss = match (self.loss, self.action.as_str()) {
            (Some(l), _) => l,
            (None, "loss") => return Err("needs loss = a percentage (0 removes it)".into()),
            (None, _) => 0.0,
        };
        pgsurge_faults::LinkFault::new(self.netns.clone(), device, delay_s, loss)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(text: &str) -> FaultSpec {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn an_error_names_the_key_it_is_about() {
        let e = fault("at = \"soon\"\naction = \"nope\"")
            .scheduled()
            .unwrap_err();
        assert_eq!(e.key(), "at");
        assert!(
            matches!(&e, FaultSpecError::At(m) if *m == e.to_string()),
            "{e:?}"
        );
        let e = fault("at = 5\naction = \"nope\"").scheduled().unwrap_err();
        assert_eq!(e.key(), "action");
        assert_eq!(
            e.to_string(),
            format!("\"nope\" is not a fault ({})", FAULT_ACTIONS.join(", "))
        );
        let e = fault("at = 5\naction = \"delay\"\nlink = \"veth1\"\ndelay = \"later\"")
            .scheduled()
            .unwrap_err();
        assert_eq!(e.key(), "action");
        let s = fault("at = \"1m30s\"\naction = \"kill\"")
            .scheduled()
            .unwrap();
        assert_eq!((s.at_s, s.name.as_str()), (90.0, "kill"));
    }
}
