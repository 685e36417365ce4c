//! A campaign with `[repeats] builds = 2, starts = 2` interrupted midway (Ctrl-C once
//! three of its eight runs are stored), then run again: the second invocation runs
//! exactly the missing repeats, each on the layout build its repeat is planned on
//! and in a server start of its own planned level, and finds both layout builds in
//! the cache instead of building them again. The builds are those of the layout-builds
//! test (the same tarball, configure arguments and seeds), so a warm cache builds
//! nothing here.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Stdio;
use std::time::{Duration, Instant};

use pgsurge_store::{facts, RunFilter, Store};

use super::campaigns::{wait_while_running, Campaign};
use super::layout_builds::{layout_campaign, layout_prerequisites};

/// The planned (build, start) of repeat `r` of 8: two runs per start, the builds
/// alternating, as `docs/campaign-reference.md` describes the nesting.
fn planned_level(r: i64) -> (i64, i64) {
    let group = (r - 1) / 2;
    (group % 2, group / 2)
}

#[test]
fn an_interrupted_campaign_over_layout_builds_resumes_where_it_stopped() {
    let Some(tarball) = layout_prerequisites() else {
        return;
    };
    let _heavy = pgsurge_testkit::one_heavy_test_at_a_time();
    let cache = pgsurge_testkit::build_cache_dir();
    std::fs::create_dir_all(&cache).unwrap();
    let dir = pgsurge_testkit::scratch_dir("layout-resume");
    let c = Campaign::write(
        dir.path(),
        &layout_campaign("layouts resumed", &tarball, &["base"]),
    );
    let mut first = c
        .command(&["--quiet"])
        .env("PGSURGE_CACHE_DIR", &cache)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Its store is made once the builds are there: on a machine without them, after
    // a full compile of PostgreSQL.
    let builds = Duration::from_secs(3600);
    wait_while_running(&mut first, "the builds were made", builds, || {
        c.stored().is_some()
    });
    // Interrupted in the second start of its plan (repeats 3 and 4: build 2's first).
    let limit = Duration::from_secs(600);
    wait_while_running(&mut first, "three runs were stored", limit, || {
        c.stored().is_some_and(|n| n >= 3)
    });
    // SAFETY: a plain kill(2) of the child this test started.
    assert_eq!(unsafe { libc::kill(first.id() as i32, libc::SIGINT) }, 0);
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = first.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            first.kill().unwrap();
            panic!("the campaign did not end within 120 s of Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status.code(), Some(130), "Ctrl-C's exit status");
    let before: BTreeSet<i64> = Store::open(&c.store)
        .unwrap()
        .list_runs(&RunFilter::default())
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert!(
        (3..8).contains(&before.len()),
        "{} runs stored",
        before.len()
    );

    let out = c
        .command(&[])
        .env("PGSURGE_CACHE_DIR", &cache)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "resumed run failed\n{stderr}");
    let resumed = format!(
        "8 tests planned, {} already stored, {} run now (0 failed), 0 remaining",
        before.len(),
        8 - before.len()
    );
    assert!(stderr.contains(&resumed), "expected: {resumed}\n{stderr}");
    let cached = stderr.matches("target \"base\": cached build ").count();
    assert_eq!(cached, 2, "both layout builds found in the cache\n{stderr}");
    assert!(!stderr.contains("target \"base\": built "), "{stderr}");

    // Every repeat once, on its planned build, in a start of its planned level.
    let mut s = Store::open(&c.store).unwrap();
    let runs = s.list_runs(&RunFilter::default()).unwrap();
    let repeats: Vec<i64> = runs.iter().map(|r| r.record.repeat_no).collect();
    let distinct: BTreeSet<i64> = repeats.iter().copied().collect();
    assert_eq!(
        (repeats.len(), distinct),
        (8, (1..=8).collect()),
        "{repeats:?}"
    );
    let set = runs[0].record.set_id;
    let repeat_of: BTreeMap<i64, i64> = runs.iter().map(|r| (r.id, r.record.repeat_no)).collect();
    let (mut seed_of, mut start_of) = (BTreeMap::new(), BTreeMap::new());
    for (run, fact) in s.set_facts(set).unwrap() {
        let value = fact.value.unwrap_or_default();
        match fact.name.as_str() {
            facts::BUILD_LAYOUT_SEED => seed_of.insert(run, value),
            facts::SERVER_START => start_of.insert(run, value),
            _ => None,
        };
    }
    let mut levels_of_start: BTreeMap<&String, BTreeSet<(i64, i64)>> = BTreeMap::new();
    let mut starts_of_level: BTreeMap<(i64, i64), BTreeSet<&String>> = BTreeMap::new();
    for (run, repeat) in &repeat_of {
        let level = planned_level(*repeat);
        let seed = seed_of.get(run).map(String::as_str);
        let expected = (level.0 + 1).to_string();
        assert_eq!(seed, Some(expected.as_str()), "repeat {repeat}'s build");
        let start = &start_of[run];
        levels_of_start.entry(start).or_default().insert(level);
        starts_of_level.entry(level).or_default().insert(start);
        // The runs stored before the interruption kept their start; the others ran
        // after it, in starts of the second invocation.
        if !before.contains(run) {
            let earlier = before.iter().any(|b| start_of.get(b) == Some(start));
            assert!(
                !earlier,
                "repeat {repeat} ran in a start of the first invocation"
            );
        }
    }
    assert!(
        levels_of_start.values().all(|l| l.len() == 1),
        "a server start ran two planned levels\n{levels_of_start:?}"
    );
    // Four levels, each in one start, or two for the level the interruption split.
    let split = starts_of_level.values().filter(|s| s.len() == 2).count();
    assert!(
        starts_of_level.len() == 4 && split <= 1,
        "levels and their starts\n{starts_of_level:?}"
    );
}
