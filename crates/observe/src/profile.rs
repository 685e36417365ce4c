//! Profiles of a measured window, taken with Linux `perf` (Debian package
//! `linux-perf`): [`Profiler::start`] just before the run, [`Profiler::finish`] when it
//! has returned.
//!
//! * On-CPU: `perf record -e cpu-clock -c PERIOD -g` (the software clock: it works in
//!   virtual machines without hardware counters; a fixed period of 1/HZ s). Where allowed (root, or
//!   `perf_event_paranoid` ≤ 0) one recording of every CPU (`-a`), its samples sorted
//!   by process when symbolized: the server's are those of the target's postmaster and
//!   every process descended from it (from the forks perf records, so the run's own
//!   backends are in), the client's those of this process. Elsewhere one recording per
//!   side attached to the processes (`-p`): the postmaster and every process it has at
//!   the start, and this process, followed into the processes and threads born during
//!   the window. A per-process recording is switched with its processes at every
//!   context switch, a cost the server pays many times per transaction; a recording of
//!   every CPU is not.
//! * Off-CPU (server only): `perf record -e sched:sched_switch -g --switch-events` on
//!   the postmaster, inherited by the processes it forks during the window (the run's
//!   backends, autovacuum and parallel workers): the stack a process leaves the CPU
//!   with, weighted by the time until it is switched back in (µs). The processes that
//!   exist before the window (auxiliary processes, monitoring sessions) and the
//!   postmaster itself wait for work, not for the run, and are left out. Kernel frames
//!   are marked `_[k]`; the C library's system-call wrappers under the server's own
//!   innermost frame are left out, so that frame is where the backend waited.
//!
//! Each recording starts with its events disabled and is enabled through its control
//! FIFO once perf has read the memory maps of what it records, so that pass is not
//! paid by the window.
//!
//! When the run ends the recordings are symbolized at once (`perf script`: the
//! binaries may be gone later) and folded (`inferno`), so what is kept is text. A
//! profile that cannot be taken (no `perf`, `perf_event_paranoid` too strict, a server
//! on another machine) is an `Err` with why: the caller says so and runs without it.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use inferno::collapse::Collapse;
use pgsurge_results::profile::{parse_folded, Profile, ProfileKind};
use pgsurge_wire::ConnConfig;

use crate::costs::{children_of, local_postmaster};
use crate::sql_session::Pg;

/// The on-CPU sampling frequency when none is given, in Hz (per running thread). Every
/// sample costs the sampled process an interrupt and a walk of its stack, and perf a
/// record to write, so the cost grows with the frequency. 99 is the lowest that still
/// gives a run of 10 s on two busy cores about 2,000 samples (a function with 2 % of the
/// time: about 40 of them), and, being prime, does not tick in step with the 100 Hz and
/// 1,000 Hz timers of the kernel and the server, which would bias what is seen.
pub const DEFAULT_FREQUENCY_HZ: u32 = 99;
/// How long `perf record` may take to attach (and to read the memory maps of the
/// processes it records) before the profile is given up.
const ATTACH_WAIT: Duration = Duration::from_secs(60);
/// How long `perf record` may take to write its data once told to stop.
const STOP_WAIT: Duration = Duration::from_secs(120);

/// What to profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProfileRequest {
    /// On-CPU sampling frequency, Hz.
    pub frequency_hz: u32,
    /// The server's processes (on-CPU).
    pub server: bool,
    /// This process, every thread (on-CPU).
    pub client: bool,
    /// The server's processes' time off the CPU.
    pub off_cpu: bool,
}

/// One `perf record` running, and what it records.
struct Recording {
    scope: Scope,
    child: Child,
    data: PathBuf,
    stderr: PathBuf,
    /// Its `--control` FIFO (`enable`) and the one it acknowledges on, held open by
    /// this process for the recording's life.
    control: std::fs::File,
    ack: std::fs::File,
}

/// What a recording holds and how its samples become profiles.
enum Scope {
    /// `-p PIDS` (followed into the processes they fork): one profile of `kind`, the
    /// threads in `left_out` not counted.
    Processes {
        kind: ProfileKind,
        left_out: Vec<u64>,
    },
    /// `-a`: every CPU of the machine, split when symbolized: the server's on-CPU
    /// profile from the processes descended from `server` (its postmaster), the
    /// client's from the process `client`.
    Machine {
        server: Option<u64>,
        client: Option<u64>,
    },
}

