//! Distributed runs across "hosts": `pgsurge dist ssh` drives 4 generator hosts, each a
//! network namespace with its own private address, host name and sshd, against a
//! PostgreSQL server in a namespace of its own. The namespaces hang off a bridge in a
//! fifth, "switch" namespace; this (the root) namespace joins it with one veth to
//! run ssh and psql. Addresses are 10.233.N.0/24, never routed anywhere else.
//!
//! Checked: 4 generators with distinct host names and indexes in the merged JSON,
//! the merged count = the sum of the generators', the merged latency histogram =
//! bucket for bucket the sum of theirs, one intended start, and the server's commits
//! over the run (pg_stat_database.xact_commit) = the merged count within 1 %. Then
//! 1 generator × 32 clients against 4 × 8 (throughputs printed, not asserted), a
//! host failing mid-run (the run fails naming it, after the others finished) and a
//! failed connection check. And a log replayed through two hosts (`dist ssh --
//! replay`): every session played once, every fingerprint as often as logged, the
//! database left as the logged run left it. Without namespaces or ssh the test is
//! skipped with a message (a failure under `PGSURGE_REQUIRE_PREREQUISITES=1`, as in
//! CI). One lab at a time: its namespaces are named by this process.
//!
//! Needs root, `ip` (iproute2), `unshare`, `runuser`, `ssh`, `ssh-keygen` and
//! `/usr/sbin/sshd`. Namespaces, veths, processes and files are removed by a Drop
//! guard, also on failure; what a killed run left behind is removed by the next. sshd runs with a private tmpfs on /run (its privilege
//! separation directory) in a mount namespace of its own, so nothing on the host
//! changes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pgsurge_generators::histograms::{add, buckets, decode};
use pgsurge_results::RunResult;
use pgsurge_server::PgBinaries;
use pgsurge_testkit::hosts::{namespaces_unavailable, quiet, run, sh, wait_port};

const GENERATORS: usize = 4;
const SERVER_HOSTNAME: &str = "pgsurge-db";

fn gen_hostname(i: usize) -> String {
    format!("pgsurge-gen-{i}")
}

/// The simulated hosts; everything is removed on drop.
struct Lab {
    /// First three octets of the private network.
    net: String,
    dir: PathBuf,
    namespaces: Vec<String>,
    root_veth: Option<String>,
    children: Vec<Child>,
    /// `pg_ctl` and the data directory, once initdb ran.
    pg: Option<(PathBuf, PathBuf)>,
    psql: PathBuf,
    /// Held for the lab's life (released after its Drop has removed everything).
    _one_at_a_time: std::sync::MutexGuard<'static, ()>,
}

