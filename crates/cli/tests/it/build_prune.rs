//! `server builds --prune` never removes a build a server uses: a build whose
//! binaries a recorded server runs from, or a running process's executable, is kept and
//! named; once the server stops, the build goes. The build is a stand-in tree whose
//! install step copies this machine's PostgreSQL installation, so the server that runs
//! from it is a real PostgreSQL.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn pgsurge(cache: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
    c.env("PGSURGE_CACHE_DIR", cache);
    c
}

fn ok(out: &Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `pg_config --NAME` of the PostgreSQL the tests use.
fn pg_config(name: &str) -> PathBuf {
    let bins = pgsurge_server::PgBinaries::discover().expect("PostgreSQL binaries");
    let out = Command::new(bins.bin_dir().join("pg_config"))
        .arg(format!("--{name}"))
        .output()
        .unwrap();
    assert!(out.status.success());
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// A tree that looks like PostgreSQL's to pgsurge, builds nothing, and installs a copy
/// of this machine's PostgreSQL (its bin, lib and share directories, at the same places
/// relative to each other, so the binaries find their files) under the prefix.
fn copying_tree(dir: &Path) {
    let dirs = [
        pg_config("bindir"),
        pg_config("pkglibdir"),
        pg_config("sharedir"),
    ];
    // The deepest directory all three are under.
    let mut common = dirs[0].clone();
    while !dirs.iter().all(|d| d.starts_with(&common)) {
        common = common.parent().unwrap().to_path_buf();
    }
    let rel = |d: &Path| d.strip_prefix(&common).unwrap().display().to_string();
    let mut install = String::from("install:\n");
    for d in &dirs {
        install.push_str(&format!(
            "\tmkdir -p $(DESTDIR)$(PREFIX)/{r}\n\tcp -a {src}/. $(DESTDIR)$(PREFIX)/{r}/\n",
            r = rel(d),
            src = d.display()
        ));
    }
    if rel(&dirs[0]) != "bin" {
        install.push_str(&format!(
            "\tln -s {} $(DESTDIR)$(PREFIX)/bin\n",
            rel(&dirs[0])
        ));
    }
    std::fs::create_dir_all(dir.join("src/backend")).unwrap();
    std::fs::write(dir.join("Makefile.in"), format!("all:\n\ttrue\n{install}")).unwrap();
    let configure = "#!/bin/sh\nprefix=\nfor a in \"$@\"; do case \"$a\" in --prefix=*) prefix=\"${a#--prefix=}\";; esac; done\n\
                     src=$(dirname \"$0\")\n{ echo \"PREFIX = $prefix\"; cat \"$src/Makefile.in\"; } > Makefile\n";
    std::fs::write(dir.join("configure"), configure).unwrap();
    let mut perm = std::fs::metadata(dir.join("configure"))
        .unwrap()
        .permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(dir.join("configure"), perm).unwrap();
}

/// Stops the servers of a state directory, whatever the test did.
struct StopAll(PathBuf, PathBuf);

impl Drop for StopAll {
    fn drop(&mut self) {
        let _ = pgsurge(&self.1)
            .args(["server", "stop", "--all", "--state-dir"])
            .arg(&self.0)
            .output();
    }
}

/// `server builds --prune`'s stderr, once it exited with `status`: 0 when it removed a
/// build, 3 (nothing to act on) when it kept them all.
fn prune(cache: &Path, state: &Path, status: i32) -> String {
    let out = pgsurge(cache)
        .args(["server", "builds", "--prune", "--state-dir"])
        .arg(state)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(status), "prune: {said}");
    said
}

#[test]
fn prune_keeps_and_names_the_builds_servers_use() {
    let dir = pgsurge_testkit::scratch_dir("build-prune");
    // A server run as another user (root's tests run it as postgres) reaches the build.
    let mut perm = std::fs::metadata(dir.path()).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(dir.path(), perm).unwrap();
    let cache = dir.path().join("cache");
    let state = dir.path().join("state");
    let empty_state = dir.path().join("no-records");
    let tree = dir.path().join("tree");
    copying_tree(&tree);
    let built = pgsurge(&cache)
        .args(["server", "build", "--contrib", "none", "--source"])
        .arg(&tree)
        .output()
        .unwrap();
    let bin_dir = ok(&built, "build").lines().last().unwrap().to_string();
    let _stop = StopAll(state.clone(), cache.clone());
    let started = pgsurge(&cache)
        .args([
            "server",
            "start",
            "--port",
            "0",
            "--pg-bin",
            &bin_dir,
            "--state-dir",
        ])
        .arg(&state)
        .output()
        .unwrap();
    let conninfo = ok(&started, "start").trim().to_string();
    let plpgsql = || {
        Command::new(Path::new(&bin_dir).join("psql"))
            .args([
                "-XAtc",
                "DO $$ BEGIN PERFORM 1; END $$; SELECT 42",
                &conninfo,
            ])
            .output()
            .unwrap()
    };
    assert_eq!(ok(&plpgsql(), "psql").lines().last().unwrap_or(""), "42");

    // The server is recorded: kept, and named by its data directory.
    let said = prune(&cache, &state, 3);
    assert!(said.contains("removed 0 builds"), "{said}");
    assert!(
        said.contains("kept build ") && said.contains(": in use by server "),
        "{said}"
    );
    // Without its record, its processes still hold the build.
    let said = prune(&cache, &empty_state, 3);
    assert!(said.contains("removed 0 builds"), "{said}");
    assert!(
        said.contains(": in use by ") && said.contains("processes: "),
        "{said}"
    );
    // The server still reads its installation (plpgsql's library).
    assert_eq!(
        ok(&plpgsql(), "psql after prune")
            .lines()
            .last()
            .unwrap_or(""),
        "42"
    );
    let listed = pgsurge(&cache).args(["server", "builds"]).output().unwrap();
    assert!(
        ok(&listed, "builds").contains(&bin_dir),
        "the build was removed"
    );

    // Stopped, the server uses the build no more: pruned.
    let stopped = pgsurge(&cache)
        .args(["server", "stop", "--all", "--state-dir"])
        .arg(&state)
        .output()
        .unwrap();
    ok(&stopped, "stop");
    let said = prune(&cache, &state, 0);
    assert!(said.contains("removed 1 build "), "{said}");
    assert!(!said.contains("kept build"), "{said}");
}
