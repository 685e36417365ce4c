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

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use clap::{Parser, ValueEnum};
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, EnvVar, EnvVarSource, ObjectFieldSelector, PodSpec, PodTemplateSpec,
    ResourceRequirements, SeccompProfile, SecretKeySelector, SecurityContext,
    TopologySpreadConstraint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

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

/// Output format of the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// YAML, as `kubectl apply -f` reads it.
    Yaml,
    /// JSON (one document, pretty-printed).
    Json,
}

/// How strictly the generators are spread over nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Spread {
    /// Prefer one generator per node (`whenUnsatisfiable: ScheduleAnyway`): pods are
    /// never left pending for want of nodes, which would make them miss the start.
    Soft,
    /// Never let the number of generators on two nodes differ by more than one
    /// (`DoNotSchedule`); a pod that cannot be placed stays pending.
    Hard,
}

/// `pgsurge kube job` options.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "pgsurge kube job",
    about = "Print a Kubernetes Indexed Job whose N pods run one pgsurge bench generator each",
    long_about = "Print a Kubernetes batch/v1 Job (Indexed completion mode) whose N pods run one \
                  `pgsurge bench` generator each, with a common --start-at, each its share of the \
                  clients, rate and seed, and --json=- on stdout. Nothing is sent to a cluster: \
                  pipe it to `kubectl apply -f -`. The password comes only from a Secret \
                  (--conninfo-secret); an argument with a password in it is refused.",
    after_help = "Example:\n  pgsurge kube job -n 4 -c 32 -R 8000 --random-seed=42 --image=registry.example/pgsurge:0.1.0 \\\n      --conninfo-secret=pgsurge-db --host=db.internal --user=bench \\\n      -- -T 60 -j 2 pgbench | kubectl apply -f -"
)]
pub struct JobArgs {
    /// Number of generators: the Job's completions and parallelism, one pod each.
    #[arg(short = 'n', long = "generators", value_name = "N")]
    pub generators: u32,
    /// Total clients, split across the generators (`-c` of each).
    #[arg(short = 'c', long = "clients", value_name = "NUM", default_value_t = 1)]
    pub clients: u32,
    /// Total target rate in tps, R/N per generator (`-R` of each).
    #[arg(short = 'R', long = "rate", value_name = "TPS")]
    pub rate: Option<f64>,
    /// Run seed; generator i uses the i-th SplitMix64 output of it.
    #[arg(long = "random-seed", value_name = "SEED")]
    pub seed: Option<u64>,
    /// The common start: RFC 3339 or Unix epoch seconds; written into the Job as RFC 3339.
    #[arg(long = "start-at", value_name = "TIME", conflicts_with = "start_in")]
    pub start_at: Option<String>,
    /// Or start this long after now (`90s`, `2m`, `1h`, plain seconds): time to
    /// schedule the pods, pull the image and connect before the start.
    #[arg(long = "start-in", value_name = "DURATION", default_value = "60s")]
    pub start_in: String,
    /// The Job's name (a DNS label); also its pods' `app.kubernetes.io/instance` label.
    #[arg(long, value_name = "NAME", default_value = "pgsurge-run")]
    pub name: String,
    /// The namespace to create the Job in (default: kubectl's current one).
    #[arg(long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    /// The generator image (built from the repository's Containerfile; its entrypoint
    /// is pgsurge).
    #[arg(long, value_name = "IMAGE", default_value = "pgsurge:latest")]
    pub image: String,
    /// CPU of each generator, requested and limit (a Kubernetes quantity: 2, 500m).
    #[arg(long, value_name = "QUANTITY", default_value = "1")]
    pub cpu: String,
    /// Memory of each generator, requested and limit (a Kubernetes quantity: 512Mi, 2Gi).
    #[arg(long, value_name = "QUANTITY", default_value = "512Mi")]
    pub memory: String,
    /// Spreading of the generators over nodes (topology spread on kubernetes.io/hostname).
    #[arg(long, value_enum, value_name = "HOW", default_value_t = Spread::Soft)]
    pub spread: Spread,
    /// The Secret that holds the database password (read as PGPASSWORD).
    #[arg(long = "conninfo-secret", value_name = "SECRET")]
    pub secret: Option<String>,
    /// The key of the password in that Secret [default: password].
    #[arg(long = "conninfo-secret-key", value_name = "KEY")]
    pub secret_key: Option<String>,
    /// Database server host (PGHOST of the generators).
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// Database server port (PGPORT).
    #[arg(long, value_name = "PORT")]
    pub port: Option<String>,
    /// Database name (PGDATABASE).
    #[arg(long, value_name = "DBNAME")]
    pub dbname: Option<String>,
    /// Database user (PGUSER).
    #[arg(long, value_name = "USER")]
    pub user: Option<String>,
    /// More environment of the generators (`PGSSLMODE=require`, `PGOPTIONS=…`), each
    /// `NAME=VALUE`, repeatable; not a password (the Secret gives PGPASSWORD) nor a
    /// variable that another option sets.
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Format::Yaml)]
    pub format: Format,
    /// Options for every `pgsurge bench` (after `--`): pgbench's, less the clients,
    /// rate, seed, JSON, start and generator options this command sets.
    #[arg(last = true, value_name = "BENCH OPTIONS")]
    pub bench: Vec<String>,
}

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