/// The lab of this process: namespaces, addresses and directory are named by its id.
static LAB: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl Drop for Lab {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        // postgres was started through runuser: stop it by its data directory.
        if let Some((pg_ctl, data)) = &self.pg {
            quiet(
                Command::new("runuser")
                    .args(["-u", "postgres", "--"])
                    .arg(pg_ctl)
                    .arg("-D")
                    .arg(data)
                    .args(["stop", "-m", "immediate"]),
            );
        }
        // Whatever still runs in the namespaces (sshd sessions, generators) was
        // started by this test.
        for ns in &self.namespaces {
            if let Ok(out) = Command::new("ip").args(["netns", "pids", ns]).output() {
                for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                    quiet(Command::new("kill").args(["-9", pid]));
                }
            }
        }
        if let Some(v) = &self.root_veth {
            quiet(Command::new("ip").args(["link", "del", v]));
        }
        for ns in self.namespaces.iter().rev() {
            quiet(Command::new("ip").args(["netns", "del", ns]));
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Lab {
    fn server_addr(&self) -> String {
        format!("{}.1", self.net)
    }

    fn gen_addr(&self, i: usize) -> String {
        format!("{}.{}", self.net, 11 + i)
    }

    /// Adds namespace `ns` with address `addr`/24 on the switch's bridge.
    fn attach(&mut self, ns: &str, veth: &str, addr: &str) {
        let sw = self.namespaces[0].clone();
        sh(&format!("ip netns add {ns}"));
        self.namespaces.push(ns.to_string());
        sh(&format!(
            "ip link add {veth} type veth peer name {veth}b && ip link set {veth}b netns {sw} && \
             ip netns exec {sw} ip link set {veth}b master br0 up && \
             ip link set {veth} netns {ns} && ip netns exec {ns} ip link set lo up && \
             ip netns exec {ns} ip addr add {addr}/24 dev {veth} && \
             ip netns exec {ns} ip link set {veth} up"
        ));
    }

    fn psql(&self, db: &str, sql: &str) -> String {
        run(Command::new(&self.psql)
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h"])
            .arg(self.server_addr())
            .args(["-U", "postgres", "-d", db, "-c", sql]))
    }

    fn ssh_config(&self) -> PathBuf {
        self.dir.join("ssh/config")
    }
}

/// Why this machine cannot simulate hosts, if it cannot.
fn missing_prerequisite() -> Option<String> {
    let ssh = [("ssh", "openssh-client"), ("ssh-keygen", "openssh-client")];
    if let Some(why) = namespaces_unavailable(&ssh) {
        return Some(format!("dist ssh over network namespaces: {why}"));
    }
    if !Path::new("/usr/sbin/sshd").exists() {
        return Some("no /usr/sbin/sshd (openssh-server)".into());
    }
    None
}

fn lab_dir(id: u32) -> PathBuf {
    std::env::temp_dir().join(format!("pgsurge-generators-ssh-{id}"))
}

/// Removes what runs of this test killed before their Drop guard ran left behind:
/// namespaces `pgsurge-{sw,db,genI}-PID` of a process that no longer exists, what
/// runs in them, and their directory (deleting the switch namespace also deletes
/// the veth pairs).
fn sweep_stale(bins: &PgBinaries) {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        let Some((kind, pid)) = name
            .strip_prefix("pgsurge-")
            .and_then(|r| r.rsplit_once('-'))
        else {
            continue;
        };
        let ours = kind == "sw"
            || kind == "db"
            || kind
                .strip_prefix("gen")
                .is_some_and(|i| i.parse::<u32>().is_ok());
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        if !ours || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let data = lab_dir(pid).join("pg/data");
        if kind == "db" && data.exists() {
            quiet(
                Command::new("runuser")
                    .args(["-u", "postgres", "--"])
                    .arg(bins.program("pg_ctl"))
                    .arg("-D")
                    .arg(&data)
                    .args(["stop", "-m", "immediate"]),
            );
        }
        if let Ok(out) = Command::new("ip").args(["netns", "pids", name]).output() {
            for p in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                quiet(Command::new("kill").args(["-9", p]));
            }
        }
        quiet(Command::new("ip").args(["netns", "del", name]));
        let _ = std::fs::remove_dir_all(lab_dir(pid));
    }
}

