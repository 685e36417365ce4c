//! A command run inside User-mode Linux: a Linux kernel as a process of this machine,
//! booted with this machine's own filesystem as its root (hostfs), so that the same
//! binaries (PostgreSQL, `ip`, `tc`, the test binary itself) run inside it unchanged,
//! under a kernel that has what this one may lack (the netem queueing discipline, veth
//! pairs as modules).
//!
//! [`boot`] writes an init script into a scratch directory, boots `linux.uml` with it
//! and waits, at most a deadline, for the guest to power off. The init script mounts
//! fresh `proc`, `sys` and tmpfs over `/run`, `/tmp` and `/dev/shm` (so nothing the
//! guest makes there — network namespaces, sockets, data directories — reaches this
//! machine's directories), loads the asked kernel modules, runs the one command with
//! the given environment and only that (its working directory the guest's `/tmp`), and
//! writes its standard output, standard error and exit status into the scratch
//! directory, which it reaches through a bind mount. The guest's own exit status says
//! nothing of the command's: the status file does.
//!
//! The kernel and every process of the guest are processes of this machine; they run
//! under `pgsurge_supervisor`, so a guest that outlives the deadline is killed with all
//! of them, and none is left running when [`boot`] returns.
//!
//! [`run_this_test`] is the usual use: the current test binary booted in a guest to
//! run one test by its exact name, which knows it is the inner run by [`in_guest`].

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use pgsurge_command::shell_word;

/// The User-mode Linux kernel (Debian's `user-mode-linux`).
pub const KERNEL: &str = "/usr/bin/linux.uml";

/// Where the kernel's modules are, one directory per kernel version.
pub const MODULES: &str = "/usr/lib/uml/modules";

/// The environment variable set (to `1`) for the command a guest runs.
pub const GUEST_ENV: &str = "PGSURGE_UML_GUEST";

/// The environment variable that names, to the command a guest runs, a directory it
/// may write files to for the host to read: the scratch directory given to [`boot`].
pub const OUT_ENV: &str = "PGSURGE_UML_OUT";

/// The guest's memory: room for two small PostgreSQL servers and their clients.
const MEMORY: &str = "1536M";

/// How long a guest may run before it is killed with all its processes: several times
/// what a guest's boot (seconds) and a test of a minute or so take on a loaded machine.
pub const DEADLINE: Duration = Duration::from_secs(300);

/// The search path of the command in the guest.
const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// What a command run in a guest did.
#[derive(Debug)]
pub struct GuestRun {
    /// Its exit status (None: it did not end, or was ended by a signal).
    pub status: Option<i32>,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
    /// The end of the guest's console (the kernel's messages, the init's errors).
    pub console: String,
}

impl GuestRun {
    /// Everything the guest said, for a failure's message: the command's output and
    /// errors, then the console's end.
    pub fn said(&self) -> String {
        format!(
            "exit {:?}\n--- stdout\n{}\n--- stderr\n{}\n--- console (end)\n{}",
            self.status, self.stdout, self.stderr, self.console
        )
    }
}

/// Whether this process is the command a guest runs: [`GUEST_ENV`] says so, and the
/// kernel is User-mode Linux (so that the variable alone, set by mistake on a real
/// machine, does not turn a test's namespaces and servers loose on it).
pub fn in_guest() -> bool {
    std::env::var(GUEST_ENV).is_ok_and(|v| v == "1")
        && std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|c| {
            c.lines()
                .any(|l| l.starts_with("vendor_id") && l.ends_with("User Mode Linux"))
        })
}

/// Why this machine cannot boot a guest that loads `modules` (paths under a kernel
/// version's `kernel/` directory, without `.ko`: `net/sched/sch_netem`), if it cannot:
/// not root, no kernel, no such module, no `insmod`.
pub fn unavailable(modules: &[&str]) -> Option<String> {
    if !crate::is_root() {
        return Some("User-mode Linux guests here need root (hostfs root, namespaces)".into());
    }
    if !Path::new(KERNEL).is_file() {
        return Some(format!("no {KERNEL} (install user-mode-linux)"));
    }
    let versions: Vec<PathBuf> = std::fs::read_dir(MODULES)
        .map(|d| d.filter_map(|e| Some(e.ok()?.path())).collect())
        .unwrap_or_default();
    for m in modules {
        let found = versions
            .iter()
            .any(|v| v.join("kernel").join(format!("{m}.ko")).is_file());
        if !found {
            return Some(format!(
                "no module {m}.ko under {MODULES}/*/kernel (install user-mode-linux)"
            ));
        }
    }
    let insmod = ["/usr/sbin/insmod", "/sbin/insmod"];
    if modules.is_empty() || insmod.iter().any(|p| Path::new(p).exists()) {
        return None;
    }
    Some("no insmod (install kmod)".into())
}

