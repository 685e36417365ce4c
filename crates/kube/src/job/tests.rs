//! Unit tests of the Job: checks, names, start times, the manifest.

use super::manifest::literal;
use super::start::rfc3339;
use super::*;

#[test]
fn quantities() {
    for q in [
        "1", "2", "500m", "0.5", "1.5", ".5", "512Mi", "2Gi", "1e3", "1E-2", "4k",
    ] {
        assert!(is_quantity(q), "{q}");
    }
    for q in [
        "", "0", "-1", "1.2.3", "1 Gi", "1gi", "1mi", "Mi", "1e", "1x", ".", "1Gib",
    ] {
        assert!(!is_quantity(q), "{q}");
    }
}

#[test]
fn names() {
    assert!(is_dns_label("pgsurge-run-1", 63));
    for bad in ["", "-a", "a-", "A", "a_b", "a.b"] {
        assert!(!is_dns_label(bad, 63), "{bad}");
    }
    assert!(!is_dns_label(&"a".repeat(64), 63));
    assert!(is_dns_subdomain("db.secret-1"));
    assert!(!is_dns_subdomain("db..x"));
}

#[test]
fn start_times() {
    const NOW: i64 = 1_795_000_000_250_000; // 2026-11-18T…:40.25Z
    assert_eq!(
        start_at("2026-11-23T23:30:00+01:00", NOW),
        Ok(("2026-11-23T22:30:00Z".into(), 1_795_473_000))
    );
    assert_eq!(
        start_at("1795473000.5", NOW),
        Ok(("2026-11-23T22:30:00.5Z".into(), 1_795_473_000))
    );
    assert!(start_at("1795000000", NOW).is_err(), "past");
    assert!(start_at("tomorrow", NOW).is_err());
    // Rounded up to a whole second, at least the lead time ahead.
    assert_eq!(start_in("60s", NOW), start_in("60", NOW));
    assert_eq!(start_in("1m", NOW), start_in("60", NOW));
    let at = rfc3339(i128::from(1_795_000_061i64) * 1_000_000_000).expect("formats");
    assert_eq!(start_in("60s", NOW), Ok((at, 1_795_000_061)));
    for bad in ["", "0", "s", "-5s", "5d", "1.5m", "9999999h"] {
        assert!(start_in(bad, NOW).is_err(), "{bad}");
    }
}

#[test]
fn run_time_from_the_bench_options() {
    let v = |a: &[&str]| run_seconds(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert_eq!(v(&["-T", "60", "pgbench"]), Some(60));
    assert_eq!(v(&["-T30"]), Some(30));
    assert_eq!(v(&["--time=45", "-j2"]), Some(45));
    assert_eq!(v(&["--time", "5"]), Some(5));
    assert_eq!(v(&["-t", "100"]), None);
}

#[test]
fn labels_made_from_text() {
    assert_eq!(
        dns_label_from("pgsurge-Nightly run: PG 17", 63).as_deref(),
        Some("pgsurge-nightly-run-pg-17")
    );
    assert_eq!(dns_label_from("abc--def", 5).as_deref(), Some("abc-d"));
    assert_eq!(dns_label_from("abc--def", 4).as_deref(), Some("abc"));
    assert_eq!(dns_label_from("--ÄÖ--", 63), None);
    assert_eq!(max_job_name_len(1), 61);
    assert_eq!(max_job_name_len(10), 61);
    assert_eq!(max_job_name_len(11), 60);
    assert_eq!(max_job_name_len(100_000), 57);
}

#[test]
fn extra_environment() {
    assert!(check_env("PGSSLMODE=require").is_ok());
    assert!(check_env("_X=a=b").is_ok());
    for (bad, why) in [
        ("PGSSLMODE", "expected NAME=VALUE"),
        ("1X=a", "is not a variable name"),
        ("A-B=a", "is not a variable name"),
        ("PGPASSWORD=x", "only comes from the Secret"),
        ("PGHOST=db", "use --host"),
        ("JOB_COMPLETION_INDEX=3", "completion index"),
    ] {
        let e = check_env(bad).expect_err(bad).to_string();
        assert!(e.contains(why), "{bad}: {e}");
    }
}

#[test]
fn the_next_step_for_a_store_group() {
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let bench = v(&["-T", "60", "--store=host=db dbname=r", "--group=run 1"]);
    assert_eq!(store_group(&bench), Some(("host=db dbname=r", "run 1")));
    assert_eq!(store_group(&v(&["--group=g"])), None);
    assert_eq!(
        shell_word("postgresql://u@h:5432/r"),
        "postgresql://u@h:5432/r"
    );
    assert_eq!(shell_word("run 1"), "'run 1'");
    assert_eq!(shell_word("it's"), "\"it's\"");
}

#[test]
fn literals_survive_the_kubelet() {
    assert_eq!(literal("-D x=$(HOME)"), "-D x=$$(HOME)");
    assert_eq!(literal("a$$b"), "a$$$$b");
}
