//! What a log message says, read from its English text: a session's start and end, a
//! statement (simple, or an extended-protocol execute with its statement name), a
//! duration, or something a replay does not use. Owns the message texts PostgreSQL
//! writes under `log_connections`, `log_disconnections`, `log_statement` and
//! `log_min_duration_statement`, and the postmaster's lines that tell every session
//! had ended (a start, a shutdown, a restart after a crash); nothing here keeps state.

/// A message a replay acts on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Message<'a> {
    /// `connection authorized: user=… database=…`.
    Connect {
        /// `user=`.
        user: Option<&'a str>,
        /// `database=`.
        database: Option<&'a str>,
    },
    /// `disconnection: session time: …`.
    Disconnect,
    /// `statement: SQL` (a simple query).
    Simple(&'a str),
    /// `execute NAME: SQL` (extended protocol; `None`: the unnamed statement).
    Execute {
        /// The prepared statement's name.
        name: Option<&'a str>,
        /// Its text.
        sql: &'a str,
    },
    /// `duration: X ms`, alone (the statement was logged before it) or followed by
    /// what it measured.
    Duration {
        /// µs.
        us: i64,
        /// What it measured when it says (a statement logged only here, or the parse
        /// or bind step of an execute).
        of: Measured<'a>,
    },
    /// `duration:` followed by no time PostgreSQL writes (not a number of
    /// milliseconds, negative, or longer than decades): a damaged line.
    BadDuration,
    /// Anything else.
    Other,
}

/// What a `duration:` line names after the time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Measured<'a> {
    /// Nothing: the session's last statement.
    Last,
    /// A statement logged only by its duration (`statement: SQL`).
    Simple(&'a str),
    /// An execute logged only by its duration.
    Execute {
        /// The prepared statement's name.
        name: Option<&'a str>,
        /// Its text.
        sql: &'a str,
    },
    /// The parse or bind step of an extended-protocol statement.
    Step,
}

/// The statement name of `execute NAME: SQL` (`<unnamed>`, `P_1`, `P_1/C_2`, `fetch
/// from P_1/C_2`) and the SQL.
fn execute(rest: &str) -> Option<(Option<&str>, &str)> {
    let colon = rest.find(": ")?;
    let mut name = &rest[..colon];
    let sql = &rest[colon + 2..];
    name = name.strip_prefix("fetch from ").unwrap_or(name);
    // `statement/portal`: the portal is the replay's own.
    name = name.split('/').next().unwrap_or(name);
    Some((
        (name != "<unnamed>" && !name.is_empty()).then_some(name),
        sql,
    ))
}

/// `key=value` in a connection line's words.
fn word<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.split(' ')
        .find_map(|w| w.strip_prefix(key))
        .filter(|v| !v.is_empty())
}

/// Reads a LOG message.
pub fn classify(message: &str) -> Message<'_> {
    if let Some(sql) = message.strip_prefix("statement: ") {
        return Message::Simple(sql);
    }
    if let Some(rest) = message.strip_prefix("execute ") {
        if let Some((name, sql)) = execute(rest) {
            return Message::Execute { name, sql };
        }
    }
    if let Some(rest) = message.strip_prefix("duration: ") {
        return duration(rest).unwrap_or(Message::BadDuration);
    }
    if let Some(rest) = message.strip_prefix("connection authorized: ") {
        return Message::Connect {
            user: word(rest, "user="),
            database: word(rest, "database="),
        };
    }
    if message.starts_with("disconnection: ") {
        return Message::Disconnect;
    }
    Message::Other
}

/// Longest duration read as one (ms, about 31 years): a longer, negative or
/// non-finite one is no duration PostgreSQL wrote.
const MAX_DURATION_MS: f64 = 1e12;

fn duration(rest: &str) -> Option<Message<'_>> {
    let ms_end = rest.find(" ms")?;
    let ms: f64 = rest[..ms_end]
        .parse()
        .ok()
        .filter(|ms| (0.0..MAX_DURATION_MS).contains(ms))?;
    let us = (ms * 1000.0).round() as i64;
    let after = &rest[ms_end + 3..];
    let of = match after.strip_prefix("  ") {
        None => Measured::Last,
        Some(what) => {
            if let Some(sql) = what.strip_prefix("statement: ") {
                Measured::Simple(sql)
            } else if let Some((name, sql)) = what.strip_prefix("execute ").and_then(execute) {
                Measured::Execute { name, sql }
            } else {
                Measured::Step
            }
        }
    };
    Some(Message::Duration { us, of })
}

