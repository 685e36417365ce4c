//! Runs the campaign's `[hooks]`: a shell command (`sh -c`) with the test described in
//! its environment, killed at the timeout, its output captured (the last 64 KiB,
//! passwords masked) and kept as facts of the test.
//!
//! A hook runs under a helper process: a fork of this one that makes itself a child
//! subreaper (`PR_SET_CHILD_SUBREAPER`), starts the hook's `sh` in a process group of
//! its own and waits for it. Whatever the hook started and left running is re-parented
//! to the helper when its parent ends — also a process that left the hook's process
//! group or session (`setsid`) — and the helper kills it once the hook's shell has
//! ended (or been killed at the timeout), so nothing a hook starts outlives it. The
//! helper reports the shell's status and the processes it killed through a pipe. Only
//! the helper is a subreaper: the campaign's own process is not, so servers and other
//! children of the campaign are never re-parented to anything but init.

use std::io::{BufRead, Read};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pgsurge_store::FactRecord;
use pgsurge_wire::redact::redact_with;

/// Bytes of output kept (the end of it).
const KEEP_OUTPUT: usize = 64 * 1024;

/// How long past the timeout the helper is given to report before it is killed too.
const HELPER_GRACE: Duration = Duration::from_secs(15);

/// How a hook ended.
#[derive(Debug, Clone, PartialEq)]
pub struct HookOutcome {
    /// `set_start`, `before_test` or `after_test`.
    pub name: &'static str,
    /// Exit status; None when killed at the timeout or by a signal.
    pub exit: Option<i32>,
    /// True when it ran past the timeout and was killed.
    pub timed_out: bool,
    /// The configured timeout.
    pub timeout: Duration,
    /// Wall time.
    pub duration_s: f64,
    /// Its standard output and error, interleaved, at most the last 64 KiB.
    pub output: String,
    /// The processes the hook left running, killed when it ended: `name (pid N)`.
    pub killed: Vec<String>,
    /// How many processes were killed in all ([`HookOutcome::killed`] names the first
    /// ones).
    pub killed_count: usize,
}

