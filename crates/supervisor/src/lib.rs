//! A command run to its end and no further (the process supervisor of a campaign's
//! hooks): [`run`] starts it in a process group of its own, keeps the end of its output,
//! kills it at its timeout, and kills whatever it started and left running.
//!
//! The command runs under a helper process: a fork of this one that makes itself a
//! child subreaper (`PR_SET_CHILD_SUBREAPER`), starts the command in a process group of
//! its own and waits for it. Whatever the command started and left running is
//! re-parented to the helper when its parent ends — also a process that left the
//! command's process group or session (`setsid`) — and the helper kills it once the
//! command has ended (or been killed at the timeout), so nothing it starts outlives it.
//! The helper reports the command's status and the processes it killed through a pipe
//! (module `reaper`, the only code here that runs between fork and exec). Only the
//! helper is a subreaper: the calling process is not, so its other children (servers)
//! are never re-parented to anything but init.
//!
//! It knows nothing of what the command is for: the caller builds the [`Command`]
//! (program, arguments, environment) and reads the [`Finished`] it gets back.
//!
//! Module `alive` answers whether a process still runs ([`is_alive`]), for every crate
//! that keeps a pid.

use std::io::{BufRead, Read};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod alive;
mod reaper;

pub use alive::is_alive;

/// How long past the timeout the helper is given to report before it is killed too.
const HELPER_GRACE: Duration = Duration::from_secs(15);

/// How a supervised command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// It exited with this status.
    Exited(i32),
    /// A signal ended it (not the supervisor's).
    Signaled,
    /// It ran past its timeout and was killed, with its process group.
    TimedOut,
}

/// What [`run`] saw of a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// How it ended.
    pub ending: Ending,
    /// Wall time, from start to the end of the cleanup.
    pub duration: Duration,
    /// Its standard output and error, interleaved, the last `keep_output` bytes; when a
    /// process it started still holds the pipe after everything was killed, what was
    /// read until then and a line saying so.
    pub output: Vec<u8>,
    /// The processes it left running, killed when it ended: `name (pid N)`, the first
    /// ones.
    pub killed: Vec<String>,
    /// How many processes were killed in all ([`Finished::killed`] names the first
    /// ones).
    pub killed_count: usize,
}

/// Why a command could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum SuperviseError {
    /// A pipe for its output or for the helper's report could not be made.
    #[error("cannot create a pipe: {0}")]
    Pipe(std::io::Error),
    /// The program could not be started.
    #[error("cannot run {program}: {source}")]
    Spawn {
        /// The program, as the command names it.
        program: String,
        /// What the system said.
        source: std::io::Error,
    },
}

/// What the helper reported.
#[derive(Debug, Default)]
struct Report {
    /// `exit N`: the command's exit status.
    exit: Option<i32>,
    /// `signal N` (the command was killed by a signal) or `timeout`.
    ended: bool,
    timed_out: bool,
    killed: Vec<String>,
    more: usize,
}

impl Report {
    fn read(pipe: std::io::PipeReader, command_pid: &AtomicI32) -> Report {
        let mut r = Report::default();
        for line in std::io::BufReader::new(pipe).split(b'\n') {
            let Ok(line) = line else { break };
            let line = String::from_utf8_lossy(&line);
            let (word, rest) = line.split_once(' ').unwrap_or((&line, ""));
            match word {
                "pid" => command_pid.store(rest.parse().unwrap_or(0), Ordering::SeqCst),
                "exit" => {
                    r.exit = rest.parse().ok();
                    r.ended = true;
                }
                "signal" => r.ended = true,
                "timeout" => {
                    r.timed_out = true;
                    r.ended = true;
                }
                "killed" => {
                    let (pid, comm) = rest.split_once(' ').unwrap_or((rest, "?"));
                    r.killed.push(format!("{comm} (pid {pid})"));
                }
                "more" => r.more = rest.parse().unwrap_or(0),
                _ => {}
            }
        }
        r
    }
}

