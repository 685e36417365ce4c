//! `pgsurge server build --system meson` on PostgreSQL's release tarball: meson setup,
//! compile and install, contrib included; the installation starts a server that
//! reports the tarball's version and loads `pg_stat_statements`.

use std::path::Path;
use std::process::Command;

use crate::common;

fn server(cache: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pgsurge-server-command-helper"))
        .env("PGSURGE_CACHE_DIR", cache)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_meson_build_of_the_release_tarball_runs_with_its_contrib() {
    let Some(tarball) = pgsurge_testkit::postgres_tarball() else {
        return;
    };
    let Some(_meson) = pgsurge_testkit::command_path("meson") else {
        return;
    };
    let cache = pgsurge_testkit::build_cache_dir();
    let tarball = tarball.to_str().unwrap();
    let (code, out, err) = server(
        &cache,
        &[
            "build",
            "--source",
            tarball,
            "--system",
            "meson",
            "--configure=-Dicu=disabled",
            "--configure=-Dreadline=disabled",
            "--configure=-Dzlib=disabled",
        ],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let bin = out.lines().last().unwrap().trim().to_string();
    assert!(Path::new(&bin).join("postgres").is_file(), "{bin}");
    // Built by meson: the build log says so.
    let log = std::fs::read_to_string(Path::new(&bin).join("../../build.log")).unwrap_or_default();
    assert!(
        log.contains("meson setup") || log.contains("The Meson build system"),
        "{}",
        &log[..log.len().min(2000)]
    );

    let state = pgsurge_testkit::scratch_dir("meson-state");
    let work = common::reachable_tempdir();
    let data = work.path().join("data");
    let sd = state.path().to_str().unwrap();
    let (code, conninfo, err) = server(
        &cache,
        &[
            "start",
            "--state-dir",
            sd,
            "--pg-bin",
            &bin,
            "--data",
            data.to_str().unwrap(),
            "--set",
            "shared_preload_libraries=pg_stat_statements",
        ],
    );
    let stop = || server(&cache, &["stop", "--state-dir", sd, "--all"]);
    if code != 0 {
        stop();
        panic!("{err}");
    }
    let conninfo = conninfo.trim();
    let version = common::psql(Path::new(&bin), conninfo, "show server_version");
    let statements = common::psql(
        Path::new(&bin),
        conninfo,
        "create extension if not exists pg_stat_statements; select count(*) >= 0 from pg_stat_statements",
    );
    let (code, _, err) = stop();
    assert_eq!(code, 0, "{err}");
    let release = Path::new(tarball)
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.split('_').nth(1))
        .and_then(|v| v.strip_suffix(".orig.tar.bz2"))
        .unwrap()
        .to_string();
    assert_eq!(version.trim(), release, "{version}");
    assert!(statements.trim().ends_with('t'), "{statements}");
}
