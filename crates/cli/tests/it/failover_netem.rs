//! A `tc netem` delay on a standby's link, as a campaign applies it to an existing
//! server: with a synchronous standby every commit after the fault waits for the round
//! trip the delay adds, with an asynchronous one commits do not wait, and the netem is
//! gone after the run.
//!
//! The kernels the suite runs on have no netem, so the test runs in User-mode Linux
//! (`pgsurge_testkit::uml`), whose kernel loads `sch_netem` and `veth` as modules: the
//! host side boots the test binary in a guest to run this same test, and asserts on
//! what that inner run wrote. The inner run builds the typical use: a primary in the
//! guest's root network namespace, a standby in a namespace of its own that streams
//! from it over TCP through a veth pair, and a campaign on the primary (a `conninfo`
//! target) with a `delay` on each end of the pair from 4 s of a 10 s tpcb-like run,
//! and a `loss` (the delay kept) on the standby's end from 8 s. Everything it starts lives in the guest and ends with it.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use pgsurge_testkit::hosts::run;
use pgsurge_testkit::uml;
use serde_json::{json, Value};

use crate::campaigns::{pgsurge, said, Campaign};

/// This test's full name in the binary, which the guest runs.
const TEST: &str = "failover_netem::a_netem_delay_on_a_sync_standbys_link_holds_every_commit_for_the_round_trip_and_an_async_ones_does_not";

/// The guest kernel's modules the lab needs.
const MODULES: &[&str] = &["net/sched/sch_netem", "drivers/net/veth"];

/// The delay each end of the pair adds to what it sends.
const DELAY_MS: f64 = 100.0;

/// The share of the standby's packets lost from 8 s on (the delay kept).
const LOSS_PCT: f64 = 5.0;

/// The standby's namespace, its end of the pair, and the primary's end.
const NETNS: &str = "standby";
const STANDBY_LINK: &str = "vstandby";
const PRIMARY_LINK: &str = "vprimary";
const PRIMARY_ADDR: &str = "10.9.0.1";
const STANDBY_NET: &str = "10.9.0.0/24";
const STANDBY_ADDR: &str = "10.9.0.2";
const PORT: u16 = 5432;

/// What the inner run writes for the host side, in the guest's out directory.
const FIGURES: &str = "netem.json";

#[test]
fn a_netem_delay_on_a_sync_standbys_link_holds_every_commit_for_the_round_trip_and_an_async_ones_does_not(
) {
    if uml::in_guest() {
        inner::show();
        return;
    }
    if let Some(why) = uml::unavailable(MODULES) {
        pgsurge_testkit::missing_prerequisite(&why);
        return;
    }
    let dir = pgsurge_testkit::scratch_dir("failover-netem");
    let guest = uml::run_this_test(&dir, MODULES, TEST, &[])
        .unwrap_or_else(|e| panic!("the guest did not run the test: {e}"));
    eprintln!("--- the guest's run\n{}", guest.stderr);
    assert_eq!(
        guest.status,
        Some(0),
        "the run in the guest failed\n{}",
        guest.said()
    );
    let text = std::fs::read_to_string(dir.join(FIGURES))
        .unwrap_or_else(|e| panic!("the guest wrote no {FIGURES}: {e}\n{}", guest.said()));
    let figures: Value = serde_json::from_str(&text).expect("the guest's figures are JSON");

    // (a) The campaign was planned and run: the guest's kernel has netem.
    assert_eq!(figures["plan_status"], json!(0), "{figures}");
    let round_trip_ms = 2.0 * DELAY_MS;
    for mode in ["sync", "async"] {
        let m = &figures[mode];
        // (b) Both ends' delays were applied, and (e) the loss, without an error; and a
        // delay of 0 on a link without netem, before them, left it as it was.
        let faults = m["faults"].as_array().expect("the faults");
        let actions: Vec<&str> = faults.iter().filter_map(|f| f["action"].as_str()).collect();
        assert_eq!(
            actions,
            ["delay", "delay", "delay", "loss"],
            "{mode}: {faults:?}"
        );
        for f in faults {
            assert!(f["error"].is_null(), "{mode}: a fault failed: {f}");
        }
        // (d) And removed after the run: no netem left on either end.
        for q in m["qdiscs_after"].as_array().expect("the qdiscs after") {
            assert!(!q.as_str().unwrap().contains("netem"), "{mode}: left: {q}");
        }
    }
    // (b) Every commit of a synchronous standby waits for its reply: a transaction that
    // ends a second or more after both delays were set began after them (or ran for a
    // second or more), so each such second's mean latency is at least the round trip;
    // before the fault, seconds went far below it.
    let seconds = |mode: &str| -> Vec<(f64, f64, u64)> {
        serde_json::from_value(figures[mode]["seconds"].clone()).expect("per-second figures")
    };
    let sync = seconds("sync");
    let after: Vec<_> = sync.iter().filter(|s| s.0 >= 1.0 && s.2 > 0).collect();
    assert!(
        after.len() >= 2,
        "too few seconds after the delay\n{sync:?}"
    );
    for s in &after {
        assert!(
            s.1 >= round_trip_ms,
            "a second faster than the round trip: {s:?}\n{sync:?}"
        );
    }
    let before: Vec<_> = sync.iter().filter(|s| s.0 <= -1.0 && s.2 > 0).collect();
    assert!(
        before.iter().any(|s| s.1 < round_trip_ms / 2.0),
        "no second before the delay far below the round trip\n{sync:?}"
    );
    // (c) Nothing holds an asynchronous commit for the standby: some second after the
    // delay has transactions faster on average than the round trip.
    let not_sync = seconds("async");
    let after: Vec<_> = not_sync.iter().filter(|s| s.0 >= 1.0 && s.2 > 0).collect();
    assert!(
        after.iter().any(|s| s.1 < round_trip_ms),
        "asynchronous commits held\n{not_sync:?}"
    );
}

