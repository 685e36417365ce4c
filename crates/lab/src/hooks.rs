//! Runs the campaign's `[hooks]`: a shell command (`sh -c`) with the test described in
//! its environment, killed (with its process group) at the timeout, its output captured
//! (the last 64 KiB, passwords masked) and kept as facts of the test.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pgsurge_store::FactRecord;
use pgsurge_wire::redact::redact;

/// Bytes of output kept (the end of it).
const KEEP_OUTPUT: usize = 64 * 1024;

/// How a hook ended.
#[derive(Debug, Clone, PartialEq)]
pub struct HookOutcome {
    /// `set_start`, `before_test` or `after_test`.
    pub name: &'static str,
    /// Exit status; None when killed at the timeout or by a signal.
    pub exit: Option<i32>,
    /// True when it ran past the timeout and was killed.
    pub timed_out: bool,
    /// Wall time.
    pub duration_s: f64,
    /// Its standard output and error, interleaved, at most the last 64 KiB.
    pub output: String,
}

impl HookOutcome {
    /// True when it exited with status 0.
    pub fn ok(&self) -> bool {
        self.exit == Some(0)
    }

    /// Why it failed, for the test's error: the status and the last output line.
    pub fn failure(&self) -> String {
        let how = if self.timed_out {
            format!(
                "ran past its timeout of {:.0} s and was killed",
                self.duration_s
            )
        } else {
            match self.exit {
                Some(code) => format!("exited with status {code}"),
                None => "was killed by a signal".into(),
            }
        };
        let last = self.output.lines().rev().find(|l| !l.trim().is_empty());
        match last {
            Some(line) => format!("{} hook {how}: {}", self.name, line.trim()),
            None => format!("{} hook {how}", self.name),
        }
    }

    /// The facts stored with the test: `hook.<name>.exit`, `.duration_s`, `.output`.
    pub fn facts(&self) -> Vec<FactRecord> {
        let exit = match (self.exit, self.timed_out) {
            (_, true) => "timeout".to_string(),
            (Some(c), false) => c.to_string(),
            (None, false) => "signal".to_string(),
        };
        vec![
            FactRecord::new(format!("hook.{}.exit", self.name), exit),
            FactRecord::new(
                format!("hook.{}.duration_s", self.name),
                format!("{:.3}", self.duration_s),
            ),
            FactRecord::new(format!("hook.{}.output", self.name), self.output.clone()),
        ]
    }
}

/// Runs `command` with `sh -c`, the variables `env` added to its environment. Never
/// fails: a command that cannot be started is an outcome with exit 127 and the reason.
pub fn run_hook(
    name: &'static str,
    command: &str,
    env: &[(String, String)],
    timeout: Duration,
) -> HookOutcome {
    let started = Instant::now();
    let fail = |why: String| HookOutcome {
        name,
        exit: Some(127),
        timed_out: false,
        duration_s: started.elapsed().as_secs_f64(),
        output: why,
    };
    let (mut reader, writer) = match std::io::pipe() {
        Ok(p) => p,
        Err(e) => return fail(format!("cannot create a pipe: {e}")),
    };
    let writer2 = match writer.try_clone() {
        Ok(w) => w,
        Err(e) => return fail(format!("cannot create a pipe: {e}")),
    };
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer2)
        .process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return fail(format!("cannot run sh: {e}")),
    };
    drop(cmd); // the parent's copies of the pipe's write end
               // Read on a thread so a chatty hook cannot block on a full pipe.
    let collector = std::thread::spawn(move || {
        let mut kept: Vec<u8> = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match reader.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    kept.extend_from_slice(&buf[..n]);
                    if kept.len() > 2 * KEEP_OUTPUT {
                        kept.drain(..kept.len() - KEEP_OUTPUT);
                    }
                }
            }
        }
        if kept.len() > KEEP_OUTPUT {
            kept.drain(..kept.len() - KEEP_OUTPUT);
        }
        kept
    });
    let deadline = started + timeout;
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() >= deadline => {
                timed_out = true;
                // The whole group: sh and whatever it started.
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{}", child.id())])
                    .stderr(Stdio::null())
                    .status();
                let _ = child.kill();
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break None,
        }
    };
    // A background process still holding the pipe must not hold the campaign: wait
    // a moment for the output, then go on without the rest.
    let output = {
        let wait_until = Instant::now() + Duration::from_secs(2);
        while !collector.is_finished() && Instant::now() < wait_until {
            std::thread::sleep(Duration::from_millis(10));
        }
        if collector.is_finished() {
            collector.join().unwrap_or_default()
        } else {
            b"(output not complete: a process the hook started still holds it)".to_vec()
        }
    };
    HookOutcome {
        name,
        exit: if timed_out {
            None
        } else {
            status.and_then(|s| s.code())
        },
        timed_out,
        duration_s: started.elapsed().as_secs_f64(),
        output: redact(&String::from_utf8_lossy(&output)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_output_and_environment_are_kept() {
        let env = vec![("PGSURGE_TEST_KEY".to_string(), "a/s1/x/c1/r-/1".to_string())];
        let o = run_hook(
            "before_test",
            "echo key=$PGSURGE_TEST_KEY; echo oops >&2; exit 3",
            &env,
            Duration::from_secs(10),
        );
        assert_eq!(o.exit, Some(3));
        assert!(!o.ok());
        assert!(o.output.contains("key=a/s1/x/c1/r-/1\n"), "{o:?}");
        assert!(o.output.contains("oops"), "{o:?}");
        assert_eq!(o.failure(), "before_test hook exited with status 3: oops");
        let facts = o.facts();
        assert_eq!(facts[0].value.as_deref(), Some("3"));
    }

    #[test]
    fn a_hook_past_its_timeout_is_killed_with_its_children() {
        let started = Instant::now();
        let o = run_hook(
            "after_test",
            "sleep 30 & sleep 30",
            &[],
            Duration::from_millis(300),
        );
        assert!(o.timed_out && o.exit.is_none(), "{o:?}");
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(o.facts()[0].value.as_deref(), Some("timeout"));
    }

    #[test]
    fn output_is_bounded_and_passwords_masked() {
        let o = run_hook(
            "set_start",
            "yes 0123456789 | head -c 300000; echo; echo 'host=h password=Sekr3t'",
            &[],
            Duration::from_secs(10),
        );
        assert!(o.ok());
        assert!(o.output.len() <= KEEP_OUTPUT + 16, "{}", o.output.len());
        assert!(!o.output.contains("Sekr3t"));
        assert!(
            o.output.ends_with("password=********\n"),
            "{}",
            &o.output[o.output.len() - 40..]
        );
    }
}