/// Sends SIGKILL to `pid` (a process group when negative).
fn kill(pid: i32) {
    if pid != 0 && pid != -1 {
        // SAFETY: kill(2) with a pid we started (or its process group); no memory is
        // touched.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

/// Reads `reader` to its end on a thread, keeping the last `keep` bytes, so that a
/// chatty command cannot block on a full pipe.
fn collect(mut reader: std::io::PipeReader, keep: usize) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut kept: Vec<u8> = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match reader.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    kept.extend_from_slice(&buf[..n]);
                    if kept.len() > 2 * keep {
                        kept.drain(..kept.len() - keep);
                    }
                }
            }
        }
        if kept.len() > keep {
            kept.drain(..kept.len() - keep);
        }
        kept
    })
}

/// Runs `command` (its standard input closed, its output and errors kept: the last
/// `keep_output` bytes) under the helper: killed with its process group at `timeout`,
/// and every process it leaves running killed when it ends. Waits for all of it.
pub fn run(
    mut command: Command,
    timeout: Duration,
    keep_output: usize,
) -> Result<Finished, SuperviseError> {
    let started = Instant::now();
    let (reader, writer) = std::io::pipe().map_err(SuperviseError::Pipe)?;
    let writer2 = writer.try_clone().map_err(SuperviseError::Pipe)?;
    let (report_reader, report_writer) = std::io::pipe().map_err(SuperviseError::Pipe)?;
    let plan = reaper::Plan {
        report_fd: report_writer.as_raw_fd(),
        timeout_ns: u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX),
    };
    command
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer2)
        .process_group(0);
    // SAFETY: `reaper::start` runs between fork and exec and keeps to what is allowed
    // there: system calls on memory of its own stack, no allocation, no lock.
    unsafe {
        command.pre_exec(move || reaper::start(plan));
    }
    let mut child = command.spawn().map_err(|source| SuperviseError::Spawn {
        program: command.get_program().to_string_lossy().into_owned(),
        source,
    })?;
    drop(command); // the parent's copies of the pipe's write end
    drop(report_writer);
    let command_pid = Arc::new(AtomicI32::new(0));
    let report = {
        let command_pid = Arc::clone(&command_pid);
        std::thread::spawn(move || Report::read(report_reader, &command_pid))
    };
    let collector = collect(reader, keep_output);
    // The helper keeps the timeout; this deadline only guards against the helper
    // itself hanging.
    let deadline = started + timeout.saturating_add(HELPER_GRACE);
    let mut helper_killed = false;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() >= deadline => {
                helper_killed = true;
                kill(-command_pid.load(Ordering::SeqCst));
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break,
        }
    }
    let report = report.join().unwrap_or_default();
    // Everything the command started is gone by now; a process that could not be
    // killed (stuck in the kernel) must not hold the caller: wait a while for the output
    // (on a busy machine the reading thread may wait its turn for a core), then go on
    // without the rest.
    let output = {
        let wait_until = Instant::now() + Duration::from_secs(10);
        while !collector.is_finished() && Instant::now() < wait_until {
            std::thread::sleep(Duration::from_millis(10));
        }
        if collector.is_finished() {
            collector.join().unwrap_or_default()
        } else {
            b"(output not complete: a process the command started still holds it)".to_vec()
        }
    };
    let timed_out = report.timed_out || (helper_killed && !report.ended);
    let ending = match (timed_out, report.exit) {
        (true, _) => Ending::TimedOut,
        (false, Some(code)) => Ending::Exited(code),
        (false, None) => Ending::Signaled,
    };
    Ok(Finished {
        ending,
        duration: started.elapsed(),
        output,
        killed_count: report.killed.len() + report.more,
        killed: report.killed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The timeout of commands that end at once: far more than a shell takes to start
    /// and end on a busy machine.
    const QUICK: Duration = Duration::from_secs(60);

    fn sh(script: &str, timeout: Duration) -> Finished {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(script);
        run(cmd, timeout, 64 * 1024).expect("sh starts")
    }

    /// A `sleep` duration no other process has: its argument finds its processes.
    fn marker() -> String {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        format!(
            "25.{}{:03}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        )
    }

    /// Live (not zombie) processes with `marker` as an argument.
    fn alive_with(marker: &str) -> Vec<i32> {
        let mut found = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let has = cmdline.split(|&b| b == 0).any(|a| a == marker.as_bytes());
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X']));
            if has && !zombie {
                found.push(pid);
            }
        }
        found
    }

    #[test]
    fn status_and_output_are_kept() {
        let f = sh("echo out; echo err >&2; exit 3", QUICK);
        assert_eq!(f.ending, Ending::Exited(3));
        assert_eq!(f.output, b"out\nerr\n");
        assert_eq!(f.killed_count, 0);
    }

    #[test]
    fn a_command_past_its_timeout_is_killed_with_its_children() {
        let started = Instant::now();
        let m = marker();
        let f = sh(
            &format!("sleep {m} & sleep {m}"),
            Duration::from_millis(300),
        );
        assert_eq!(f.ending, Ending::TimedOut, "{f:?}");
        // At its timeout, not at the end of its sleeps.
        assert!(started.elapsed() < Duration::from_secs(20));
        assert_eq!(alive_with(&m), Vec::<i32>::new());
    }

    #[test]
    fn background_children_are_killed_when_the_command_ends() {
        let m = marker();
        let started = Instant::now();
        let f = sh(&format!("sleep {m} & echo x"), QUICK);
        assert_eq!(f.ending, Ending::Exited(0), "{f:?}");
        assert_eq!(f.output, b"x\n", "the output is complete: {f:?}");
        // When the shell ended, not when its child's sleep would have.
        assert!(started.elapsed() < Duration::from_secs(20), "{f:?}");
        assert_eq!(f.killed_count, 1, "{f:?}");
        assert!(f.killed[0].starts_with("sleep (pid "), "{f:?}");
        assert_eq!(alive_with(&m), Vec::<i32>::new());
    }

    #[test]
    fn processes_that_left_the_session_are_killed_too() {
        let (m1, m2, m3) = (marker(), marker(), marker());
        // setsid leaves the process group and the session; the double fork of a
        // daemon leaves its parent behind; a subshell's children come one level later.
        let f = sh(
            &format!(
                "setsid sleep {m1} & (setsid sh -c 'sleep {m2} &' &); sh -c 'sleep {m3}; true' & echo started"
            ),
            QUICK,
        );
        assert_eq!(f.ending, Ending::Exited(0), "{f:?}");
        assert_eq!(f.output, b"started\n");
        for m in [&m1, &m2, &m3] {
            assert_eq!(alive_with(m), Vec::<i32>::new(), "{m}: {f:?}");
        }
        assert!(f.killed_count >= 3, "{f:?}");
        // The same at the timeout: the escapee goes with the command's group. (The
        // timeout leaves the shell time to start it on a busy machine.)
        let m4 = marker();
        let f = sh(
            &format!("setsid sleep {m4} & sleep 30"),
            Duration::from_secs(5),
        );
        assert_eq!(f.ending, Ending::TimedOut, "{f:?}");
        assert_eq!(alive_with(&m4), Vec::<i32>::new(), "{f:?}");
        assert_eq!(f.killed_count, 1, "{f:?}");
    }

    #[test]
    fn output_keeps_its_end() {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg("yes 0123456789 | head -c 300000; echo; echo last");
        let f = run(cmd, QUICK, 1000).unwrap();
        assert_eq!(f.ending, Ending::Exited(0));
        assert_eq!(f.output.len(), 1000);
        assert!(f.output.ends_with(b"\nlast\n"));
    }

    #[test]
    fn a_program_that_cannot_start_is_an_error() {
        let e = run(Command::new("/nonexistent/program"), QUICK, 10).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cannot run /nonexistent/program: "),
            "{e}"
        );
    }
}
