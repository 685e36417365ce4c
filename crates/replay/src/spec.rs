//! [`ReplaySpec`]: the typed description of one replay — which logs, how they are read,
//! its pacing and order, where it connects, and which share of the sessions it plays
//! (one generator of several). The command line and campaigns build it; the engine runs
//! it. Connection settings are resolved here, once per logged user and database.

use std::path::PathBuf;
use std::time::Duration;

use pgsurge_wire::{ConfigError, ConnConfig};

use crate::limits::Limits;
use crate::log::LogFormat;

/// How statements are timed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pacing {
    /// Each statement at its logged offset divided by the factor (2: twice as fast).
    Speed(f64),
    /// Each session's next statement as soon as its previous answer came; sessions
    /// still start at their logged offsets divided by the factor.
    Max {
        /// Factor applied to the sessions' starts.
        speed: f64,
    },
}

impl Pacing {
    /// The factor offsets are divided by.
    pub fn speed(&self) -> f64 {
        match *self {
            Pacing::Speed(s) | Pacing::Max { speed: s } => s,
        }
    }
}

/// How sessions are ordered against each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Each session keeps its own timing; statements of different sessions may pass
    /// each other (realistic concurrency, never a stall).
    Independent,
    /// Statements start in the log's order across sessions; a replay that cannot go on
    /// for `stall_after` names the statements that wait and ends.
    Strict {
        /// How long without progress is a stall.
        stall_after: Duration,
    },
}

/// One generator's share of the sessions: session `n` is played by generator
/// `n % count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    /// This generator (0-based).
    pub index: u32,
    /// How many generators.
    pub count: u32,
}

impl Share {
    /// Whether session `no` is this generator's.
    pub fn has(&self, no: u32) -> bool {
        self.count <= 1 || no % self.count == self.index
    }
}

/// Where sessions connect: the server's settings, and what replaces the logged user and
/// database (a value given here wins over the log's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Target {
    /// Every session connects with exactly this (a campaign's target: its database
    /// and user, whatever the log's); the fields below are then not used.
    pub fixed: Option<ConnConfig>,
    /// `-h`.
    pub host: Option<String>,
    /// `-p`.
    pub port: Option<String>,
    /// `-U`: every session's user.
    pub user: Option<String>,
    /// `-d`: every session's database, or a conninfo string/URI whose settings apply
    /// (its user and database, when it has them, to every session).
    pub dbname: Option<String>,
}

impl Target {
    /// The connection of a session logged as `user` on `database`.
    pub fn config_for(
        &self,
        user: Option<&str>,
        database: Option<&str>,
        env: &impl Fn(&str) -> Option<String>,
    ) -> Result<ConnConfig, ConfigError> {
        if let Some(c) = &self.fixed {
            return Ok(c.clone());
        }
        let params: [(&str, Option<&str>); 6] = [
            ("host", self.host.as_deref()),
            ("port", self.port.as_deref()),
            ("user", user),
            ("dbname", database.filter(|d| !looks_like_conninfo(d))),
            ("user", self.user.as_deref()),
            ("dbname", self.dbname.as_deref()),
        ];
        ConnConfig::from_params(&params, true, env)
    }
}

fn looks_like_conninfo(s: &str) -> bool {
    s.contains('=') || s.starts_with("postgres://") || s.starts_with("postgresql://")
}

/// One replay, described.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplaySpec {
    /// The log files, in time order.
    pub logs: Vec<PathBuf>,
    /// Their format (`None`: found per file).
    pub format: Option<LogFormat>,
    /// The `log_line_prefix` of stderr logs.
    pub log_line_prefix: String,
    /// Unreadable lines are counted and skipped instead of ending the replay.
    pub skip_unreadable: bool,
    /// Timing.
    pub pacing: Pacing,
    /// Order across sessions.
    pub order: Order,
    /// Driver threads (strict order uses one).
    pub threads: usize,
    /// Where sessions connect.
    pub target: Target,
    /// This generator's share of the sessions (`None`: all).
    pub share: Option<Share>,
    /// The common start of a distributed replay (µs since the Unix epoch).
    pub start_at_epoch_us: Option<i64>,
    /// The bounds on what the logs can make the replay hold.
    pub limits: Limits,
}

impl ReplaySpec {
    /// A replay of `logs` with the defaults: formats found per file, the documented
    /// prefix, speed 1, independent sessions, one thread.
    pub fn new(logs: Vec<PathBuf>) -> Self {
        ReplaySpec {
            logs,
            format: None,
            log_line_prefix: crate::log::DEFAULT_PREFIX.to_string(),
            skip_unreadable: false,
            pacing: Pacing::Speed(1.0),
            order: Order::Independent,
            threads: 1,
            target: Target::default(),
            share: None,
            start_at_epoch_us: None,
            limits: Limits::current(),
        }
    }

    /// Checks the values the types allow but a replay does not.
    pub fn validate(&self) -> Result<(), String> {
        if self.logs.is_empty() {
            return Err("no log file to replay".into());
        }
        let s = self.pacing.speed();
        if !(s.is_finite() && s > 0.0) {
            return Err(format!("speed must be a number above 0, not {s}"));
        }
        if self.threads == 0 {
            return Err("threads must be at least 1".into());
        }
        if let (Order::Strict { .. }, Some(share)) = (self.order, self.share) {
            if share.count > 1 {
                return Err("--strict-order orders every session against the others: it cannot be split across generators".into());
            }
        }
        if let Some(s) = self.share {
            if s.count == 0 || s.index >= s.count {
                return Err(format!(
                    "generator {} of {} does not exist",
                    s.index, s.count
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn given_user_and_database_win_over_the_log() {
        let t = Target {
            host: Some("/tmp".into()),
            ..Target::default()
        };
        let c = t.config_for(Some("alice"), Some("shop"), &env).unwrap();
        assert_eq!((c.user(), c.dbname()), ("alice", "shop"));
        let t = Target {
            dbname: Some("copy".into()),
            user: Some("bob".into()),
            ..t
        };
        let c = t.config_for(Some("alice"), Some("shop"), &env).unwrap();
        assert_eq!((c.user(), c.dbname()), ("bob", "copy"));
        let t = Target {
            dbname: Some("host=/tmp port=5499 dbname=other".into()),
            user: None,
            ..t
        };
        let c = t.config_for(Some("alice"), Some("shop"), &env).unwrap();
        assert_eq!(
            (c.user(), c.dbname(), c.port()),
            ("alice", "other", "5499".to_string())
        );
    }

    #[test]
    fn strict_order_is_not_split() {
        let mut s = ReplaySpec::new(vec!["a.log".into()]);
        assert!(s.validate().is_ok());
        s.order = Order::Strict {
            stall_after: Duration::from_secs(1),
        };
        s.share = Some(Share { index: 0, count: 2 });
        assert!(s.validate().unwrap_err().contains("strict"));
        s.order = Order::Independent;
        s.pacing = Pacing::Speed(0.0);
        assert!(s.validate().is_err());
    }
}