/// `2 s`, `500 ms`, `10 min`, `1.5 s`: a timeout as a person writes it.
pub fn human_timeout(d: Duration) -> String {
    let trim = |v: f64| {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    let secs = d.as_secs_f64();
    if secs < 1.0 {
        format!("{} ms", trim(secs * 1000.0))
    } else if d.subsec_nanos() == 0 && d.as_secs().is_multiple_of(60) {
        format!("{} min", d.as_secs() / 60)
    } else {
        format!("{} s", trim(secs))
    }
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
                "ran past its timeout of {} and was killed",
                human_timeout(self.timeout)
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

    /// What the hook left running, for a warning of the test: None when nothing.
    pub fn leftover_warning(&self) -> Option<String> {
        if self.killed_count == 0 {
            return None;
        }
        let mut names = self.killed.join(", ");
        if self.killed_count > self.killed.len() {
            names.push_str(&format!(
                " and {} more",
                self.killed_count - self.killed.len()
            ));
        }
        Some(format!(
            "{} hook left {} process{} running ({names}): killed when the hook {}",
            self.name,
            self.killed_count,
            if self.killed_count == 1 { "" } else { "es" },
            if self.timed_out {
                "was killed at its timeout"
            } else {
                "ended"
            }
        ))
    }

    /// The facts stored with the test: `hook.<name>.exit`, `.duration_s`, `.output`,
    /// and `.killed` (how many processes it left running) when it left any.
    pub fn facts(&self) -> Vec<FactRecord> {
        let exit = match (self.exit, self.timed_out) {
            (_, true) => "timeout".to_string(),
            (Some(c), false) => c.to_string(),
            (None, false) => "signal".to_string(),
        };
        let mut facts = vec![
            FactRecord::new(format!("hook.{}.exit", self.name), exit),
            FactRecord::new(
                format!("hook.{}.duration_s", self.name),
                format!("{:.3}", self.duration_s),
            ),
            FactRecord::new(format!("hook.{}.output", self.name), self.output.clone()),
        ];
        if self.killed_count > 0 {
            facts.push(FactRecord::new(
                format!("hook.{}.killed", self.name),
                self.killed_count.to_string(),
            ));
        }
        facts
    }
}

/// What the helper reported.
#[derive(Debug, Default)]
struct Report {
    /// `exit N`: the shell's exit status.
    exit: Option<i32>,
    /// `signal N` (the shell was killed by a signal) or `timeout`.
    ended: bool,
    timed_out: bool,
    killed: Vec<String>,
    more: usize,
}

impl Report {
    fn read(pipe: std::io::PipeReader, hook_pid: &AtomicI32) -> Report {
        let mut r = Report::default();
        for line in std::io::BufReader::new(pipe).split(b'\n') {
            let Ok(line) = line else { break };
            let line = String::from_utf8_lossy(&line);
            let (word, rest) = line.split_once(' ').unwrap_or((&line, ""));
            match word {
                "pid" => hook_pid.store(rest.parse().unwrap_or(0), Ordering::SeqCst),
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

/// `sh -c command` with `env` added to the environment (see [`run_hook`]).
fn shell(command: &str, env: &[(String, String)]) -> Command {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(command);
    if env.iter().any(|(k, _)| k == "PGHOST") {
        cmd.env_remove("PGHOSTADDR").env_remove("PGSERVICE");
    }
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    cmd
}

/// Runs `command` with `sh -c`, the variables `env` added to its environment. When
/// `env` sets `PGHOST`, the `PGHOSTADDR` and `PGSERVICE` this process was started with
/// are not passed on (they would take libpq elsewhere than the test's server). Never
/// fails: a command that cannot be started is an outcome with exit 127 and the reason.
pub fn run_hook(
    name: &'static str,
    command: &str,
    env: &[(String, String)],
    timeout: Duration,
) -> HookOutcome {
    run_hook_masking(name, command, env, timeout, &[])
}

/// The passwords this process was given through libpq's environment (`PGPASSWORD`, a
/// password inside any other `PG*` value): a hook inherits them and may print them.
fn environment_passwords() -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in std::env::vars_os() {
        let (k, v) = (k.to_string_lossy(), v.to_string_lossy());
        if !k.starts_with("PG") {
            continue;
        }
        if k.ends_with("PASSWORD") && !v.is_empty() {
            out.push(v.to_string());
        }
        out.extend(pgsurge_wire::redact::passwords(&v));
    }
    out
}

/// [`run_hook`], and every occurrence of `secrets` (the passwords of the targets the
/// hook is about) and of this process's libpq passwords masked in the stored output,
/// wherever they appear (`--password PW`, a bare `PW` on a line).
pub fn run_hook_masking(
    name: &'static str,
    command: &str,
    env: &[(String, String)],
    timeout: Duration,
    secrets: &[String],
) -> HookOutcome {
    let mut secrets = secrets.to_vec();
    secrets.extend(environment_passwords());
    let started = Instant::now();
    let fail = |why: String| HookOutcome {
        name,
        exit: Some(127),
        timed_out: false,
        timeout,
        duration_s: started.elapsed().as_secs_f64(),
        output: why,
        killed: Vec::new(),
        killed_count: 0,
    };
    let (mut reader, writer) = match std::io::pipe() {
        Ok(p) => p,
        Err(e) => return fail(format!("cannot create a pipe: {e}")),
    };
    let writer2 = match writer.try_clone() {
        Ok(w) => w,
        Err(e) => return fail(format!("cannot create a pipe: {e}")),
    };
    let (report_reader, report_writer) = match std::io::pipe() {
        Ok(p) => p,
        Err(e) => return fail(format!("cannot create a pipe: {e}")),
    };
    let plan = reaper::Plan {
        report_fd: report_writer.as_raw_fd(),
        timeout_ns: u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX),
    };
    let mut cmd = shell(command, env);
    cmd.stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer2)
        .process_group(0);
    // SAFETY: `reaper::start` runs between fork and exec and keeps to what is allowed
    // there: system calls on memory of its own stack, no allocation, no lock.
    unsafe {
        cmd.pre_exec(move || reaper::start(plan));
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return fail(format!("cannot run sh: {e}")),
    };
    drop(cmd); // the parent's copies of the pipe's write end
    drop(report_writer);
    let hook_pid = Arc::new(AtomicI32::new(0));
    let report = {
        let hook_pid = Arc::clone(&hook_pid);
        std::thread::spawn(move || Report::read(report_reader, &hook_pid))
    };
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
    // The helper keeps the timeout; this deadline only guards against the helper
    // itself hanging.
    let deadline = started + timeout.saturating_add(HELPER_GRACE);
    let mut helper_killed = false;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() >= deadline => {
                helper_killed = true;
                kill(-hook_pid.load(Ordering::SeqCst));
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break,
        }
    }
    let report = report.join().unwrap_or_default();
    // Everything the hook started is gone by now; a process that could not be killed
    // (stuck in the kernel) must not hold the campaign: wait a while for the output (on
    // a busy machine the reading thread may wait its turn for a core), then go on
    // without the rest.
    let output = {
        let wait_until = Instant::now() + Duration::from_secs(10);
        while !collector.is_finished() && Instant::now() < wait_until {
            std::thread::sleep(Duration::from_millis(10));
        }
        if collector.is_finished() {
            collector.join().unwrap_or_default()
        } else {
            b"(output not complete: a process the hook started still holds it)".to_vec()
        }
    };
    let timed_out = report.timed_out || (helper_killed && !report.ended);
    let killed_count = report.killed.len() + report.more;
    HookOutcome {
        name,
        exit: if timed_out { None } else { report.exit },
        timed_out,
        timeout,
        duration_s: started.elapsed().as_secs_f64(),
        output: redact_with(&String::from_utf8_lossy(&output), &secrets),
        killed: report.killed,
        killed_count,
    }
}

/// The hook's helper process. Everything here runs in a child of a fork of a process
/// with other threads, before any exec: it makes system calls on memory of its own
/// stack only — no allocation, no lock, no panic (the other threads' locks were copied
/// in whatever state they were in).
mod reaper {
    use libc::{c_int, pid_t};

    /// What the helper is given, prepared before the fork.
    #[derive(Debug, Clone, Copy)]
    pub(super) struct Plan {
        /// The write end of the report pipe.
        pub report_fd: c_int,
        /// The hook's timeout.
        pub timeout_ns: u64,
    }

    /// Processes named one by one in the report; the rest are counted.
    const NAMED: usize = 64;

    /// How long the helper keeps killing what the hook left before it gives up (a
    /// process stuck in the kernel dies when it leaves it, as init's child).
    const CLEANUP_NS: u64 = 5_000_000_000;

    /// Runs in the child `Command` forked for the hook (the helper): makes it a child
    /// subreaper, forks again, and returns in the grandchild, which `Command` then
    /// turns into the hook's `sh`. The helper never returns: it waits for the hook,
    /// kills what it left, reports and exits.
    pub(super) fn start(plan: Plan) -> std::io::Result<()> {
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
                    // The hook: a process group of its own, so that it can be killed
                    // whole at the timeout.
                    libc::setpgid(0, 0);
                    Ok(())
                }
                hook => {
                    libc::setpgid(hook, hook);
                    helper(hook, plan, parent)
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

    /// Reaps every child that has ended; the hook's wait status when it is among them.
    /// `None` in the second place when this process has no child left.
    fn reap(hook: pid_t) -> (Option<c_int>, bool) {
        let mut hook_status = None;
        loop {
            let mut status: c_int = 0;
            // SAFETY: waitpid(2) into a local.
            let r = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if r > 0 {
                if r == hook {
                    hook_status = Some(status);
                }
                continue;
            }
            if r < 0 && errno() == libc::EINTR {
                continue;
            }
            return (hook_status, r == 0);
        }
    }

    fn kill(pid: pid_t) {
        // SAFETY: kill(2).
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }

    /// The helper: waits for the hook (killing its process group at the timeout or
    /// when the campaign's process is gone), reports its status, kills and reaps what
    /// it left running, reports each, and exits.
    fn helper(hook: pid_t, plan: Plan, parent: pid_t) -> ! {
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
        line.num(i64::from(hook));
        line.send(fd);
        let started = now_ns();
        let mut status: c_int = 0;
        let mut timed_out = false;
        loop {
            let (ended, _) = reap(hook);
            if let Some(s) = ended {
                status = s;
                break;
            }
            // SAFETY: getppid(2).
            let orphaned = unsafe { libc::getppid() } != parent;
            if orphaned || now_ns().saturating_sub(started) >= plan.timeout_ns {
                kill(-hook);
                kill(hook);
                loop {
                    // SAFETY: waitpid(2) into a local.
                    let r = unsafe { libc::waitpid(hook, &mut status, 0) };
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
        // What is left: every process of the hook whose parent ended is a child of
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
                if timed_out && s.pgrp == hook {
                    // Killed with the hook's group at the timeout, and not dead yet:
                    // part of the hook, not left behind by it.
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
            let (_, children_left) = reap(hook);
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The timeout of hooks that end at once: far more than a shell takes to start and
    /// end on a busy machine.
    const QUICK: Duration = Duration::from_secs(60);

    #[test]
    fn status_output_and_environment_are_kept() {
        let env = vec![("PGSURGE_TEST_KEY".to_string(), "a/s1/x/c1/r-/1".to_string())];
        let o = run_hook(
            "before_test",
            "echo key=$PGSURGE_TEST_KEY; echo oops >&2; exit 3",
            &env,
            QUICK,
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
        let m = marker();
        let o = run_hook(
            "after_test",
            &format!("sleep {m} & sleep {m}"),
            &[],
            Duration::from_millis(300),
        );
        assert!(o.timed_out && o.exit.is_none(), "{o:?}");
        // At its timeout, not at the end of its sleeps.
        assert!(started.elapsed() < Duration::from_secs(20));
        assert_eq!(o.facts()[0].value.as_deref(), Some("timeout"));
        assert_eq!(
            o.failure(),
            "after_test hook ran past its timeout of 300 ms and was killed"
        );
        assert_eq!(alive_with(&m), Vec::<i32>::new());
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
    fn background_children_are_killed_when_the_hook_ends() {
        let m = marker();
        let started = Instant::now();
        let o = run_hook("before_test", &format!("sleep {m} & echo x"), &[], QUICK);
        assert!(o.ok(), "{o:?}");
        assert_eq!(o.output, "x\n", "the output is complete: {o:?}");
        // When the hook's shell ended, not when its child's sleep would have.
        assert!(started.elapsed() < Duration::from_secs(20), "{o:?}");
        assert_eq!(o.killed_count, 1, "{o:?}");
        assert!(o.killed[0].starts_with("sleep (pid "), "{o:?}");
        assert_eq!(alive_with(&m), Vec::<i32>::new());
        let facts = o.facts();
        let killed = facts.iter().find(|f| f.name == "hook.before_test.killed");
        assert_eq!(killed.and_then(|f| f.value.as_deref()), Some("1"));
        let w = o.leftover_warning().unwrap();
        assert!(
            w.starts_with("before_test hook left 1 process running (sleep (pid ")
                && w.ends_with("): killed when the hook ended"),
            "{w}"
        );
    }

    #[test]
    fn processes_that_left_the_hooks_session_are_killed_too() {
        let (m1, m2, m3) = (marker(), marker(), marker());
        // setsid leaves the process group and the session; the double fork of a
        // daemon leaves its parent behind; a subshell's children come one level later.
        let o = run_hook(
            "set_start",
            &format!(
                "setsid sleep {m1} & (setsid sh -c 'sleep {m2} &' &); sh -c 'sleep {m3}; true' & echo started"
            ),
            &[],
            QUICK,
        );
        assert!(o.ok(), "{o:?}");
        assert_eq!(o.output, "started\n");
        for m in [&m1, &m2, &m3] {
            assert_eq!(alive_with(m), Vec::<i32>::new(), "{m}: {o:?}");
        }
        assert!(o.killed_count >= 3, "{o:?}");
        // The same at the timeout: the escapee goes with the hook's group. (The timeout
        // leaves the shell time to start it on a busy machine.)
        let m4 = marker();
        let o = run_hook(
            "after_test",
            &format!("setsid sleep {m4} & sleep 30"),
            &[],
            Duration::from_secs(5),
        );
        assert!(o.timed_out, "{o:?}");
        assert_eq!(
            o.failure(),
            "after_test hook ran past its timeout of 5 s and was killed"
        );
        assert_eq!(alive_with(&m4), Vec::<i32>::new(), "{o:?}");
        assert_eq!(o.killed_count, 1, "{o:?}");
        assert!(o
            .leftover_warning()
            .unwrap()
            .ends_with("killed when the hook was killed at its timeout"));
    }

    #[test]
    fn a_hook_that_leaves_nothing_has_no_killed_fact() {
        let o = run_hook("after_test", "(echo quick) ; true", &[], QUICK);
        assert!(o.ok() && o.killed_count == 0, "{o:?}");
        assert!(o.leftover_warning().is_none());
        assert_eq!(o.facts().len(), 3);
    }

    #[test]
    fn a_target_password_is_masked_wherever_the_hook_prints_it() {
        let o = run_hook_masking(
            "before_test",
            "echo \"psql --password Hunter2-x\"; echo Hunter2-x; echo 'pw=Hunter2-x;'",
            &[],
            QUICK,
            &["Hunter2-x".to_string()],
        );
        assert!(o.ok(), "{o:?}");
        assert!(!o.output.contains("Hunter2"), "{}", o.output);
        assert!(
            o.output.contains("psql --password ********"),
            "{}",
            o.output
        );
    }

    #[test]
    fn timeouts_read_as_configured() {
        for (d, text) in [
            (Duration::from_secs(2), "2 s"),
            (Duration::from_millis(500), "500 ms"),
            (Duration::from_millis(1500), "1.5 s"),
            (Duration::from_secs(600), "10 min"),
            (Duration::from_secs(90), "90 s"),
        ] {
            assert_eq!(human_timeout(d), text);
        }
    }

    #[test]
    fn the_tests_server_variables_win_over_the_launching_shells() {
        let vars = |env: &[(&str, &str)]| {
            let env: Vec<(String, String)> = env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let cmd = shell(":", &env);
            let mut vars: Vec<(String, Option<String>)> = cmd
                .get_envs()
                .map(|(k, v)| {
                    let text = |s: &std::ffi::OsStr| s.to_string_lossy().into_owned();
                    (text(k), v.map(text))
                })
                .collect();
            vars.sort();
            vars
        };
        let set = |k: &str, v: &str| (k.to_string(), Some(v.to_string()));
        // The launching shell's PGHOSTADDR or PGSERVICE would take psql elsewhere.
        assert_eq!(
            vars(&[("PGHOST", "127.0.0.1"), ("PGPORT", "5999")]),
            [
                set("PGHOST", "127.0.0.1"),
                ("PGHOSTADDR".to_string(), None),
                set("PGPORT", "5999"),
                ("PGSERVICE".to_string(), None),
            ]
        );
        assert_eq!(
            vars(&[("PGHOST", "db"), ("PGHOSTADDR", "10.0.0.5")]),
            [
                set("PGHOST", "db"),
                set("PGHOSTADDR", "10.0.0.5"),
                ("PGSERVICE".to_string(), None),
            ]
        );
        // set_start has no test, hence no server: the environment is left alone.
        assert_eq!(
            vars(&[("PGSURGE_SET_ID", "3")]),
            [set("PGSURGE_SET_ID", "3")]
        );
    }

    #[test]
    fn output_is_bounded_and_passwords_masked() {
        let o = run_hook(
            "set_start",
            "yes 0123456789 | head -c 300000; echo; echo 'host=h password=Sekr3t'",
            &[],
            QUICK,
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
