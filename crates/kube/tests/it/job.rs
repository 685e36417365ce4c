//! `pgsurge kube job`, offline (no cluster here): the manifest for fixed inputs is
//! the golden one; YAML and JSON read back into `k8s_openapi`'s `Job` with the fields
//! an Indexed distributed run needs; the pods' arguments, expanded as the kubelet
//! expands them, are what `pgsurge bench` parses into each generator's share; no
//! password ever reaches the output, and one given on the command line is refused.

use std::collections::BTreeMap;
use std::ffi::OsString;

use clap::Parser;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Container, EnvVar};
use pgsurge_kube::job::{job_main, render, JobArgs};
use pgsurge_kube::{build_job, Format};

/// 2026-11-18T17:46:40Z: a fixed "now" for the fixed inputs.
const NOW_US: i64 = 1_795_000_000_000_000;
const START: &str = "2099-01-01T00:00:00Z";

fn args(extra: &[&str]) -> JobArgs {
    let argv = ["pgsurge kube job"].iter().chain(extra);
    JobArgs::try_parse_from(argv).expect("options parse")
}

/// The fixed inputs of the golden manifest.
fn fixed() -> JobArgs {
    args(&[
        "-n",
        "4",
        "-c",
        "30",
        "-R",
        "1000",
        "--random-seed=42",
        "--start-at",
        START,
        "--name=pgsurge-run-1",
        "--namespace=bench",
        "--image=registry.example/pgsurge:0.1.0",
        "--cpu=2",
        "--memory=1Gi",
        "--conninfo-secret=pgsurge-db",
        "--conninfo-secret-key=pw",
        "--host=db.internal",
        "--port=5432",
        "--dbname=pgbench",
        "--user=bench",
        "--",
        "-T",
        "60",
        "-j",
        "2",
        "-M",
        "prepared",
        "-D",
        "tag=$(HOME)",
    ])
}

/// `(stdout, stderr, exit code)` of `pgsurge kube job` with these options.
fn run(a: &JobArgs) -> (String, String, i32) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = job_main(&a.clone().into(), a.format, NOW_US, &mut out, &mut err);
    (
        String::from_utf8(out).expect("utf8"),
        String::from_utf8(err).expect("utf8"),
        code,
    )
}

fn container(job: &Job) -> &Container {
    let pod = job.spec.as_ref().expect("spec").template.spec.as_ref();
    let c = &pod.expect("pod spec").containers;
    assert_eq!(c.len(), 1, "one container");
    &c[0]
}

fn env<'a>(c: &'a Container, name: &str) -> &'a EnvVar {
    let all = c.env.as_ref().expect("env");
    let mut found = all.iter().filter(|e| e.name == name);
    let e = found.next().unwrap_or_else(|| panic!("no env {name}"));
    assert!(found.next().is_none(), "{name} defined twice");
    e
}

#[test]
fn the_manifest_for_fixed_inputs_is_the_golden_one() {
    let (yaml, err, code) = run(&fixed());
    assert_eq!(code, 0, "{err}");
    insta::assert_snapshot!("job_yaml", yaml);
    // stderr says when the run starts and how to collect the results.
    assert!(err.contains(&format!("start at {START}")), "{err}");
    assert!(err.contains("kubectl wait -n bench --for=condition=complete job/pgsurge-run-1"));
    assert!(err.contains("pgsurge merge pgsurge-run-1-*.log"), "{err}");
}

