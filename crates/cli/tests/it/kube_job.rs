//! `pgsurge kube job` through the binary. Kubernetes cannot run here, so the pods are
//! played by processes: each runs the manifest's container — the image's entrypoint
//! `pgsurge` with the container's args, `$(VAR)` expanded from its env as the kubelet
//! does, the env values and a PGPASSWORD standing in for the Secret — with stdout and
//! stderr in one file as `kubectl logs` gives them; `pgsurge merge` of those logs is the
//! union of the generators. Also: a password on the command line exits 1, and the
//! PGPASSWORD of the launching shell never reaches the manifest.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};

use pgsurge_server::testing::TestServer;
use serde_json::Value;

fn pgsurge(args: &[&str], env: &[(&str, &str)]) -> (String, String, i32) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("run pgsurge");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn password_refused_and_the_shells_password_never_printed() {
    let shell_pw = "Launcher-Shell-Secret";
    let (out, err, code) = pgsurge(
        &[
            "kube",
            "job",
            "-n",
            "2",
            "-c",
            "4",
            "--conninfo-secret=db",
            "--",
            "pgbench",
        ],
        &[("PGPASSWORD", shell_pw)],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("apiVersion: batch/v1\nkind: Job\n"),
        "{out}"
    );
    assert!(out.contains("secretKeyRef:"), "{out}");
    assert!(!out.contains(shell_pw) && !err.contains(shell_pw));

    let (out, err, code) = pgsurge(
        &[
            "kube",
            "job",
            "-n",
            "2",
            "-c",
            "4",
            "--",
            "postgresql://bench:Inline-Secret@db/pgbench",
        ],
        &[],
    );
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("contains a password") && err.contains("--conninfo-secret"));
    assert!(!err.contains("Inline-Secret"), "{err}");

    let (out, _, code) = pgsurge(&["help", "kube", "job"], &[]);
    assert_eq!(code, 0);
    assert!(out.contains("--conninfo-secret"), "{out}");
}

#[test]
fn the_jobs_pods_played_by_processes_merge_into_the_whole_run() {
    let srv = TestServer::shared();
    let db = srv.create_database("kube");
    let server_env: Vec<(String, String)> = srv.env();
    let env_ref: Vec<(&str, &str)> = server_env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let (_, err, code) = pgsurge(&["bench", "-i", "-s", "1", "-q", &db], &env_ref);
    assert_eq!(code, 0, "{err}");

    let get = |k: &str| {
        server_env
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .expect("server env")
    };
    let (host, port, user) = (get("PGHOST"), get("PGPORT"), get("PGUSER"));
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
            // Time for the pods (processes this test starts) to come up before the
            // common start, on a busy machine too.
            "--start-in=6s",
            "--name=kube-test",
            "--format=json",
            "--conninfo-secret=pgsurge-db",
            &format!("--host={host}"),
            &format!("--port={port}"),
            &format!("--user={user}"),
            &format!("--dbname={db}"),
            "--",
            "-S",
            "-n",
            "-T",
            "2",
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    let job: Value = serde_json::from_str(&manifest).expect("JSON manifest");
    assert_eq!(job["spec"]["completionMode"], "Indexed");
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<String> = container["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("string").to_string())
        .collect();

    let dir = pgsurge_testkit::scratch_dir("kube-job");
    let mut pods = Vec::new();
    for index in 0..3 {
        let pod_name = format!("kube-test-{index}-x7k2p");
        // The container's env as the kubelet fills it in for this pod.
        let mut env = BTreeMap::new();
        for e in container["env"].as_array().expect("env") {
            let name = e["name"].as_str().expect("name").to_string();
            let value = if let Some(v) = e["value"].as_str() {
                v.to_string()
            } else if e["valueFrom"]["secretKeyRef"]["name"] == "pgsurge-db" {
                "from-the-secret".to_string()
            } else {
                match e["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
                    Some("metadata.name") => pod_name.clone(),
                    Some("metadata.annotations['batch.kubernetes.io/job-completion-index']") => {
                        index.to_string()
                    }
                    other => panic!("unexpected env source {other:?}"),
                }
            };
            env.insert(name, value);
        }
        let log_path = dir.path().join(format!("{pod_name}.log"));
        let log = std::fs::File::create(&log_path).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_pgsurge"))
            .args(
                args.iter()
                    .map(|a| pgsurge_testkit::kubelet_expand(a, &env)),
            )
            .env_clear()
            .envs(&env)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start a pod");
        pods.push((child, log_path));
    }
    let mut logs = Vec::new();
    for (mut child, log) in pods {
        let st = child.wait().unwrap();
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(st.success(), "{}: {st}\n{text}", log.display());
        assert!(text.contains("this generator's share (index "), "{text}");
        logs.push(log.to_string_lossy().into_owned());
    }

    let mut merge_args = vec!["merge", "--json=-"];
    merge_args.extend(logs.iter().map(String::as_str));
    let (merged, err, code) = pgsurge(&merge_args, &[]);
    assert_eq!(code, 0, "{err}");
    let merged: Value = serde_json::from_str(&merged).expect("merged document");
    assert_eq!(merged["options"]["clients"], 7, "3 + 2 + 2 clients");
    let rate = merged["options"]["rate_tps"].as_f64().unwrap_or_default();
    assert!((rate - 300.0).abs() < 1e-9, "rates add up: {merged}");
    assert!(merged["totals"]["transactions"].as_u64().unwrap_or(0) > 100);

    let (report, _, code) = pgsurge(
        &std::iter::once("merge")
            .chain(logs.iter().map(String::as_str))
            .collect::<Vec<_>>(),
        &[],
    );
    assert_eq!(code, 0);
    assert!(report.contains("number of generators: 3\n"), "{report}");
    for index in 0..3 {
        assert!(
            report.contains(&format!("generator kube-test-{index}-x7k2p (host ")),
            "{report}"
        );
        assert!(report.contains(&format!("index {index}/3)")), "{report}");
    }
}
