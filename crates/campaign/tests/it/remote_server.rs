//! Campaigns against a server on "another host": PostgreSQL and node_exporter run in a
//! network namespace of their own (private address 10.231.N.1, hostname
//! `pgsurge-db-ns` in their own UTS namespace), the client in the root namespace.
//! The server host's metrics and manifest must carry the namespace's hostname, the
//! client's the client's; without node_exporter and without file access (a plain
//! role), the server host is not measured and the store says so.
//!
//! A second node_exporter serves https with basic auth (a certificate of a CA made by
//! the test, a bcrypt password): read with the right password its metrics arrive; with
//! a wrong one the test's warning names the URL with the password masked; and the
//! password is nowhere in the store.
//!
//! Needs root, `ip` (iproute2), `unshare` (util-linux), `runuser`,
//! `/usr/bin/prometheus-node-exporter` (Debian's prometheus-node-exporter), and for the
//! https part `openssl` and `htpasswd` (apache2-utils). The namespace, veth pair and
//! processes are removed by a Drop guard, also on failure.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pgsurge_campaign::{run_campaign, Campaign, RunOptions};
use pgsurge_engine::StopFlag;
use pgsurge_server::PgBinaries;
use pgsurge_store::{RunFilter, Store};
use pgsurge_testkit::hosts::{namespaces_unavailable, run, sh, wait_port};

const NS_HOSTNAME: &str = "pgsurge-db-ns";
/// Port of the node_exporter that serves https with basic auth.
const TLS_PORT: u16 = 9101;
const NE_USER: &str = "bench";

/// The namespace, the veth pair, the server and the exporter; all removed on drop.
struct RemoteHost {
    ns: String,
    veth: String,
    addr: String,
    dir: PathBuf,
    children: Vec<Child>,
    /// The CA file and password of the https node_exporter, when it runs.
    tls: Option<(PathBuf, String)>,
}