/// The manifest read back, in both formats, has what an Indexed distributed run needs.
#[test]
fn yaml_and_json_read_back_into_a_job() {
    let mut a = fixed();
    let (yaml, _, code) = run(&a);
    assert_eq!(code, 0);
    a.format = Format::Json;
    let (json, _, code) = run(&a);
    assert_eq!(code, 0);
    assert!(json.starts_with("{\n  \"apiVersion\": \"batch/v1\",\n  \"kind\": \"Job\","));
    let from_yaml: Job = serde_norway::from_str(&yaml).expect("YAML is a Job");
    let from_json: Job = serde_json::from_str(&json).expect("JSON is a Job");
    assert_eq!(from_yaml, from_json, "same Job in both formats");
    assert!(
        yaml.starts_with("apiVersion: batch/v1\nkind: Job\n"),
        "{yaml}"
    );

    let job = from_yaml;
    assert_eq!(job.metadata.name.as_deref(), Some("pgsurge-run-1"));
    assert_eq!(job.metadata.namespace.as_deref(), Some("bench"));
    let spec = job.spec.as_ref().expect("spec");
    assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
    assert_eq!(spec.completions, Some(4));
    assert_eq!(spec.parallelism, Some(4));
    assert_eq!(spec.backoff_limit, Some(0));
    let pod = spec.template.spec.as_ref().expect("pod spec");
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));

    // Spread over nodes, selecting exactly the Job's pods by their labels.
    let labels = spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .expect("pod labels");
    assert_eq!(
        labels.get("app.kubernetes.io/instance").map(String::as_str),
        Some("pgsurge-run-1")
    );
    let spread = pod.topology_spread_constraints.as_ref().expect("spread");
    assert_eq!(spread.len(), 1);
    assert_eq!(spread[0].topology_key, "kubernetes.io/hostname");
    assert_eq!(spread[0].max_skew, 1);
    assert_eq!(spread[0].when_unsatisfiable, "ScheduleAnyway");
    let selector = spread[0].label_selector.as_ref().expect("selector");
    assert_eq!(selector.match_labels.as_ref(), Some(&labels));

    let c = container(&job);
    assert_eq!(c.image.as_deref(), Some("registry.example/pgsurge:0.1.0"));
    assert_eq!(
        c.command, None,
        "the image's entrypoint (pgsurge) runs, no shell"
    );
    // requests = limits.
    let r = c.resources.as_ref().expect("resources");
    let want: BTreeMap<String, String> = [("cpu", "2"), ("memory", "1Gi")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let q =
        |m: &Option<BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>| {
            m.as_ref()
                .expect("set")
                .iter()
                .map(|(k, v)| (k.clone(), v.0.clone()))
                .collect::<BTreeMap<_, _>>()
        };
    assert_eq!(q(&r.requests), want);
    assert_eq!(q(&r.limits), want);

    // The index and the pod name come from the downward API into env vars, which is
    // what lets the kubelet expand $(…) in the args.
    let index = env(c, "JOB_COMPLETION_INDEX");
    assert_eq!(index.value, None);
    let field = |e: &EnvVar| {
        e.value_from
            .as_ref()
            .and_then(|v| v.field_ref.as_ref())
            .map(|f| f.field_path.clone())
    };
    assert_eq!(
        field(index).as_deref(),
        Some("metadata.annotations['batch.kubernetes.io/job-completion-index']")
    );
    assert_eq!(field(env(c, "POD_NAME")).as_deref(), Some("metadata.name"));

    // The password only through the Secret.
    let pw = env(c, "PGPASSWORD");
    assert_eq!(pw.value, None, "never inline");
    let secret = pw
        .value_from
        .as_ref()
        .and_then(|v| v.secret_key_ref.as_ref())
        .expect("secretKeyRef");
    assert_eq!(
        (secret.name.as_str(), secret.key.as_str()),
        ("pgsurge-db", "pw")
    );
    for (k, v) in [
        ("PGHOST", "db.internal"),
        ("PGPORT", "5432"),
        ("PGDATABASE", "pgbench"),
        ("PGUSER", "bench"),
    ] {
        assert_eq!(env(c, k).value.as_deref(), Some(v), "{k}");
    }

    // The args: totals, the split, the index, the window, JSON on stdout, the user's.
    let args = c.args.as_ref().expect("args");
    assert_eq!(args[0], "bench");
    for want in [
        "--generator-split",
        "--generator-count=4",
        "--generator-index=$(JOB_COMPLETION_INDEX)",
        "--generator-name=$(POD_NAME)",
        "--start-at=2099-01-01T00:00:00Z",
        "--client=30",
        "--rate=1000",
        "--random-seed=42",
        "--json=-",
    ] {
        assert!(
            args.iter().any(|a| a == want),
            "{want} missing from {args:?}"
        );
    }
    let split_at = args.iter().position(|a| a == "--generator-split");
    let client_at = args.iter().position(|a| a == "--client=30");
    assert!(split_at < client_at, "the split comes before -c");
    assert!(args.ends_with(&[
        "-T".into(),
        "60".into(),
        "-j".into(),
        "2".into(),
        "-M".into(),
        "prepared".into(),
        "-D".into(),
        "tag=$$(HOME)".into(),
    ]));

    // No password anywhere: nothing that redaction would mask.
    for text in [&yaml, &json] {
        assert_eq!(&pgsurge_wire_redact(text), text);
    }
}

fn pgsurge_wire_redact(text: &str) -> String {
    // The same finder the refusal uses.
    pgsurge_wire::redact::redact(text)
}

/// Each pod's args, expanded as the kubelet does, parse (by pgsurge bench's own
/// parser) into exactly the share `dist local` gives that generator.
#[test]
fn each_pod_runs_its_share_of_the_split() {
    let plan = build_job(&fixed().into(), NOW_US).expect("builds");
    let c = container(&plan.job);
    let shares = pgsurge_generators::split(30, Some(1000.0), Some(42), 4).expect("splits");
    for s in &shares {
        let pod_name = format!("pgsurge-run-1-{}-abcde", s.index);
        let vars = BTreeMap::from([
            ("JOB_COMPLETION_INDEX", s.index.to_string()),
            ("POD_NAME", pod_name.clone()),
        ]);
        let argv: Vec<OsString> = c.args.as_ref().expect("args")[1..]
            .iter()
            .map(|a| pgsurge_testkit::kubelet_expand(a, &vars).into())
            .collect();
        assert!(argv.contains(&OsString::from("tag=$(HOME)")), "{argv:?}");
        let pg_env = |k: &str| {
            c.env
                .as_ref()
                .and_then(|e| e.iter().find(|v| v.name == k))
                .and_then(|v| v.value.clone())
        };
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let o = pgsurge_args::parse_with_stdin(&argv, &pg_env, &mut &b""[..], &mut out, &mut err);
        let err = String::from_utf8_lossy(&err);
        let pgsurge_args::Outcome::Bench(b) = o else {
            panic!("generator {}: {o:?}: {err}", s.index)
        };
        assert_eq!(b.clients, s.clients);
        assert_eq!(b.rate, s.rate_tps);
        assert_eq!(Some(b.random_seed.value), s.seed);
        let g = &b.extensions.generator;
        assert_eq!((g.index, g.count), (Some(s.index), Some(4)));
        assert_eq!(g.name.as_deref(), Some(pod_name.as_str()));
        assert_eq!(g.start_at_unix_us, Some(4_070_908_800_000_000));
        assert_eq!(
            b.extensions.json.as_deref(),
            Some(std::path::Path::new("-"))
        );
        assert_eq!(b.connection.dbname, "pgbench", "from PGDATABASE");
    }
    assert_eq!(plan.clients, [8, 8, 7, 7]);
}

