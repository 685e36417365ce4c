//! Failover campaigns that cannot run as written are refused when they are read, before
//! anything starts: a fault past the run's end, a promote on a target without a
//! standby, more standbys than the machine allows (the count of WAL senders, the
//! memory of their shared buffers), and a netem fault on a kernel without netem. Each
//! exits with status 1 and an error naming the key, and leaves no store and no server
//! directory behind; `campaign plan` refuses the netem fault with the same error.

use std::process::Command;

use crate::campaigns::{said, Campaign};

/// The throwaway target's name: a server directory of it would be named after it.
const TARGET: &str = "refused-target";

/// A campaign of one throwaway target (`target`: its further keys) and one `[[fault]]`
/// (`fault`: its keys) over a 10 s run.
fn campaign(target: &str, fault: &str) -> String {
    format!(
        "[campaign]\nname = \"refused\"\n[[target]]\nname = \"{TARGET}\"\n{target}\n\
         [matrix]\nscales = [1]\nclients = [1]\n[run]\nduration = 10\n[[fault]]\n{fault}\n"
    )
}

/// The entries of the temporary directory named after the target.
fn server_dirs() -> Vec<String> {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.contains(TARGET))
        .collect()
}

/// Runs the campaign `body` and asserts that it was refused, saying `key` and `says`,
/// with nothing started: no store, no server directory.
fn assert_refused(name: &str, body: &str, key: &str, says: &str) {
    let dir = pgsurge_testkit::scratch_dir("failover-refused");
    let c = Campaign::write_named(dir.path(), name, body);
    let out = c.run(&[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{body}\n{}", said(&out));
    assert!(
        stderr.contains(key) && stderr.contains(says),
        "not refused as expected\nwanted {key}: {says}\n{body}\n{}",
        said(&out)
    );
    assert!(!stderr.contains("panicked"), "{}", said(&out));
    assert!(
        !std::path::Path::new(&c.store).exists(),
        "the store was created\n{body}"
    );
    assert_eq!(server_dirs(), Vec::<String>::new(), "{body}");
}

#[test]
fn a_fault_past_the_runs_end_is_refused_before_anything_starts() {
    assert_refused(
        "past-end",
        &campaign("replicas = 1", "at = \"12s\"\naction = \"promote\""),
        "fault[0].at",
        "12 s is past the run's end (run.duration = 10 s)",
    );
}

#[test]
fn a_promote_without_a_standby_is_refused_before_anything_starts() {
    assert_refused(
        "no-standby",
        &campaign("", "at = \"3s\"\naction = \"promote\""),
        "fault[0]",
        "promote needs replica1; target \"refused-target\" has 0 replicas",
    );
}

#[test]
fn more_standbys_than_the_machine_allows_are_refused_before_anything_starts() {
    // More than the primary's WAL senders serve.
    assert_refused(
        "too-many",
        &campaign("replicas = 9", "at = \"3s\"\naction = \"stop\""),
        "target[0].replicas",
        "9 replicas asked for; at most 8",
    );
    // Each standby holds shared buffers as large as the primary's: four servers of 4 TB
    // each are more memory than a machine this test runs on has.
    assert_refused(
        "too-big",
        &campaign(
            "replicas = 3\nsettings = { shared_buffers = \"4TB\" }",
            "at = \"3s\"\naction = \"stop\"",
        ),
        "target[0].replicas",
        "a primary and 3 replicas with shared_buffers of 4194304 MB each need 16777216 MB; \
         this machine has",
    );
}

/// Whether this machine's kernel takes a netem queueing discipline, asked on the
/// loopback device of a new network namespace (gone when the command ends).
fn kernel_takes_netem() -> bool {
    let add = |qdisc: &[&str]| {
        Command::new("unshare")
            .args(["--net", "tc", "qdisc", "add", "dev", "lo", "root"])
            .args(qdisc)
            .output()
            .unwrap_or_else(|e| panic!("unshare and tc (util-linux, iproute2) run: {e}"))
            .status
            .success()
    };
    assert!(
        add(&["pfifo", "limit", "10"]),
        "this test adds a qdisc in a new network namespace (needs root, as in CI)"
    );
    add(&["netem", "delay", "1ms"])
}

/// A campaign with a `delay` fault on a network device. Its target is an existing
/// server that cannot be reached: past the netem check, a run fails on it before its
/// first test, so no device is ever touched.
fn netem_campaign() -> String {
    format!(
        "[campaign]\nname = \"refused\"\n[[target]]\nname = \"{TARGET}\"\n\
         conninfo = \"host=no-such-host.invalid dbname=x connect_timeout=2\"\n\
         [matrix]\nscales = [1]\nclients = [1]\n[run]\nduration = 10\n[[fault]]\n\
         at = \"3s\"\naction = \"delay\"\nlink = \"pgsurgenodev0\"\ndelay = \"20ms\"\n"
    )
}

#[test]
fn a_netem_fault_is_refused_before_anything_starts_where_the_kernel_has_no_netem() {
    let body = netem_campaign();
    if !kernel_takes_netem() {
        assert_refused(
            "netem",
            &body,
            "fault[0].link",
            "delay on a network device needs the kernel's netem queueing discipline \
             (sch_netem), and this machine's kernel has none; a standby's replication link \
             is delayed without it through pgsurge's relay: link = \"replication\"",
        );
        return;
    }
    // With netem, the same campaign is not refused for it: it goes on to its target.
    let dir = pgsurge_testkit::scratch_dir("failover-refused");
    let c = Campaign::write_named(dir.path(), "netem", &body);
    let out = c.run(&[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("netem") && stderr.contains("no-such-host.invalid"),
        "{}",
        said(&out)
    );
}

#[test]
fn campaign_plan_refuses_a_netem_fault_as_campaign_run_does() {
    let dir = pgsurge_testkit::scratch_dir("failover-refused");
    let c = Campaign::write_named(dir.path(), "netem-plan", &netem_campaign());
    let plan = |format: &str| {
        crate::campaigns::pgsurge()
            .args(["campaign", "plan", c.file_arg(), "--format", format])
            .args(["--store", &c.store])
            .output()
            .expect("pgsurge campaign plan starts")
    };
    let (text, json) = (plan("text"), plan("json"));
    if kernel_takes_netem() {
        // With netem, the plan is printed: the fault is not refused.
        for out in [&text, &json] {
            assert!(out.status.success(), "plan refused\n{}", said(out));
        }
        return;
    }
    let run = c.run(&[]);
    let error = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(
        run.status.code(),
        Some(1),
        "run not refused\n{}",
        said(&run)
    );
    assert!(error(&run).contains("fault[0].link"), "{}", said(&run));
    for out in [&text, &json] {
        assert_eq!(
            out.status.code(),
            Some(1),
            "plan not refused\n{}",
            said(out)
        );
        assert_eq!(
            error(out),
            error(&run),
            "plan and run differ\n{}",
            said(out)
        );
        assert!(out.stdout.is_empty(), "a plan was printed\n{}", said(out));
    }
    assert!(
        !std::path::Path::new(&c.store).exists(),
        "the store was created"
    );
}
