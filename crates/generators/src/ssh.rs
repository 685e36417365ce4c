//! `pgsurge dist ssh --hosts H1,H2,… [options] -- BENCH OPTIONS…`: one `pgsurge bench`
//! generator per host, started over the system `ssh` client (the user's keys, agent
//! and `~/.ssh/config`; `BatchMode=yes`, so never a password prompt), each with its
//! share of the clients, rate and seed and one common `--start-at`; every generator
//! writes its JSON document to its ssh stdout (`--json=-`), which is collected and
//! merged exactly as `pgsurge dist local` does ([`crate::launch`]). With
//! `-- replay [REPLAY OPTIONS] LOG…` each host replays its share of the log's sessions
//! instead ([`crate::replay`]; the log is read on each host, at the path given), and
//! the hosts' reports are merged into the whole replay's.
//!
//! Steps: a connection check (`pgsurge --version` on every host, in parallel) that
//! also measures how long an ssh session takes to start; the common start = now +
//! twice the slowest check + `--start-in` margin (or `--start-at` as given); then the
//! generators, all at once; then, after every one has finished, the merge. A host
//! that fails (ssh error, non-zero exit, no result document on stdout) fails the run
//! with exit code 1 and a message naming it and the tail of its stderr (each line
//! prefixed with the host); nothing partial is merged.
//!
//! The remote command goes through the remote user's shell: every argument is
//! single-quoted. A password in the bench options would sit on every host's command
//! line (visible to `ps`), so it is refused: the hosts use `~/.pgpass` or
//! `PGPASSWORD`.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clap::Parser;
use pgsurge_command::shell_word;
use pgsurge_replay::report::ReplayReport;
use pgsurge_results::RunResult;

use crate::launch::{
    check_bench_options, failed, generator_args, merge_labelled, open_merged_json, past_deadline,
    present, start_in, wait_until, Ended, GeneratorOptions, Workload,
};
use crate::MergeError;

/// `pgsurge dist ssh` options.
#[derive(Debug, Parser)]
#[command(
    name = "pgsurge dist ssh",
    about = "Run one pgsurge bench generator (or replay of a share of a log's sessions, after `-- replay`) per host over ssh with a common start, then merge"
)]
pub struct SshArgs {
    /// Generator hosts, comma-separated, as ssh takes them (`[user@]host` or a
    /// `Host` alias of the ssh configuration); one generator per entry.
    #[arg(
        long = "hosts",
        value_name = "HOST,…",
        value_delimiter = ',',
        required = true
    )]
    pub hosts: Vec<String>,
    /// Clients, rate, seed, output directory and merged JSON.
    #[command(flatten)]
    pub gen: GeneratorOptions,
    /// Margin for the generators to connect their clients (`90s`, `2m`, or seconds),
    /// on top of twice the slowest ssh session start of the connection check.
    #[arg(long = "start-in", value_name = "DELAY", default_value = "3s")]
    pub start_in: crate::start::StartIn,
    /// The common start instant instead (RFC 3339 or Unix epoch seconds), passed
    /// to every generator as `--start-at`.
    #[arg(long = "start-at", value_name = "TIME", conflicts_with = "start_in")]
    pub start_at: Option<String>,
    /// An option for every ssh connection, as `ssh -o OPTION` takes it (e.g.
    /// `Port=2222`, `IdentityFile=~/.ssh/bench`); repeatable.
    #[arg(long = "ssh-option", value_name = "OPTION")]
    pub ssh_options: Vec<String>,
    /// An ssh configuration file to use instead of `~/.ssh/config` (`ssh -F FILE`).
    #[arg(long = "ssh-config", value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
    /// The pgsurge binary on the hosts (a name on the remote PATH, an absolute
    /// path, or `~/…`).
    #[arg(
        long = "remote-pgsurge",
        value_name = "PATH",
        default_value = "pgsurge"
    )]
    pub remote_pgsurge: String,
    /// Options for each `pgsurge bench` (after `--`), connection options included:
    /// the local PG* environment does not travel over ssh; or `replay`, the replay
    /// options and the logs (at the same path on every host), for hosts that each
    /// replay a share of the log's sessions.
    #[arg(last = true, value_name = "BENCH OPTIONS")]
    pub bench: Vec<OsString>,
}