#[test]
fn a_password_on_the_command_line_is_refused() {
    let secret = "Hunter2-secret";
    let cases: Vec<Vec<String>> = vec![
        vec!["--".into(), format!("host=db password={secret} dbname=x")],
        vec![
            "--".into(),
            "-d".into(),
            format!("postgresql://u:{secret}@db/x"),
        ],
        vec!["--".into(), format!("postgres://u@db/x?password={secret}")],
        vec![format!(
            "--dbname=postgres://bench:{secret}@db.internal/pgbench"
        )],
        vec![format!("--host=db password='{secret}'")],
        // Attached short options: the URI becomes the value of another option.
        vec!["--".into(), format!("-dpostgresql://u:{secret}@db/x")],
        vec!["--".into(), format!("-Sdpostgres://u:{secret}@db")],
        vec!["--".into(), format!("-Sdpassword={secret}")],
    ];
    for extra in cases {
        let mut v = vec!["-n", "2", "-c", "2", "--start-at", START];
        v.extend(extra.iter().map(String::as_str));
        let (out, err, code) = run(&args(&v));
        assert_eq!(code, 1, "{extra:?}: {err}");
        assert!(out.is_empty(), "no manifest: {out}");
        assert!(
            err.starts_with("pgsurge kube job: error: ") && err.contains("contains a password"),
            "{err}"
        );
        assert!(
            err.contains("--conninfo-secret"),
            "points to the Secret: {err}"
        );
        assert!(!err.contains(secret), "the password is not repeated: {err}");
    }
}

#[test]
fn bad_options_are_refused_with_exit_1() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["-n", "4", "-c", "3"],
            "3 clients cannot be split across 4 generators",
        ),
        (
            &["-n", "2", "-c", "4", "--", "-c", "8"],
            "bench option \"-c\" is set per generator",
        ),
        (
            &["-n", "2", "-c", "4", "--", "--json=x.json"],
            "is set per generator",
        ),
        (
            &["-n", "2", "-c", "4", "--", "--generator-split"],
            "is set per generator",
        ),
        (
            &["-n", "2", "-c", "4", "--start-at", "2001-01-01T00:00:00Z"],
            "not in the future",
        ),
        (
            &["-n", "2", "-c", "4", "--start-at", "soon"],
            "invalid --start-at",
        ),
        (
            &["-n", "2", "-c", "4", "--start-in", "5d"],
            "invalid --start-in",
        ),
        (
            &["-n", "2", "-c", "4", "--cpu", "two"],
            "--cpu \"two\" is not a Kubernetes quantity",
        ),
        (
            &["-n", "2", "-c", "4", "--name", "Run_1"],
            "--name \"Run_1\" is not a Job name",
        ),
        (
            &["-n", "2", "-c", "4", "--conninfo-secret-key", "k"],
            "needs --conninfo-secret",
        ),
        (&["-n", "2", "-c", "4", "-R", "0"], "invalid rate"),
        (
            &["-n", "100001", "-c", "200000"],
            "at most 100000 completions",
        ),
    ];
    for (v, want) in cases {
        let (out, err, code) = run(&args(v));
        assert_eq!(code, 1, "{v:?}: {err}");
        assert!(out.is_empty(), "{v:?}: {out}");
        assert!(err.contains(want), "{v:?}: {err}");
    }
    // --start-at and --start-in exclude each other.
    assert!(JobArgs::try_parse_from([
        "pgsurge kube job",
        "-n2",
        "--start-at",
        START,
        "--start-in",
        "1m"
    ])
    .is_err());
}

#[test]
fn hard_spread_and_json_render() {
    let mut a = fixed();
    a.spread = pgsurge_kube::Spread::Hard;
    let plan = build_job(&a.into(), NOW_US).expect("builds");
    let pod = plan
        .job
        .spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap();
    let spread = pod.topology_spread_constraints.as_ref().unwrap();
    assert_eq!(spread[0].when_unsatisfiable, "DoNotSchedule");
    let json = render(&plan.job, Format::Json).expect("renders");
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(v["spec"]["completionMode"], "Indexed");
}
