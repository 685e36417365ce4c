//! The watchdog: a tiny `sh` process that stops a server when the process that started
//! it disappears without stopping it (SIGKILL, abort, `exit` with statics never dropped).
//!
//! We hold the write end of a pipe that is the watchdog's stdin (close-on-exec, so no
//! other child inherits it). The kernel closes it when we die, however we die. On EOF
//! the watchdog stops the postmaster unless we wrote `stopped` first, then removes the
//! directories it was given. It ignores terminal signals and sits in its own process
//! group so that Ctrl-C does not take it down before it has done its job.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Result, ServerError};

/// The watchdog script. `$1` is the postmaster pid, further arguments are directories to
/// remove once it is gone. Liveness ignores zombies: the dead owner may have been the
/// postmaster's parent, and a reaper may be slow.
const SCRIPT: &str = r#"
trap '' INT TERM HUP QUIT PIPE
pid="$1"; shift
msg=""
while IFS= read -r line; do msg="$msg$line"; done
if [ "$msg" = "stopped" ]; then exit 0; fi
alive() {
  [ -r "/proc/$pid/stat" ] || { kill -0 "$pid" 2>/dev/null; return; }
  st=$(sed -e 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -c1)
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}
waitgone() { n=0; while alive && [ "$n" -lt "$1" ]; do sleep 0.1; n=$((n+1)); done; }
if alive; then
  kill -INT "$pid" 2>/dev/null; waitgone 300
  if alive; then kill -QUIT "$pid" 2>/dev/null; waitgone 50; fi
  if alive; then kill -KILL "$pid" 2>/dev/null; waitgone 50; fi
fi
for d in "$@"; do rm -rf -- "$d"; done
"#;

/// A running watchdog; tell it [`Watchdog::disarm`] after stopping the server yourself.
#[derive(Debug)]
pub struct Watchdog {
    stdin: Option<ChildStdin>,
    child: Child,
}

impl Watchdog {
    /// Starts a watchdog for postmaster `pid` that removes `remove` after stopping it.
    pub fn spawn(pid: i32, remove: &[PathBuf]) -> Result<Watchdog> {
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(SCRIPT)
            .arg("pgsurge-watchdog")
            .arg(pid.to_string())
            .args(remove)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .current_dir("/")
            .process_group(0);
        let mut child = cmd.spawn().map_err(|e| ServerError::CommandFailed {
            what: "starting the watchdog (/bin/sh)".into(),
            detail: e.to_string(),
        })?;
        let stdin = child.stdin.take();
        Ok(Watchdog { stdin, child })
    }

    /// The watchdog's process id.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The server was stopped by us: let the watchdog exit without touching anything,
    /// and reap it (waits at most a second).
    pub fn disarm(&mut self) {
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.write_all(b"stopped\n");
        }
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}
