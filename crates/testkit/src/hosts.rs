//! Simulated hosts for the tests that put a server or generators in network
//! namespaces of their own: running the setup commands, waiting for a port, and what
//! the machine needs to do it at all.

use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `cmd` and returns its stdout; a failure panics with the command and its stderr.
pub fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs a shell line as [`run`] does.
pub fn sh(line: &str) -> String {
    run(Command::new("sh").arg("-c").arg(line))
}

/// Runs `cmd` for its effect only, whatever it says or returns (the clean-up of a
/// guard, where a part already gone is no error).
pub fn quiet(cmd: &mut Command) {
    let _ = cmd.stdout(Stdio::null()).stderr(Stdio::null()).status();
}

/// Waits up to 30 s until `addr:port` accepts a TCP connection; panics naming `what`.
pub fn wait_port(addr: &str, port: u16, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let sock: std::net::SocketAddr = format!("{addr}:{port}").parse().unwrap();
    while TcpStream::connect_timeout(&sock, Duration::from_millis(200)).is_err() {
        assert!(Instant::now() < deadline, "{what} did not listen on {sock}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Why this machine cannot simulate hosts in network namespaces, if it cannot: not
/// root, or a program missing among `ip`, `unshare`, `runuser` and the `extra` ones
/// (program, package).
pub fn namespaces_unavailable(extra: &[(&str, &str)]) -> Option<String> {
    if !crate::is_root() {
        return Some("network namespaces need root".into());
    }
    let base = [
        ("ip", "iproute2"),
        ("unshare", "util-linux"),
        ("runuser", "util-linux"),
    ];
    for (prog, package) in base.iter().chain(extra) {
        let found = Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {prog}"))
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            return Some(format!("no {prog} ({package})"));
        }
    }
    None
}
