//! `bench --profile` on a server of its own: the server's and the client's stacks over
//! the run are sampled with perf, their hottest functions printed after the report and
//! the whole profiles stored by `--store` (the client's without a note that its stacks
//! are cut short: that is said of the server's only; frames without symbols are, above
//! a share of the samples, with the package to install); a frequency out of range is
//! refused, and a machine without perf runs the benchmark without a profile, saying why.

use pgsurge_results::profile::ProfileKind;
use pgsurge_server::testing::{TestServer, TestServerOptions};
use std::process::Command;

fn bench(srv: &TestServer, args: &[&str], path: Option<&str>) -> (String, String, i32) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
    c.arg("bench").args(args);
    srv.apply_env(&mut c);
    if let Some(p) = path {
        c.env("PATH", p);
    }
    let out = c.output().expect("run pgsurge bench");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn profiles_of_the_server_and_the_client_are_printed_and_stored() {
    if pgsurge_testkit::command_path("perf").is_none() {
        return;
    }
    let srv = TestServer::start(TestServerOptions::default());
    let db = srv.create_database("profile");
    let (_, err, code) = bench(&srv, &["-i", "-s", "1", "-q", &db], None);
    assert_eq!(code, 0, "{err}");

    let (_, err, code) = bench(&srv, &["-n", "-S", "-t", "5", "--profile=0", &db], None);
    assert_eq!(code, 1);
    assert!(err.contains("invalid --profile frequency"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let store_arg = format!("--store={}", store.display());
    let (out, err, code) = bench(
        &srv,
        &[
            "-n",
            "-c",
            "2",
            "-t",
            "1500",
            "--profile=999",
            &store_arg,
            &db,
        ],
        None,
    );
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("--profile"), "{err}");
    assert!(out.contains("profile (server on-CPU): "), "{out}");
    assert!(out.contains("profile (client on-CPU): "), "{out}");

    let mut s = pgsurge_store::Store::open(store.to_str().unwrap()).unwrap();
    let runs = s.list_runs(&Default::default()).unwrap();
    assert_eq!(runs.len(), 1);
    let profiles: Vec<_> = s
        .profiles(runs[0].id)
        .unwrap()
        .iter()
        .map(|r| pgsurge_store::profile::decode(r).unwrap())
        .collect();
    let server = profiles
        .iter()
        .find(|p| p.kind == ProfileKind::ServerCpu)
        .expect("server profile stored");
    let client = profiles
        .iter()
        .find(|p| p.kind == ProfileKind::ClientCpu)
        .expect("client profile stored");
    assert_eq!(server.frequency_hz, Some(999));
    assert!(server.total() > 0 && client.total() > 0);
    // Every server stack is a server process's; the backends' work is in it.
    assert!(
        server.stacks.keys().all(|s| s.starts_with("postgres;")),
        "{:?}",
        server.stacks.keys().take(5).collect::<Vec<_>>()
    );
    let inclusive = server.inclusive_counts();
    assert!(
        inclusive.contains_key("PostgresMain"),
        "no PostgresMain among {:?}",
        inclusive.keys().take(40).collect::<Vec<_>>()
    );
    // Frames without symbols: the note is there exactly when more than the threshold's
    // share of the samples are in one (their innermost frame). Debian's server is stripped: without its
    // debug symbols installed its static functions have no names, and the note names
    // the package.
    let unsymbolized = pgsurge_observe::profile_notes::unsymbolized_samples(&server.stacks);
    let by_binary = &unsymbolized.by_binary;
    let share = unsymbolized.innermost as f64 / server.total() as f64;
    let note = server
        .notes
        .iter()
        .find(|n| n.starts_with("frames without symbols"));
    assert_eq!(
        note.is_some(),
        share > pgsurge_observe::profile_notes::UNSYMBOLIZED_NOTE_SHARE,
        "share {share}, {by_binary:?}, notes {:?}",
        server.notes
    );
    let debian_15 = srv.bin_dir() == std::path::Path::new("/usr/lib/postgresql/15/bin");
    if debian_15 && !debug_symbols_installed("postgresql-15-dbgsym") {
        let note = note.expect("a note on the stripped server's frames without symbols");
        assert!(note.contains("postgresql-15-dbgsym"), "{note}");
        assert!(by_binary.contains_key("postgres"), "{by_binary:?}");
    }
    // The client's stacks pass through libraries built without frame pointers
    // wherever pgsurge runs: they are not judged cut short (the server's are, see
    // profiling_build.rs).
    assert!(
        !client.notes.iter().any(|n| n.contains("cut short")),
        "{:?}",
        client.notes
    );
    // The client's stacks are this run's: pgsurge's own code is on them.
    assert!(
        client.stacks.keys().any(|s| s.contains("pgsurge")),
        "{:?}",
        client.stacks.keys().take(5).collect::<Vec<_>>()
    );

    // Without perf the run goes on, without a profile, and says why.
    let (out, err, code) = bench(
        &srv,
        &["-n", "-S", "-t", "20", "--profile", &db],
        Some("/nonexistent"),
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("--profile: no profile is taken: perf is not installed"),
        "{err}"
    );
    assert!(
        out.contains("number of transactions actually processed: 20"),
        "{out}"
    );
    assert!(!out.contains("profile ("), "{out}");
}

/// Whether Debian's package `name` is installed.
fn debug_symbols_installed(name: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f", "${Status}", name])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
}