/// Where the generators' results go: `--json=-`, each document on its pod's stdout,
/// collected with `kubectl logs`.
///
/// A results store is the other way (`pgsurge bench --store=URL --group=NAME`, §5b of
/// docs/distributed.md): those options pass through after `--` like any bench option,
/// next to `--json=-`, and a campaign's `kube` launcher adds them itself. Their URL
/// may not hold a password ([`refuse_passwords`] sees it as any bench option): the
/// store is reached with the pod's `PGPASSWORD` from the Secret, or a `.pgpass` in the
/// image. No second Secret is read for the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultSink {
    /// `--json=-`: the document on stdout, the text report on stderr.
    JsonOnStdout,
}

impl ResultSink {
    /// The bench options that send the result there.
    fn bench_args(self) -> Vec<String> {
        match self {
            ResultSink::JsonOnStdout => vec!["--json=-".to_string()],
        }
    }
}

/// The Job, and what the user needs to know to run it.
#[derive(Debug, Clone)]
pub struct JobPlan {
    /// The manifest.
    pub job: Job,
    /// The common start, RFC 3339 (UTC).
    pub start_at: String,
    /// The common start, Unix epoch seconds (rounded down).
    pub start_unix_s: i64,
    /// Each generator's clients, in index order.
    pub clients: Vec<u32>,
}

/// The wall clock now, in Unix epoch µs.
pub fn now_unix_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Builds the Job of `a`, with the clock at `now_unix_us`.
pub fn build_job(a: &JobArgs, now_unix_us: i64) -> Result<JobPlan, KubeError> {
    refuse_passwords(a)?;
    pgsurge_generators::launch::check_bench_options(
        &a.bench.iter().map(Into::into).collect::<Vec<_>>(),
    )
    .map_err(|e| KubeError::Invalid(e.to_string()))?;
    if a.generators > MAX_GENERATORS {
        return Err(KubeError::Invalid(format!(
            "--generators {}: an Indexed Job has at most {MAX_GENERATORS} completions",
            a.generators
        )));
    }
    if let Some(r) = a.rate {
        if !(r.is_finite() && r > 0.0) {
            return Err(KubeError::Invalid(format!(
                "invalid rate {r}: give a positive number of transactions per second"
            )));
        }
    }
    let shares = pgsurge_generators::split(a.clients, a.rate, a.seed, a.generators)
        .map_err(|e| KubeError::Invalid(e.to_string()))?;
    check_names(a)?;
    for (what, q) in [("--cpu", &a.cpu), ("--memory", &a.memory)] {
        if !is_quantity(q) {
            return Err(KubeError::Invalid(format!(
                "{what} \"{q}\" is not a Kubernetes quantity (such as 2, 500m, 512Mi, 2Gi)"
            )));
        }
    }
    let (start_at, start_unix_s) = match &a.start_at {
        Some(t) => start_at(t, now_unix_us)?,
        None => start_in(&a.start_in, now_unix_us)?,
    };

    let labels = labels(&a.name);
    let job = Job {
        metadata: ObjectMeta {
            name: Some(a.name.clone()),
            namespace: a.namespace.clone(),
            labels: Some(labels.clone()),
            ..Default::default()
        },
        spec: Some(JobSpec {
            completion_mode: Some("Indexed".into()),
            completions: Some(count(a.generators)),
            // Every generator at once: they must all be connected by the start.
            parallelism: Some(count(a.generators)),
            // A retried generator would start after the window: fail instead.
            backoff_limit: Some(0),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels.clone()),
                    ..Default::default()
                }),
                spec: Some(pod_spec(a, &start_at, labels)),
            },
            ..Default::default()
        }),
        status: None,
    };
    Ok(JobPlan {
        job,
        start_at,
        start_unix_s,
        clients: shares.iter().map(|s| s.clients).collect(),
    })
}

