//! The helper process. Everything here runs in a child of a fork of a process
//! with other threads, before any exec: it makes system calls on memory of its own
//! stack only — no allocation, no lock, no panic (the other threads' locks were copied
//! in whatever state they were in).

use libc::{c_int, pid_t};

/// What the helper is given, prepared before the fork.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    /// The write end of the report pipe.
    pub report_fd: c_int,
    /// The command's timeout.
    pub timeout_ns: u64,
}

/// Processes named one by one in the report; the rest are counted.
const NAMED: usize = 64;

/// How long the helper keeps killing what the command left before it gives up (a
/// process stuck in the kernel dies when it leaves it, as init's child).
const CLEANUP_NS: u64 = 5_000_000_000;

/// Runs in the child `Command` forked for the command (the helper): makes it a child
/// subreaper, forks again, and returns in the grandchild, which `Command` then
/// turns into the command. The helper never returns: it waits for the command,
/// kills what it left, reports and exits.
pub(crate) fn start(plan: Plan) -> std::io::Result<()> {
    // SAFETY: plain system calls; see the module documentation.
    unsafe {
        libc::prctl(
            libc::PR_SET_CHILD_SUBREAPER,
            1 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        );
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
            libc::signal(sig, libc::SIG_DFL);
        }
        let parent = libc::getppid();
        match libc::fork() {
            -1 => Err(std::io::Error::last_os_error()),
            0 => {
                // The command: a process group of its own, so that it can be killed
                // whole at the timeout.
                libc::setpgid(0, 0);
                Ok(())
            }
            command => {
                libc::setpgid(command, command);
                helper(command, plan, parent)
            }
        }
    }
}

/// A line of the report, built on the stack.
struct Line {
    buf: [u8; 96],
    len: usize,
}

impl Line {
    fn new(word: &[u8]) -> Line {
        let mut l = Line {
            buf: [0; 96],
            len: 0,
        };
        l.push(word);
        l
    }

    fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if let Some(slot) = self.buf.get_mut(self.len) {
                *slot = b;
                self.len += 1;
            }
        }
    }

    fn num(&mut self, n: i64) {
        if n < 0 {
            self.push(b"-");
        }
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        let mut v = n.unsigned_abs();
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 || i == 0 {
                break;
            }
        }
        self.push(&digits[i..]);
    }

    fn send(&mut self, fd: c_int) {
        self.push(b"\n");
        let mut done = 0;
        while done < self.len {
            let rest = &self.buf[done..self.len];
            // SAFETY: write(2) from a live buffer of the given length.
            let n = unsafe { libc::write(fd, rest.as_ptr().cast(), rest.len()) };
            if n > 0 {
                done += n as usize;
            } else if n < 0 && errno() == libc::EINTR {
                continue;
            } else {
                return;
            }
        }
    }
}

fn errno() -> c_int {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime(2) into a local.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

fn sleep_ms(ms: i64) {
    let ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: ms * 1_000_000,
    };
    // SAFETY: nanosleep(2) with a local.
    unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
}

/// Reads what fits of `path` (a NUL-terminated path) into `buf`; the length read.
fn read_file(path: &[u8], buf: &mut [u8]) -> Option<usize> {
    // SAFETY: open/read/close on a NUL-terminated path and a live buffer.
    unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let mut len = 0;
        while len < buf.len() {
            let n = libc::read(fd, buf[len..].as_mut_ptr().cast(), buf.len() - len);
            if n > 0 {
                len += n as usize;
            } else if n < 0 && errno() == libc::EINTR {
                continue;
            } else {
                break;
            }
        }
        libc::close(fd);
        Some(len)
    }
}

/// What `/proc/PID/stat` says of a process: its state, parent, process group and
/// name.
struct Stat {
    state: u8,
    ppid: pid_t,
    pgrp: pid_t,
    comm: [u8; 16],
    comm_len: usize,
}