/// When the generators of a launch over ssh start.
#[derive(Debug, Clone, PartialEq)]
pub enum SshStart {
    /// This many seconds after twice the slowest ssh session start of the connection
    /// check, from the end of the check.
    In(u64),
    /// At this instant (RFC 3339 or Unix epoch seconds), given to every generator as
    /// `--start-at`.
    At(String),
}

/// A launch of one generator per host over ssh, as plain values: what [`run_ssh`] and
/// [`run_ssh_replay`] run, built from the command line ([`SshArgs`]) or by a campaign.
#[derive(Debug, Clone, PartialEq)]
pub struct SshPlan {
    /// Generator hosts as ssh takes them; one generator per entry.
    pub hosts: Vec<String>,
    /// Clients, rate, seed, output directory and deadline.
    pub workload: Workload,
    /// When the generators start.
    pub start: SshStart,
    /// Options for every ssh connection (`ssh -o`).
    pub ssh_options: Vec<String>,
    /// An ssh configuration file instead of `~/.ssh/config` (`ssh -F`).
    pub ssh_config: Option<PathBuf>,
    /// The pgsurge binary on the hosts.
    pub remote_pgsurge: String,
    /// Options for each `pgsurge bench`, connection options included; or `replay`,
    /// the replay options and the logs.
    pub bench: Vec<OsString>,
}

impl From<SshArgs> for SshPlan {
    fn from(a: SshArgs) -> SshPlan {
        SshPlan {
            hosts: a.hosts,
            workload: a.gen.workload(),
            start: match a.start_at {
                Some(at) => SshStart::At(at),
                None => SshStart::In(a.start_in.seconds()),
            },
            ssh_options: a.ssh_options,
            ssh_config: a.ssh_config,
            remote_pgsurge: a.remote_pgsurge,
            bench: a.bench,
        }
    }
}

/// ssh options set unless `--ssh-option` gives the same one (ssh keeps the first
/// value of an option): fail fast on an unreachable host, notice a dead one mid-run.
const DEFAULT_SSH_OPTIONS: &[(&str, &str)] = &[
    ("ConnectTimeout", "15"),
    ("ServerAliveInterval", "15"),
    ("ServerAliveCountMax", "4"),
];

/// Lines of each generator's stderr kept for the error message.
const STDERR_TAIL: usize = 10;

/// The remote program, quoted; a leading `~/` stays outside the quotes so that the
/// remote shell expands it.
fn quote_program(p: &str) -> String {
    match p.strip_prefix("~/") {
        Some(rest) => format!("~/{}", shell_word(rest)),
        None => shell_word(p),
    }
}

/// The command line the remote shell runs: `program args…`, every word quoted.
pub fn remote_command(program: &str, args: &[OsString]) -> Result<String, MergeError> {
    let mut line = quote_program(program);
    for a in args {
        let s = a.to_str().ok_or_else(|| {
            MergeError::Launch(format!(
                "bench option {a:?} is not UTF-8 text; it cannot be sent over ssh"
            ))
        })?;
        line.push(' ');
        line.push_str(&shell_word(s));
    }
    Ok(line)
}

/// Refuses bench options that carry a password: they would be on the command line
/// of every generator host, visible to `ps` there.
pub fn check_no_passwords(bench: &[OsString]) -> Result<(), MergeError> {
    for a in bench {
        let s = a.to_string_lossy();
        if !pgsurge_wire::redact::passwords(&s).is_empty() {
            return Err(MergeError::Launch(format!(
                "the bench option \"{}\" contains a password, which would appear on the generator \
                 hosts' command lines: leave it out and give the password on each host in \
                 ~/.pgpass or PGPASSWORD instead",
                pgsurge_wire::redact::redact(&s)
            )));
        }
    }
    Ok(())
}

/// Refuses host entries ssh would take for something else: empty, starting with
/// `-` (an option), or with white space or control characters.
pub fn check_hosts(hosts: &[String]) -> Result<(), MergeError> {
    for h in hosts {
        let bad = h.is_empty()
            || h.starts_with('-')
            || h.chars().any(|c| c.is_whitespace() || c.is_control());
        if bad {
            return Err(MergeError::Launch(format!(
                "\"{h}\" is not a host for ssh (empty, starting with '-', or with spaces)"
            )));
        }
    }
    Ok(())
}