/// The Job as text in `format`.
pub fn render(job: &Job, format: Format) -> Result<String, KubeError> {
    let text = match format {
        Format::Yaml => serde_norway::to_string(job).map_err(|e| e.to_string()),
        Format::Json => serde_json::to_string_pretty(job)
            .map(|s| s + "\n")
            .map_err(|e| e.to_string()),
    };
    text.map_err(|e| KubeError::Invalid(format!("cannot serialize the Job: {e}")))
}

/// `pgsurge kube job` with parsed options: the manifest on `out`, the next steps (or
/// the error) on `err`. Returns the exit code.
pub fn job_main(a: &JobArgs, now_unix_us: i64, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let text = build_job(a, now_unix_us).and_then(|p| Ok((render(&p.job, a.format)?, p)));
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

/// `--store=URL` and `--group=NAME` among the bench options, when both are there.
fn store_group(bench: &[String]) -> Option<(&str, &str)> {
    let find = |prefix: &str| bench.iter().rev().find_map(|a| a.strip_prefix(prefix));
    Some((find("--store=")?, find("--group=")?))
}

/// `s` as one word for a POSIX shell: as is when it is plain, else single-quoted.
fn shell_word(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:@=%+,".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// `-T N` among the bench options (`-T N`, `-TN`, `--time=N`, `--time N`).
fn run_seconds(bench: &[String]) -> Option<i64> {
    let mut it = bench.iter();
    let mut found = None;
    while let Some(a) = it.next() {
        let value = match a.as_str() {
            "-T" | "--time" => it.next().map(String::as_str),
            s => s.strip_prefix("--time=").or_else(|| s.strip_prefix("-T")),
        };
        if let Some(v) = value.and_then(|v| v.parse::<i64>().ok()) {
            found = Some(v);
        }
    }
    found
}

/// `8` when every generator has 8 clients, else `8 or 7`.
fn clients_text(clients: &[u32]) -> String {
    match (clients.iter().max(), clients.iter().min()) {
        (Some(hi), Some(lo)) if hi != lo => format!("{hi} or {lo}"),
        (Some(hi), _) => hi.to_string(),
        _ => "0".into(),
    }
}

fn count(n: u32) -> i32 {
    // Bounded by MAX_GENERATORS.
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// The labels of the Job and its pods; the spread constraint selects the pods by them.
fn labels(name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_string(), "pgsurge".to_string()),
        (
            "app.kubernetes.io/component".to_string(),
            "generator".to_string(),
        ),
        ("app.kubernetes.io/instance".to_string(), name.to_string()),
    ])
}

/// `s` as a literal for the kubelet, which expands `$(NAME)` and turns `$$` into `$`
/// in container args and env values.
fn literal(s: &str) -> String {
    s.replace('$', "$$")
}