/// The inner run, in the guest.
mod inner {
    use super::*;

    /// Builds the lab, runs the campaign with a synchronous then an asynchronous
    /// standby, and writes what the host side asserts on.
    pub fn show() {
        let out = std::env::var(uml::OUT_ENV).expect("the guest names its out directory");
        let work = pgsurge_testkit::scratch_dir("netem-lab");
        let lab = Lab::start(&work);
        let campaign = Campaign::write(&work, &campaign_body());
        let plan = pgsurge()
            .args(["campaign", "plan", campaign.file_arg(), "--format", "json"])
            .args(["--store", &campaign.store])
            .output()
            .expect("pgsurge campaign plan starts");
        eprintln!("campaign plan: {}", said(&plan));
        lab.replication(true);
        let sync = delayed_run(&work, "sync");
        lab.replication(false);
        let not_sync = delayed_run(&work, "async");
        let figures = json!({
            "plan_status": plan.status.code(),
            "sync": sync,
            "async": not_sync,
        });
        let path = Path::new(&out).join(FIGURES);
        std::fs::write(&path, figures.to_string())
            .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    }

    /// The campaign: tpcb-like on the primary over TCP, a delay of 0 (nothing to remove)
    /// at 2 s, both ends of the standby's pair
    /// delayed from 4 s of a 10 s run and the standby's end losing packets from 8 s,
    /// 2 clients.
    fn campaign_body() -> String {
        format!(
            r#"
[campaign]
name = "netem"
[[target]]
name = "pg"
conninfo = "host={PRIMARY_ADDR} port={PORT} user=postgres dbname=pgsurge"
[matrix]
scales = [1]
clients = [2]
[run]
duration = 10
[[fault]]
at = "2s"
action = "delay"
link = "{PRIMARY_LINK}"
delay = "0ms"
[[fault]]
at = "4s"
action = "delay"
link = "{STANDBY_LINK}"
netns = "{NETNS}"
delay = "{DELAY_MS}ms"
[[fault]]
at = "4s"
action = "delay"
link = "{PRIMARY_LINK}"
delay = "{DELAY_MS}ms"
[[fault]]
at = "8s"
action = "loss"
link = "{STANDBY_LINK}"
netns = "{NETNS}"
delay = "{DELAY_MS}ms"
loss = {LOSS_PCT}
"#
        )
    }

    /// Runs the campaign (its own store, `mode` names it) and returns its faults as
    /// applied, its per-second figures (the start of the second after both delays were
    /// set, s; mean latency, ms; transactions) and the links' queueing disciplines after
    /// the run.
    fn delayed_run(work: &Path, mode: &str) -> Value {
        let c = Campaign::write_named(work, mode, &campaign_body());
        c.run_ok(&[]);
        let runs = c.runs();
        let result = &runs[0]["result_json"];
        let faults = result["failure_cost"]["faults"].clone();
        let set_us = faults
            .as_array()
            .expect("the faults")
            .iter()
            .filter(|f| f["action"] == "delay")
            .filter_map(|f| f["done_unix_us"].as_i64())
            .max()
            .expect("a delay's time");
        let seconds: Vec<(f64, f64, u64)> = result["intervals"]
            .as_array()
            .expect("per-second figures")
            .iter()
            .map(|i| {
                let start = i["epoch_s"].as_f64().unwrap() - i["duration_s"].as_f64().unwrap();
                let lat = i["latency_ms"].as_f64().unwrap_or(0.0);
                (
                    start - set_us as f64 / 1e6,
                    lat,
                    i["transactions"].as_u64().unwrap(),
                )
            })
            .collect();
        eprintln!("{mode}: second from the delay, mean latency ms, transactions");
        for s in &seconds {
            eprintln!("  {:6.2} {:8.2} {}", s.0, s.1, s.2);
        }
        let qdiscs = [
            run(Command::new("tc").args(["qdisc", "show", "dev", PRIMARY_LINK])),
            run(Command::new("tc").args(["-n", NETNS, "qdisc", "show", "dev", STANDBY_LINK])),
        ];
        eprintln!("{mode}: qdiscs after the run: {qdiscs:?}");
        json!({ "faults": faults, "seconds": seconds, "qdiscs_after": qdiscs })
    }