/// The generator names: each host without `user@`; a host given more than once gets
/// `-INDEX` appended, so that names stay distinct.
pub fn generator_names(hosts: &[String]) -> Vec<String> {
    let bare: Vec<&str> = hosts
        .iter()
        .map(|h| h.rsplit_once('@').map_or(h.as_str(), |(_, host)| host))
        .collect();
    bare.iter()
        .enumerate()
        .map(|(i, b)| {
            if bare.iter().filter(|o| *o == b).count() > 1 {
                format!("{b}-{i}")
            } else {
                b.to_string()
            }
        })
        .collect()
}

/// The ssh command running `remote` on `host`.
fn ssh_command(a: &SshPlan, host: &str, remote: &str) -> Command {
    let mut c = Command::new("ssh");
    // First, so that nothing later (ssh keeps an option's first value) can allow a
    // password or passphrase prompt.
    c.args(["-o", "BatchMode=yes"]);
    for o in &a.ssh_options {
        c.arg("-o").arg(o);
    }
    for (k, v) in DEFAULT_SSH_OPTIONS {
        let given = a.ssh_options.iter().any(|o| {
            o.split(['=', ' '])
                .next()
                .is_some_and(|key| key.eq_ignore_ascii_case(k))
        });
        if !given {
            c.arg("-o").arg(format!("{k}={v}"));
        }
    }
    if let Some(f) = &a.ssh_config {
        c.arg("-F").arg(f);
    }
    // No terminal (stdout carries the JSON document), no stdin.
    c.args(["-T", "-n", "--", host, remote]);
    c.stdin(Stdio::null());
    c
}

/// Why a remote command failed, from its exit status (ssh exits 255 on its own
/// errors, else with the remote command's status).
fn describe_exit(st: ExitStatus) -> String {
    match st.code() {
        Some(255) => "ssh failed (exit status 255)".to_string(),
        Some(127) => "the remote pgsurge was not found (exit status 127)".to_string(),
        Some(c) => format!("pgsurge exited with status {c}"),
        None => format!("ssh was {st}"),
    }
}

fn last_line(text: &str) -> &str {
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

/// Checks every host in parallel (`pgsurge --version` there) and returns the
/// slowest session's duration; fails naming every host that does not answer.
fn preflight(a: &SshPlan) -> Result<Duration, MergeError> {
    let remote = remote_command(&a.remote_pgsurge, &["--version".into()])?;
    let checks: Vec<(String, Instant, std::io::Result<std::process::Child>)> = a
        .hosts
        .iter()
        .map(|h| {
            let child = ssh_command(a, h, &remote)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn();
            (h.clone(), Instant::now(), child)
        })
        .collect();
    let mine = format!("pgsurge {}", env!("CARGO_PKG_VERSION"));
    let mut slowest = Duration::ZERO;
    let mut failures = Vec::new();
    for (host, t0, child) in checks {
        let out = match child.and_then(|c| c.wait_with_output()) {
            Ok(o) => o,
            Err(e) => {
                failures.push(format!("{host}: cannot run ssh: {e}"));
                continue;
            }
        };
        slowest = slowest.max(t0.elapsed());
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            failures.push(format!(
                "{host}: {}: {}",
                describe_exit(out.status),
                last_line(&err)
            ));
        } else if last_line(&stdout) != mine {
            eprintln!(
                "pgsurge dist ssh: warning: {host} runs {}, this is {mine}",
                last_line(&stdout)
            );
        }
    }
    if failures.is_empty() {
        Ok(slowest)
    } else {
        Err(MergeError::Launch(format!(
            "connection check failed, no generator was started: {}",
            failures.join("; ")
        )))
    }
}

/// One running generator: its ssh process and the readers of its outputs.
struct Running {
    host: String,
    name: String,
    child: std::process::Child,
    stdout: JoinHandle<std::io::Result<Vec<u8>>>,
    stderr: JoinHandle<VecDeque<String>>,
}

