//! What the workload-pack tests share: `pgsurge` run against the shared test server
//! and its outcome, loading the `tpcc` pack, and reading one number with psql.

use pgsurge_server::testing::TestServer;
use std::process::Command;

/// What a `pgsurge` command printed and its exit status.
pub struct Out {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

/// Runs `pgsurge ARGS` with the test server's connection environment.
pub fn pgsurge(srv: &TestServer, args: &[&str]) -> Out {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
    c.args(args);
    for (k, v) in srv.env() {
        c.env(k, v);
    }
    let out = c.output().expect("run pgsurge");
    Out {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

/// Loads the `tpcc` pack at `scale` warehouses over `jobs` connections from `seed`.
pub fn load_tpcc(srv: &TestServer, db: &str, scale: &str, jobs: &str, seed: &str) {
    let o = pgsurge(
        srv,
        &[
            "bench",
            "--workload",
            "tpcc",
            "-i",
            "-s",
            scale,
            "--init-jobs",
            jobs,
            "--random-seed",
            seed,
            db,
        ],
    );
    assert_eq!(o.code, 0, "load failed:\n{}", o.stderr);
    assert!(o.stderr.contains("done in "), "{}", o.stderr);
}

/// The number a query of one value returns.
pub fn num(srv: &TestServer, db: &str, sql: &str) -> f64 {
    let v = srv.psql(db, sql);
    v.trim()
        .parse()
        .unwrap_or_else(|_| panic!("{sql}: not a number: {v:?}"))
}