fn stat(pid: pid_t) -> Option<Stat> {
    let mut path = Line::new(b"/proc/");
    path.num(i64::from(pid));
    path.push(b"/stat\0");
    let mut buf = [0u8; 512];
    let n = read_file(&path.buf[..path.len], &mut buf)?;
    let text = buf.get(..n)?;
    // `pid (comm) S ppid …`: the name may hold spaces and parentheses.
    let open = text.iter().position(|&b| b == b'(')?;
    let close = text.iter().rposition(|&b| b == b')')?;
    let mut s = Stat {
        state: *text.get(close + 2)?,
        ppid: 0,
        pgrp: 0,
        comm: [0; 16],
        comm_len: 0,
    };
    for &b in text.get(open + 1..close)?.iter().take(16) {
        s.comm[s.comm_len] = if b.is_ascii_graphic() { b } else { b'?' };
        s.comm_len += 1;
    }
    // `ppid pgrp …` after the state.
    let mut fields = text.get(close + 4..)?.split(|&b| b == b' ');
    let number = |field: Option<&[u8]>| -> Option<pid_t> {
        let mut v: pid_t = 0;
        for &b in field?.iter().take_while(|b| b.is_ascii_digit()) {
            v = v.saturating_mul(10).saturating_add(pid_t::from(b - b'0'));
        }
        Some(v)
    };
    s.ppid = number(fields.next())?;
    s.pgrp = number(fields.next())?;
    Some(s)
}

/// Calls `f` with each child of this (single-threaded) process.
fn each_child(mut f: impl FnMut(pid_t)) {
    let mut buf = [0u8; 4096];
    if let Some(n) = read_file(b"/proc/thread-self/children\0", &mut buf) {
        // Space-separated pids; a pid cut by a full buffer is seen next round.
        let mut pid: pid_t = 0;
        let mut digits = false;
        for &b in &buf[..n] {
            if b.is_ascii_digit() {
                pid = pid.saturating_mul(10).saturating_add(pid_t::from(b - b'0'));
                digits = true;
            } else {
                if digits {
                    f(pid);
                }
                (pid, digits) = (0, false);
            }
        }
        return;
    }
    // A kernel without that file: every process whose parent is this one.
    // SAFETY: getpid(2), and open/getdents64/close on a local buffer.
    unsafe {
        let me = libc::getpid();
        let dir = libc::open(
            c"/proc".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if dir < 0 {
            return;
        }
        loop {
            let n = libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len());
            if n <= 0 {
                break;
            }
            let entries = buf.get(..n as usize).unwrap_or(&[]);
            // struct linux_dirent64: u64 ino, i64 off, u16 reclen, u8 type, name.
            let mut at = 0;
            while let Some(head) = entries.get(at..at + 19) {
                let reclen = usize::from(u16::from_ne_bytes([head[16], head[17]]));
                let Some(name) = entries.get(at + 19..at + reclen) else {
                    break;
                };
                let mut pid: pid_t = 0;
                let mut ok = false;
                for &b in name {
                    if b == 0 {
                        break;
                    }
                    ok = b.is_ascii_digit();
                    if !ok {
                        break;
                    }
                    pid = pid.saturating_mul(10).saturating_add(pid_t::from(b - b'0'));
                }
                if ok && stat(pid).is_some_and(|s| s.ppid == me) {
                    f(pid);
                }
                if reclen == 0 {
                    break;
                }
                at += reclen;
            }
        }
        libc::close(dir);
    }
}

/// Reaps every child that has ended; the command's wait status when it is among them.
/// `None` in the second place when this process has no child left.
fn reap(command: pid_t) -> (Option<c_int>, bool) {
    let mut command_status = None;
    loop {
        let mut status: c_int = 0;
        // SAFETY: waitpid(2) into a local.
        let r = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if r > 0 {
            if r == command {
                command_status = Some(status);
            }
            continue;
        }
        if r < 0 && errno() == libc::EINTR {
            continue;
        }
        return (command_status, r == 0);
    }
}