/// Copies `from` to `file` line by line and keeps the last [`STDERR_TAIL`] lines.
fn keep_stderr(
    from: impl Read + Send + 'static,
    file: Option<std::fs::File>,
) -> JoinHandle<VecDeque<String>> {
    std::thread::spawn(move || {
        let mut file = file;
        let mut tail = VecDeque::new();
        for line in BufReader::new(from).split(b'\n') {
            let Ok(line) = line else { break };
            if let Some(f) = file.as_mut() {
                let _ = f.write_all(&line).and_then(|()| f.write_all(b"\n"));
            }
            if tail.len() == STDERR_TAIL {
                tail.pop_front();
            }
            tail.push_back(String::from_utf8_lossy(&line).into_owned());
        }
        tail
    })
}

/// Runs the bench generators, waits for all, and returns their results labelled by host.
pub fn run_ssh(a: &SshPlan) -> Result<Vec<(String, RunResult)>, MergeError> {
    check_bench_options(&a.bench)?;
    check_no_passwords(&a.bench)?;
    check_hosts(&a.hosts)?;
    let count = host_count(a)?;
    let shares = a.workload.shares(count)?;
    let names = generator_names(&a.hosts);
    run_remotes(
        a,
        |at| {
            shares
                .iter()
                .zip(&names)
                .map(|(s, name)| generator_args(&a.bench, s, count, at, name, "-".as_ref()))
                .collect()
        },
        |b| document(b, "pgsurge result"),
    )
}

/// Runs the replay generators (`-- replay [REPLAY OPTIONS] LOG…`: host I of N plays
/// the log's sessions n with n mod N = I − 1, [`crate::replay`]), waits for all, and
/// returns their reports labelled by host. The log is read on each host, at the path
/// given.
pub fn run_ssh_replay(
    a: &SshPlan,
    replay: &[OsString],
) -> Result<Vec<(String, ReplayReport)>, MergeError> {
    crate::replay::check_options(replay, &a.workload)?;
    check_no_passwords(&a.bench)?;
    check_hosts(&a.hosts)?;
    let count = host_count(a)?;
    run_remotes(
        a,
        |at| {
            (0..count)
                .map(|i| crate::replay::generator_args(replay, i, count, at, "-".as_ref()))
                .collect()
        },
        |b| document(b, "pgsurge replay report"),
    )
}

fn host_count(a: &SshPlan) -> Result<u32, MergeError> {
    u32::try_from(a.hosts.len()).map_err(|_| MergeError::Launch("too many hosts".to_string()))
}

/// A host's stdout document read as a `T` (`what` names it in the error).
fn document<T: serde::de::DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T, String> {
    serde_json::from_slice::<T>(bytes)
        .map_err(|e| format!("its stdout is not a {what} document: {e}"))
}

