//! `--init-jobs` (pgsurge extension): an initialization option, so it reaches
//! `InitOptions` with `-i` and is refused in benchmarking mode exactly as
//! pgbench refuses its own initialization options; bad values exit 1.

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
fn init_jobs_reaches_the_init_options() {
    let (o, err) = run(&["-i", "--init-jobs=3", "--partitions=4"]);
    let Outcome::Init(init) = o else {
        panic!("expected Init, got {o:?}: {err}")
    };
    assert_eq!(init.init_jobs, 3);
    assert_eq!(init.spec.partitions, 4);
    let (o, _) = run(&["-i"]);
    let Outcome::Init(init) = o else { panic!() };
    assert_eq!(init.init_jobs, 1, "default: pgbench's serial -i");
}

#[test]
fn init_jobs_outside_init_mode_or_out_of_range_exits_1() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--init-jobs=2", "-c", "4"],
            "pgbench: error: some of the specified options cannot be used in benchmarking mode",
        ),
        (
            &["-i", "--init-jobs=0"],
            "pgbench: error: --init-jobs must be in range 1..1000",
        ),
        (
            &["-i", "--init-jobs=many"],
            "pgbench: error: invalid value \"many\" for option --init-jobs",
        ),
    ];
    for (args, want) in cases {
        let (o, err) = run(args);
        assert!(matches!(o, Outcome::Exit(1)), "{args:?}: {o:?}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn hdr_log_unit_needs_hdr_log_and_a_known_unit() {
    let (o, err) = run(&["--hdr-log=x.hlog", "--hdr-log-unit=ns"]);
    let Outcome::Bench(b) = o else {
        panic!("expected Bench, got {o:?}: {err}")
    };
    assert_eq!(
        b.extensions.hdr_log_unit,
        pgsurge_results::HdrLogUnit::Nanos
    );
    let cases: &[(&[&str], &str)] = &[
        (
            &["--hdr-log-unit=ns"],
            "pgbench: error: --hdr-log-unit requires --hdr-log",
        ),
        (
            &["--hdr-log=x", "--hdr-log-unit=ms"],
            "pgbench: error: invalid --hdr-log-unit \"ms\": expected \"us\" or \"ns\"",
        ),
        (
            &["-i", "--hdr-log-unit=ns"],
            "some of the specified options cannot be used in initialization (-i) mode",
        ),
    ];
    for (args, want) in cases {
        let (o, err) = run(args);
        assert!(matches!(o, Outcome::Exit(1)), "{args:?}: {o:?}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}
