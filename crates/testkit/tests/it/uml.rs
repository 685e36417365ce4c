//! The User-mode Linux guest of `pgsurge_testkit::uml`: a command run in it gives back
//! its output, errors and exit status with its environment as given, nothing it wrote
//! to `/tmp` reaches this machine's, and a guest past its deadline is killed with every
//! process it had.

use std::path::Path;
use std::time::Duration;

use pgsurge_testkit::uml;

/// Whether a guest can be booted here; if not, says so through the prerequisite gate.
fn can_boot() -> bool {
    match uml::unavailable(&[]) {
        Some(why) => {
            pgsurge_testkit::missing_prerequisite(&why);
            false
        }
        None => true,
    }
}

#[test]
fn a_guest_runs_its_command_and_gives_back_what_it_did() {
    if !can_boot() {
        return;
    }
    let dir = pgsurge_testkit::scratch_dir("uml");
    let marker = format!("pgsurge-uml-{}", std::process::id());
    let line = format!(
        "echo \"$GREETING\"; echo to-err >&2; echo \"$TMPDIR\"; touch /tmp/{marker}; \
         grep -q 'User Mode Linux' /proc/cpuinfo && echo uml; exit 3"
    );
    let run = uml::boot(
        &dir,
        &[],
        Path::new("/bin/sh"),
        &["-c", &line],
        &[("GREETING", "it's a guest")],
    )
    .unwrap_or_else(|e| panic!("the guest did not run its command: {e}"));
    assert_eq!(run.status, Some(3), "{}", run.said());
    assert_eq!(run.stdout, "it's a guest\n/tmp\numl\n", "{}", run.said());
    assert_eq!(run.stderr, "to-err\n", "{}", run.said());
    let leaked = std::env::temp_dir().join(&marker);
    let there = Path::new("/tmp").join(&marker);
    assert!(
        !leaked.exists() && !there.exists(),
        "the guest's /tmp reached this machine's"
    );
    assert_eq!(uml::processes_of(&dir), Vec::<i32>::new());
}

#[test]
fn a_guest_past_its_deadline_is_killed_with_all_its_processes() {
    if !can_boot() {
        return;
    }
    let dir = pgsurge_testkit::scratch_dir("uml");
    // While it runs, its processes are seen (so that none seen afterwards says
    // something).
    let (ended, seen) = std::thread::scope(|s| {
        let watch = s.spawn(|| {
            let deadline = std::time::Instant::now() + Duration::from_secs(18);
            let mut most = 0;
            while std::time::Instant::now() < deadline {
                most = most.max(uml::processes_of(&dir).len());
                std::thread::sleep(Duration::from_millis(200));
            }
            most
        });
        let ended = uml::boot_within(
            &dir,
            &[],
            Path::new("/bin/sh"),
            &["-c", "sleep 600 & sleep 600"],
            &[],
            Duration::from_secs(20),
        );
        (ended, watch.join().unwrap())
    });
    assert!(
        seen > 1,
        "the guest's processes were not seen while it ran: {seen}"
    );
    let err = ended.expect_err("a guest that sleeps for 10 minutes ended within 20 s");
    assert!(err.contains("ran past 20 s"), "{err}");
    assert_eq!(uml::processes_of(&dir), Vec::<i32>::new(), "left running");
}