/// Boots a guest in `dir` (a scratch directory of the test: the init script and the
/// command's output files go there) that loads `modules` (as [`unavailable`] names
/// them), runs `program` with `args` and only the environment `env` (besides `PATH`,
/// `HOME` and `TMPDIR`, the latter two the guest's `/tmp`, [`GUEST_ENV`] and
/// [`OUT_ENV`]), and powers off. Waits at most [`DEADLINE`]. An error says why the guest
/// could not be booted or did not end.
pub fn boot(
    dir: &Path,
    modules: &[&str],
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Result<GuestRun, String> {
    boot_within(dir, modules, program, args, env, DEADLINE)
}

/// [`boot`] with a deadline of its own: past it, the guest is killed with all its
/// processes and the error says so.
pub fn boot_within(
    dir: &Path,
    modules: &[&str],
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    deadline: Duration,
) -> Result<GuestRun, String> {
    let init = dir.join("guest-init");
    std::fs::write(&init, init_script(dir, modules, program, args, env))
        .map_err(|e| format!("writing {}: {e}", init.display()))?;
    set_executable(&init)?;
    let mut cmd = Command::new(KERNEL);
    cmd.arg(format!("mem={MEMORY}"))
        .args(["root=/dev/root", "rootfstype=hostfs", "rootflags=/", "rw"])
        .arg(format!("init={}", init.display()))
        .args(["con=null", "con0=fd:0,fd:1", "quiet"])
        // The kernel's own files (its pid, its control socket) in the scratch directory,
        // not under ~/.uml, where a killed guest would leave them.
        .arg(format!("uml_dir={}", dir.display()));
    let finished = pgsurge_supervisor::run(cmd, deadline, 64 * 1024)
        .map_err(|e| format!("booting {KERNEL}: {e}"))?;
    let console = String::from_utf8_lossy(&finished.output).into_owned();
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    if finished.ending == pgsurge_supervisor::Ending::TimedOut {
        return Err(format!(
            "the guest ran past {} s and was killed\n--- stderr\n{}\n--- console (end)\n{console}",
            deadline.as_secs(),
            read("stderr")
        ));
    }
    let setup = read("setup.log");
    if !dir.join("status").exists() {
        return Err(format!(
            "the guest ended without running the command\n--- setup\n{setup}\n\
             --- console (end)\n{console}"
        ));
    }
    Ok(GuestRun {
        status: read("status").trim().parse().ok(),
        stdout: read("stdout"),
        stderr: read("stderr"),
        console,
    })
}

/// The processes of this machine that belong to a guest booted in `dir` (the kernel
/// and its guest's processes, which all carry the kernel's command line), by pid.
pub fn processes_of(dir: &Path) -> Vec<i32> {
    let mark = format!("uml_dir={}", dir.display());
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|&b| b == 0).any(|arg| arg == mark.as_bytes()))
        })
        .collect()
}

/// Boots the current test binary in a guest (as [`boot`] does, in `dir`) to run the
/// one test named `test` (its full path in the binary: `module::name`), with its output
/// shown and [`crate::REQUIRE_PREREQUISITES`] set, so that the inner run fails rather
/// than skips on anything missing; `env` is passed on too.
pub fn run_this_test(
    dir: &Path,
    modules: &[&str],
    test: &str,
    env: &[(&str, &str)],
) -> Result<GuestRun, String> {
    let exe = std::env::current_exe().map_err(|e| format!("the test binary's path: {e}"))?;
    let mut all = vec![(crate::REQUIRE_PREREQUISITES, "1")];
    all.extend_from_slice(env);
    boot(
        dir,
        modules,
        &exe,
        &[test, "--exact", "--nocapture", "--test-threads=1"],
        &all,
    )
}

/// The guest's init: mounts, modules, the command, its outcome, power off.
fn init_script(
    dir: &Path,
    modules: &[&str],
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> String {
    let d = shell_word(&dir.to_string_lossy());
    let loads: String = modules
        .iter()
        .map(|m| format!(" &&\n  insmod \"$m\"/{}.ko", shell_word(m)))
        .collect();
    let mut command =
        format!("env -i PATH={PATH} HOME=/tmp TMPDIR=/tmp {GUEST_ENV}=1 {OUT_ENV}=/run/out");
    for (k, v) in env {
        command.push_str(&format!(" {k}={}", shell_word(v)));
    }
    command.push(' ');
    command.push_str(&shell_word(&program.to_string_lossy()));
    for a in args {
        command.push(' ');
        command.push_str(&shell_word(a));
    }
    format!(
        r#"#!/bin/sh
# The init of a User-mode Linux guest: fresh mounts over what would reach the host's
# directories, the kernel modules, one command, its outcome in {d}, power off.
d={d}
exec 3>"$d/setup.log"
setup() {{
  mount -t proc proc /proc &&
  mount -t sysfs sys /sys &&
  mount -t tmpfs -o mode=0755 run /run &&
  mkdir /run/out && mount --bind "$d" /run/out &&
  mount -t tmpfs -o mode=1777 tmp /tmp &&
  mkdir -p /dev/shm && mount -t tmpfs -o mode=1777 shm /dev/shm &&
  m=/usr/lib/uml/modules/$(uname -r)/kernel{loads} &&
  ip link set lo up
}}
if setup >&3 2>&3; then
  cd /tmp
  {command} </dev/null >/run/out/stdout 2>/run/out/stderr
  echo $? >/run/out/status
else
  echo "setup failed" >&3
fi
exec 3>&-
sync
halt -f -p
"#
    )
}

fn set_executable(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("making {} executable: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_init_runs_the_command_with_its_words_and_environment_intact() {
        let script = init_script(
            Path::new("/tmp/x y"),
            &["net/sched/sch_netem"],
            Path::new("/bin/echo"),
            &["a'b"],
            &[("K", "v w")],
        );
        assert!(script.contains("\nd='/tmp/x y'\n"), "{script}");
        assert!(
            script.contains("insmod \"$m\"/net/sched/sch_netem.ko"),
            "{script}"
        );
        let line = script
            .lines()
            .find(|l| l.contains("env -i"))
            .expect("the command's line");
        assert!(
            line.contains(&format!(
                " K={} /bin/echo {} ",
                shell_word("v w"),
                shell_word("a'b")
            )),
            "{line}"
        );
    }
}
