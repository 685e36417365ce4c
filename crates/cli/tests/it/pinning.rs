//! CPU pinning, read back from `/proc` while the work runs: a campaign's throwaway
//! server (postmaster and backends) on `[pinning] server`, its load generator's threads
//! on `[pinning] client`; `bench --cpus` likewise; and lists that cannot be honoured are
//! refused before anything runs.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pgsurge_affinity::{of_proc, CpuList};
use pgsurge_server::testing::TestServer;

fn pgsurge() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pgsurge"))
}

/// Parent pid and command name of every process.
fn processes() -> BTreeMap<i32, (i32, String)> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid …; comm may hold spaces and parentheses.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = stat[open + 1..close].to_string();
        let ppid = stat[close + 2..]
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        out.insert(pid, (ppid, comm));
    }
    out
}

fn descendants(root: i32) -> Vec<(i32, String)> {
    let all = processes();
    let mut found = vec![];
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for (pid, (ppid, comm)) in &all {
            if *ppid == p {
                found.push((*pid, comm.clone()));
                frontier.push(*pid);
            }
        }
    }
    found
}

/// The affinity of every thread of `pid`.
fn thread_affinities(pid: i32) -> Vec<(String, Option<CpuList>)> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return vec![];
    };
    tasks
        .flatten()
        .map(|t| {
            let tid = t.file_name().to_string_lossy().into_owned();
            let path = format!("{pid}/task/{tid}");
            (tid, of_proc(&path))
        })
        .collect()
}

fn two_cpus() -> Option<(CpuList, CpuList)> {
    let online = pgsurge_affinity::online().unwrap();
    if online.cpus().len() < 2 {
        pgsurge_testkit::missing_prerequisite("pinning tests need two online CPUs");
        return None;
    }
    let first = CpuList::parse(&online.cpus()[0].to_string()).unwrap();
    let second = CpuList::parse(&online.cpus()[1].to_string()).unwrap();
    Some((first, second))
}

#[test]
fn a_pinned_campaign_runs_its_server_and_its_clients_on_their_cpus() {
    let Some((server_cpu, client_cpu)) = two_cpus() else {
        return;
    };
    let dir = pgsurge_testkit::scratch_dir("pinning");
    let file = dir.path().join("pinned.toml");
    std::fs::write(
        &file,
        format!(
            r#"
[campaign]
name = "pinned"
[[target]]
name = "pinned"
[pinning]
server = "{server_cpu}"
client = "{client_cpu}"
[matrix]
scales = [1]
clients = [4]
scripts = ["select-only"]
[run]
duration = 6
threads = 2
"#
        ),
    )
    .unwrap();
    let mut child = pgsurge()
        .args(["campaign", "run", "--quiet", "--store"])
        .arg(dir.path().join("r.db"))
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    // Sample while the benchmark runs: at least the postmaster and four client backends.
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut checked = 0;
    while Instant::now() < deadline && child.try_wait().unwrap().is_none() {
        let servers: Vec<i32> = descendants(pid)
            .into_iter()
            .filter(|(_, comm)| comm == "postgres" || comm.starts_with("postgres:"))
            .map(|(p, _)| p)
            .collect();
        let threads = thread_affinities(pid);
        if servers.len() >= 5 && threads.len() >= 3 {
            for p in &servers {
                if let Some(l) = of_proc(&p.to_string()) {
                    assert_eq!(l, server_cpu, "server process {p}");
                }
            }
            for (tid, l) in &threads {
                if let Some(l) = l {
                    assert_eq!(l, &client_cpu, "campaign thread {tid}");
                }
            }
            checked += 1;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        checked >= 3,
        "only {checked} samples caught the benchmark running"
    );
}

#[test]
fn bench_cpus_pins_the_client_threads_and_refuses_offline_cpus() {
    let Some((_, client_cpu)) = two_cpus() else {
        return;
    };
    let srv = TestServer::shared();
    let db = srv.create_database("pinning_bench");
    let init = pgsurge()
        .args(["bench", "-i", "-q", "-s", "1"])
        .arg(srv.conninfo(&db))
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let mut child = pgsurge()
        .arg("bench")
        .arg(format!("--cpus={client_cpu}"))
        .args(["-S", "-c", "4", "-j", "2", "-T", "4"])
        .arg(srv.conninfo(&db))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let mut most_threads = 0;
    while child.try_wait().unwrap().is_none() {
        // Once the two client threads exist, every thread is pinned (the main thread
        // pins itself before it starts them).
        let threads = thread_affinities(pid);
        if threads.len() >= 3 {
            for (tid, l) in &threads {
                if let Some(l) = l {
                    assert_eq!(l, &client_cpu, "bench thread {tid}");
                }
            }
        }
        most_threads = most_threads.max(threads.len());
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(most_threads >= 3, "the run's threads were never seen");

    for (list, message) in [
        ("1023", "that is not online"),
        ("2-1", "runs backwards"),
        ("x", "is not a CPU number"),
    ] {
        let out = pgsurge()
            .arg("bench")
            .arg(format!("--cpus={list}"))
            .args(["-T", "1", "postgresql://nowhere.invalid/x"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{list}: {err}");
        assert!(err.contains(message), "{list}: {err}");
    }
}