/// Checks the hosts, sets the common start, runs on every host the pgsurge arguments
/// `args(start)` gives for it (in the order of `--hosts`), waits for all, and returns
/// each host's stdout document as `parse` reads it; a host that fails, or whose
/// document `parse` refuses, fails the run naming it. What the generators leave
/// (stderr, documents) goes to the output directory (`ssh-…` when none is given).
fn run_remotes<T>(
    a: &SshPlan,
    args: impl FnOnce(&str) -> Vec<Vec<OsString>>,
    parse: impl Fn(&[u8]) -> Result<T, String>,
) -> Result<Vec<(String, T)>, MergeError> {
    let count = a.hosts.len();
    let names = generator_names(&a.hosts);
    let dir = a.workload.out_dir("ssh-")?;

    let slowest = preflight(a)?;
    let at = match &a.start {
        SshStart::At(t) => t.clone(),
        SshStart::In(margin) => {
            let lead = margin + (2.0 * slowest.as_secs_f64()).ceil() as u64;
            let at = start_in(lead);
            eprintln!(
                "pgsurge dist ssh: {count} hosts answered (slowest in {:.2} s); the generators start at {at} (Unix time, in about {lead} s)",
                slowest.as_secs_f64()
            );
            at.to_string()
        }
    };

    // Every remote command first, so that nothing starts unless all can.
    let remotes = args(&at)
        .iter()
        .map(|args| remote_command(&a.remote_pgsurge, args))
        .collect::<Result<Vec<_>, _>>()?;
    let mut failures = Vec::new();
    let mut running = Vec::new();
    for ((host, name), remote) in a.hosts.iter().zip(&names).zip(&remotes) {
        let spawned = ssh_command(a, host, remote)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => {
                failures.push(format!("host {host}: cannot run ssh: {e}"));
                continue;
            }
        };
        let mut out = child.stdout.take().expect("piped");
        let stdout = std::thread::spawn(move || {
            let mut v = Vec::new();
            out.read_to_end(&mut v).map(|_| v)
        });
        let err_file = std::fs::File::create(dir.join(format!("{name}.err"))).ok();
        let stderr = keep_stderr(child.stderr.take().expect("piped"), err_file);
        running.push(Running {
            host: host.clone(),
            name: name.clone(),
            child,
            stdout,
            stderr,
        });
    }

    // The deadline counts from the common start (a `--start-at` that is not plain
    // Unix seconds gives none unless one can be read from it).
    let start_at = at.trim().parse::<u64>().ok();
    let deadline = start_at.and_then(|s| a.workload.deadline(s, &a.bench));
    let mut results = Vec::new();
    for mut r in running {
        let status = match wait_until(&mut r.child, deadline) {
            Ok(Ended::Exited(st)) => Ok(st),
            Ok(Ended::PastDeadline) => {
                failures.push(format!(
                    "host {}: {}",
                    r.host,
                    past_deadline(&r.name, deadline, start_at.unwrap_or(0))
                ));
                continue;
            }
            Err(e) => Err(e),
        };
        let stdout = r.stdout.join().unwrap_or_else(|_| Ok(Vec::new()));
        let tail = r.stderr.join().unwrap_or_default();
        let json_path = dir.join(format!("{}.json", r.name));
        if let Ok(bytes) = &stdout {
            let _ = std::fs::write(&json_path, bytes);
        }
        let outcome = match (status, stdout) {
            (Err(e), _) => Err(format!("waiting for ssh: {e}")),
            (Ok(st), _) if !st.success() => Err(describe_exit(st)),
            (Ok(_), Err(e)) => Err(format!("reading its output: {e}")),
            (Ok(_), Ok(bytes)) if bytes.iter().all(u8::is_ascii_whitespace) => {
                Err("no result document on its stdout".to_string())
            }
            (Ok(_), Ok(bytes)) => parse(&bytes),
        };
        match outcome {
            Ok(result) => results.push((r.host, result)),
            Err(why) => {
                for line in &tail {
                    eprintln!("{}: {line}", r.host);
                }
                let last = tail.iter().rev().find(|l| !l.trim().is_empty());
                failures.push(match last {
                    Some(l) => format!("host {}: {why}: {}", r.host, l.trim()),
                    None => format!("host {}: {why}", r.host),
                });
            }
        }
    }
    if !failures.is_empty() {
        return Err(failed(&dir, &failures));
    }
    Ok(results)
}

