//! Runs the campaign's `[hooks]`: a shell command (`sh -c`) with the test described in
//! its environment, killed at the timeout, its output captured (the last 64 KiB,
//! passwords masked) and kept as facts of the test.
//!
//! The process side (a process group of its own, the timeout, the processes a hook
//! leaves running killed when it ends) is `pgsurge_supervisor::run`'s; this module
//! says what a hook is to the campaign: its environment, its facts, its failure.

use std::process::Command;
use std::time::{Duration, Instant};

use pgsurge_supervisor::Ending;

use pgsurge_store::FactRecord;
use pgsurge_wire::redact::redact_with;

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
    let finished = match pgsurge_supervisor::run(shell(command, env), timeout, KEEP_OUTPUT) {
        Ok(f) => f,
        Err(e) => {
            return HookOutcome {
                name,
                exit: Some(127),
                timed_out: false,
                timeout,
                duration_s: started.elapsed().as_secs_f64(),
                output: e.to_string(),
                killed: Vec::new(),
                killed_count: 0,
            }
        }
    };
    HookOutcome {
        name,
        exit: match finished.ending {
            Ending::Exited(code) => Some(code),
            Ending::Signaled | Ending::TimedOut => None,
        },
        timed_out: finished.ending == Ending::TimedOut,
        timeout,
        duration_s: finished.duration.as_secs_f64(),
        output: redact_with(&String::from_utf8_lossy(&finished.output), &secrets),
        killed: finished.killed,
        killed_count: finished.killed_count,
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
    fn what_a_hook_leaves_running_is_a_fact_and_a_warning() {
        let o = run_hook("before_test", "sleep 25.5 & echo x", &[], QUICK);
        assert!(o.ok(), "{o:?}");
        assert_eq!(o.output, "x\n", "the output is complete: {o:?}");
        assert_eq!(o.killed_count, 1, "{o:?}");
        // The shell's child for `&` is named sleep once it has exec'd, sh before.
        let name = o.killed[0]
            .split(" (pid ")
            .next()
            .unwrap_or_default()
            .to_string();
        assert!(name == "sleep" || name == "sh", "{o:?}");
        let facts = o.facts();
        let killed = facts.iter().find(|f| f.name == "hook.before_test.killed");
        assert_eq!(killed.and_then(|f| f.value.as_deref()), Some("1"));
        let w = o.leftover_warning().unwrap();
        assert!(
            w.starts_with(&format!(
                "before_test hook left 1 process running ({name} (pid "
            )) && w.ends_with("): killed when the hook ended"),
            "{w}"
        );
    }

    #[test]
    fn a_hook_past_its_timeout_fails_with_the_timeout_said() {
        let o = run_hook("after_test", "sleep 30", &[], Duration::from_millis(300));
        assert!(o.timed_out && o.exit.is_none(), "{o:?}");
        assert_eq!(o.facts()[0].value.as_deref(), Some("timeout"));
        assert_eq!(
            o.failure(),
            "after_test hook ran past its timeout of 300 ms and was killed"
        );
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
