//! `pgsurge kube job [options] -- BENCH OPTIONS…`: the Kubernetes Job of one
//! distributed run, printed as YAML (default) or JSON.
//!
//! What each pod runs, identically but for its index:
//!
//! ```text
//! pgsurge bench --generator-split --generator-count=N
//!     --generator-index=$(JOB_COMPLETION_INDEX) --generator-name=$(POD_NAME)
//!     --start-at=TIME --client=C [--rate=R] [--random-seed=S] --json=-  BENCH OPTIONS…
//! ```
//!
//! * `C`, `R` and `S` are the run's totals; `--generator-split` makes each generator
//!   keep its share (`pgsurge_generators::share`, the rule `dist local` splits with). A Job
//!   has one pod template, so the shares cannot be written per pod.
//! * `$(VAR)` in a container's `args` is expanded by the kubelet only from the
//!   container's own `env` list, so both variables are defined there from the downward
//!   API: `POD_NAME` from `metadata.name`, `JOB_COMPLETION_INDEX` from the annotation
//!   `batch.kubernetes.io/job-completion-index` that the Job controller puts on every
//!   pod of an Indexed Job. (The controller also injects `JOB_COMPLETION_INDEX` itself,
//!   but only into pods, and only when the container does not define it; defining it
//!   in the template makes the manifest say where the index comes from and keeps it
//!   working with an image that has no shell: no `sh -c` is needed.)
//! * Every user-given string that lands in `args` or an `env` value has each `$`
//!   doubled, since the kubelet would otherwise expand `$(NAME)` in it.
//! * The password is never in the manifest: with `--conninfo-secret` the container
//!   gets `PGPASSWORD` from a `secretKeyRef`; an argument that carries a password
//!   (conninfo `password=…`, a URI `user:password@`) is refused.
//! * Results: `--json=-` prints each generator's document on its stdout, and `kubectl
//!   logs` collects it (with the report from stderr, which `pgsurge merge` skips).
//!   With `--store=URL --group=NAME` among the bench options each pod also stores its
//!   run in a results store, and `pgsurge dist wait` merges the group (see
//!   [`ResultSink`]).

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

mod checks;
mod manifest;
mod next_steps;
mod options;
mod start;
#[cfg(test)]
mod tests;

use checks::check_names;
pub use checks::{
    check_env, dns_label_from, is_dns_label, is_dns_subdomain, is_quantity, max_job_name_len,
    refuse_passwords,
};
pub use manifest::{build_job, render, JobPlan, ResultSink};
use next_steps::{clients_text, run_seconds, store_group};
pub use options::{Format, JobArgs, KubePlan, Spread, Start};
use pgsurge_command::shell_word;
use start::{start_at, start_in};

/// The annotation the Job controller sets on each pod of an Indexed Job.
pub const COMPLETION_INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
/// The environment variable that carries the completion index into the container.
pub const INDEX_ENV: &str = "JOB_COMPLETION_INDEX";
/// The environment variable that carries the pod's name (the generator's name).
pub const POD_NAME_ENV: &str = "POD_NAME";
/// The container's name in the pod.
pub const CONTAINER: &str = "generator";
/// The most completions (and so generators) Kubernetes allows an Indexed Job.
pub const MAX_GENERATORS: u32 = 100_000;

/// Why no Job was printed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KubeError {
    /// An argument carries a password.
    #[error(
        "{what} \"{shown}\" contains a password: a password never goes into the manifest; \
         keep it in a Secret (kubectl create secret generic NAME --from-literal=password=…) \
         and give --conninfo-secret NAME [--conninfo-secret-key KEY]: the generators read \
         it as PGPASSWORD"
    )]
    Password {
        /// Which argument.
        what: String,
        /// It, redacted.
        shown: String,
    },
    /// An option value Kubernetes would refuse, or that makes no sense.
    #[error("{0}")]
    Invalid(String),
}

/// The wall clock now, in Unix epoch µs.
pub fn now_unix_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// `pgsurge kube job` with parsed options: the manifest in `format` on `out`, the next
/// steps (or the error) on `err`. Returns the exit code.
pub fn job_main(
    a: &KubePlan,
    format: Format,
    now_unix_us: i64,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    let text = build_job(a, now_unix_us).and_then(|p| Ok((render(&p.job, format)?, p)));
    let (text, plan) = match text {
        Ok(t) => t,
        Err(e) => {
            let _ = writeln!(err, "pgsurge kube job: error: {e}");
            return 1;
        }
    };
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            let _ = writeln!(err, "pgsurge kube job: error: writing the manifest: {e}");
            return 1;
        }
    }
    let ns = a
        .namespace
        .as_deref()
        .map(|n| format!(" -n {n}"))
        .unwrap_or_default();
    let name = &a.name;
    let timeout = match (run_seconds(&a.bench), plan.start_unix_s) {
        // Until the start, the run, and two minutes for the report and exit.
        (Some(t), at) => format!("{}s", (at - now_unix_us / 1_000_000).max(0) + t + 120),
        (None, _) => "…".to_string(),
    };
    let collect = match store_group(&a.bench) {
        // The pods store their runs: the coordinator waits on the store.
        Some((store, group)) => format!(
            "\x20     pgsurge dist wait --store {} --group {} -n {} --timeout={timeout}",
            shell_word(store),
            shell_word(group),
            a.generators
        ),
        None => format!(
            "\x20     kubectl wait{ns} --for=condition=complete job/{name} --timeout={timeout}\n\
             \x20     for p in $(kubectl get pods{ns} -l app.kubernetes.io/instance={name} -o name); do \
             kubectl logs{ns} \"$p\" > \"${{p#pod/}}.log\"; done\n\
             \x20     pgsurge merge {name}-*.log"
        ),
    };
    let _ = writeln!(
        err,
        "pgsurge kube job: {} generators ({} clients each) start at {}: every pod must be \
         running and connected by then.\n\
         then: pipe this output to `kubectl apply -f -`, and\n{collect}",
        a.generators,
        clients_text(&plan.clients),
        plan.start_at,
    );
    0
}
