//! The build cache with a stand-in source tree (a `configure` that writes a Makefile
//! whose build takes two seconds, "compiles" two files and installs a `postgres`
//! script): two builds of the
//! same inputs at once build once — the second waits, then takes the first one's
//! result — and `server builds` lists the build until `--prune` empties the cache;
//! inputs that are not files and the prefix in any spelling are refused before a build,
//! and debug flags in configure's variables are named by `campaign plan`.

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
        "all:\n\tsleep 2\n\t@echo 'cc -O2 -c -o a.o a.c'\n\t@echo 'cc -O2 -c -o b.o b.c'\n\techo built >> {count}\ninstall:\n\tmkdir -p $(DESTDIR)$(PREFIX)/bin\n\
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
    // The build's time is one wall time: the build log's, the line the build printed and
    // the cache's list say the same, and it is at least the build's own two seconds.
    let listed = text
        .split(", built in ")
        .nth(1)
        .and_then(|t| t.split(|c: char| c.is_whitespace() || c == ',').next())
        .unwrap_or_else(|| panic!("no build time in {text}"));
    let install = Path::new(&bin).parent().unwrap();
    let log = std::fs::read_to_string(install.with_file_name("build.log")).unwrap();
    assert!(
        log.contains(&format!("\n### built in {listed} (wall time")),
        "the log does not say {listed}: {}",
        &log[log.len().saturating_sub(300)..]
    );
    assert!(
        errs.iter()
            .any(|e| e.contains(&format!("  built in {listed}: "))),
        "{errs:#?}"
    );
    let seconds: f64 = listed.trim_end_matches('s').parse().unwrap_or(60.0);
    assert!(seconds >= 2.0, "built in {listed}, under the build's 2 s");
    // The build records the files its make compiled: the total a later build of the
    // same kind counts its progress against.
    let info: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(install.with_file_name("build.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(info["files_compiled"], 2, "{info}");
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
    assert!(prune.status.success(), "{said}");
    // An empty cache: nothing to list, nothing to remove (exit status 3).
    let empty = pgsurge(&cache).args(["server", "builds"]).output().unwrap();
    assert_eq!(empty.status.code(), Some(3));
    assert!(empty.stdout.is_empty());
    assert!(String::from_utf8_lossy(&empty.stderr).contains("no builds in the cache"));
    assert!(!Path::new(&bin).exists());
}

/// Runs `pgsurge ARGS` with the cache at `cache`; (success, stdout + stderr).
fn run(cache: &Path, args: &[&std::ffi::OsStr]) -> (bool, String) {
    let out = pgsurge(cache)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn inputs_that_are_not_files_and_every_prefix_form_are_refused_before_any_build() {
    let dir = pgsurge_testkit::scratch_dir("build-inputs");
    let cache = dir.path().join("cache");
    let tree = dir.path().join("tree");
    let count = dir.path().join("builds-run");
    stand_in_tree(&tree, &count);
    let fifo = dir.path().join("fifo.patch");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let build = |extra: &[&std::ffi::OsStr]| {
        let mut args: Vec<&std::ffi::OsStr> = ["server", "build", "--contrib", "none", "--source"]
            .iter()
            .map(std::ffi::OsStr::new)
            .collect();
        args.push(tree.as_os_str());
        args.extend_from_slice(extra);
        run(&cache, &args)
    };
    let patch = |p: &Path| build(&["--patch".as_ref(), p.as_os_str()]);
    // A FIFO with no writer and a device that never ends, as patches.
    let (ok, text) = patch(&fifo);
    assert!(
        !ok && text.contains("fifo.patch") && text.contains("a FIFO"),
        "{text}"
    );
    let (ok, text) = patch(Path::new("/dev/zero"));
    assert!(
        !ok && text.contains("/dev/zero") && text.contains("a device"),
        "{text}"
    );
    // Every spelling of the prefix configure takes.
    for arg in [
        "--pre=/tmp/elsewhere",
        "-prefix=/tmp/elsewhere",
        "--prefi=/tmp/elsewhere",
    ] {
        let (ok, text) = build(&[format!("--configure={arg}").as_ref()]);
        assert!(
            !ok && text.contains("leave the prefix out"),
            "{arg}: {text}"
        );
    }
    // A FIFO inside the source tree.
    let inside = tree.join("src/backend/pipe");
    assert!(Command::new("mkfifo")
        .arg(&inside)
        .status()
        .unwrap()
        .success());
    let (ok, text) = build(&[]);
    assert!(
        !ok && text.contains("src/backend/pipe") && text.contains("FIFO"),
        "{text}"
    );
    std::fs::remove_file(&inside).unwrap();
    assert!(!count.exists(), "a build ran");

    // Flags that make a debug build, in a variable given to configure, are named by
    // campaign plan as --enable-cassert is.
    for (configure, named) in [
        (r#"["CFLAGS=-O0"]"#, "-O0"),
        (r#"["CFLAGS=-Og -g"]"#, "-Og"),
        (r#"["LDFLAGS=-fsanitize=address"]"#, "-fsanitize=address"),
        (r#"["--enable-cassert"]"#, "--enable-cassert"),
    ] {
        let file = dir.path().join("debug.toml");
        std::fs::write(
            &file,
            format!(
                "[campaign]\nname = \"debug\"\n\n[[target]]\nname = \"dbg\"\nsource = {:?}\n\
                 configure = {configure}\n\n[matrix]\nscales = [1]\nclients = [1]\n\
                 scripts = [\"select-only\"]\n",
                tree.display().to_string()
            ),
        )
        .unwrap();
        let (ok, text) = run(
            &cache,
            &["campaign".as_ref(), "plan".as_ref(), file.as_os_str()],
        );
        assert!(ok, "{text}");
        assert!(
            text.contains(&format!("is built with {named}"))
                && text.contains("timings meaningless"),
            "{configure}: {text}"
        );
    }
}
