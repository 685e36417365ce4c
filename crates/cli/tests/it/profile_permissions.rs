//! `bench --profile` without root. Where `kernel.perf_event_paranoid` lets a user
//! profile its own processes (2, the kernel's default), the server's own user profiles
//! the server and itself; where it is above 2 (Debian's "no unprivileged profiling"),
//! the run goes on without a profile and says why. The setting is the machine's: the
//! test puts it back when it ends, also when it fails.

use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::process::Command;

use pgsurge_server::testing::{TestServer, TestServerOptions};

const PARANOID: &str = "/proc/sys/kernel/perf_event_paranoid";

/// `kernel.perf_event_paranoid` as it was, written back when dropped.
struct Paranoid(String);

impl Paranoid {
    fn save() -> Paranoid {
        Paranoid(std::fs::read_to_string(PARANOID).expect("read perf_event_paranoid"))
    }

    fn set(&self, level: i32) {
        std::fs::write(PARANOID, level.to_string()).expect("write perf_event_paranoid");
    }
}

impl Drop for Paranoid {
    fn drop(&mut self) {
        if let Err(e) = std::fs::write(PARANOID, self.0.trim()) {
            eprintln!("could not put perf_event_paranoid back to {}: {e}", self.0);
        }
    }
}

/// `pgsurge bench ARGS` run as the user (uid, gid) with its own temporary directory.
fn bench_as(
    srv: &TestServer,
    user: (u32, u32),
    tmp: &std::path::Path,
    args: &[&str],
) -> (String, String, i32) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
    c.arg("bench").args(args);
    srv.apply_env(&mut c);
    c.env("TMPDIR", tmp)
        .env("HOME", tmp)
        .uid(user.0)
        .gid(user.1);
    c.current_dir(tmp);
    let out = c.output().expect("run pgsurge bench");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn profile_without_root_where_perf_event_paranoid_allows_and_a_clear_message_where_not() {
    if pgsurge_testkit::command_path("perf").is_none() {
        return;
    }
    if !pgsurge_testkit::is_root() {
        pgsurge_testkit::missing_prerequisite(
            "changing kernel.perf_event_paranoid and running as another user need root",
        );
        return;
    }
    let srv = TestServer::start(TestServerOptions::default());
    let db = srv.create_database("profile_user");
    let owner = std::fs::metadata(srv.data_dir()).expect("stat data directory");
    let user = (owner.uid(), owner.gid());
    assert_ne!(user.0, 0, "the test server runs as an unprivileged user");
    let tmp = tempfile::tempdir().unwrap();
    std::os::unix::fs::chown(tmp.path(), Some(user.0), Some(user.1)).unwrap();

    let (_, err, code) = bench_as(&srv, user, tmp.path(), &["-i", "-s", "1", "-q", &db]);
    assert_eq!(code, 0, "{err}");

    let paranoid = Paranoid::save();
    // A user's own processes: the server it runs and itself, in user space.
    paranoid.set(2);
    let (out, err, code) = bench_as(
        &srv,
        user,
        tmp.path(),
        &["-n", "-c", "2", "-t", "1500", "--profile=999", &db],
    );
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("--profile"), "{err}");
    assert!(out.contains("profile (server on-CPU): "), "{out}");
    assert!(out.contains("profile (client on-CPU): "), "{out}");

    // Nothing for users: the benchmark runs, without a profile, and says why.
    paranoid.set(3);
    let (out, err, code) = bench_as(
        &srv,
        user,
        tmp.path(),
        &["-n", "-S", "-t", "20", "--profile", &db],
    );
    drop(paranoid);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(
            "--profile: no profile is taken: kernel.perf_event_paranoid is 3: profiling \
             needs root here"
        ),
        "{err}"
    );
    assert!(
        out.contains("number of transactions actually processed: 20"),
        "{out}"
    );
    assert!(!out.contains("profile ("), "{out}");
    // The profiles' working files went with the runs.
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
}
