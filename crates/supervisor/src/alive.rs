//! Whether a process still runs, judged from `/proc/<pid>/stat` (the `procfs` crate): the
//! one answer the server's sweeps and the store's lock rows both use. A process that
//! exists counts as alive unless it is a zombie (ended, not yet reaped) or dead; a
//! missing entry means it ended. When its entry exists but cannot be read, it counts as
//! alive: a caller never removes what a live process may still own on a guess.

use procfs::process::Process;
use procfs::ProcError;

/// True unless `pid` surely names no running process.
pub fn is_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    let stat = Process::new(pid).and_then(|p| p.stat());
    match stat {
        Ok(stat) => !matches!(stat.state, 'Z' | 'X' | 'x'),
        Err(ProcError::NotFound(_)) => false,
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::is_alive;

    #[test]
    fn this_process_runs_and_no_process_has_pid_zero_or_the_highest() {
        assert!(is_alive(std::process::id() as i32));
        assert!(!is_alive(0));
        assert!(!is_alive(-1));
        assert!(!is_alive(i32::MAX));
    }

    #[test]
    fn a_child_is_alive_until_it_ends_and_not_once_it_is_a_zombie() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep starts");
        let pid = child.id() as i32;
        assert!(is_alive(pid));
        child.kill().expect("the child is killed");
        // Not reaped yet: a zombie, which runs nothing.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while is_alive(pid) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(
            !is_alive(pid),
            "a killed, unreaped child still counts as alive"
        );
        child.wait().expect("reaped");
        assert!(!is_alive(pid));
    }
}
