//! What the workload-pack tests share: `pgsurge` run against the shared test server,
//! and its outcome.

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
