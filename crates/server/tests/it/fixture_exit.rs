//! The shared fixture server does not outlive its test process: stopped synchronously
//! at normal exit, and by the watchdog when the process is killed.
//!
//! The test process is the helper binary `pgsurge-server-fixture-helper`
//! (`tests/helpers/fixture_helper.rs`).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::common::wait_gone;
use pgsurge_server::is_alive;

fn run_helper(mode: &str) -> (std::process::Child, i32, PathBuf) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pgsurge-server-fixture-helper"))
        .arg(mode)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = loop {
        let l = lines
            .next()
            .expect("helper ended before reporting")
            .unwrap();
        if let Some(at) = l.find("SERVER ") {
            break l[at + 7..].to_string();
        }
    };
    let (pid, data) = line.split_once(' ').unwrap();
    // Drain the rest so the helper never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (child, pid.parse().unwrap(), PathBuf::from(data))
}

#[test]
fn shared_server_stops_when_the_test_process_exits() {
    let (mut child, pid, data) = run_helper("exit");
    assert!(child.wait().unwrap().success());
    // The atexit hook stopped it before the process ended: no waiting needed.
    assert!(
        !is_alive(pid),
        "shared server {pid} outlived its test process"
    );
    assert!(!data.exists(), "{} left behind", data.display());
}

#[test]
fn shared_server_stops_when_the_test_process_is_killed() {
    let (mut child, pid, data) = run_helper("wait");
    assert!(is_alive(pid));
    child.kill().unwrap();
    let _ = child.wait();
    assert!(
        wait_gone(pid, 30),
        "shared server {pid} survived its killed test process"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while data.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!data.exists(), "{} left behind", data.display());
}
