//! The Kubernetes launcher against a fake cluster. There is no cluster
//! here, so `kubectl` is `tests/support/fake_kubectl.py`: on `apply -f -` it records
//! the manifest and starts the Job's pods as local processes the way the kubelet
//! would — `$(VAR)` expanded from the container's env, the completion index and pod
//! name from the downward API, `PGPASSWORD` from a Secret map the test writes, the
//! image's entrypoint replaced by the pgsurge under test — and it records every call.
//!
//! * A campaign with `launcher = "kube"`: the stored test is the merge of the pods'
//!   results in the store (merged count = the sum of the generators', the server's
//!   commits agree), kubectl was called with apply then delete, the manifest reads
//!   back as a `k8s_openapi` Job and holds no password — the database accepts the pods
//!   only with the Secret's password.
//! * Pods that cannot start (a Secret without the key) or cannot connect: the test
//!   fails after the wait with how many results came, the command to inspect the pods
//!   and what they say; the Job is deleted (or kept with `keep_job`), and the pods'
//!   connection errors do not make the campaign run the test again.
//! * `pgsurge kube job … -- … --store=URL --group=NAME` applied by the same fake,
//!   then `pgsurge dist wait`: the merge is the sum of the stored generators.
//!
//! Needs `python3` (and PyYAML for the YAML manifest; without it the JSON one is
//! used); without python3 the tests are skipped with a message (a failure under
//! `PGSURGE_REQUIRE_PREREQUISITES=1`, as in CI).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use k8s_openapi::api::batch::v1::Job;
use pgsurge_server::testing::{TestServer, TestServerOptions};
use serde_json::Value;

const FAKE_KUBECTL: &str = include_str!("../support/fake_kubectl.py");
const SECRET_PASSWORD: &str = "Kube-Secret-Pw-7";

/// The fake kubectl written into `dir`, or None (after saying why) without python3.
fn fake_kubectl(dir: &Path) -> Option<PathBuf> {
    let python = Command::new("python3").arg("--version").output();
    if !python.is_ok_and(|o| o.status.success()) {
        pgsurge_testkit::missing_prerequisite("python3 (the fake kubectl) is not installed");
        return None;
    }
    let path = dir.join("kubectl");
    std::fs::write(&path, FAKE_KUBECTL).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    Some(path)
}

fn has_pyyaml() -> bool {
    Command::new("python3")
        .args(["-c", "import yaml"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The fake cluster's state directory and its Secrets.
struct Cluster {
    kubectl: PathBuf,
    state: PathBuf,
    secrets: PathBuf,
}

impl Cluster {
    fn new(dir: &Path, secrets: Value) -> Option<Cluster> {
        let kubectl = fake_kubectl(dir)?;
        let secrets_path = dir.join("secrets.json");
        std::fs::write(&secrets_path, secrets.to_string()).unwrap();
        Some(Cluster {
            kubectl,
            state: dir.join("cluster"),
            secrets: secrets_path,
        })
    }

    fn env(&self, c: &mut Command) {
        c.env("FAKE_KUBECTL_STATE", &self.state)
            .env("FAKE_KUBECTL_SECRETS", &self.secrets)
            .env("FAKE_KUBECTL_ENTRYPOINT", env!("CARGO_BIN_EXE_pgsurge"));
    }

    /// Every kubectl call: (global flags, arguments).
    fn calls(&self) -> Vec<(Value, Vec<String>)> {
        let text = std::fs::read_to_string(self.state.join("calls.jsonl")).unwrap_or_default();
        text.lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).expect("a call record");
                let args = v["args"]
                    .as_array()
                    .expect("args")
                    .iter()
                    .map(|a| a.as_str().expect("string").to_string())
                    .collect();
                (v["globals"].clone(), args)
            })
            .collect()
    }

    /// The manifests applied, in order.
    fn manifests(&self) -> Vec<String> {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(self.state.join("manifests"))
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        paths.sort();
        paths
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect()
    }

    /// What each pod that started ran: its argv and env.
    fn pods(&self) -> Vec<Value> {
        let mut out: Vec<Value> = std::fs::read_dir(self.state.join("pods"))
            .map(|d| {
                d.map(|e| e.unwrap().path())
                    .filter(|p| p.to_string_lossy().ends_with(".argv.json"))
                    .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
                    .collect()
            })
            .unwrap_or_default();
        out.sort_by_key(|v: &Value| v["env"]["JOB_COMPLETION_INDEX"].as_str().map(String::from));
        out
    }
}