impl Scope {
    /// What the recording is named by in a message.
    fn title(&self) -> &'static str {
        match self {
            Scope::Processes { kind, .. } => kind.title(),
            Scope::Machine { .. } => "on-CPU",
        }
    }
}

/// Profiles being recorded over a window.
pub struct Profiler {
    request: ProfileRequest,
    dir: TempDir,
    recordings: Vec<Recording>,
    /// Why a part asked for is not recorded.
    notes: Vec<String>,
    /// The server's executable (its postmaster's), to name its debug symbols.
    server_binary: Option<PathBuf>,
}

/// The profiles of a window and what could not be profiled.
#[derive(Debug, Default)]
pub struct ProfileOutcome {
    /// The profiles taken.
    pub profiles: Vec<Profile>,
    /// What was asked and not taken, and why (one line each).
    pub failures: Vec<String>,
}

/// A directory removed with everything in it when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `perf` on `PATH`.
fn perf_binary() -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("perf"))
        .find(|p| p.is_file())
        .ok_or_else(|| "perf is not installed (Debian and Ubuntu: package linux-perf)".into())
}

/// `kernel.perf_event_paranoid` (2, the kernel's default, when it cannot be read).
fn paranoid_level() -> i32 {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(2)
}

/// Whether this process is root.
fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Why this process may not profile, from `kernel.perf_event_paranoid`: `Err` when the
/// setting allows unprivileged users no profiling at all (`off_cpu`: when it allows
/// them no tracepoints).
fn check_permission(off_cpu: bool) -> Result<(), String> {
    if is_root() {
        return Ok(());
    }
    let level = paranoid_level();
    if level > 2 {
        return Err(format!(
            "kernel.perf_event_paranoid is {level}: profiling needs root here, or \
             `sysctl kernel.perf_event_paranoid=2` (or lower)"
        ));
    }
    if off_cpu && level > -1 {
        return Err(format!(
            "the off-CPU view reads scheduler tracepoints: it needs root, or \
             kernel.perf_event_paranoid at -1 (it is {level})"
        ));
    }
    Ok(())
}

/// Whether the on-CPU samples are taken of every CPU (`-a`) rather than of the
/// profiled processes (`-p`): allowed to root, or to anyone at
/// `kernel.perf_event_paranoid` 0 or below. A recording per process is switched out
/// and in with each of its processes at every context switch (its clock stopped and
/// started), a cost paid by the server many times per transaction; a recording of
/// every CPU ticks on whatever runs, and the samples are sorted by process when
/// symbolized, after the window.
fn machine_wide() -> bool {
    is_root() || paranoid_level() <= 0
}