/// Sets up the switch, the server and the generator hosts, or says why it cannot.
fn start_lab() -> Result<Lab, String> {
    if let Some(why) = missing_prerequisite() {
        return Err(why);
    }
    let one_at_a_time = LAB.lock().unwrap_or_else(|e| e.into_inner());
    let id = std::process::id();
    let tag = id % 100_000;
    let net = format!("10.233.{}", 1 + id % 250);
    let dir = lab_dir(id);
    let bins = PgBinaries::discover().expect("PostgreSQL binaries");
    sweep_stale(&bins);
    let mut lab = Lab {
        net: net.clone(),
        dir: dir.clone(),
        namespaces: Vec::new(),
        root_veth: None,
        children: Vec::new(),
        pg: None,
        psql: bins.psql().expect("psql"),
        _one_at_a_time: one_at_a_time,
    };
    let sw = format!("pgsurge-sw-{id}");
    if let Ok(out) = Command::new("ip").args(["netns", "add", &sw]).output() {
        if !out.status.success() {
            return Err(format!(
                "cannot create a network namespace: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    lab.namespaces.push(sw.clone());
    std::fs::create_dir_all(dir.join("ssh")).unwrap();
    std::fs::create_dir_all(dir.join("pg")).unwrap();
    sh(&format!(
        "ip netns exec {sw} ip link set lo up && ip netns exec {sw} ip link add br0 type bridge && \
         ip netns exec {sw} ip link set br0 up"
    ));
    // This namespace: ssh and psql run from here.
    let rv = format!("pgs{tag}r");
    sh(&format!(
        "ip link add {rv} type veth peer name {rv}b && ip link set {rv}b netns {sw} && \
         ip netns exec {sw} ip link set {rv}b master br0 up"
    ));
    lab.root_veth = Some(rv.clone());
    sh(&format!(
        "ip addr add {net}.254/24 dev {rv} && ip link set {rv} up"
    ));

    // The server: initdb as postgres, then postgres in its namespace and UTS name.
    let srv_ns = format!("pgsurge-db-{id}");
    lab.attach(&srv_ns, &format!("pgs{tag}s"), &format!("{net}.1"));
    let pg = dir.join("pg");
    let data = pg.join("data");
    sh(&format!("chown postgres {}", pg.display()));
    run(Command::new("runuser")
        .args(["-u", "postgres", "--"])
        .arg(bins.program("initdb"))
        .args(["-U", "postgres", "--auth=trust", "-D"])
        .arg(&data)
        .stdout(Stdio::null()));
    lab.pg = Some((bins.program("pg_ctl"), data.clone()));
    std::fs::write(
        data.join("pg_hba.conf"),
        format!("local all all trust\nhost all all {net}.0/24 trust\n"),
    )
    .unwrap();
    let postgres = Command::new("ip")
        .args(["netns", "exec", &srv_ns, "unshare", "--uts", "sh", "-c"])
        .arg(format!(
            "hostname {SERVER_HOSTNAME} && exec runuser -u postgres -- {} -D {} \
             -c listen_addresses={net}.1 -c port=5432 -c unix_socket_directories={} \
             -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
             -c max_connections=100 -c shared_buffers=64MB -c lc_messages=C",
            bins.program("postgres").display(),
            data.display(),
            pg.display()
        ))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(pg.join("postgres.log")).unwrap())
        .spawn()
        .unwrap();
    lab.children.push(postgres);

    // Keys: one host key for every sshd, one client key authorized on all.
    let ssh = dir.join("ssh");
    for key in ["host_key", "client_key"] {
        run(Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C", "pgsurge-test", "-f"])
            .arg(ssh.join(key)));
    }
    std::fs::copy(ssh.join("client_key.pub"), ssh.join("authorized_keys")).unwrap();
    let host_pub = std::fs::read_to_string(ssh.join("host_key.pub")).unwrap();
    let addrs: Vec<String> = (0..GENERATORS).map(|i| lab.gen_addr(i)).collect();
    std::fs::write(
        ssh.join("known_hosts"),
        format!("{} {}", addrs.join(","), host_pub),
    )
    .unwrap();
    // Without PAM sshd refuses a locked account ('!' in /etc/shadow); with PAM it
    // does not look.
    let root_locked = std::fs::read_to_string("/etc/shadow").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("root:"))
            .is_some_and(|rest| rest.starts_with('!'))
    });
    let use_pam = if root_locked { "yes" } else { "no" };
    let mut client = format!(
        "Host gen-*\n  User root\n  IdentityFile {key}\n  IdentitiesOnly yes\n  \
         UserKnownHostsFile {kh}\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  \
         UpdateHostKeys no\n  LogLevel ERROR\n",
        key = ssh.join("client_key").display(),
        kh = ssh.join("known_hosts").display()
    );
    for (i, addr) in addrs.iter().enumerate() {
        let ns = format!("pgsurge-gen{i}-{id}");
        lab.attach(&ns, &format!("pgs{tag}g{i}"), addr);
        let cfg = ssh.join(format!("sshd-{i}.conf"));
        std::fs::write(
            &cfg,
            format!(
                "ListenAddress {addr}:22\nHostKey {hk}\nAuthorizedKeysFile {ak}\nPidFile none\n\
                 PermitRootLogin prohibit-password\nPubkeyAuthentication yes\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM {use_pam}\n\
                 StrictModes no\nUseDNS no\nPrintMotd no\nPrintLastLog no\nX11Forwarding no\n\
                 AllowTcpForwarding no\nLogLevel INFO\n",
                hk = ssh.join("host_key").display(),
                ak = ssh.join("authorized_keys").display(),
            ),
        )
        .unwrap();
        let sshd = Command::new("ip")
            .args(["netns", "exec", &ns, "unshare", "--uts", "--mount", "sh", "-c"])
            .arg(format!(
                "hostname {} && mount -t tmpfs -o mode=0755 tmpfs /run && mkdir -m 0755 /run/sshd && \
                 exec /usr/sbin/sshd -D -e -f {}",
                gen_hostname(i),
                cfg.display()
            ))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(ssh.join(format!("sshd-{i}.log"))).unwrap())
            .spawn()
            .unwrap();
        lab.children.push(sshd);
        client.push_str(&format!("Host gen-{i}\n  HostName {addr}\n"));
    }
    std::fs::write(lab.ssh_config(), client).unwrap();
    wait_port(&lab.server_addr(), 5432, "postgres");
    for addr in &addrs {
        wait_port(addr, 22, "sshd");
    }
    // The server accepts connections a moment after it listens.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ok = Command::new(&lab.psql)
            .args([
                "-X",
                "-q",
                "-h",
                &lab.server_addr(),
                "-U",
                "postgres",
                "-c",
                "SELECT 1",
            ])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "postgres does not accept connections"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(lab)
}