fn pgsurge(args: &[&str], setup: impl FnOnce(&mut Command)) -> (String, String, i32) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
    c.args(args).env_remove("PGSURGE_STORE");
    setup(&mut c);
    let out = c.output().expect("run pgsurge");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// `results export --format json` of a store.
fn export(srv: &TestServer, store: &str) -> Value {
    let (out, err, code) = pgsurge(
        &["results", "export", "--format", "json", "--store", store],
        |c| {
            srv.apply_env(c);
        },
    );
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).expect("export document")
}

fn runs_of_set<'a>(doc: &'a Value, set: &str) -> Vec<&'a Value> {
    doc["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .filter(|r| r["set"] == set)
        .collect()
}

#[test]
fn a_kube_campaign_stores_the_merge_of_its_pods_results() {
    let dir = pgsurge_testkit::scratch_dir("kube-fake-cluster");
    let Some(cluster) = Cluster::new(
        dir.path(),
        serde_json::json!({ "pgsurge-db": { "password": SECRET_PASSWORD } }),
    ) else {
        return;
    };
    // The pods connect as "bench" over TCP, which needs the Secret's password; the
    // campaign itself connects as the superuser over the socket.
    let srv = TestServer::start(TestServerOptions {
        hba: vec!["host all bench 127.0.0.1/32 scram-sha-256".into()],
        ..Default::default()
    });
    srv.psql(
        "postgres",
        &format!("CREATE ROLE bench LOGIN SUPERUSER PASSWORD '{SECRET_PASSWORD}'"),
    );
    let db = srv.create_database("kube_campaign");
    let store_db = srv.create_database("kube_campaign_store");
    let port = srv.port();
    let file = dir.path().join("c.toml");
    std::fs::write(
        &file,
        format!(
            r#"
[campaign]
name = "kube e2e"
[[target]]
name = "existing"
conninfo = "{target}"
[matrix]
scales = [1]
clients = [5]
scripts = ["select-only"]
[run]
duration = 3
[hygiene]
vacuum = false
checkpoint = false
# Time for the fake kubectl (a Python program) and the pods it starts to come up
# before the common start, on a busy machine too.
[distributed]
launcher = "kube"
generators = 2
start_in = 6
[distributed.kube]
image = "registry.example/pgsurge:test"
kubectl = "{kubectl}"
context = "fake-ctx"
namespace = "bench"
secret = "pgsurge-db"
# The same store as the campaign's, as the pods reach it (over TCP).
store = "host=127.0.0.1 port={port} user=postgres dbname={store_db}"
host = "127.0.0.1"
user = "bench"
wait_margin = 60
"#,
            target = srv.conninfo(&db),
            kubectl = cluster.kubectl.display(),
        ),
    )
    .unwrap();
    let store = srv.conninfo(&store_db);
    let (out, err, code) = pgsurge(
        &["campaign", "run", file.to_str().unwrap(), "--store", &store],
        |c| {
            srv.apply_env(c);
            cluster.env(c);
        },
    );
    assert_eq!(code, 0, "{out}\n{err}");

    // kubectl: apply, then delete of the same Job, in the context and namespace.
    let calls = cluster.calls();
    assert_eq!(calls.len(), 2, "{calls:?}");
    for (globals, _) in &calls {
        assert_eq!(globals["context"], "fake-ctx", "{calls:?}");
        assert_eq!(globals["namespace"], "bench", "{calls:?}");
    }
    assert_eq!(calls[0].1, ["apply", "-f", "-"]);
    assert_eq!(calls[1].1[..2], ["delete", "job"]);
    let job_name = calls[1].1[2].clone();

    // The manifest: a Job by the API types, its pods storing into a group of the test,
    // the password only as a reference to the Secret.
    let manifests = cluster.manifests();
    assert_eq!(manifests.len(), 1);
    let job: Job = serde_json::from_str(&manifests[0]).expect("the manifest is a k8s Job");
    assert_eq!(job.metadata.name.as_deref(), Some(job_name.as_str()));
    assert_eq!(job.metadata.namespace.as_deref(), Some("bench"));
    assert!(job_name.starts_with("pgsurge-kube-e2e-"), "{job_name}");
    let spec = job.spec.as_ref().expect("spec");
    assert_eq!(spec.completions, Some(2));
    assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
    let pod = spec.template.spec.as_ref().expect("pod spec");
    let container = &pod.containers[0];
    assert_eq!(
        container.image.as_deref(),
        Some("registry.example/pgsurge:test")
    );
    let args = container.args.clone().unwrap_or_default();
    let group = args
        .iter()
        .find_map(|a| a.strip_prefix("--group="))
        .expect("--group")
        .to_string();
    assert!(
        group.starts_with("kube e2e/") && group.ends_with("/existing/s1/select-only/c5/r-/1#1"),
        "{group}"
    );
    assert!(args.contains(&format!(
        "--store=host=127.0.0.1 port={port} user=postgres dbname={store_db}"
    )));
    let env = container.env.clone().unwrap_or_default();
    let password = env
        .iter()
        .find(|e| e.name == "PGPASSWORD")
        .expect("PGPASSWORD");
    assert!(password.value.is_none());
    let secret = password
        .value_from
        .as_ref()
        .and_then(|v| v.secret_key_ref.as_ref())
        .expect("from the Secret");
    assert_eq!(
        (secret.name.as_str(), secret.key.as_str()),
        ("pgsurge-db", "password")
    );
    let plain = |name: &str| {
        env.iter()
            .find(|e| e.name == name)
            .and_then(|e| e.value.clone())
    };
    assert_eq!(plain("PGHOST").as_deref(), Some("127.0.0.1"));
    assert_eq!(plain("PGPORT"), Some(port.to_string()));
    assert_eq!(plain("PGUSER").as_deref(), Some("bench"));
    assert_eq!(plain("PGDATABASE").as_deref(), Some(db.as_str()));
    assert!(!manifests[0].contains(SECRET_PASSWORD));
    assert!(!manifests[0].to_lowercase().contains("password="));

    // Two pods ran, with their indexes and the Secret's password in their env.
    let pods = cluster.pods();
    assert_eq!(pods.len(), 2, "{pods:?}");
    for (i, p) in pods.iter().enumerate() {
        let argv: Vec<&str> = p["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert!(
            argv.contains(&format!("--generator-index={i}").as_str()),
            "{argv:?}"
        );
        assert_eq!(p["env"]["PGPASSWORD"], SECRET_PASSWORD);
    }

    // The stored test is the merge of the group's two generators.
    let doc = export(&srv, &store);
    let tests = runs_of_set(&doc, "kube e2e");
    assert_eq!(tests.len(), 1, "{doc}");
    let test = tests[0];
    assert_eq!(test["status"], "ok", "{test}");
    assert_eq!(test["clients"], 5);
    let generators = runs_of_set(&doc, &group);
    assert_eq!(generators.len(), 2, "{doc}");
    let group_set = doc["sets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == group.as_str())
        .expect("the group's set");
    assert_eq!(group_set["kind"], "group");
    assert_eq!(group_set["status"], "complete");
    let sum: i64 = generators
        .iter()
        .map(|g| g["transactions"].as_i64().expect("transactions"))
        .sum();
    let clients: i64 = generators
        .iter()
        .map(|g| g["clients"].as_i64().expect("clients"))
        .sum();
    assert!(sum > 0);
    assert_eq!(test["transactions"].as_i64(), Some(sum), "{test}");
    assert_eq!(clients, 5, "3 + 2 clients");
    let result = &test["result_json"];
    assert_eq!(result["options"]["clients"], 5, "{result}");
    assert_eq!(
        result["generators"].as_array().map(Vec::len),
        Some(2),
        "{result}"
    );
    // The server saw the merged count (the campaign's own check).
    let mismatch = test["commit_mismatch_pct"].as_f64().expect("checked");
    assert!(mismatch < 1.0, "{mismatch} % apart: {test}");
}

/// What a failed kube campaign left: the stored error, the kubectl calls, the fake
/// kubectl's path and the groups of the pods' store (`name|status` lines).
struct Failed {
    error: String,
    calls: Vec<(Value, Vec<String>)>,
    kubectl: PathBuf,
    groups: String,
}

/// Runs a one-test kube campaign meant to fail, waiting `wait_timeout` seconds for the
/// pods' results (None without python3).
fn failing_campaign(name: &str, secrets: Value, wait_timeout: u32, kube: &str) -> Option<Failed> {
    let dir = pgsurge_testkit::scratch_dir("kube-fake-cluster");
    let cluster = Cluster::new(dir.path(), secrets)?;
    let srv = TestServer::shared();
    let db = srv.create_database(name);
    let store_db = srv.create_database(&format!("{name}_store"));
    let file = dir.path().join("c.toml");
    std::fs::write(
        &file,
        format!(
            r#"
[campaign]
name = "{name}"
[[target]]
name = "existing"
conninfo = "{target}"
[matrix]
scales = [1]
clients = [2]
scripts = ["select-only"]
[run]
duration = 1
[hygiene]
vacuum = false
checkpoint = false
# The pods fail before the common start, however late they start.
[distributed]
launcher = "kube"
generators = 2
start_in = 600
[distributed.kube]
image = "registry.example/pgsurge:test"
kubectl = "{kubectl}"
secret = "pgsurge-db"
store = "host=127.0.0.1 port={port} user=postgres dbname={store_db}"
host = "127.0.0.1"
wait_timeout = {wait_timeout}
{kube}
"#,
            target = srv.conninfo(&db),
            kubectl = cluster.kubectl.display(),
            port = srv.port(),
        ),
    )
    .unwrap();
    let store = srv.conninfo(&store_db);
    let (out, err, code) = pgsurge(
        &["campaign", "run", file.to_str().unwrap(), "--store", &store],
        |c| {
            srv.apply_env(c);
            cluster.env(c);
        },
    );
    assert_eq!(code, 3, "a failed test: {out}\n{err}");
    let doc = export(srv, &store);
    let tests = runs_of_set(&doc, name);
    assert_eq!(tests.len(), 1, "{doc}");
    assert_eq!(tests[0]["status"], "failed");
    Some(Failed {
        error: tests[0]["error"].as_str().expect("an error").to_string(),
        calls: cluster.calls(),
        kubectl: cluster.kubectl.clone(),
        groups: srv.psql(
            &store_db,
            "SELECT name, status FROM sets WHERE kind = 'group' ORDER BY id",
        ),
    })
}

#[test]
fn pods_that_cannot_start_fail_the_test_after_the_wait_and_the_job_is_deleted() {
    // The Secret lacks the key: the kubelet cannot build the container's env.
    let Some(Failed {
        error,
        calls,
        kubectl,
        groups,
    }) = failing_campaign(
        "kube_no_key",
        serde_json::json!({ "pgsurge-db": {} }),
        3,
        "",
    )
    else {
        return;
    };
    // The attempt's group was made before the pods ran, and is marked failed.
    assert_eq!(
        groups.trim(),
        "kube_no_key/1/existing/s1/select-only/c2/r-/1#1|failed"
    );
    let verbs: Vec<&str> = calls.iter().map(|(_, a)| a[0].as_str()).collect();
    // Asked about the pods before deleting the Job.
    assert_eq!(verbs, ["apply", "get", "logs", "delete"], "{calls:?}");
    let job_name = &calls[3].1[2];
    assert!(
        error.contains("0 of 2 generators stored after 3s; missing generator index(es): 0, 1"),
        "{error}"
    );
    assert!(
        error.contains(&format!(
            "inspect the pods: {} get pods -l app.kubernetes.io/instance={job_name}",
            kubectl.display()
        )),
        "{error}"
    );
    assert!(error.contains("the Job is deleted now"), "{error}");
    assert!(
        error.contains(
            "CreateContainerConfigError: couldn't find key password in Secret pgsurge-db"
        ),
        "{error}"
    );
}

#[test]
fn pods_that_cannot_connect_fail_the_test_once_and_the_job_is_kept() {
    // Nothing listens on port 1: the pods fail; their log lines are quoted, and their
    // connection errors are not taken for an outage of the server (no second attempt).
    let Some(Failed {
        error,
        calls,
        groups,
        ..
    }) = failing_campaign(
        "kube_refused",
        serde_json::json!({ "pgsurge-db": { "password": "x" } }),
        // Long enough for the pods to start and fail on a busy machine: the wait
        // ends only by its timeout.
        15,
        "port = 1\nkeep_job = true",
    )
    else {
        return;
    };
    let verbs: Vec<&str> = calls.iter().map(|(_, a)| a[0].as_str()).collect();
    assert_eq!(verbs, ["apply", "get", "logs"], "{calls:?}");
    assert_eq!(groups.lines().count(), 1, "one attempt: {groups}");
    assert!(error.contains("0 of 2 generators stored"), "{error}");
    assert!(!error.contains("the Job is deleted now"), "{error}");
    assert!(error.contains("Error"), "the pods' status: {error}");
    assert!(
        error.contains(
            "generator] pgbench: error: connection to server at \"127.0.0.1\", port 1 failed"
        ),
        "{error}"
    );
}

#[test]
fn kube_job_with_a_store_group_is_merged_by_dist_wait() {
    let dir = pgsurge_testkit::scratch_dir("kube-fake-cluster");
    let Some(cluster) = Cluster::new(
        dir.path(),
        serde_json::json!({ "pgsurge-db": { "password": "unused-by-trust" } }),
    ) else {
        return;
    };
    let srv = TestServer::shared();
    let db = srv.create_database("kube_job_group");
    let store_db = srv.create_database("kube_job_group_store");
    let (_, err, code) = pgsurge(&["bench", "-i", "-s", "1", "-q", &db], |c| {
        srv.apply_env(c);
    });
    assert_eq!(code, 0, "{err}");
    let port = srv.port().to_string();
    let store = format!("postgresql://postgres@127.0.0.1:{port}/{store_db}");

    // A store URL with a password is refused, as any bench option with one.
    let (out, err, code) = pgsurge(
        &[
            "kube",
            "job",
            "-n",
            "3",
            "--",
            "-T",
            "2",
            "--store=postgresql://postgres:Store-Pw-3@db/results",
            "--group=g",
        ],
        |_| {},
    );
    assert_eq!(code, 1, "{out}");
    assert!(err.contains("contains a password"), "{err}");
    assert!(
        !err.contains("Store-Pw-3") && !out.contains("Store-Pw-3"),
        "{err}"
    );

    let yaml = has_pyyaml();
    if !yaml {
        eprintln!("PyYAML is missing: the fake kubectl reads the JSON manifest instead");
    }
    let store_arg = format!("--store={store}");
    let (manifest, err, code) = pgsurge(
        &[
            "kube",
            "job",
            "-n",
            "3",
            "-c",
            "7",
            "-R",
            "300",
            "--random-seed=11",
            // Time to apply the Job (a Python program) and start its pods.
            "--start-in=6s",
            "--name=kube-wait",
            "--namespace=bench",
            if yaml {
                "--format=yaml"
            } else {
                "--format=json"
            },
            "--conninfo-secret=pgsurge-db",
            "--host=127.0.0.1",
            &format!("--port={port}"),
            "--user=postgres",
            &format!("--dbname={db}"),
            "--",
            "-S",
            "-n",
            "-T",
            "2",
            &store_arg,
            "--group=kube-wait-1",
        ],
        |_| {},
    );
    assert_eq!(code, 0, "{err}");
    // The next step it prints is the wait on the store.
    assert!(
        err.contains(&format!(
            "pgsurge dist wait --store {store} --group kube-wait-1 -n 3"
        )),
        "{err}"
    );

    let mut apply = Command::new(&cluster.kubectl);
    apply
        .args(["--namespace=bench", "apply", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cluster.env(&mut apply);
    let mut child = apply.spawn().expect("fake kubectl");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), manifest.as_bytes()).unwrap();
    let applied = child.wait_with_output().unwrap();
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );

    let merged_path = dir.path().join("merged.json");
    let (report, err, code) = pgsurge(
        &[
            "dist",
            "wait",
            "--store",
            &store,
            "--group",
            "kube-wait-1",
            "-n",
            "3",
            "--timeout",
            "60",
            &format!("--json={}", merged_path.display()),
        ],
        |c| {
            srv.apply_env(c);
        },
    );
    assert_eq!(code, 0, "{report}\n{err}");
    assert!(report.contains("number of generators: 3"), "{report}");
    let merged: Value =
        serde_json::from_str(&std::fs::read_to_string(&merged_path).unwrap()).unwrap();

    let doc = export(srv, &store);
    let generators = runs_of_set(&doc, "kube-wait-1");
    assert_eq!(generators.len(), 3, "{doc}");
    let sum: u64 = generators
        .iter()
        .map(|g| g["transactions"].as_u64().expect("transactions"))
        .sum();
    assert!(sum > 0);
    assert_eq!(merged["totals"]["transactions"].as_u64(), Some(sum));
    assert_eq!(merged["options"]["clients"], 7, "3 + 2 + 2 clients");
    // Each pod stored itself under its own name.
    let pods = cluster.pods();
    assert_eq!(pods.len(), 3);
    for p in &pods {
        let name = format!(
            "--generator-name={}",
            p["env"]["POD_NAME"].as_str().unwrap()
        );
        assert!(
            p["argv"].as_array().unwrap().iter().any(|a| a == &name),
            "{p}"
        );
    }

    let mut delete = Command::new(&cluster.kubectl);
    delete.args(["--namespace=bench", "delete", "job", "kube-wait"]);
    cluster.env(&mut delete);
    assert!(delete.output().unwrap().status.success());
    let verbs: Vec<String> = cluster
        .calls()
        .into_iter()
        .map(|(_, a)| a[0].clone())
        .collect();
    assert_eq!(verbs, ["apply", "delete"]);
}
