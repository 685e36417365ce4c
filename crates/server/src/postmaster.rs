//! The running postmaster seen from outside: reading `postmaster.pid`, telling a live
//! process from a dead or zombie one, and stopping it (fast, then immediate, then kill).

use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};

pub use pgsurge_supervisor::is_alive;

/// What `postmaster.pid` says about a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PidFile {
    /// The postmaster's process id (line 1).
    pub pid: i32,
    /// The port (line 4), if present.
    pub port: Option<u16>,
    /// The first socket directory (line 5), if present.
    pub socket_dir: Option<String>,
    /// The status word (line 8: `starting`, `ready`, `stopping`, `standby`), PostgreSQL 10+.
    pub status: Option<String>,
}

impl PidFile {
    /// Reads `<data_dir>/postmaster.pid`; `None` if absent or unreadable.
    pub fn read(data_dir: &Path) -> Option<PidFile> {
        let text = std::fs::read_to_string(data_dir.join("postmaster.pid")).ok()?;
        PidFile::parse(&text)
    }

    /// Parses the contents of a `postmaster.pid` file.
    pub fn parse(text: &str) -> Option<PidFile> {
        let lines: Vec<&str> = text.lines().collect();
        let pid: i32 = lines.first()?.trim().parse().ok()?;
        let field = |i: usize| {
            lines
                .get(i)
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
        };
        Some(PidFile {
            pid,
            port: field(3).and_then(|p| p.parse().ok()),
            socket_dir: field(4),
            status: field(7),
        })
    }
}

/// True if the process looks like a PostgreSQL server (its command is `postgres`).
pub fn looks_like_postgres(pid: i32) -> bool {
    match std::fs::read(format!("/proc/{pid}/cmdline")) {
        Ok(cmd) => {
            let argv0 = cmd.split(|b| *b == 0).next().unwrap_or_default();
            let argv0 = String::from_utf8_lossy(argv0);
            argv0.ends_with("postgres")
                || argv0.ends_with("postmaster")
                || argv0.starts_with("postgres:")
        }
        // Without /proc we cannot tell; assume it is.
        Err(_) => true,
    }
}

/// How long each stop phase may take.
#[derive(Debug, Clone, Copy)]
pub struct StopTimeouts {
    /// Waiting after SIGINT (fast shutdown: roll back, checkpoint, exit).
    pub fast: Duration,
    /// Waiting after SIGQUIT (immediate shutdown) before SIGKILL.
    pub immediate: Duration,
}

impl Default for StopTimeouts {
    fn default() -> Self {
        StopTimeouts {
            fast: Duration::from_secs(30),
            immediate: Duration::from_secs(5),
        }
    }
}

/// Stops the postmaster `pid`: SIGINT (fast shutdown), then SIGQUIT (immediate), then
/// SIGKILL, each after its timeout. If `child` is our handle on that process it is reaped.
/// Returns true if the process is gone at the end.
pub fn stop_postmaster(pid: i32, mut child: Option<&mut Child>, timeouts: StopTimeouts) -> bool {
    if is_gone(pid, &mut child) {
        return true;
    }
    for (signal, limit) in [
        (Signal::INT, timeouts.fast),
        (Signal::QUIT, timeouts.immediate),
        (Signal::KILL, Duration::from_secs(5)),
    ] {
        if let Some(pid) = Pid::from_raw(pid) {
            let _ = kill_process(pid, signal);
        }
        let deadline = Instant::now() + limit;
        loop {
            if is_gone(pid, &mut child) {
                return true;
            }
            if Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    false
}

/// Gone: reaped if it is our child, else not alive.
fn is_gone(pid: i32, child: &mut Option<&mut Child>) -> bool {
    match child {
        Some(c) => !matches!(c.try_wait(), Ok(None)),
        None => !is_alive(pid),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pid_file() {
        let text =
            "1234\n/tmp/data\n1700000000\n5433\n/tmp/sock\n127.0.0.1\n  5433001  32768\nready   \n";
        let p = PidFile::parse(text).unwrap();
        assert_eq!(p.pid, 1234);
        assert_eq!(p.port, Some(5433));
        assert_eq!(p.socket_dir.as_deref(), Some("/tmp/sock"));
        assert_eq!(p.status.as_deref(), Some("ready"));
        assert!(PidFile::parse("").is_none());
        assert!(PidFile::parse("abc\n").is_none());
    }
}
