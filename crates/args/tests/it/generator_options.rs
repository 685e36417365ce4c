//! `--start-at` and `--generator-*` (pgsurge extensions for distributed runs): values
//! reach `BenchOptions`, bad values exit 1 with a pgbench-style message.

use std::ffi::OsString;

use pgsurge_args::{parse_with_stdin, Outcome};

fn run(args: &[&str]) -> (Outcome, String) {
    let argv: Vec<OsString> = args.iter().map(OsString::from).collect();
    let lookup = |k: &str| (k == "PGDATABASE").then(|| "envdb".to_string());
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let outcome = parse_with_stdin(&argv, &lookup, &mut &b""[..], &mut out, &mut err);
    (outcome, String::from_utf8_lossy(&err).into_owned())
}

#[test]
fn generator_options_reach_the_bench_options() {
    let at = pgsurge_args::generator::now_unix_us() / 1_000_000 + 3600;
    let start = format!("--start-at={at}");
    let (o, err) = run(&[
        "-c8",
        &start,
        "--generator-name=gen-a",
        "--generator-index=2",
        "--generator-count=4",
    ]);
    let Outcome::Bench(b) = o else {
        panic!("expected Bench, got {o:?}: {err}")
    };
    let g = &b.extensions.generator;
    assert_eq!(g.start_at_unix_us, Some(at * 1_000_000));
    assert_eq!(g.name.as_deref(), Some("gen-a"));
    assert_eq!((g.index, g.count), (Some(2), Some(4)));
    // Absent: nothing set, pgbench behaviour.
    let (o, _) = run(&["-c8"]);
    let Outcome::Bench(b) = o else { panic!() };
    assert!(!b.extensions.generator.is_set());
}

#[test]
fn bad_generator_options_exit_1() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--start-at=1000000000"],
            "pgbench: error: start time \"1000000000\" is ",
        ),
        (
            &["--start-at=tomorrow"],
            "pgbench: error: invalid start time \"tomorrow\": expected an RFC 3339 time",
        ),
        (&["--start-at=2001-01-01T00:00:00Z"], "in the past"),
        (
            &["--generator-index=1"],
            "pgbench: error: --generator-index requires --generator-count",
        ),
        (
            &["--generator-index=4", "--generator-count=4"],
            "pgbench: error: --generator-index (4) must be less than --generator-count (4)",
        ),
        (
            &["--generator-count=0"],
            "--generator-count must be in range 1..2147483647",
        ),
        (&["--generator-name="], "--generator-name must not be empty"),
    ];
    for (args, want) in cases {
        let (o, err) = run(args);
        assert!(matches!(o, Outcome::Exit(1)), "{args:?}: {o:?}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// `--generator-split`: the options are totals and each generator keeps exactly the
/// share `pgsurge dist local` would give it (`pgsurge_generators::split`).
#[test]
fn generator_split_keeps_this_generators_share() {
    let total = pgsurge_generators::split(30, Some(1000.0), Some(42), 4).expect("splits");
    for want in &total {
        let index = format!("--generator-index={}", want.index);
        let (o, err) = run(&[
            "--generator-split",
            "--generator-count=4",
            &index,
            "-c30",
            "-j4",
            "-R1000",
            "--random-seed=42",
        ]);
        let Outcome::Bench(b) = o else {
            panic!("expected Bench, got {o:?}: {err}")
        };
        assert_eq!(b.clients, want.clients, "{err}");
        assert_eq!(b.rate, want.rate_tps);
        assert_eq!(b.throttle_delay_us, 1e6 / 250.0 * 4.0, "per thread");
        assert_eq!(Some(b.random_seed.value), want.seed);
        assert_eq!(b.threads, 4);
        assert!(b.extensions.generator_split);
        assert!(
            err.contains(&format!(
                "this generator's share (index {} of 4): {} of 30 clients, rate 250 of 1000 tps, random seed {} (derived from 42)",
                want.index,
                want.clients,
                want.seed.expect("seeded")
            )),
            "{err}"
        );
    }
    // Threads are clamped to the share, a time seed is left alone, and without -R
    // nothing is throttled.
    let (o, err) = run(&[
        "--generator-split",
        "--generator-count=3",
        "--generator-index=2",
        "-c4",
        "-j4",
    ]);
    let Outcome::Bench(b) = o else {
        panic!("expected Bench, got {o:?}: {err}")
    };
    assert_eq!((b.clients, b.threads, b.rate), (1, 1, None));
    assert_eq!(b.random_seed.source, pgsurge_args::SeedSource::Time);
    // Without --generator-split the same options are this generator's own.
    let (o, _) = run(&["--generator-count=4", "--generator-index=1", "-c30"]);
    let Outcome::Bench(b) = o else { panic!() };
    assert_eq!(b.clients, 30);
}

#[test]
fn generator_split_needs_an_index_and_enough_clients() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--generator-split", "-c8"],
            "pgbench: error: --generator-split requires --generator-index and --generator-count",
        ),
        (
            &["--generator-split", "--generator-count=4", "-c8"],
            "--generator-split requires --generator-index and --generator-count",
        ),
        (
            &[
                "--generator-split",
                "--generator-count=4",
                "--generator-index=0",
                "-c3",
            ],
            "pgbench: error: --generator-split: 3 clients cannot be split across 4 generators",
        ),
        (
            &[
                "--generator-split",
                "--generator-count=4",
                "--generator-index=4",
                "-c8",
            ],
            "--generator-index (4) must be less than --generator-count (4)",
        ),
    ];
    for (args, want) in cases {
        let (o, err) = run(args);
        assert!(matches!(o, Outcome::Exit(1)), "{args:?}: {o:?}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}