fn pgsurge(args: &[String]) -> (String, String, i32) {
    let out = Command::new(env!("CARGO_BIN_EXE_pgsurge"))
        .args(args)
        .output()
        .expect("run pgsurge");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn read(p: &Path) -> RunResult {
    serde_json::from_str(
        &std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
    )
    .expect("result document")
}

fn commits(lab: &Lab) -> i64 {
    lab.psql(
        "postgres",
        "SELECT xact_commit FROM pg_stat_database WHERE datname = 'bench'",
    )
    .trim()
    .parse()
    .expect("xact_commit")
}

/// Waits until no session is connected to the `bench` database: a session's statistics
/// reach the shared views before it leaves `pg_stat_activity`, and on a busy machine a
/// backend can exit well after its client.
fn wait_for_sessions_to_end(lab: &Lab) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while lab
        .psql(
            "postgres",
            "SELECT count(*) FROM pg_stat_activity WHERE datname = 'bench' \
             AND backend_type = 'client backend'",
        )
        .trim()
        != "0"
    {
        assert!(Instant::now() < deadline, "sessions left on bench");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `pgsurge dist ssh` on `hosts` with `clients` in total; the merged document and
/// the generators' own, from the output directory.
fn dist_ssh(
    lab: &Lab,
    out_dir: &Path,
    hosts: &[String],
    clients: u32,
    remote: &str,
    bench: &[&str],
) -> (String, String, i32) {
    let mut args: Vec<String> = [
        "dist",
        "ssh",
        "--hosts",
        &hosts.join(","),
        "-c",
        &clients.to_string(),
        "--random-seed=7",
        "--start-in=2",
        "--remote-pgsurge",
        remote,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(format!("--ssh-config={}", lab.ssh_config().display()));
    args.push(format!("--out-dir={}", out_dir.display()));
    args.push(format!("--json={}", out_dir.join("merged.json").display()));
    args.push("--".into());
    args.extend(bench.iter().map(|s| s.to_string()));
    args.extend(
        [
            "-h",
            &lab.server_addr(),
            "-p",
            "5432",
            "-U",
            "postgres",
            "bench",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    pgsurge(&args)
}

fn hosts(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("gen-{i}")).collect()
}

#[test]
fn four_ssh_generators_in_namespaces_merge_exactly_and_match_the_server() {
    let lab = match start_lab() {
        Ok(l) => l,
        Err(why) => {
            pgsurge_testkit::missing_prerequisite(&format!("cannot simulate hosts: {why}"));
            return;
        }
    };
    let me = env!("CARGO_BIN_EXE_pgsurge");
    lab.psql("postgres", "CREATE DATABASE bench");
    // The results store the generators also write to (results without shared disks).
    lab.psql("postgres", "CREATE DATABASE store");
    let store = format!(
        "host={} port=5432 user=postgres dbname=store",
        lab.server_addr()
    );
    let store_opt = format!("--store={store}");
    let (_, err, code) = pgsurge(
        &[
            "bench",
            "-i",
            "-s",
            "1",
            "-q",
            "-h",
            &lab.server_addr(),
            "-U",
            "postgres",
            "bench",
        ]
        .map(String::from),
    );
    assert_eq!(code, 0, "{err}");

    // 4 hosts × 8 clients, select-only, 3 s, one start.
    let four = lab.dir.join("four");
    wait_for_sessions_to_end(&lab);
    let before = commits(&lab);
    let (out, err, code) = dist_ssh(
        &lab,
        &four,
        &hosts(4),
        32,
        me,
        &["-S", "-n", "-T", "3", &store_opt, "--group=netns"],
    );
    let sshd_logs = || {
        (0..GENERATORS)
            .map(|i| {
                std::fs::read_to_string(lab.dir.join(format!("ssh/sshd-{i}.log")))
                    .unwrap_or_default()
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        code,
        0,
        "stdout:\n{out}\nstderr:\n{err}\nsshd:\n{}",
        sshd_logs()
    );
    wait_for_sessions_to_end(&lab);
    let after = commits(&lab);
    assert!(out.contains("number of generators: 4\n"), "{out}");
    assert!(out.contains("number of clients: 32\n"), "{out}");

    let merged = read(&four.join("merged.json"));
    let gens: Vec<RunResult> = (0..GENERATORS)
        .map(|i| read(&four.join(format!("gen-{i}.json"))))
        .collect();
    assert_eq!(merged.options.clients, 32);
    assert_eq!(
        merged.generators.len(),
        GENERATORS,
        "{:?}",
        merged.generators
    );
    let host_names: BTreeSet<_> = merged.generators.iter().map(|g| g.host.clone()).collect();
    let want: BTreeSet<_> = (0..GENERATORS).map(|i| Some(gen_hostname(i))).collect();
    assert_eq!(host_names, want, "each generator ran on its own host");
    let indexes: BTreeSet<_> = merged.generators.iter().map(|g| g.index).collect();
    assert_eq!(indexes, (0..GENERATORS as u32).map(Some).collect());
    for (i, g) in merged.generators.iter().enumerate() {
        assert_eq!(g.name, format!("gen-{i}"));
        assert_eq!((g.index, g.count, g.clients), (Some(i as u32), Some(4), 8));
        assert_eq!(g.host.as_deref(), Some(gen_hostname(i).as_str()));
        assert_eq!(g.transactions, gens[i].totals.transactions);
    }
    let sum: u64 = gens.iter().map(|g| g.totals.transactions).sum();
    assert!(sum > 100, "the run did work: {sum}");
    assert_eq!(merged.totals.transactions, sum);

    // Bucket for bucket: the merged histogram is the sum of the generators'.
    let mut sum_h = None;
    for g in &gens {
        add(
            &mut sum_h,
            &decode(g.totals.latency.histogram.as_deref().expect("histogram")).unwrap(),
        )
        .unwrap();
    }
    let m = decode(merged.totals.latency.histogram.as_deref().expect("merged")).unwrap();
    assert_eq!(buckets(&m), buckets(&sum_h.expect("four")));

    // One intended start for all; seeds derived from the run seed.
    let intended = gens[0]
        .generator
        .as_ref()
        .unwrap()
        .intended_start_unix_us
        .expect("start-at");
    for (i, g) in gens.iter().enumerate() {
        let gi = g.generator.as_ref().expect("generator section");
        assert_eq!(gi.intended_start_unix_us, Some(intended));
        assert_eq!(gi.host, gen_hostname(i));
        assert!(
            gi.actual_start_unix_us >= intended,
            "generator {i} started early"
        );
        assert_eq!(
            g.options.random_seed,
            Some(pgsurge_generators::generator_seed(7, i as u32))
        );
    }

    // The server committed what the generators counted (plus their few setup queries).
    let server = (after - before) as f64;
    let diff = (server - sum as f64).abs() / sum as f64;
    eprintln!(
        "4 × 8 over ssh: merged {sum} transactions, server commits {server} ({:.3} % apart)",
        diff * 100.0
    );
    assert!(
        diff < 0.01,
        "server commits {server} vs merged {sum} ({:.3} %)",
        diff * 100.0
    );

    // The same run through the PostgreSQL store: the coordinator finds the four
    // generators there and its merge is the one made from their JSON, exactly.
    let through_store = four.join("store-merged.json");
    let (report, err, code) = pgsurge(&[
        "dist".into(),
        "wait".into(),
        "--store".into(),
        store.clone(),
        "--group".into(),
        "netns".into(),
        "-n".into(),
        "4".into(),
        "--timeout".into(),
        "30".into(),
        format!("--json={}", through_store.display()),
    ]);
    assert_eq!(code, 0, "{report}\n{err}");
    assert!(report.contains("number of generators: 4"), "{report}");
    let from_store = read(&through_store);
    assert_eq!(
        serde_json::to_value(&from_store.totals).unwrap(),
        serde_json::to_value(&merged.totals).unwrap()
    );
    assert_eq!(
        serde_json::to_value(&from_store.intervals).unwrap(),
        serde_json::to_value(&merged.intervals).unwrap()
    );
    let stored_hosts: BTreeSet<_> = from_store
        .generators
        .iter()
        .map(|g| g.host.clone())
        .collect();
    assert_eq!(stored_hosts, want);

    // A campaign whose test runs on the four hosts ([distributed] launcher = "ssh"): one
    // stored test, the merge of four generators, checked against the server.
    let campaign = lab.dir.join("over-ssh.toml");
    std::fs::write(
        &campaign,
        format!(
            r#"
[campaign]
name = "over-ssh"
[[target]]
name = "netns"
conninfo = "host={} port=5432 user=postgres dbname=bench"
[matrix]
scales = [1]
clients = [8]
scripts = ["select-only"]
[run]
duration = 2
[hygiene]
vacuum = false
checkpoint = false
[distributed]
launcher = "ssh"
hosts = ["gen-0", "gen-1", "gen-2", "gen-3"]
ssh_config = "{}"
remote_pgsurge = "{me}"
start_in = 2
"#,
            lab.server_addr(),
            lab.ssh_config().display()
        ),
    )
    .unwrap();
    let campaign_store = lab.dir.join("campaign.db").display().to_string();
    let (out, err, code) = pgsurge(&[
        "campaign".into(),
        "run".into(),
        campaign.display().to_string(),
        "--store".into(),
        campaign_store.clone(),
    ]);
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    let (export, err, code) = pgsurge(&[
        "results".into(),
        "export".into(),
        "--format".into(),
        "json".into(),
        "--store".into(),
        campaign_store,
    ]);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&export).unwrap();
    let run = &doc["runs"][0];
    assert_eq!(run["status"], "ok", "{run}");
    assert_eq!(run["clients"], 8);
    let run_hosts: BTreeSet<String> = run["result_json"]["generators"]
        .as_array()
        .expect("the stored result lists its generators")
        .iter()
        .map(|g| g["host"].as_str().unwrap_or("").to_string())
        .collect();
    let want_hosts: BTreeSet<String> = (0..GENERATORS).map(gen_hostname).collect();
    assert_eq!(run_hosts, want_hosts);
    let mismatch = run["commit_mismatch_pct"].as_f64().unwrap();
    assert!(mismatch < 1.0, "{mismatch} % apart: {run}");

    // 1 generator × 32 clients on the same server: printed, not judged.
    let one = lab.dir.join("one");
    let (out, err, code) = dist_ssh(&lab, &one, &hosts(1), 32, me, &["-S", "-n", "-T", "2"]);
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    let single = read(&one.join("merged.json"));
    assert_eq!(single.options.clients, 32);
    assert_eq!(single.generators.len(), 1);
    assert_eq!(single.generators[0].clients, 32);
    assert!(single.totals.transactions > 0);
    eprintln!(
        "1 generator × 32 clients: {:.1} tps; 4 generators × 8 clients: {:.1} tps; ratio 4×8 / 1×32 = {:.3}",
        single.tps,
        merged.tps,
        merged.tps / single.tps
    );

    // A host failing mid-run fails the whole run, after the others finished.
    let wrapper = lab.dir.join("fail-on-gen-2.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nif [ \"$(cat /proc/sys/kernel/hostname)\" = {} ] && [ \"$1\" = bench ]; then\n  \
             echo 'pgbench: error: simulated failure on this host' >&2\n  exit 3\nfi\nexec '{me}' \"$@\"\n",
            gen_hostname(2)
        ),
    )
    .unwrap();
    sh(&format!("chmod 755 {}", wrapper.display()));
    let failing = lab.dir.join("failing");
    let (out, err, code) = dist_ssh(
        &lab,
        &failing,
        &hosts(4),
        4,
        wrapper.to_str().unwrap(),
        &["-S", "-n", "-T", "1"],
    );
    assert_eq!(code, 1, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.is_empty(), "nothing partial is presented: {out}");
    assert!(!failing.join("merged.json").exists());
    assert!(
        err.contains("host gen-2: pgsurge exited with status 3: pgbench: error: simulated failure on this host"),
        "{err}"
    );
    assert!(
        err.contains("gen-2: pgbench: error: simulated failure"),
        "stderr kept, prefixed: {err}"
    );
    assert!(!err.contains("host gen-0"), "{err}");
    for i in [0, 1, 3] {
        let g = read(&failing.join(format!("gen-{i}.json")));
        assert!(g.totals.transactions > 0, "gen-{i} finished its run");
    }

    // A host without the remote pgsurge: refused before anything starts.
    let (out, err, code) = dist_ssh(
        &lab,
        &lab.dir.join("missing"),
        &hosts(2),
        2,
        "/nonexistent/pgsurge",
        &["-S", "-n", "-T", "1"],
    );
    assert_eq!(code, 1, "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        err.contains("connection check failed, no generator was started: gen-0: the remote pgsurge was not found (exit status 127)"),
        "{err}"
    );
    drop(lab);
}

#[test]
fn a_password_in_the_bench_options_is_refused_before_any_ssh() {
    let (out, err, code) = pgsurge(
        &[
            "dist",
            "ssh",
            "--hosts=gen-a,gen-b",
            "-c",
            "2",
            "--",
            "-S",
            "host=db user=bench password=hunter22 dbname=bench",
        ]
        .map(String::from),
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("~/.pgpass or PGPASSWORD"), "{err}");
    assert!(
        !err.contains("hunter22"),
        "the password is not repeated: {err}"
    );
    assert!(out.is_empty());
}

/// Fingerprint → (logged, replayed) statements of a replay report.
fn fingerprint_counts(report: &serde_json::Value) -> Vec<(String, u64, u64)> {
    let mut v: Vec<(String, u64, u64)> = report["fingerprints"]
        .as_array()
        .expect("fingerprints")
        .iter()
        .map(|f| {
            (
                f["fingerprint"].as_str().unwrap().to_string(),
                f["logged"]["statements"].as_u64().unwrap(),
                f["replayed"]["statements"].as_u64().unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn a_log_replayed_through_two_ssh_hosts_plays_every_session_once() {
    use super::replay_roundtrip::{logged_pgbench, logging_server, pgbench_init, state};
    let Some(pgbench) = pgsurge_testkit::reference_pgbench() else {
        return;
    };
    let lab = match start_lab() {
        Ok(l) => l,
        Err(why) => {
            pgsurge_testkit::missing_prerequisite(&format!("cannot simulate hosts: {why}"));
            return;
        }
    };
    let _heavy = pgsurge_testkit::one_heavy_test_at_a_time();
    // A log written by a real pgbench (tpcb-like, prepared, four clients, a fixed
    // seed) on a server of its own, whose Unix socket the "hosts" reach through the
    // file system they share with this one.
    let srv = logging_server();
    let db = srv.create_database("rssh");
    pgbench_init(pgbench, &srv, &db);
    let copy = format!("{db}_copy");
    srv.psql("postgres", &format!("create database {copy} template {db}"));
    let run = ["-M", "prepared", "-c", "4", "-t", "30", "--random-seed=5"];
    let ([log, _, _], expected) = logged_pgbench(pgbench, &srv, &db, (&run, 4), &lab.dir, "run");

    let out_dir = lab.dir.join("replay");
    let merged = out_dir.join("merged.json");
    let socket = srv.socket_dir().to_string_lossy().into_owned();
    let mut args: Vec<String> = ["dist", "ssh", "--hosts", "gen-0,gen-1", "--start-in=2"]
        .map(String::from)
        .to_vec();
    args.push(format!(
        "--remote-pgsurge={}",
        env!("CARGO_BIN_EXE_pgsurge")
    ));
    args.push(format!("--ssh-config={}", lab.ssh_config().display()));
    args.push(format!("--out-dir={}", out_dir.display()));
    args.push(format!("--json={}", merged.display()));
    args.extend(["--", "replay", "--max", "-h", &socket].map(String::from));
    args.extend(["-p".into(), srv.port().to_string(), "-U".into()]);
    args.extend([srv.superuser().to_string(), "-d".into(), copy.clone()]);
    args.push(log.display().to_string());
    let (stdout, stderr, code) = pgsurge(&args);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("merged from 2 generators"), "{stdout}");

    // The copy ends as pgbench left the original: every transaction replayed once.
    assert_eq!(state(&srv, &copy), expected);
    let merged: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&merged).expect("merged report")).unwrap();
    assert_eq!(merged["settings"]["generators"], 2);
    // Every fingerprint replayed as often as the log has it.
    let counts = fingerprint_counts(&merged);
    assert!(!counts.is_empty());
    for (fp, logged, replayed) in &counts {
        assert_eq!(logged, replayed, "{fp}");
    }
    assert_eq!(merged["read"]["sessions"], 5);
    assert_eq!(merged["replay"]["sessions"], 5);
    assert_eq!(merged["replay"]["unexpected_errors"], 0);
    // Each host played sessions of its own, none twice: the shares add up to the log's.
    let shares: Vec<u64> = ["gen-0", "gen-1"]
        .iter()
        .map(|h| {
            let p = out_dir.join(format!("{h}.json"));
            let r: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&p).expect("host report")).unwrap();
            r["replay"]["sessions"].as_u64().unwrap()
        })
        .collect();
    assert!(shares.iter().all(|&s| s > 0), "{shares:?}");
    assert_eq!(shares.iter().sum::<u64>(), 5);
}
