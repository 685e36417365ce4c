//! Every output `bench` was asked for is written whole or the run fails: `--json`,
//! `--hdr-log` and `-l` logs into a directory that does not exist, or onto a full
//! filesystem (a tiny tmpfs the test mounts), end with a message and exit status 1, and
//! leave no file (and no temporary file) behind. An output path is never replaced by
//! something else: device nodes (made with `mknod` in a private directory), FIFOs and a
//! shell's `>(cmd)` are written in place, symbolic links are written through, and a
//! path that cannot be opened fails before the benchmark runs.

use std::path::Path;
use std::process::Command;

use pgsurge_server::testing::TestServer;

fn bench(srv: &TestServer, args: &[&str]) -> (String, i32) {
    let (_, err, code) = bench_out(srv, args);
    (err, code)
}

/// stdout, stderr and the exit status of `pgsurge bench ARGS`.
fn bench_out(srv: &TestServer, args: &[&str]) -> (String, String, i32) {
    let out = srv
        .apply_env(&mut Command::new(env!("CARGO_BIN_EXE_pgsurge")))
        .arg("bench")
        .args(args)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn initialized(srv: &TestServer, name: &str) -> String {
    let db = srv.create_database(name);
    let (err, code) = bench(srv, &["-i", "-s", "1", "-q", &db]);
    assert_eq!(code, 0, "{err}");
    db
}

fn files_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn outputs_into_a_missing_directory_fail_the_run() {
    let srv = TestServer::shared();
    let db = initialized(srv, "outputs_missing");
    let dir = pgsurge_testkit::scratch_dir("bench-outputs");
    let json = dir.path().join("no-such-dir/r.json");
    let (err, code) = bench(
        srv,
        &[
            "-n",
            "-S",
            "-t",
            "50",
            &format!("--json={}", json.display()),
            &db,
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains(&json.display().to_string()), "{err}");
    let hlog = dir.path().join("no-such-dir/r.hlog");
    let (err, code) = bench(
        srv,
        &[
            "-n",
            "-S",
            "-t",
            "50",
            &format!("--hdr-log={}", hlog.display()),
            &db,
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains(&hlog.display().to_string()), "{err}");
    assert!(files_in(dir.path()).is_empty());
}

/// A tmpfs of two pages mounted on a fresh directory, unmounted on drop.
struct TinyFs(pgsurge_testkit::ScratchDir);

impl TinyFs {
    fn mount() -> Option<TinyFs> {
        let dir = pgsurge_testkit::scratch_dir("bench-outputs");
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=8k", "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(TinyFs(dir))
    }
}

impl Drop for TinyFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

#[test]
fn outputs_onto_a_full_filesystem_fail_the_run_and_leave_nothing() {
    let Some(fs) = TinyFs::mount() else {
        // Mounting needs root (CI runs as root).
        pgsurge_testkit::missing_prerequisite("mount -t tmpfs failed (not root?)");
        return;
    };
    let srv = TestServer::shared();
    let db = initialized(srv, "outputs_full");
    // Fill it: no page left for anything written.
    std::fs::write(fs.0.path().join("filler"), vec![b'x'; 8192]).unwrap();
    let json = fs.0.path().join("r.json");
    let hlog = fs.0.path().join("r.hlog");
    let (err, code) = bench(
        srv,
        &[
            "-n",
            "-S",
            "-T",
            "2",
            &format!("--json={}", json.display()),
            &format!("--hdr-log={}", hlog.display()),
            &db,
        ],
    );
    assert_eq!(code, 1, "{err}");
    for path in [&json, &hlog] {
        assert!(
            err.contains(&format!("{}", path.display())) && err.contains("No space left on device"),
            "{err}"
        );
    }
    assert_eq!(files_in(fs.0.path()), vec!["filler".to_string()]);
    // `-l` logs too: the first failed write gives the thread's log up.
    let prefix = fs.0.path().join("pgbench_log");
    let (err, code) = bench(
        srv,
        &[
            "-n",
            "-S",
            "-T",
            "2",
            "-j",
            "2",
            "-c",
            "2",
            "-l",
            &format!("--log-prefix={}", prefix.display()),
            &db,
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("could not write to log file") && err.contains("No space left on device"),
        "{err}"
    );
    assert_eq!(files_in(fs.0.path()), vec!["filler".to_string()]);
}

#[test]
fn transaction_logs_appear_whole_after_the_run() {
    let srv = TestServer::shared();
    let db = initialized(srv, "outputs_logs");
    let dir = pgsurge_testkit::scratch_dir("bench-outputs");
    let prefix = dir.path().join("pgbench_log");
    let (err, code) = bench(
        srv,
        &[
            "-n",
            "-S",
            "-t",
            "100",
            "-c",
            "2",
            "-j",
            "2",
            "-l",
            &format!("--log-prefix={}", prefix.display()),
            &db,
        ],
    );
    assert_eq!(code, 0, "{err}");
    let mut names = files_in(dir.path());
    names.sort();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names.iter().all(|n| n.starts_with("pgbench_log.")),
        "{names:?}"
    );
    let lines: usize = names
        .iter()
        .map(|n| {
            std::fs::read_to_string(dir.path().join(n))
                .unwrap()
                .lines()
                .count()
        })
        .sum();
    assert_eq!(lines, 200);
}

/// A device node made in `dir` (never in the system's `/dev`): `mknod NAME c MAJOR MINOR`.
fn device(dir: &Path, name: &str, major: u32, minor: u32) -> std::path::PathBuf {
    let p = dir.join(name);
    let made = Command::new("mknod")
        .arg(&p)
        .args(["c", &major.to_string(), &minor.to_string()])
        .status()
        .expect("mknod runs");
    assert!(
        made.success(),
        "mknod {} (the suite runs as root)",
        p.display()
    );
    p
}

fn is_char_device(p: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(p)
        .unwrap()
        .file_type()
        .is_char_device()
}

#[test]
fn device_nodes_are_written_in_place_never_replaced() {
    if !pgsurge_testkit::is_root() {
        pgsurge_testkit::missing_prerequisite("root, to make device nodes with mknod");
        return;
    }
    let srv = TestServer::shared();
    let db = initialized(srv, "outputs_devices");
    let dir = pgsurge_testkit::scratch_dir("bench-outputs");
    // The null and full devices' numbers (1,3 and 1,7), as nodes of this directory.
    let null = device(dir.path(), "null", 1, 3);
    let full = device(dir.path(), "full", 1, 7);
    let (err, code) = bench(
        srv,
        &[
            "-n",
            "-S",
            "-t",
            "20",
            &format!("--json={}", null.display()),
            &format!("--hdr-log={}", null.display()),
            &db,
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(is_char_device(&null), "the device node is still a device");
    let (err, code) = bench(
        srv,
        &[
            "-n",
            "-S",
            "-t",
            "20",
            &format!("--json={}", full.display()),
            &db,
        ],
    );
    assert_eq!(code, 1, "a full device is an output error: {err}");
    assert!(
        err.contains(&full.display().to_string()) && err.contains("No space left on device"),
        "{err}"
    );
    assert!(is_char_device(&full), "the device node is still a device");
    let mut names = files_in(dir.path());
    names.sort();
    assert_eq!(names, ["full", "null"], "no temporary file left");
}

#[test]
fn a_fifo_reader_gets_the_json_document() {
    let srv = TestServer::shared();
    let db = initialized(srv, "outputs_fifo");
    let dir = pgsurge_testkit::scratch_dir("bench-outputs");
    let fifo = dir.path().join("result.fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    // The reader reports through a channel: if the FIFO were replaced instead of
    // written, its open would wait for ever, and the test fails on the timeout.
    let (tx, rx) = std::sync::mpsc::channel();
    {
        let fifo = fifo.clone();
        std::thread::spawn(move || tx.send(std::fs::read_to_string(&fifo).unwrap()));
    }
    let (err, code) = bench(
        srv,
        &[
            "-n",
            "-S",
            "-t",
            "30",
            &format!("--json={}", fifo.display()),
            &db,
        ],
    );
    assert_eq!(code, 0, "{err}");
    let text = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("the FIFO's reader got the document");
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["totals"]["transactions"].as_u64(), Some(30), "{doc}");
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
}

#[test]
fn a_symlink_is_written_through_and_stays_a_link() {
    let srv = TestServer::shared();
    let db = initialized(srv, "outputs_symlink");
    let dir = pgsurge_testkit::scratch_dir("bench-outputs");
    std::fs::create_dir(dir.path().join("results")).unwrap();
    let target = dir.path().join("results/run.json");
    std::fs::write(&target, "old").unwrap();
    let link = dir.path().join("latest.json");
    std::os::unix::fs::symlink("results/run.json", &link).unwrap();
    let hlog_target = dir.path().join("results/run.hlog");
    let hlog_link = dir.path().join("latest.hlog");
    std::os::unix::fs::symlink(&hlog_target, &hlog_link).unwrap();
    let (err, code) = bench(
        srv,
        &[
            "-n",
            "-S",
            "-t",
            "25",
            &format!("--json={}", link.display()),
            &format!("--hdr-log={}", hlog_link.display()),
            &db,
        ],
    );
    assert_eq!(code, 0, "{err}");
    for l in [&link, &hlog_link] {
        assert!(
            std::fs::symlink_metadata(l)
                .unwrap()
                .file_type()
                .is_symlink(),
            "{} is still a link",
            l.display()
        );
    }
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&target).unwrap()).unwrap();
    assert_eq!(doc["totals"]["transactions"].as_u64(), Some(25), "{doc}");
    assert!(std::fs::read_to_string(&hlog_target)
        .unwrap()
        .contains("#[StartTime:"));
    let mut names = files_in(&dir.path().join("results"));
    names.sort();
    assert_eq!(names, ["run.hlog", "run.json"]);
}

#[test]
fn a_shell_process_substitution_gets_the_json_document() {
    let srv = TestServer::shared();
    let db = initialized(srv, "outputs_procsub");
    let dir = pgsurge_testkit::scratch_dir("bench-outputs");
    let copy = dir.path().join("copy.json");
    // `>(cmd)` hands pgsurge a `/dev/fd/N` pipe; bash's `wait` waits for `cmd`.
    let script = format!(
        "\"$0\" bench -n -S -t 15 --json=>(cat > '{}') '{db}'; rc=$?; wait; exit $rc",
        copy.display()
    );
    let out = srv
        .apply_env(&mut Command::new("bash"))
        .args(["-c", &script, env!("CARGO_BIN_EXE_pgsurge")])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&copy).unwrap()).unwrap();
    assert_eq!(doc["totals"]["transactions"].as_u64(), Some(15), "{doc}");
}

#[test]
fn an_output_that_cannot_be_opened_fails_before_the_run() {
    let srv = TestServer::shared();
    let db = initialized(srv, "outputs_precheck");
    let dir = pgsurge_testkit::scratch_dir("bench-outputs");
    // A directory is no JSON file: the run must not start (it would take minutes).
    let (out, err, code) = bench_out(
        srv,
        &[
            "-n",
            "-S",
            "-T",
            "600",
            &format!("--json={}", dir.path().display()),
            &db,
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&dir.path().display().to_string()) && err.contains("Is a directory"),
        "{err}"
    );
    assert!(!out.contains("transactions actually processed"), "{out}");
    let (out, out_err, code) = bench_out(
        srv,
        &[
            "-n",
            "-S",
            "-T",
            "600",
            &format!("--hdr-log={}", dir.path().display()),
            &db,
        ],
    );
    assert_eq!(code, 1, "{out_err}");
    assert!(out_err.contains("Is a directory"), "{out_err}");
    assert!(!out.contains("transactions actually processed"), "{out}");
    assert!(files_in(dir.path()).is_empty());
}
