//! The build cache with a stand-in source tree (a `configure` that writes a Makefile
//! whose build takes two seconds and installs a `postgres` script): two builds of the
//! same inputs at once build once — the second waits, then takes the first one's
//! result — and `server builds` lists the build until `--prune` empties the cache.

use std::path::Path;
use std::process::{Command, Stdio};

fn pgsurge(cache: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
    c.env("PGSURGE_CACHE_DIR", cache);
    c
}

/// A tree that looks like PostgreSQL's to pgsurge and builds in two seconds, counting
/// its builds in `count`; like PostgreSQL's makefiles, it installs under `$(DESTDIR)`.
fn stand_in_tree(dir: &Path, count: &Path) {
    std::fs::create_dir_all(dir.join("src/backend")).unwrap();
    let makefile = format!(
        "all:\n\tsleep 2\n\techo built >> {count}\ninstall:\n\tmkdir -p $(DESTDIR)$(PREFIX)/bin\n\
         \tprintf '#!/bin/sh\\necho \"postgres (PostgreSQL) 18.0\"\\n' > $(DESTDIR)$(PREFIX)/bin/postgres\n\
         \tchmod +x $(DESTDIR)$(PREFIX)/bin/postgres\n",
        count = count.display()
    );
    std::fs::write(dir.join("Makefile.in"), makefile).unwrap();
    let configure = "#!/bin/sh\nprefix=\nfor a in \"$@\"; do case \"$a\" in --prefix=*) prefix=\"${a#--prefix=}\";; esac; done\n\
                     src=$(dirname \"$0\")\n{ echo \"PREFIX = $prefix\"; cat \"$src/Makefile.in\"; } > Makefile\n";
    std::fs::write(dir.join("configure"), configure).unwrap();
    let mut perm = std::fs::metadata(dir.join("configure"))
        .unwrap()
        .permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(dir.join("configure"), perm).unwrap();
}

#[test]
fn two_builds_of_the_same_inputs_build_once_and_the_cache_lists_and_prunes() {
    let dir = pgsurge_testkit::scratch_dir("build-cache");
    let cache = dir.path().join("cache");
    let tree = dir.path().join("tree");
    let count = dir.path().join("builds-run");
    stand_in_tree(&tree, &count);
    let start = || {
        pgsurge(&cache)
            .args(["server", "build", "--contrib", "none", "--source"])
            .arg(&tree)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (first, second) = (start(), start());
    let (first, second) = (
        first.wait_with_output().unwrap(),
        second.wait_with_output().unwrap(),
    );
    for out in [&first, &second] {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let bin = String::from_utf8_lossy(&first.stdout).trim().to_string();
    assert_eq!(String::from_utf8_lossy(&second.stdout).trim(), bin);
    assert!(Path::new(&bin).join("postgres").is_file());
    // One of the two compiled; the other waited for it and took its result.
    assert_eq!(std::fs::read_to_string(&count).unwrap(), "built\n");
    let errs = [first.stderr, second.stderr].map(|e| String::from_utf8_lossy(&e).into_owned());
    assert_eq!(
        errs.iter().filter(|e| e.contains("  built in ")).count(),
        1,
        "{errs:#?}"
    );
    assert!(
        errs.iter()
            .any(|e| e.contains("waiting for it") && e.contains("cached build")),
        "{errs:#?}"
    );

    let list = pgsurge(&cache).args(["server", "builds"]).output().unwrap();
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(list.status.success());
    let tree_text = format!("source tree {}", tree.canonicalize().unwrap().display());
    assert!(text.contains(&tree_text), "{text}");
    assert!(text.contains(&bin), "{text}");
    // A changed file is another source: a new build.
    std::fs::write(tree.join("src/backend/changed.c"), "int x;\n").unwrap();
    let again = pgsurge(&cache)
        .args(["server", "build", "--contrib", "none", "--source"])
        .arg(&tree)
        .output()
        .unwrap();
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_ne!(String::from_utf8_lossy(&again.stdout).trim(), bin);
    assert_eq!(std::fs::read_to_string(&count).unwrap(), "built\nbuilt\n");

    let prune = pgsurge(&cache)
        .args(["server", "builds", "--prune"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&prune.stderr);
    assert!(said.contains("removed 2 builds"), "{said}");
    let empty = pgsurge(&cache).args(["server", "builds"]).output().unwrap();
    assert!(empty.stdout.is_empty());
    assert!(String::from_utf8_lossy(&empty.stderr).contains("no builds in the cache"));
    assert!(!Path::new(&bin).exists());
}