impl Profiler {
    /// Starts recording what `request` asks for: the server is the one `monitor`
    /// connects to (it must run on this machine). `Err` when nothing asked for can be
    /// recorded; a part that cannot is named in [`ProfileOutcome::failures`].
    pub fn start(monitor: &ConnConfig, request: ProfileRequest) -> Result<Profiler, String> {
        let perf = perf_binary()?;
        check_permission(false)?;
        let dir = std::env::temp_dir().join(format!(
            "pgsurge-profile-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let dir = TempDir(dir);
        let mut profiler = Profiler {
            request,
            dir,
            recordings: Vec::new(),
            notes: Vec::new(),
            server_binary: None,
        };
        let procs = if request.server || request.off_cpu {
            server_processes(monitor)
                .map_err(|e| profiler.notes.push(format!("server: {e}")))
                .ok()
        } else {
            None
        };
        profiler.server_binary = procs
            .and_then(|(postmaster, _)| std::fs::read_link(format!("/proc/{postmaster}/exe")).ok());
        let period = sampling_period_ns(request.frequency_hz).to_string();
        let on_cpu = ["-e", "cpu-clock", "-c", &period, "-g"];
        if machine_wide() {
            let server = procs
                .filter(|_| request.server)
                .and_then(|(postmaster, _)| u64::try_from(postmaster).ok());
            let client = request.client.then(|| u64::from(std::process::id()));
            if server.is_some() || client.is_some() {
                let scope = Scope::Machine { server, client };
                match profiler.record(&perf, scope, &["-a"], &on_cpu) {
                    Ok(r) => profiler.recordings.push(r),
                    Err(e) => profiler.notes.push(format!("on-CPU: {e}")),
                }
            }
        } else {
            if let (true, Some(procs)) = (request.server, procs) {
                match profiler.record_server(&perf, procs, &on_cpu) {
                    Ok(r) => profiler.recordings.push(r),
                    Err(e) => profiler.notes.push(format!("server: {e}")),
                }
            }
            if request.client {
                let pid = std::process::id().to_string();
                let scope = Scope::Processes {
                    kind: ProfileKind::ClientCpu,
                    left_out: Vec::new(),
                };
                match profiler.record(&perf, scope, &["-p", &pid], &on_cpu) {
                    Ok(r) => profiler.recordings.push(r),
                    Err(e) => profiler.notes.push(format!("client: {e}")),
                }
            }
        }
        if let (true, Some((postmaster, _))) = (request.off_cpu, procs) {
            profiler.start_off_cpu(&perf, postmaster);
        }
        if profiler.recordings.is_empty() {
            return Err(profiler.notes.join("; "));
        }
        Ok(profiler)
    }

    /// The server's time off the CPU: the postmaster alone, so that the processes it
    /// forks during the window (the run's backends) inherit the recording; the
    /// processes it already has wait for work, not for the run. Its own waits are left
    /// out too.
    fn start_off_cpu(&mut self, perf: &Path, postmaster: i32) {
        let args = ["-e", "sched:sched_switch", "-g", "--switch-events"];
        let scope = Scope::Processes {
            kind: ProfileKind::ServerOffCpu,
            left_out: u64::try_from(postmaster).into_iter().collect(),
        };
        let pid = postmaster.to_string();
        let recorded =
            check_permission(true).and_then(|()| self.record(perf, scope, &["-p", &pid], &args));
        match recorded {
            Ok(r) => self.recordings.push(r),
            Err(e) => self.notes.push(format!("server off-CPU: {e}")),
        }
    }

    /// [`Profiler::record`] on the server's processes (`(postmaster, left out)`), listed
    /// afresh for each of a few tries: a session that ends between the listing and
    /// perf's attaching makes perf give up.
    fn record_server(
        &self,
        perf: &Path,
        (postmaster, left_out): (i32, i32),
        event_args: &[&str],
    ) -> Result<Recording, String> {
        let mut last = String::new();
        for _ in 0..5 {
            let mut pids = vec![postmaster];
            pids.extend(
                children_of(postmaster)
                    .into_iter()
                    .filter(|p| *p != left_out),
            );
            let list: Vec<String> = pids.iter().map(i32::to_string).collect();
            let scope = Scope::Processes {
                kind: ProfileKind::ServerCpu,
                left_out: Vec::new(),
            };
            match self.record(perf, scope, &["-p", &list.join(",")], event_args) {
                Ok(r) => return Ok(r),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Starts `perf record` of `scope` on `target` (`-p PIDS` or `-a`) with its events
    /// disabled, and enables them once it is ready: perf opens its counters, then reads
    /// the memory maps of every process it records (of every process on the machine
    /// with `-a`, a CPU-heavy pass on a busy machine), and only then reads its control
    /// FIFO. So the acknowledged `enable` marks the end of that pass: the window that
    /// follows pays for the samples alone.
    fn record(
        &self,
        perf: &Path,
        scope: Scope,
        target: &[&str],
        event_args: &[&str],
    ) -> Result<Recording, String> {
        let name = match &scope {
            Scope::Processes { kind, .. } => kind.name(),
            Scope::Machine { .. } => "cpu",
        };
        let data = self.dir.0.join(format!("{name}.data"));
        let stderr = self.dir.0.join(format!("{name}.err"));
        let control_path = self.dir.0.join(format!("{name}.ctl"));
        let ack_path = self.dir.0.join(format!("{name}.ack"));
        let started = start_recording(
            perf,
            scope,
            target,
            event_args,
            [&data, &stderr, &control_path, &ack_path],
        );
        if started.is_err() {
            // A failed attempt leaves nothing behind, so that the next one (a process
            // recorded may have exited meanwhile) creates its FIFOs afresh.
            for path in [&data, &stderr, &control_path, &ack_path] {
                let _ = std::fs::remove_file(path);
            }
        }
        started
    }

    /// Stops recording and turns what was recorded into profiles.
    pub fn finish(mut self) -> ProfileOutcome {
        let mut outcome = ProfileOutcome {
            failures: std::mem::take(&mut self.notes),
            ..Default::default()
        };
        for rec in &mut self.recordings {
            stop(rec);
        }
        for rec in &self.recordings {
            match symbolize(rec) {
                Ok(profiles) => {
                    for (kind, stacks) in profiles {
                        let mut profile = Profile {
                            kind,
                            frequency_hz: (kind != ProfileKind::ServerOffCpu)
                                .then_some(self.request.frequency_hz),
                            stacks,
                            notes: Vec::new(),
                        };
                        profile.notes =
                            crate::profile_notes::notes(&profile, self.server_binary.as_deref());
                        outcome.profiles.push(profile);
                    }
                }
                Err(e) => outcome.failures.push(format!("{}: {e}", rec.scope.title())),
            }
        }
        outcome
    }
}

/// The postmaster of the server `monitor` reaches, and the backend of the session
/// that found it (gone once this returns).
fn server_processes(monitor: &ConnConfig) -> Result<(i32, i32), String> {
    let mut pg = Pg::connect(monitor).map_err(|e| e.to_string())?;
    local_postmaster(&mut pg)
}

/// The sampling period of the `cpu-clock` event (which counts nanoseconds) for
/// `frequency_hz` samples a second. A fixed period rather than a frequency (`-F`): with a
/// frequency the kernel re-tunes the period of every sampling event at each of its own
/// timer ticks, work done on every CPU whatever runs, where for a clock the period that
/// gives the frequency is known.
pub fn sampling_period_ns(frequency_hz: u32) -> u64 {
    1_000_000_000 / u64::from(frequency_hz.max(1))
}

/// A FIFO at `path`, opened for reading and writing (so that neither end waits for the
/// other, and perf finds it open).
fn open_fifo(path: &Path) -> Result<std::fs::File, String> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::OpenOptionsExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| format!("{}: a NUL byte in the path", path.display()))?;
    // SAFETY: mkfifo reads the NUL-terminated path, which outlives the call.
    if unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) } != 0 {
        return Err(format!(
            "{}: {}",
            path.display(),
            std::io::Error::last_os_error()
        ));
    }
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// [`Profiler::record`]'s work on the files it named: the FIFOs made, perf started,
/// and sampling enabled.
fn start_recording(
    perf: &Path,
    scope: Scope,
    target: &[&str],
    event_args: &[&str],
    [data, stderr, control_path, ack_path]: [&PathBuf; 4],
) -> Result<Recording, String> {
    let (data, stderr) = (data.clone(), stderr.clone());
    let control = open_fifo(control_path)?;
    let ack = open_fifo(ack_path)?;
    let err_file = std::fs::File::create(&stderr).map_err(|e| e.to_string())?;
    let mut control_arg = std::ffi::OsString::from("fifo:");
    control_arg.push(control_path);
    control_arg.push(",");
    control_arg.push(ack_path);
    let child = Command::new(perf)
        .arg("record")
        .args(event_args)
        .args(target)
        // Disabled until told (`enable` on the control FIFO).
        .args(["-D", "-1", "--control"])
        .arg(control_arg)
        // No build ids: reading them back is a pass over the whole recording at
        // its end, and the recording is symbolized at once from the binaries on
        // disk.
        .args(["--no-buildid", "-o"])
        .arg(&data)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err_file)
        .spawn()
        .map_err(|e| format!("{}: {e}", perf.display()))?;
    let mut rec = Recording {
        scope,
        child,
        data,
        stderr,
        control,
        ack,
    };
    match enable(&mut rec) {
        Ok(()) => Ok(rec),
        Err(e) => {
            stop(&mut rec);
            Err(e)
        }
    }
}

/// Tells `perf record` to enable its events and waits for its acknowledgement (sampling
/// has begun); `Err` with perf's own message when it exits first.
fn enable(rec: &mut Recording) -> Result<(), String> {
    use std::io::Write;
    rec.control
        .write_all(b"enable\n")
        .map_err(|e| format!("perf's control FIFO: {e}"))?;
    let deadline = Instant::now() + ATTACH_WAIT;
    let mut answer = Vec::new();
    loop {
        if let Ok(Some(status)) = rec.child.try_wait() {
            return Err(format!(
                "perf record exited ({status}): {}",
                perf_message(&rec.stderr)
            ));
        }
        let mut buf = [0u8; 64];
        match rec.ack.read(&mut buf) {
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(format!("perf's acknowledgement FIFO: {e}")),
        }
        if answer.windows(3).any(|w| w == b"ack") {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "perf record did not start sampling within {} s",
                ATTACH_WAIT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The end of perf's messages, on one line.
fn perf_message(stderr: &Path) -> String {
    let text = std::fs::read_to_string(stderr).unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let tail = &lines[lines.len().saturating_sub(3)..];
    if tail.is_empty() {
        "no message".into()
    } else {
        tail.join(" ")
    }
}

/// Tells `perf record` to stop (SIGINT, as Ctrl-C) and waits for it to write its data.
fn stop(rec: &mut Recording) {
    if let Ok(Some(_)) = rec.child.try_wait() {
        return;
    }
    if let Ok(pid) = i32::try_from(rec.child.id()) {
        // SAFETY: kill sends a signal to the child this recording started and owns.
        unsafe { libc::kill(pid, libc::SIGINT) };
    }
    let deadline = Instant::now() + STOP_WAIT;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = rec.child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = rec.child.kill();
    let _ = rec.child.wait();
}

/// Folded stacks (`outer;…;inner` → samples) of one kind of profile.
type Folded = (ProfileKind, BTreeMap<String, u64>);

/// The profiles of a recording: `perf script`, folded.
fn symbolize(rec: &Recording) -> Result<Vec<Folded>, String> {
    let perf = perf_binary()?;
    if !rec.data.is_file() {
        return Err(format!(
            "perf record wrote no data: {}",
            perf_message(&rec.stderr)
        ));
    }
    // No `period` field: with it inferno would weigh each sample by its period
    // (nanoseconds of the clock); without it a count is one sample.
    let on_cpu_fields = ["-F", "comm,pid,tid,time,event,ip,sym,dso"];
    match &rec.scope {
        Scope::Processes {
            kind: ProfileKind::ServerOffCpu,
            left_out,
        } => {
            let fields = [
                "--show-switch-events",
                "-F",
                "comm,tid,time,event,ip,sym,dso",
            ];
            let text = perf_script(&perf, &rec.data, &fields)?;
            Ok(vec![(
                ProfileKind::ServerOffCpu,
                fold_off_cpu(&text, left_out),
            )])
        }
        Scope::Processes { kind, .. } => {
            let text = perf_script(&perf, &rec.data, &on_cpu_fields)?;
            Ok(vec![(*kind, fold_on_cpu(&text)?)])
        }
        Scope::Machine { server, client } => {
            // The processes descended from the postmaster, from the forks perf saw
            // (those before the window are synthesized at its start); then only their
            // samples and the client's are symbolized.
            let tasks = perf_script(
                &perf,
                &rec.data,
                &["--show-task-events", "-F", "comm,pid,tid,time,event"],
            )?;
            let server_pids = server.map(|pm| descendants(&tasks, pm)).unwrap_or_default();
            let mut wanted: Vec<String> = server_pids.iter().map(u64::to_string).collect();
            wanted.extend(client.map(|c| c.to_string()));
            let pid_filter = format!("--pid={}", wanted.join(","));
            let mut args = vec![pid_filter.as_str()];
            args.extend(on_cpu_fields);
            let text = perf_script(&perf, &rec.data, &args)?;
            let (mut server_text, mut client_text) = (String::new(), String::new());
            for block in text.split("\n\n") {
                let pid = block.lines().next().and_then(sample_pid);
                let into = match pid {
                    Some(p) if Some(p) == *client => &mut client_text,
                    Some(p) if server_pids.contains(&p) => &mut server_text,
                    _ => continue,
                };
                into.push_str(block.trim_matches('\n'));
                into.push_str("\n\n");
            }
            let mut profiles = Vec::new();
            if server.is_some() {
                profiles.push((ProfileKind::ServerCpu, fold_on_cpu(&server_text)?));
            }
            if client.is_some() {
                profiles.push((ProfileKind::ClientCpu, fold_on_cpu(&client_text)?));
            }
            Ok(profiles)
        }
    }
}

/// The text `perf script -i DATA ARGS…` writes.
fn perf_script(perf: &Path, data: &Path, args: &[&str]) -> Result<String, String> {
    let mut child = Command::new(perf)
        .arg("script")
        .arg("-i")
        .arg(data)
        .arg("--no-inline")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("perf script: {e}"))?;
    let mut text = String::new();
    let read = child
        .stdout
        .take()
        .map(|mut out| out.read_to_string(&mut text));
    let status = child.wait().map_err(|e| format!("perf script: {e}"))?;
    if !status.success() || !matches!(read, Some(Ok(_))) {
        return Err(format!("perf script failed ({status})"));
    }
    Ok(text)
}

/// On-CPU samples of `perf script` folded by `inferno`.
fn fold_on_cpu(text: &str) -> Result<BTreeMap<String, u64>, String> {
    let mut folded = Vec::new();
    let mut options = inferno::collapse::perf::Options::default();
    options.nthreads = 1;
    inferno::collapse::perf::Folder::from(options)
        .collapse(text.as_bytes(), &mut folded)
        .map_err(|e| format!("folding the stacks: {e}"))?;
    parse_folded(&String::from_utf8_lossy(&folded))
}

/// The process of a sample's header line, `COMM PID/TID TIME: EVENT…` (the comm may
/// hold spaces).
fn sample_pid(line: &str) -> Option<u64> {
    let head = &line[..line.find(": ")?];
    let ids = head.split_whitespace().rev().nth(1)?;
    ids.split('/').next()?.parse().ok()
}

/// `root` and every process descended from it, from the
/// `PERF_RECORD_FORK(CHILD:TID):(PARENT:TID)` lines of `perf script --show-task-events`
/// (a thread's fork names its own process as the parent).
pub fn descendants(tasks: &str, root: u64) -> std::collections::BTreeSet<u64> {
    let mut children: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for line in tasks.lines() {
        let Some(at) = line.find("PERF_RECORD_FORK(") else {
            continue;
        };
        let rest = &line[at + "PERF_RECORD_FORK(".len()..];
        let pid_of = |s: &str| {
            s.split(':')
                .next()
                .and_then(|p| p.trim().parse::<u64>().ok())
        };
        let mut parts = rest.split("):(");
        if let (Some(child), Some(parent)) =
            (parts.next().and_then(pid_of), parts.next().and_then(pid_of))
        {
            if child != parent {
                children.entry(parent).or_default().push(child);
            }
        }
    }
    let mut found = std::collections::BTreeSet::from([root]);
    let mut todo = vec![root];
    while let Some(p) = todo.pop() {
        for c in children.get(&p).into_iter().flatten() {
            if found.insert(*c) {
                todo.push(*c);
            }
        }
    }
    found
}

/// One frame of a `perf script` stack: its name, and whether it is the kernel's or a
/// shared library's.
struct Frame {
    name: String,
    kernel: bool,
    library: bool,
}

/// A frame line of `perf script -F …,ip,sym,dso`: `\tADDR SYMBOL (DSO)`.
fn frame_of(line: &str) -> Frame {
    let mut words: Vec<&str> = line.split_whitespace().collect();
    let addr = if words.is_empty() {
        ""
    } else {
        words.remove(0)
    };
    let dso = match words.last() {
        Some(w) if w.starts_with('(') && w.ends_with(')') && words.len() > 1 => {
            words.pop().unwrap_or_default()
        }
        _ => "",
    };
    let name = if words.is_empty() {
        "[unknown]".to_string()
    } else {
        words.join(" ").replace(';', ":")
    };
    let kernel = dso.starts_with("([kernel")
        || u64::from_str_radix(addr, 16).is_ok_and(|a| a >= 0xffff_8000_0000_0000);
    let file = dso.trim_matches(|c| c == '(' || c == ')');
    let library = !kernel && file.rsplit('/').next().is_some_and(|f| f.contains(".so"));
    Frame {
        name,
        kernel,
        library,
    }
}

/// The folded stack of `comm` from `frames` (innermost first): kernel frames named with
/// [`pgsurge_results::profile::KERNEL_FRAME`]; the shared libraries' frames between the
/// kernel and the program's own innermost frame (system-call wrappers such as
/// `epoll_wait`) left out, so the program's function that waited is the innermost frame
/// outside the kernel.
fn off_cpu_stack(comm: &str, frames: &[Frame]) -> String {
    let user: Vec<&Frame> = frames.iter().filter(|f| !f.kernel).collect();
    let wrappers = user.iter().take_while(|f| f.library).count();
    let skip = if wrappers < user.len() { wrappers } else { 0 };
    let mut kept: Vec<String> = user[skip..].iter().map(|f| f.name.clone()).collect();
    kept.reverse();
    let kernel = frames
        .iter()
        .filter(|f| f.kernel)
        .rev()
        .map(|f| format!("{}{}", f.name, pgsurge_results::profile::KERNEL_FRAME));
    let mut stack = comm.to_string();
    for f in kept.into_iter().chain(kernel) {
        stack.push(';');
        stack.push_str(&f);
    }
    stack
}

/// Off-CPU stacks from `perf script --show-switch-events -F comm,tid,time,event,ip,sym,dso`
/// ([`off_cpu_stack`]): each `sched_switch` sample's stack waits for its thread's next
/// `PERF_RECORD_SWITCH IN`, and weighs the time between them, in µs. The threads in
/// `left_out` are not counted.
pub fn fold_off_cpu(text: &str, left_out: &[u64]) -> BTreeMap<String, u64> {
    let mut pending: BTreeMap<u64, (f64, String)> = BTreeMap::new();
    let mut folded: BTreeMap<String, u64> = BTreeMap::new();
    let mut current: Option<(u64, f64, String, Vec<Frame>)> = None;
    let close = |cur: Option<(u64, f64, String, Vec<Frame>)>,
                 pending: &mut BTreeMap<u64, (f64, String)>| {
        if let Some((tid, t, comm, frames)) = cur {
            pending.insert(tid, (t, off_cpu_stack(&comm, &frames)));
        }
    };
    for line in text.lines() {
        if line.starts_with('\t') {
            if let Some(cur) = &mut current {
                cur.3.push(frame_of(line));
            }
            continue;
        }
        close(current.take(), &mut pending);
        let Some((tid, time, comm, rest)) = event_header(line) else {
            continue;
        };
        if left_out.contains(&tid) {
            continue;
        }
        if rest.starts_with("PERF_RECORD_SWITCH IN") {
            if let Some((out, stack)) = pending.remove(&tid) {
                let us = ((time - out) * 1e6).round().max(0.0) as u64;
                if us > 0 {
                    *folded.entry(stack).or_insert(0) += us;
                }
            }
        } else if rest.starts_with("sched:sched_switch") {
            current = Some((tid, time, comm, Vec::new()));
        }
    }
    folded
}

/// `comm tid time: rest` → its parts (the comm may hold spaces).
fn event_header(line: &str) -> Option<(u64, f64, String, &str)> {
    let colon = line.find(": ")?;
    let (head, rest) = (&line[..colon], line[colon + 2..].trim_start());
    let mut words = head.split_whitespace().rev();
    let time: f64 = words.next()?.parse().ok()?;
    let tid: u64 = words.next()?.parse().ok()?;
    let comm: Vec<&str> = words.rev().collect();
    Some((tid, time, comm.join(" "), rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_attempt_leaves_nothing_so_the_next_one_starts_afresh() {
        let dir = std::env::temp_dir().join(format!("pgsurge-profile-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let profiler = Profiler {
            request: ProfileRequest {
                frequency_hz: 99,
                server: true,
                client: false,
                off_cpu: false,
            },
            dir: TempDir(dir.clone()),
            recordings: Vec::new(),
            notes: Vec::new(),
            server_binary: None,
        };
        // A "perf" that exits at once, before it acknowledges: each try fails for that
        // reason, never because an earlier try's FIFOs are still there.
        let scope = || Scope::Processes {
            kind: ProfileKind::ServerCpu,
            left_out: Vec::new(),
        };
        for _ in 0..2 {
            let Err(e) = profiler.record(Path::new("/bin/false"), scope(), &["-p", "1"], &[])
            else {
                panic!("/bin/false started a recording");
            };
            assert!(e.starts_with("perf record exited"), "{e}");
            assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        }
    }

    #[test]
    fn off_cpu_time_is_the_gap_until_the_thread_is_back() {
        let text = "postgres 10 100.000000: sched:sched_switch: \n\
             \tffffffff821f8b58 __schedule ([kernel.kallsyms])\n\
             \tffffffff821f94c3 schedule ([kernel.kallsyms])\n\
             \t    108ef3 epoll_wait (/usr/lib/x86_64-linux-gnu/libc.so.6)\n\
             \t    44e488 WaitLatch (/usr/lib/postgresql/15/bin/postgres)\n\
             \t    5038ea pg_sleep (/usr/lib/postgresql/15/bin/postgres)\n\
             \t    4732d9 PostgresMain (/usr/lib/postgresql/15/bin/postgres)\n\
             \n\
             postgres 10 100.000010: PERF_RECORD_SWITCH OUT\n\
             postgres 11 100.000500: sched:sched_switch: \n\
             \tffffffff821f8b58 __schedule ([kernel.kallsyms])\n\
             \t    108ef3 epoll_wait (/usr/lib/x86_64-linux-gnu/libc.so.6)\n\
             \n\
             postgres 11 100.001000: PERF_RECORD_SWITCH IN\n\
             postgres 10 100.002000: PERF_RECORD_SWITCH IN         \n\
             postgres 9 100.002000: sched:sched_switch: \n\
             \tffffffff821f8b58 __schedule ([kernel.kallsyms])\n\
             \n\
             postgres 9 100.003000: PERF_RECORD_SWITCH IN\n";
        let folded = fold_off_cpu(text, &[9]);
        assert_eq!(folded.len(), 2, "{folded:?}");
        // The C library's wrapper is left out: the server's function that waited is
        // the innermost frame outside the kernel.
        assert_eq!(
            folded["postgres;PostgresMain;pg_sleep;WaitLatch;schedule_[k];__schedule_[k]"],
            2000
        );
        // A stack of a library alone keeps it.
        assert_eq!(folded["postgres;epoll_wait;__schedule_[k]"], 500);
    }

    #[test]
    fn the_server_is_the_postmaster_and_what_descends_from_it() {
        let tasks = "\
         swapper     0/0         0.000000: PERF_RECORD_FORK(1:1):(0:0)
         systemd     1/1         0.000000: PERF_RECORD_FORK(100:100):(1:1)
        postgres   100/100       0.000000: PERF_RECORD_FORK(101:101):(100:100)
        postgres   100/100       0.000000: PERF_RECORD_FORK(100:102):(100:100)
         systemd     1/1         0.000000: PERF_RECORD_FORK(200:200):(1:1)
        postgres   101/101       5.000000: PERF_RECORD_FORK(103:103):(101:101)
        postgres   200/200       5.000000: PERF_RECORD_FORK(201:201):(200:200)
        postgres   100/100       6.000000: PERF_RECORD_FORK(104:104):(100:100)
";
        let server: Vec<u64> = descendants(tasks, 100).into_iter().collect();
        // Its children and theirs, born before the window or in it; not the threads'
        // ids, not another server's processes.
        assert_eq!(server, [100, 101, 103, 104]);
        assert_eq!(
            sample_pid("opt cgu.00  1913/1989  59602.499709: cpu-clock: "),
            Some(1913)
        );
        assert_eq!(
            sample_pid("\t    4732d9 PostgresMain (/usr/bin/postgres)"),
            None
        );
    }
}
