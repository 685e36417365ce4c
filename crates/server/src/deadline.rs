//! A child program waited for until a limit and no longer: [`output_within`] runs a
//! command with its output kept, and kills and reaps it when the limit passes, so that
//! a server that never answers (a lock, a synchronous standby that is gone, a stopped
//! postmaster) cannot hold the caller. The one home for this in the crate: the
//! single-user setup of a start and every `psql` a cluster runs use it.
//!
//! It kills the child alone, not a process group: the programs it runs (`psql`,
//! `postgres --single`) start no processes of their own.

use std::io::Write;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// What a child left when it ended or was stopped.
#[derive(Debug)]
pub(crate) struct Ended {
    /// Its exit status; `None` when it was still running at the limit and was killed.
    pub(crate) status: Option<ExitStatus>,
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: Vec<u8>,
}

/// Runs `cmd` with `input` on its standard input (closed after it; none: no input),
/// its output and errors kept; kills it (and waits for it) if it has not ended within
/// `limit`. An error only when it cannot be started or waited for.
pub(crate) fn output_within(
    mut cmd: Command,
    input: Option<Vec<u8>>,
    limit: Duration,
) -> std::io::Result<Ended> {
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn()?;
    // Written on a thread of its own: a child that reads nothing must not block the
    // wait below on a full pipe.
    if let (Some(mut stdin), Some(input)) = (child.stdin.take(), input) {
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
    let (stdout, stderr) = (drain(child.stdout.take()), drain(child.stderr.take()));
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(e);
            }
        }
    };
    Ok(Ended {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

/// Reads a child's output to its end on a thread of its own, so that the child never
/// blocks on a full pipe while it is waited for.
fn drain<R: std::io::Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        buf
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(script);
        cmd
    }

    #[test]
    fn a_child_that_ends_gives_its_status_and_output() {
        let ended = output_within(
            sh("cat; echo err >&2; exit 3"),
            Some(b"in\n".to_vec()),
            Duration::from_secs(600),
        )
        .unwrap();
        assert_eq!(ended.status.and_then(|s| s.code()), Some(3));
        assert_eq!(ended.stdout, b"in\n");
        assert_eq!(ended.stderr, b"err\n");
    }

    #[test]
    fn a_child_past_its_limit_is_killed_and_reaped() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let script = format!("echo $$ > '{}'; exec sleep 600", pid_file.display());
        // Two seconds are far more than a shell takes to write a line; one killed
        // before it could has started nothing that could be left behind.
        let ended = output_within(sh(&script), None, Duration::from_secs(2)).unwrap();
        assert!(ended.status.is_none(), "{:?}", ended.status);
        let pid = std::fs::read_to_string(&pid_file).ok();
        if let Some(pid) = pid.and_then(|p| p.trim().parse::<i32>().ok()) {
            let proc_dir = std::path::PathBuf::from(format!("/proc/{pid}"));
            // Neither running nor a zombie: killed and waited for.
            assert!(!proc_dir.exists(), "{} still there", proc_dir.display());
        }
    }
}