/// What a postmaster's (or its startup process's) line says about every session at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerState {
    /// No session of the server runs any more: a postmaster starts (`starting
    /// PostgreSQL …`), the server is shut down (`database system is shut down`), or
    /// every process was ended after a crash (`all server processes terminated;
    /// reinitializing`).
    Restarted,
    /// `database system is ready to accept connections`: a (re)start's end, when no
    /// session can have lived through it, or a standby's promotion, when the sessions
    /// of the standby go on.
    Ready,
    /// `selected new timeline ID: N`: recovery ended on a new timeline (a promotion or
    /// the end of an archive recovery); the next [`ServerState::Ready`] is its end.
    NewTimeline,
}

/// The state of the server a LOG message tells, if it tells one (English only: with
/// other `lc_messages` these lines are not recognised).
pub fn server_state(message: &str) -> Option<ServerState> {
    if message.starts_with("starting PostgreSQL ")
        || message == "database system is shut down"
        || message == "all server processes terminated; reinitializing"
    {
        Some(ServerState::Restarted)
    } else if message == "database system is ready to accept connections" {
        Some(ServerState::Ready)
    } else if message.starts_with("selected new timeline ID: ") {
        Some(ServerState::NewTimeline)
    } else {
        None
    }
}

/// The message of a statement cancelled by its client (SQLSTATE 57014, and not a
/// `statement_timeout`, which the server does by itself).
pub fn is_client_cancel(message: &str) -> bool {
    message == "canceling statement due to user request"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_messages_a_replay_needs() {
        assert_eq!(classify("statement: select 1"), Message::Simple("select 1"));
        assert_eq!(
            classify("execute P_1: update t set x = $1"),
            Message::Execute {
                name: Some("P_1"),
                sql: "update t set x = $1"
            }
        );
        assert_eq!(
            classify("execute <unnamed>: select $1"),
            Message::Execute {
                name: None,
                sql: "select $1"
            }
        );
        assert_eq!(
            classify("execute fetch from P_2/C_3: select 2"),
            Message::Execute {
                name: Some("P_2"),
                sql: "select 2"
            }
        );
        assert_eq!(
            classify("connection authorized: user=alice database=shop application_name=psql"),
            Message::Connect {
                user: Some("alice"),
                database: Some("shop")
            }
        );
        assert_eq!(
            classify("disconnection: session time: 0:00:01.002 user=a database=b host=[local]"),
            Message::Disconnect
        );
        assert_eq!(
            classify("duration: 0.125 ms"),
            Message::Duration {
                us: 125,
                of: Measured::Last
            }
        );
        assert_eq!(
            classify("duration: 2.000 ms  statement: select 1"),
            Message::Duration {
                us: 2000,
                of: Measured::Simple("select 1")
            }
        );
        assert_eq!(
            classify("duration: 0.010 ms  bind <unnamed>: select $1"),
            Message::Duration {
                us: 10,
                of: Measured::Step
            }
        );
        assert_eq!(classify("checkpoint starting: time"), Message::Other);
        assert_eq!(server_state("checkpoint starting: time"), None);
        assert_eq!(
            server_state("starting PostgreSQL 18.1 on x86_64-pc-linux-gnu, compiled by gcc"),
            Some(ServerState::Restarted)
        );
        assert_eq!(
            server_state("database system is ready to accept connections"),
            Some(ServerState::Ready)
        );
        assert_eq!(
            server_state("database system is ready to accept read-only connections"),
            None
        );
        assert_eq!(
            server_state("selected new timeline ID: 2"),
            Some(ServerState::NewTimeline)
        );
        for bad in ["soon", "1e300 ms", "-1 ms", "NaN ms", "inf ms"] {
            assert_eq!(
                classify(&format!("duration: {bad}")),
                Message::BadDuration,
                "{bad}"
            );
        }
    }
}