impl Drop for RemoteHost {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        // postgres was exec'd by runuser in the namespace: stop it by its data directory.
        let _ = Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(self.dir.join("bin/pg_ctl"))
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["stop", "-m", "immediate"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = Command::new("ip")
            .args(["link", "del", &self.veth])
            .stderr(Stdio::null())
            .status();
        let _ = Command::new("ip")
            .args(["netns", "del", &self.ns])
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn start_remote_host() -> RemoteHost {
    let id = std::process::id();
    let net = 100 + id % 150;
    let ns = format!("pgsurge-srv-{id}");
    let veth = format!("pgsv{}", id % 100_000);
    let addr = format!("10.231.{net}.1");
    let dir = std::env::temp_dir().join(format!("pgsurge-remote-{id}"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut host = RemoteHost {
        ns: ns.clone(),
        veth: veth.clone(),
        addr: addr.clone(),
        dir: dir.clone(),
        children: Vec::new(),
        tls: None,
    };
    sh(&format!(
        "ip netns add {ns} && ip link add {veth}c type veth peer name {veth}s && \
         ip link set {veth}s netns {ns} && ip addr add 10.231.{net}.2/24 dev {veth}c && \
         ip link set {veth}c up && ip netns exec {ns} ip link set lo up && \
         ip netns exec {ns} ip addr add {addr}/24 dev {veth}s && \
         ip netns exec {ns} ip link set {veth}s up"
    ));
    host.veth = format!("{veth}c");
    // PostgreSQL 15 of the distribution, run as postgres in the namespace.
    let bins = PgBinaries::discover().expect("PostgreSQL binaries");
    std::os::unix::fs::symlink(bins.bin_dir(), dir.join("bin")).unwrap();
    let data = dir.join("data");
    sh(&format!("chown postgres {}", dir.display()));
    run(Command::new("runuser")
        .args(["-u", "postgres", "--"])
        .arg(bins.program("initdb"))
        .args(["-U", "postgres", "--auth=trust", "-D"])
        .arg(&data)
        .stdout(Stdio::null()));
    std::fs::write(
        data.join("pg_hba.conf"),
        format!("local all all trust\nhost all all 10.231.{net}.0/24 trust\n"),
    )
    .unwrap();
    let postgres = Command::new("ip")
        .args(["netns", "exec", &ns, "unshare", "--uts", "sh", "-c"])
        .arg(format!(
            "hostname {NS_HOSTNAME} && exec runuser -u postgres -- {} -D {} -c listen_addresses={addr} \
             -c port=5432 -c unix_socket_directories={} -c fsync=off -c max_connections=50 \
             -c shared_buffers=32MB -c lc_messages=C",
            bins.program("postgres").display(),
            data.display(),
            dir.display()
        ))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("postgres.log")).unwrap())
        .spawn()
        .unwrap();
    host.children.push(postgres);
    let exporter = Command::new("ip")
        .args(["netns", "exec", &ns, "unshare", "--uts", "sh", "-c"])
        .arg(format!(
            "hostname {NS_HOSTNAME} && exec /usr/bin/prometheus-node-exporter --web.listen-address={addr}:9100"
        ))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    host.children.push(exporter);
    wait_port(&addr, 5432, "postgres");
    wait_port(&addr, 9100, "node_exporter");
    start_tls_exporter(&mut host, &ns);
    // A plain role owning its own database: no superuser, no pg_read_server_files.
    let psql = |sql: &str| {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let out = Command::new(bins.psql().unwrap())
                .args([
                    "-X",
                    "-q",
                    "-v",
                    "ON_ERROR_STOP=1",
                    "-h",
                    &addr,
                    "-U",
                    "postgres",
                    "-d",
                    "postgres",
                    "-c",
                    sql,
                ])
                .output()
                .unwrap();
            if out.status.success() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{sql}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    psql("CREATE ROLE plain LOGIN");
    psql("CREATE DATABASE plaindb OWNER plain");
    host
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A node_exporter on port [`TLS_PORT`] of the namespace serving https (a server
/// certificate for the namespace's address, signed by a CA made here) to user
/// [`NE_USER`] with a bcrypt-hashed password. Without openssl or htpasswd it says so
/// through `missing_prerequisite` and leaves `host.tls` empty.
fn start_tls_exporter(host: &mut RemoteHost, ns: &str) {
    for (tool, package) in [("openssl", "openssl"), ("htpasswd", "apache2-utils")] {
        if !have(tool) {
            pgsurge_testkit::missing_prerequisite(&format!(
                "{tool} ({package}) for the https node_exporter"
            ));
            return;
        }
    }
    let d = host.dir.join("tls");
    std::fs::create_dir_all(&d).unwrap();
    let p = |f: &str| d.join(f).display().to_string();
    std::fs::write(
        d.join("ext.cnf"),
        format!(
            "subjectAltName=IP:{}\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
            host.addr
        ),
    )
    .unwrap();
    let ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    sh(&format!(
        "openssl req -x509 {ec} -keyout {} -out {} -days 2 -subj /CN=pgsurge-test-ca 2>/dev/null && \
         openssl req {ec} -keyout {} -out {} -subj /CN={NS_HOSTNAME} 2>/dev/null && \
         openssl x509 -req -in {} -CA {} -CAkey {} -CAcreateserial -out {} -days 2 -extfile {} 2>/dev/null",
        p("ca.key"), p("ca.pem"),
        p("srv.key"), p("srv.csr"),
        p("srv.csr"), p("ca.pem"), p("ca.key"), p("srv.pem"), p("ext.cnf"),
    ));
    let password = format!("ne-Pw{}x{}", std::process::id(), host.addr.len() * 7919);
    let hashed = run(Command::new("htpasswd").args(["-nbBC", "5", NE_USER, &password]));
    let hash = hashed.trim().split_once(':').unwrap().1.to_string();
    std::fs::write(
        d.join("web.yml"),
        format!(
            "tls_server_config:\n  cert_file: {}\n  key_file: {}\nbasic_auth_users:\n  {NE_USER}: '{hash}'\n",
            p("srv.pem"),
            p("srv.key")
        ),
    )
    .unwrap();
    let exporter = Command::new("ip")
        .args(["netns", "exec", ns, "unshare", "--uts", "sh", "-c"])
        .arg(format!(
            "hostname {NS_HOSTNAME} && exec /usr/bin/prometheus-node-exporter \
             --web.listen-address={}:{TLS_PORT} --web.config.file={}",
            host.addr,
            p("web.yml")
        ))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(d.join("exporter.log")).unwrap())
        .spawn()
        .unwrap();
    host.children.push(exporter);
    wait_port(&host.addr, TLS_PORT, "node_exporter (https)");
    host.tls = Some((d.join("ca.pem"), password));
}

fn campaign(name: &str, conninfo: &str, exporter: Option<&str>) -> Campaign {
    campaign_with(name, conninfo, exporter, None, &|_| None)
}

/// A campaign whose node_exporter key is `exporter` (it may hold `${VAR}` references,
/// taken from `env`) with the CA file `ca`.
fn campaign_with(
    name: &str,
    conninfo: &str,
    exporter: Option<&str>,
    ca: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Campaign {
    let mut exporter = exporter
        .map(|u| format!("node_exporter = \"{u}\"\n"))
        .unwrap_or_default();
    if let Some(ca) = ca {
        exporter.push_str(&format!("node_exporter_ca = \"{}\"\n", ca.display()));
    }
    let text = format!(
        r#"
[campaign]
name = "{name}"

[[target]]
name = "remote"
conninfo = "{conninfo}"
{exporter}
[matrix]
scales = [1]
clients = [2]
scripts = ["select-only"]

[run]
duration = 1

[hygiene]
checkpoint = false   # a plain role may not CHECKPOINT

[sampling]
interval = 0.25
"#
    );
    Campaign::parse_with_env(&text, "remote.toml", Path::new("."), env).unwrap()
}

struct Stored {
    facts: Vec<(String, String)>,
    warnings: Vec<String>,
    manifest: serde_json::Value,
    metrics: Vec<String>,
    server_names: Vec<String>,
}

fn run_one(store: &mut Store, c: &Campaign) -> Stored {
    let out = run_campaign(
        c,
        store,
        &RunOptions {
            quiet: true,
            ..Default::default()
        },
        &StopFlag::new(),
    )
    .unwrap();
    let runs = store
        .list_runs(&RunFilter {
            set_id: Some(out.set_id),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(
        (out.ok, out.failed),
        (1, 0),
        "{out:?}: {:?}",
        runs.first().and_then(|r| r.record.error.clone())
    );
    let loaded = store.load_run(runs[0].id).unwrap();
    let targets = store.targets(out.set_id).unwrap();
    let servers = store.servers().unwrap();
    let server_names = targets
        .iter()
        .filter_map(|t| t.record.server_id)
        .filter_map(|id| servers.iter().find(|s| s.id == id))
        .map(|s| s.record.name.clone())
        .collect();
    Stored {
        facts: loaded
            .facts
            .iter()
            .map(|f| (f.name.clone(), f.value.clone().unwrap_or_default()))
            .collect(),
        warnings: loaded.warnings.iter().map(|w| w.message.clone()).collect(),
        manifest: loaded.environment.unwrap(),
        metrics: loaded.metrics.iter().map(|m| m.metric.clone()).collect(),
        server_names,
    }
}

fn fact<'a>(s: &'a Stored, name: &str) -> Option<&'a str> {
    s.facts
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

#[test]
fn server_in_its_own_namespace_is_measured_there_and_the_client_here() {
    let exporter = [(
        "/usr/bin/prometheus-node-exporter",
        "prometheus-node-exporter",
    )];
    if let Some(why) = namespaces_unavailable(&exporter) {
        pgsurge_testkit::missing_prerequisite(&why);
        return;
    }
    let host = start_remote_host();
    let client_hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string();
    assert_ne!(client_hostname, NS_HOSTNAME);
    let dir = pgsurge_testkit::scratch_dir("remote-server");
    let mut store = Store::open(dir.path().join("r.db").to_str().unwrap()).unwrap();
    let superuser = format!("host={} port=5432 user=postgres dbname=postgres", host.addr);
    let url = format!("http://{}:9100/metrics", host.addr);

    // node_exporter beside the server.
    let s = run_one(&mut store, &campaign("ne", &superuser, Some(&url)));
    assert_eq!(
        fact(&s, "server_host_metrics_source"),
        Some("node_exporter")
    );
    assert_eq!(s.manifest["source"], "node_exporter");
    assert_eq!(s.manifest["hostname"], NS_HOSTNAME, "{}", s.manifest);
    assert_eq!(s.manifest["client"]["hostname"], client_hostname.as_str());
    assert_eq!(s.server_names, [NS_HOSTNAME]);
    assert!(
        s.metrics.iter().any(|m| m == "os.cpu.user_pct"),
        "{:?}",
        s.metrics
    );
    assert!(s.metrics.iter().any(|m| m == "os.mem.dirty_mb"));
    assert!(
        s.metrics.iter().any(|m| m.starts_with("os.net.")),
        "network of the namespace"
    );
    assert!(s.metrics.iter().any(|m| m == "client.cpu.idle_pct"));
    assert!(s.metrics.iter().any(|m| m == "client.thread.max_cpu_pct"));
    assert!(fact(&s, "client_bound").is_some());
    assert_eq!(
        fact(&s, "data_dir_fstype").map(|f| f != "unknown"),
        Some(true)
    );

    // No exporter: the superuser reads the server host's /proc through the server.
    let s = run_one(&mut store, &campaign("files", &superuser, None));
    assert_eq!(fact(&s, "server_host_metrics_source"), Some("pg_read_file"));
    assert_eq!(s.manifest["hostname"], NS_HOSTNAME, "{}", s.manifest);
    assert_eq!(s.manifest["client"]["hostname"], client_hostname.as_str());
    assert!(s.metrics.iter().any(|m| m == "os.cpu.user_pct"));
    assert!(s.metrics.iter().any(|m| m.starts_with("os.net.")));

    // Neither: a plain role and no exporter. Nothing under the server's name.
    let plain = format!("host={} port=5432 user=plain dbname=plaindb", host.addr);
    let s = run_one(&mut store, &campaign("none", &plain, None));
    assert_eq!(fact(&s, "server_host_metrics_source"), Some("none"));
    assert_eq!(s.manifest["source"], "none");
    assert!(s.manifest["hostname"].is_null(), "{}", s.manifest);
    assert!(s.manifest["note"]
        .as_str()
        .unwrap()
        .contains("pg_read_server_files"));
    assert_eq!(s.manifest["client"]["hostname"], client_hostname.as_str());
    assert!(
        s.server_names.is_empty(),
        "no servers row for an unknown host"
    );
    assert!(
        !s.metrics.iter().any(|m| m.starts_with("os.")),
        "{:?}",
        s.metrics
    );
    assert!(s.metrics.iter().any(|m| m == "client.cpu.idle_pct"));

    https_with_basic_auth(&host, &superuser, &mut store, dir.path());
    drop(host);
}

/// The https node_exporter: the right password through `${VAR}` gives the metrics, a
/// wrong one a warning naming the masked URL, and neither password is stored.
fn https_with_basic_auth(host: &RemoteHost, superuser: &str, store: &mut Store, store_dir: &Path) {
    let Some((ca, password)) = &host.tls else {
        return;
    };
    let url = format!(
        "https://{NE_USER}:${{PGSURGE_TEST_NE_PASSWORD}}@{}:{TLS_PORT}/metrics",
        host.addr
    );
    let right = |k: &str| (k == "PGSURGE_TEST_NE_PASSWORD").then(|| password.clone());
    let s = run_one(
        store,
        &campaign_with("ne-tls", superuser, Some(&url), Some(ca), &right),
    );
    assert_eq!(
        fact(&s, "server_host_metrics_source"),
        Some("node_exporter")
    );
    assert_eq!(s.manifest["hostname"], NS_HOSTNAME, "{}", s.manifest);
    assert!(
        s.metrics.iter().any(|m| m == "os.cpu.user_pct"),
        "{:?} {:?}",
        s.metrics,
        s.warnings
    );
    assert!(s.metrics.iter().any(|m| m.starts_with("os.net.")));

    let wrong_password = format!("{password}-wrong");
    let wrong = |k: &str| (k == "PGSURGE_TEST_NE_PASSWORD").then(|| wrong_password.clone());
    let s = run_one(
        store,
        &campaign_with("ne-tls-wrong", superuser, Some(&url), Some(ca), &wrong),
    );
    let masked = format!(
        "https://{NE_USER}:********@{}:{TLS_PORT}/metrics",
        host.addr
    );
    assert!(
        s.warnings
            .iter()
            .any(|w| w.contains(&masked) && w.contains("401") && w.contains("refused")),
        "{:?}",
        s.warnings
    );
    assert!(
        s.manifest["error"]
            .as_str()
            .is_some_and(|e| e.contains(&masked)),
        "{}",
        s.manifest
    );
    assert!(
        !s.metrics.iter().any(|m| m.starts_with("os.")),
        "{:?}",
        s.metrics
    );

    // No byte of the store holds either password (the database and its journal files).
    let mut files = 0;
    for entry in std::fs::read_dir(store_dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        files += 1;
        for secret in [password.as_str(), wrong_password.as_str()] {
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "a password is in the store"
            );
        }
    }
    assert!(files >= 1);
}