/// Entry point of `pgsurge dist ssh ARGS`.
pub fn ssh_main(args: &[OsString]) -> i32 {
    let a = match pgsurge_command::parse::<SshArgs>("pgsurge dist ssh", args) {
        Ok(a) => a,
        Err(status) => return status,
    };
    // The merged document's path is opened before any generator starts (the output
    // directory first: the document may be asked for inside it).
    if let Some(d) = &a.gen.out_dir {
        let _ = std::fs::create_dir_all(d);
    }
    let json_path = a.gen.json.clone();
    let json = match open_merged_json("pgsurge dist ssh", json_path.as_deref()) {
        Ok(j) => j,
        Err(code) => return code,
    };
    let plan = SshPlan::from(a);
    if let Some(replay) = crate::replay::replay_options(&plan.bench) {
        let merged = run_ssh_replay(&plan, replay).and_then(|docs| {
            pgsurge_replay::merge::merge(&docs).map_err(|e| MergeError::Launch(e.to_string()))
        });
        return crate::replay::present("pgsurge dist ssh", merged, json);
    }
    let merged = run_ssh(&plan).and_then(merge_labelled);
    present("pgsurge dist ssh", merged, json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_the_remote_shell() {
        let line = remote_command(
            "~/bin/pgsurge",
            &["bench".into(), "-f".into(), "a b;$(rm -rf /)'x".into()],
        )
        .unwrap();
        // The remote shell expands the leading `~/`.
        assert!(line.starts_with("~/bin/pgsurge bench -f "), "{line}");
        // What sh makes of it: the words as given.
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "printf '%s\\n' {}",
                remote_command(
                    "x",
                    &[
                        "a b".into(),
                        "$HOME".into(),
                        "'q'".into(),
                        "*".into(),
                        "a b;$(rm -rf /)'x".into()
                    ]
                )
                .unwrap()
            ))
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "x\na b\n$HOME\n'q'\n*\na b;$(rm -rf /)'x\n"
        );
    }

    #[test]
    fn passwords_are_refused_and_not_repeated() {
        for bad in [
            "host=db password=s3cret dbname=x",
            "postgres://u:s3cret@db/x",
            "postgresql://db/x?password=s3cret",
            // Attached short options: the URI becomes the value of another option.
            "-dpostgresql://u:s3cret@db/x",
            "-Sdpostgres://u:s3cret@db",
        ] {
            let e = check_no_passwords(&["-S".into(), bad.into()])
                .unwrap_err()
                .to_string();
            assert!(e.contains("~/.pgpass or PGPASSWORD"), "{e}");
            assert!(!e.contains("s3cret"), "{e}");
        }
        check_no_passwords(&["host=db user=u dbname=x".into(), "-S".into()]).unwrap();
    }

    #[test]
    fn hosts_that_look_like_options_are_refused() {
        for bad in ["-oProxyCommand=x", "", "a b"] {
            assert!(check_hosts(&[bad.to_string()]).is_err(), "{bad:?}");
        }
        check_hosts(&["gen1".into(), "bench@10.0.0.2".into()]).unwrap();
    }

    #[test]
    fn names_are_hosts_made_distinct() {
        let hosts: Vec<String> = ["u@a", "b", "a", "c"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(generator_names(&hosts), ["a-0", "b", "a-2", "c"]);
    }

    #[test]
    fn start_at_and_start_in_exclude_each_other() {
        assert!(SshArgs::try_parse_from(["x", "--hosts=h", "--start-at=1795473000"]).is_ok());
        assert!(SshArgs::try_parse_from([
            "x",
            "--hosts=h",
            "--start-at=1795473000",
            "--start-in=5"
        ])
        .is_err());
    }

    #[test]
    fn the_command_line_becomes_a_plan() {
        let a = SshArgs::try_parse_from([
            "x",
            "--hosts=a,u@b",
            "-c",
            "8",
            "-R",
            "100",
            "--start-at=1795473000",
            "--",
            "-S",
        ])
        .unwrap();
        let plan = SshPlan::from(a);
        assert_eq!(plan.hosts, ["a", "u@b"]);
        assert_eq!(plan.workload.clients, 8);
        assert_eq!(plan.workload.rate, Some(100.0));
        assert_eq!(plan.start, SshStart::At("1795473000".into()));
        assert_eq!(plan.remote_pgsurge, "pgsurge");
        assert_eq!(plan.bench, [OsString::from("-S")]);
        let plan =
            SshPlan::from(SshArgs::try_parse_from(["x", "--hosts=a", "--start-in=2m"]).unwrap());
        assert_eq!(plan.start, SshStart::In(120));
    }

    #[test]
    fn batch_mode_comes_first_and_given_options_win() {
        let a = SshArgs::try_parse_from([
            "x",
            "--hosts=h",
            "--ssh-option=ConnectTimeout=3",
            "--ssh-option",
            "BatchMode=no",
            "--ssh-config=/tmp/cfg",
        ])
        .unwrap();
        let c = ssh_command(&SshPlan::from(a), "h", "'pgsurge' '--version'");
        let args: Vec<String> = c
            .get_args()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        assert_eq!(&args[..2], ["-o", "BatchMode=yes"]);
        assert!(!args.contains(&"ConnectTimeout=15".to_string()), "{args:?}");
        assert!(
            args.contains(&"ServerAliveInterval=15".to_string()),
            "{args:?}"
        );
        assert_eq!(
            &args[args.len() - 7..],
            [
                "-F",
                "/tmp/cfg",
                "-T",
                "-n",
                "--",
                "h",
                "'pgsurge' '--version'"
            ]
        );
    }
}
