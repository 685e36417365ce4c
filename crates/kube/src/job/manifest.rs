//! The Job object: its metadata, its pod template, where results go, and the
//! manifest text.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, EnvVar, EnvVarSource, ObjectFieldSelector, PodSpec, PodTemplateSpec,
    ResourceRequirements, SeccompProfile, SecretKeySelector, SecurityContext,
    TopologySpreadConstraint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use super::*;

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

/// Builds the Job of `a`, with the clock at `now_unix_us`.
pub fn build_job(a: &KubePlan, now_unix_us: i64) -> Result<JobPlan, KubeError> {
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
    let (start_at, start_unix_s) = match &a.start {
        Start::At(t) => start_at(t, now_unix_us)?,
        Start::In(d) => start_in(d, now_unix_us)?,
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

pub(super) fn count(n: u32) -> i32 {
    // Bounded by MAX_GENERATORS.
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// The labels of the Job and its pods; the spread constraint selects the pods by them.
pub(super) fn labels(name: &str) -> BTreeMap<String, String> {
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
pub(super) fn literal(s: &str) -> String {
    s.replace('$', "$$")
}

pub(super) fn pod_spec(a: &KubePlan, start_at: &str, labels: BTreeMap<String, String>) -> PodSpec {
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