fn kill(pid: pid_t) {
    // SAFETY: kill(2).
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

/// The helper: waits for the command (killing its process group at the timeout or
/// when the campaign's process is gone), reports its status, kills and reaps what
/// it left running, reports each, and exits.
fn helper(command: pid_t, plan: Plan, parent: pid_t) -> ! {
    let fd = plan.report_fd;
    // SAFETY: signal(2), close_range(2)/close(2) and _exit(2).
    unsafe {
        // A report nobody reads must not kill the helper before its work is done.
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        // Only the report pipe and standard input and output are kept: the
        // copies of this process's other descriptors (`Command`'s own pipe among
        // them) would keep their other ends waiting.
        for (first, last) in [(3, fd - 1), (fd + 1, c_int::MAX)] {
            if first > last {
                continue;
            }
            if libc::syscall(libc::SYS_close_range, first as u32, last as u32, 0) != 0 {
                for f in first..=last.min(65_535) {
                    libc::close(f);
                }
            }
        }
    }
    let mut line = Line::new(b"pid ");
    line.num(i64::from(command));
    line.send(fd);
    let started = now_ns();
    let mut status: c_int = 0;
    let mut timed_out = false;
    loop {
        let (ended, _) = reap(command);
        if let Some(s) = ended {
            status = s;
            break;
        }
        // SAFETY: getppid(2).
        let orphaned = unsafe { libc::getppid() } != parent;
        if orphaned || now_ns().saturating_sub(started) >= plan.timeout_ns {
            kill(-command);
            kill(command);
            loop {
                // SAFETY: waitpid(2) into a local.
                let r = unsafe { libc::waitpid(command, &mut status, 0) };
                if !(r < 0 && errno() == libc::EINTR) {
                    break;
                }
            }
            timed_out = true;
            break;
        }
        sleep_ms(10);
    }
    let mut line = if timed_out {
        Line::new(b"timeout")
    } else if libc::WIFEXITED(status) {
        let mut l = Line::new(b"exit ");
        l.num(i64::from(libc::WEXITSTATUS(status)));
        l
    } else {
        let mut l = Line::new(b"signal ");
        l.num(i64::from(libc::WTERMSIG(status)));
        l
    };
    line.send(fd);
    // What is left: every process of the command whose parent ended is a child of
    // this one now. Kill them level by level (a killed process's own children
    // come here in turn) until none is left.
    let mut named = [0 as pid_t; NAMED];
    let mut n_named = 0;
    let mut more: i64 = 0;
    let cleanup_started = now_ns();
    loop {
        each_child(|pid| {
            let Some(s) = stat(pid) else { return };
            if s.state == b'Z' || s.state == b'X' {
                return; // ended by itself or already killed: reaped below
            }
            if timed_out && s.pgrp == command {
                // Killed with the command's group at the timeout, and not dead yet:
                // part of the command, not left behind by it.
                kill(pid);
                return;
            }
            if !named[..n_named].contains(&pid) {
                if n_named < NAMED {
                    named[n_named] = pid;
                    n_named += 1;
                    let mut l = Line::new(b"killed ");
                    l.num(i64::from(pid));
                    l.push(b" ");
                    l.push(&s.comm[..s.comm_len]);
                    l.send(fd);
                } else {
                    more += 1;
                }
            }
            kill(pid);
        });
        let (_, children_left) = reap(command);
        if !children_left || now_ns().saturating_sub(cleanup_started) >= CLEANUP_NS {
            break;
        }
        sleep_ms(5);
    }
    if more > 0 {
        let mut l = Line::new(b"more ");
        l.num(more);
        l.send(fd);
    }
    // SAFETY: _exit(2) ends this process without running anything of the parent's.
    unsafe { libc::_exit(0) }
}
