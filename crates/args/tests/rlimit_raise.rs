//! pgbench 18 raises the soft RLIMIT_NOFILE limit when `-c` needs more descriptors
//! than the soft limit allows but the hard limit permits (pgbench 15–17 failed). This
//! test binary lowers its own soft limit, so it holds this single test.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::process::Command;

use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};

#[test]
fn soft_limit_is_raised_for_many_clients() {
    let before = getrlimit(Resource::Nofile);
    if before.maximum.is_some_and(|m| m < 203) {
        pgsurge_testkit::missing_prerequisite("an open-files hard limit of at least 203");
        return;
    }
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(64),
            maximum: before.maximum,
        },
    )
    .expect("lower the soft limit");

    // pgbench 15 (if present) refuses: it compared with the soft limit.
    if let Ok(out) = Command::new("/usr/lib/postgresql/15/bin/pgbench")
        .arg0("pgbench")
        .args(["-c", "200", "-t", "1"])
        .env_clear()
        .env("PGHOST", "/nonexistent-pgsurge-rlimit")
        .env("LC_ALL", "C")
        .output()
    {
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            err.starts_with(
                "pgbench: error: need at least 203 open files, but system limit is 64\n"
            ),
            "{err}"
        );
    }

    let argv: Vec<OsString> = ["-c", "200", "-t", "1"]
        .iter()
        .map(OsString::from)
        .collect();
    let env = |k: &str| (k == "PGDATABASE").then(|| "db".to_string());
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let outcome =
        pgsurge_args::parse_with_stdin(&argv, &env, &mut std::io::empty(), &mut out, &mut err);
    assert!(
        matches!(outcome, pgsurge_args::Outcome::Bench(ref b) if b.clients == 200),
        "{outcome:?}: {}",
        String::from_utf8_lossy(&err)
    );
    assert!(err.is_empty());
    assert_eq!(getrlimit(Resource::Nofile).current, Some(203));
}