    /// The primary (started by `pgsurge server start`, listening on its end of the pair)
    /// and the standby in its namespace.
    struct Lab {
        /// The primary's connection over TCP, through its address on the pair.
        conninfo: String,
        /// The PostgreSQL binaries `pgsurge server start` finds too.
        bin: pgsurge_server::PgBinaries,
    }

    impl Lab {
        fn start(work: &Path) -> Lab {
            let sh = |line: &str| pgsurge_testkit::hosts::sh(line);
            sh(&format!(
                "ip netns add {NETNS} && ip link add {PRIMARY_LINK} type veth peer name {STANDBY_LINK} && \
                 ip link set {STANDBY_LINK} netns {NETNS} && \
                 ip addr add {PRIMARY_ADDR}/24 dev {PRIMARY_LINK} && ip link set {PRIMARY_LINK} up && \
                 ip -n {NETNS} addr add {STANDBY_ADDR}/24 dev {STANDBY_LINK} && \
                 ip -n {NETNS} link set {STANDBY_LINK} up && ip -n {NETNS} link set lo up"
            ));
            // The standby connects over TCP from its namespace, for replication too.
            let hba = work.join("hba.conf");
            std::fs::write(
                &hba,
                format!(
                    "local all all trust\nhost all all 127.0.0.1/32 trust\n\
                     host all all {STANDBY_NET} trust\nhost replication all {STANDBY_NET} trust\n"
                ),
            )
            .unwrap();
            sh(&format!(
                "chmod 755 {} && chmod 644 {}",
                work.display(),
                hba.display()
            ));
            let primary = work.join("primary");
            let started = pgsurge()
                .env("PGSURGE_STATE_DIR", work.join("state"))
                .args(["server", "start", "--data"])
                .arg(&primary)
                .args(["--port", &PORT.to_string()])
                .args(["--set", &format!("listen_addresses={PRIMARY_ADDR}")])
                .arg("--set")
                .arg(format!("hba_file={}", hba.display()))
                .args(["--set", "fsync=off", "--set", "max_connections=50"])
                .args(["--set", "shared_buffers=64MB"])
                .output()
                .expect("pgsurge server start starts");
            assert!(started.status.success(), "the primary: {}", said(&started));
            let lab = Lab {
                conninfo: format!("host={PRIMARY_ADDR} port={PORT} user=postgres dbname=postgres"),
                bin: pgsurge_server::PgBinaries::discover().expect("PostgreSQL binaries"),
            };
            lab.start_standby(work);
            lab
        }

        /// A base backup of the primary, taken and started in the standby's namespace.
        /// `pgsurge server start` makes primaries, and its own standbys stream over the
        /// primary's Unix socket in the same namespace: a standby behind a veth pair is
        /// made here with PostgreSQL's own tools.
        fn start_standby(&self, work: &Path) {
            let bin = &self.bin;
            let (data, sock) = (work.join("standby"), work.join("standby-sock"));
            for d in [&data, &sock] {
                std::fs::create_dir(d).unwrap();
                run(Command::new("chown").arg("postgres").arg(d));
            }
            run(Command::new("chmod").arg("700").arg(&data));
            let as_postgres = |program: &str| {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", NETNS, "runuser", "-u", "postgres", "--"])
                    .arg(bin.bin_dir().join(program));
                c
            };
            run(as_postgres("pg_basebackup")
                .args([
                    "-h",
                    PRIMARY_ADDR,
                    "-p",
                    &PORT.to_string(),
                    "-U",
                    "postgres",
                ])
                .arg("-D")
                .arg(&data)
                .args(["-X", "stream", "-R"]));
            run(as_postgres("pg_ctl")
                .arg("-D")
                .arg(&data)
                .arg("-l")
                .arg(sock.join("log"))
                .args(["-w", "-o"])
                .arg(format!(
                    "-c port={} -c listen_addresses='' -c unix_socket_directories={} \
                     -c cluster_name={NETNS}",
                    PORT + 1,
                    sock.display()
                ))
                .arg("start"));
        }

        /// Makes commits wait for the standby (`sync`) or not, and waits until the
        /// primary says so of its streaming standby.
        fn replication(&self, sync: bool) {
            let names = if sync { NETNS } else { "" };
            self.psql(&format!(
                "ALTER SYSTEM SET synchronous_standby_names = '{names}'"
            ));
            self.psql("SELECT pg_reload_conf()");
            let want = if sync { "sync" } else { "async" };
            let deadline = Instant::now() + Duration::from_secs(120);
            loop {
                let state = self.psql(
                    "SELECT string_agg(state || ' ' || sync_state, ',') FROM pg_stat_replication",
                );
                if state == format!("streaming {want}") {
                    return;
                }
                assert!(
                    Instant::now() < deadline,
                    "the standby is not streaming {want}: {state:?}"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }

        fn psql(&self, sql: &str) -> String {
            run(Command::new(self.bin.bin_dir().join("psql")).args([
                "-X",
                "-At",
                "-v",
                "ON_ERROR_STOP=1",
                "-d",
                &self.conninfo,
                "-c",
                sql,
            ]))
            .trim()
            .to_string()
        }
    }
}