fn pod_spec(a: &JobArgs, start_at: &str, labels: BTreeMap<String, String>) -> PodSpec {
    let mut args = vec![
        "bench".to_string(),
        // First, so that the open-files check of -c is made on the share.
        "--generator-split".to_string(),
        format!("--generator-count={}", a.generators),
        format!("--generator-index=$({INDEX_ENV})"),
        format!("--generator-name=$({POD_NAME_ENV})"),
        format!("--start-at={start_at}"),
        format!("--client={}", a.clients),
    ];
    if let Some(r) = a.rate {
        args.push(format!("--rate={r}"));
    }
    if let Some(s) = a.seed {
        args.push(format!("--random-seed={s}"));
    }
    args.extend(ResultSink::JsonOnStdout.bench_args());
    args.extend(a.bench.iter().map(|s| literal(s)));

    let field = |path: &str| EnvVarSource {
        field_ref: Some(ObjectFieldSelector {
            field_path: path.to_string(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut env = vec![
        EnvVar {
            name: INDEX_ENV.into(),
            value_from: Some(field(&format!(
                "metadata.annotations['{COMPLETION_INDEX_ANNOTATION}']"
            ))),
            ..Default::default()
        },
        EnvVar {
            name: POD_NAME_ENV.into(),
            value_from: Some(field("metadata.name")),
            ..Default::default()
        },
    ];
    for (var, value) in [
        ("PGHOST", &a.host),
        ("PGPORT", &a.port),
        ("PGDATABASE", &a.dbname),
        ("PGUSER", &a.user),
    ] {
        if let Some(v) = value {
            env.push(EnvVar {
                name: var.into(),
                value: Some(literal(v)),
                ..Default::default()
            });
        }
    }
    for (name, value) in a.env.iter().filter_map(|e| e.split_once('=')) {
        env.push(EnvVar {
            name: name.into(),
            value: Some(literal(value)),
            ..Default::default()
        });
    }
    if let Some(secret) = &a.secret {
        env.push(EnvVar {
            name: "PGPASSWORD".into(),
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: secret.clone(),
                    key: a.secret_key.clone().unwrap_or_else(|| "password".into()),
                    optional: Some(false),
                }),
                ..Default::default()
            }),
            ..Default::default()
        });
    }

    let resources = BTreeMap::from([
        ("cpu".to_string(), Quantity(a.cpu.clone())),
        ("memory".to_string(), Quantity(a.memory.clone())),
    ]);
    PodSpec {
        restart_policy: Some("Never".into()),
        // Generators do not talk to the Kubernetes API.
        automount_service_account_token: Some(false),
        topology_spread_constraints: Some(vec![TopologySpreadConstraint {
            max_skew: 1,
            topology_key: "kubernetes.io/hostname".into(),
            when_unsatisfiable: match a.spread {
                Spread::Soft => "ScheduleAnyway",
                Spread::Hard => "DoNotSchedule",
            }
            .into(),
            label_selector: Some(LabelSelector {
                match_labels: Some(labels),
                ..Default::default()
            }),
            ..Default::default()
        }]),
        containers: vec![Container {
            name: CONTAINER.into(),
            image: Some(a.image.clone()),
            args: Some(args),
            env: Some(env),
            // Requests = limits: the Guaranteed QoS class, so a generator's CPU is
            // not taken away mid-run by its neighbours.
            resources: Some(ResourceRequirements {
                requests: Some(resources.clone()),
                limits: Some(resources),
                ..Default::default()
            }),
            // The Containerfile runs as 65534; the Pod Security "restricted" profile.
            security_context: Some(SecurityContext {
                allow_privilege_escalation: Some(false),
                run_as_non_root: Some(true),
                capabilities: Some(Capabilities {
                    drop: Some(vec!["ALL".into()]),
                    ..Default::default()
                }),
                seccomp_profile: Some(SeccompProfile {
                    type_: "RuntimeDefault".into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Refuses every argument that carries a password (conninfo `password=`, URI user
/// info, `?password=`), as `pgsurge_wire::redact` finds them.
pub fn refuse_passwords(a: &JobArgs) -> Result<(), KubeError> {
    let flags = [
        ("--host", &a.host),
        ("--port", &a.port),
        ("--dbname", &a.dbname),
        ("--user", &a.user),
    ];
    let named = flags
        .iter()
        .filter_map(|(what, v)| v.as_ref().map(|v| (what.to_string(), v)));
    let env = a.env.iter().map(|v| ("--env".to_string(), v));
    let bench = a.bench.iter().map(|v| ("bench option".to_string(), v));
    for (what, v) in named.chain(env).chain(bench) {
        if !pgsurge_wire::redact::passwords(v).is_empty() {
            return Err(KubeError::Password {
                what,
                shown: pgsurge_wire::redact::redact(v),
            });
        }
    }
    Ok(())
}

/// The longest Job name a Job of `generators` pods may have: each pod's host name is
/// NAME-INDEX, which must be a DNS label (63 characters) too.
pub fn max_job_name_len(generators: u32) -> usize {
    let digits = (generators.max(1) - 1).to_string().len();
    63 - 1 - digits
}

/// `text` made into a DNS label of at most `max` characters: lower-cased, every run of
/// other characters turned into one `-`, no `-` at either end; `None` when nothing of
/// it is left.
pub fn dns_label_from(text: &str, max: usize) -> Option<String> {
    let mut out = String::new();
    for c in text.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.truncate(max);
    let out = out.trim_end_matches('-').to_string();
    (!out.is_empty()).then_some(out)
}

fn check_names(a: &JobArgs) -> Result<(), KubeError> {
    let room = max_job_name_len(a.generators);
    if !is_dns_label(&a.name, room) {
        return Err(KubeError::Invalid(format!(
            "--name \"{}\" is not a Job name Kubernetes takes: lower-case letters, digits and \
             '-', starting and ending with a letter or digit, at most {room} characters (with \
             '-' and the index, each pod's host name must fit in 63)",
            a.name
        )));
    }
    if let Some(ns) = &a.namespace {
        if !is_dns_label(ns, 63) {
            return Err(KubeError::Invalid(format!(
                "--namespace \"{ns}\" is not a namespace name: lower-case letters, digits and \
                 '-', starting and ending with a letter or digit, at most 63 characters"
            )));
        }
    }
    match (&a.secret, &a.secret_key) {
        (None, Some(_)) => {
            return Err(KubeError::Invalid(
                "--conninfo-secret-key needs --conninfo-secret".into(),
            ))
        }
        (Some(s), _) if !is_dns_subdomain(s) => {
            return Err(KubeError::Invalid(format!(
                "--conninfo-secret \"{s}\" is not a Secret name: lower-case letters, digits, \
                 '-' and '.', starting and ending with a letter or digit, at most 253 characters"
            )))
        }
        _ => {}
    }
    if let Some(k) = &a.secret_key {
        let ok = |c: char| c.is_ascii_alphanumeric() || "-._".contains(c);
        if k.is_empty() || k.len() > 253 || !k.chars().all(ok) {
            return Err(KubeError::Invalid(format!(
                "--conninfo-secret-key \"{k}\" is not a Secret key: letters, digits, '-', '_' \
                 and '.', at most 253 characters"
            )));
        }
    }
    for e in &a.env {
        check_env(e)?;
    }
    if a.image.is_empty() || a.image.chars().any(char::is_whitespace) {
        return Err(KubeError::Invalid(format!(
            "--image \"{}\" is not an image reference",
            a.image
        )));
    }
    Ok(())
}

/// Variables the Job sets itself, which `--env` may not set.
const SET_BY_THE_JOB: &[(&str, &str)] = &[
    (INDEX_ENV, "the Job sets it from the completion index"),
    (POD_NAME_ENV, "the Job sets it from the pod's name"),
    (
        "PGPASSWORD",
        "the password only comes from the Secret: --conninfo-secret",
    ),
    ("PGHOST", "use --host"),
    ("PGPORT", "use --port"),
    ("PGDATABASE", "use --dbname"),
    ("PGUSER", "use --user"),
];

/// One `--env NAME=VALUE`: a C identifier as name, not one the Job sets.
pub fn check_env(e: &str) -> Result<(), KubeError> {
    let Some((name, _)) = e.split_once('=') else {
        return Err(KubeError::Invalid(format!(
            "--env \"{e}\": expected NAME=VALUE"
        )));
    };
    let ident = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ident {
        return Err(KubeError::Invalid(format!(
            "--env \"{name}\" is not a variable name: letters, digits and '_', not starting \
             with a digit"
        )));
    }
    if let Some((_, why)) = SET_BY_THE_JOB.iter().find(|(n, _)| *n == name) {
        return Err(KubeError::Invalid(format!("--env {name}: {why}")));
    }
    Ok(())
}

/// True when `s` is a DNS-1123 label of at most `max` characters (the names of Jobs,
/// namespaces and pods' host names): lower-case letters, digits and `-`, starting and
/// ending with a letter or digit.
pub fn is_dns_label(s: &str, max: usize) -> bool {
    let b = s.as_bytes();
    let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && b.len() <= max
        && b.first().is_some_and(edge)
        && b.last().is_some_and(edge)
        && b.iter().all(|c| edge(c) || *c == b'-')
}

/// True when `s` is a DNS-1123 subdomain (the names of Secrets): dot-separated labels,
/// at most 253 characters.
pub fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(|part| is_dns_label(part, 63))
}

/// A Kubernetes quantity, positive: `<number><suffix>` with suffix one of the binary
/// SI (`Ki`…`Ei`), decimal SI (`m`, ``, `k`, `M`…`E`) or an exponent (`e3`, `E-2`).
pub fn is_quantity(q: &str) -> bool {
    let end = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(q.len());
    let (number, suffix) = q.split_at(end);
    let number_ok = match number.split_once('.') {
        None => !number.is_empty(),
        Some((int, frac)) => (!int.is_empty() || !frac.is_empty()) && !frac.contains('.'),
    };
    let suffix_ok = matches!(
        suffix,
        "" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" | "m" | "k" | "M" | "G" | "T" | "P" | "E"
    ) || suffix.strip_prefix(['e', 'E']).is_some_and(|exp| {
        let digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
        !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
    });
    number_ok && suffix_ok && number.chars().any(|c| c.is_ascii_digit() && c != '0')
}

/// `--start-at`: RFC 3339 or Unix epoch seconds (as `bench --start-at` reads it), in
/// the future, as RFC 3339 UTC.
fn start_at(arg: &str, now_unix_us: i64) -> Result<(String, i64), KubeError> {
    let s = arg.trim();
    let invalid = || {
        KubeError::Invalid(format!(
            "invalid --start-at \"{arg}\": expected an RFC 3339 time such as \
             2026-11-23T22:30:00Z or Unix epoch seconds such as 1795473000"
        ))
    };
    let at_ns: i128 = if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        let secs: f64 = s.parse().map_err(|_| invalid())?;
        if !(secs.is_finite() && secs < 9.0e12) {
            return Err(invalid());
        }
        (secs * 1e9).round() as i128
    } else {
        OffsetDateTime::parse(s, &Rfc3339)
            .map_err(|_| invalid())?
            .unix_timestamp_nanos()
    };
    if at_ns <= i128::from(now_unix_us) * 1000 {
        return Err(KubeError::Invalid(format!(
            "--start-at \"{arg}\" is not in the future: give a time after the pods can have \
             started and connected, or --start-in"
        )));
    }
    let secs = i64::try_from(at_ns.div_euclid(1_000_000_000)).map_err(|_| invalid())?;
    Ok((rfc3339(at_ns).ok_or_else(invalid)?, secs))
}

/// `--start-in`: now plus the lead time, rounded up to a whole second.
fn start_in(arg: &str, now_unix_us: i64) -> Result<(String, i64), KubeError> {
    let invalid = || {
        KubeError::Invalid(format!(
            "invalid --start-in \"{arg}\": expected a duration such as 90s, 2m, 1h or seconds"
        ))
    };
    let s = arg.trim();
    let (digits, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => s.split_at(i),
        None => (s, "s"),
    };
    let n: i64 = digits.parse().map_err(|_| invalid())?;
    let secs = match unit {
        "s" => Some(n),
        "m" => n.checked_mul(60),
        "h" => n.checked_mul(3600),
        _ => None,
    }
    .filter(|&s| (1..=7 * 24 * 3600).contains(&s))
    .ok_or_else(invalid)?;
    let at_s = (now_unix_us + secs * 1_000_000).div_euclid(1_000_000) + 1;
    Ok((
        rfc3339(i128::from(at_s) * 1_000_000_000).ok_or_else(invalid)?,
        at_s,
    ))
}

fn rfc3339(unix_ns: i128) -> Option<String> {
    OffsetDateTime::from_unix_timestamp_nanos(unix_ns)
        .ok()?
        .format(&Rfc3339)
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities() {
        for q in [
            "1", "2", "500m", "0.5", "1.5", ".5", "512Mi", "2Gi", "1e3", "1E-2", "4k",
        ] {
            assert!(is_quantity(q), "{q}");
        }
        for q in [
            "", "0", "-1", "1.2.3", "1 Gi", "1gi", "1mi", "Mi", "1e", "1x", ".", "1Gib",
        ] {
            assert!(!is_quantity(q), "{q}");
        }
    }

    #[test]
    fn names() {
        assert!(is_dns_label("pgsurge-run-1", 63));
        for bad in ["", "-a", "a-", "A", "a_b", "a.b"] {
            assert!(!is_dns_label(bad, 63), "{bad}");
        }
        assert!(!is_dns_label(&"a".repeat(64), 63));
        assert!(is_dns_subdomain("db.secret-1"));
        assert!(!is_dns_subdomain("db..x"));
    }

    #[test]
    fn start_times() {
        const NOW: i64 = 1_795_000_000_250_000; // 2026-11-18T…:40.25Z
        assert_eq!(
            start_at("2026-11-23T23:30:00+01:00", NOW),
            Ok(("2026-11-23T22:30:00Z".into(), 1_795_473_000))
        );
        assert_eq!(
            start_at("1795473000.5", NOW),
            Ok(("2026-11-23T22:30:00.5Z".into(), 1_795_473_000))
        );
        assert!(start_at("1795000000", NOW).is_err(), "past");
        assert!(start_at("tomorrow", NOW).is_err());
        // Rounded up to a whole second, at least the lead time ahead.
        assert_eq!(start_in("60s", NOW), start_in("60", NOW));
        assert_eq!(start_in("1m", NOW), start_in("60", NOW));
        let at = rfc3339(i128::from(1_795_000_061i64) * 1_000_000_000).expect("formats");
        assert_eq!(start_in("60s", NOW), Ok((at, 1_795_000_061)));
        for bad in ["", "0", "s", "-5s", "5d", "1.5m", "9999999h"] {
            assert!(start_in(bad, NOW).is_err(), "{bad}");
        }
    }

    #[test]
    fn run_time_from_the_bench_options() {
        let v = |a: &[&str]| run_seconds(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(v(&["-T", "60", "pgbench"]), Some(60));
        assert_eq!(v(&["-T30"]), Some(30));
        assert_eq!(v(&["--time=45", "-j2"]), Some(45));
        assert_eq!(v(&["--time", "5"]), Some(5));
        assert_eq!(v(&["-t", "100"]), None);
    }

    #[test]
    fn labels_made_from_text() {
        assert_eq!(
            dns_label_from("pgsurge-Nightly run: PG 17", 63).as_deref(),
            Some("pgsurge-nightly-run-pg-17")
        );
        assert_eq!(dns_label_from("abc--def", 5).as_deref(), Some("abc-d"));
        assert_eq!(dns_label_from("abc--def", 4).as_deref(), Some("abc"));
        assert_eq!(dns_label_from("--ÄÖ--", 63), None);
        assert_eq!(max_job_name_len(1), 61);
        assert_eq!(max_job_name_len(10), 61);
        assert_eq!(max_job_name_len(11), 60);
        assert_eq!(max_job_name_len(100_000), 57);
    }

    #[test]
    fn extra_environment() {
        assert!(check_env("PGSSLMODE=require").is_ok());
        assert!(check_env("_X=a=b").is_ok());
        for (bad, why) in [
            ("PGSSLMODE", "expected NAME=VALUE"),
            ("1X=a", "is not a variable name"),
            ("A-B=a", "is not a variable name"),
            ("PGPASSWORD=x", "only comes from the Secret"),
            ("PGHOST=db", "use --host"),
            ("JOB_COMPLETION_INDEX=3", "completion index"),
        ] {
            let e = check_env(bad).expect_err(bad).to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn the_next_step_for_a_store_group() {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let bench = v(&["-T", "60", "--store=host=db dbname=r", "--group=run 1"]);
        assert_eq!(store_group(&bench), Some(("host=db dbname=r", "run 1")));
        assert_eq!(store_group(&v(&["--group=g"])), None);
        assert_eq!(
            shell_word("postgresql://u@h:5432/r"),
            "postgresql://u@h:5432/r"
        );
        assert_eq!(shell_word("run 1"), "'run 1'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
    }

    #[test]
    fn literals_survive_the_kubelet() {
        assert_eq!(literal("-D x=$(HOME)"), "-D x=$$(HOME)");
        assert_eq!(literal("a$$b"), "a$$$$b");
    }
}
