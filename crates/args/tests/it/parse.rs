//! Behaviour of `parse` through the public API: getopt semantics, every option's
//! validation message, the post-parse checks in pgbench's order, and the options
//! structs that come out. Texts are pgbench 18's (spec §1).

use std::ffi::OsString;
use std::io::Write;

use pgsurge_args::{
    parse_with_stdin, BenchOptions, InitOptions, Outcome, PartitionMethod, QueryMode, RunLimit,
    ScriptOrigin, SeedSource,
};

struct Run {
    outcome: Outcome,
    out: String,
    err: String,
}

fn run_env_stdin(args: &[&str], env: &[(&str, &str)], stdin: &str) -> Run {
    let argv: Vec<OsString> = args.iter().map(OsString::from).collect();
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let lookup = move |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let mut out = Vec::new();
    let mut err = Vec::new();
    let mut input = stdin.as_bytes();
    let outcome = parse_with_stdin(&argv, &lookup, &mut input, &mut out, &mut err);
    Run {
        outcome,
        out: String::from_utf8_lossy(&out).into_owned(),
        err: String::from_utf8_lossy(&err).into_owned(),
    }
}

fn run_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    run_env_stdin(args, env, "")
}

fn run(args: &[&str]) -> Run {
    run_env(args, &[("PGDATABASE", "envdb")])
}

fn bench(args: &[&str]) -> BenchOptions {
    let r = run(args);
    match r.outcome {
        Outcome::Bench(b) => b,
        other => panic!(
            "expected Bench for {args:?}, got {other:?}; stderr: {}",
            r.err
        ),
    }
}

fn init(args: &[&str]) -> InitOptions {
    let r = run(args);
    match r.outcome {
        Outcome::Init(i) => i,
        other => panic!(
            "expected Init for {args:?}, got {other:?}; stderr: {}",
            r.err
        ),
    }
}

/// Asserts exit 1 with exactly this stderr.
fn fails(args: &[&str], stderr: &str) {
    let r = run(args);
    assert!(
        matches!(r.outcome, Outcome::Exit(1)),
        "{args:?}: {:?}",
        r.outcome
    );
    assert_eq!(r.err, stderr, "{args:?}");
    assert_eq!(r.out, "", "{args:?}");
}

fn error(msg: &str) -> String {
    format!("pgbench: error: {msg}\n")
}

const HINT: &str = "pgbench: hint: Try \"pgbench --help\" for more information.\n";

#[test]
fn help_and_version_only_as_first_argument() {
    for a in ["--help", "-?"] {
        let r = run(&[a, "-x"]);
        assert!(matches!(r.outcome, Outcome::Exit(0)));
        assert!(r.out.contains("Benchmarking options:"));
        assert_eq!(r.err, "");
    }
    for a in ["--version", "-V"] {
        let r = run(&[a]);
        assert!(matches!(r.outcome, Outcome::Exit(0)));
        assert!(r.out.starts_with("pgbench (PostgreSQL) 18."), "{}", r.out);
    }
    fails(
        &["-n", "--help"],
        &format!("pgbench: unrecognized option '--help'\n{HINT}"),
    );
    fails(
        &["-n", "-V"],
        &format!("pgbench: invalid option -- 'V'\n{HINT}"),
    );
    fails(
        &["-n", "-?"],
        &format!("pgbench: invalid option -- '?'\n{HINT}"),
    );
}

#[test]
fn getopt_errors_and_hint() {
    fails(
        &["--bad-option"],
        &format!("pgbench: unrecognized option '--bad-option'\n{HINT}"),
    );
    fails(&["-x"], &format!("pgbench: invalid option -- 'x'\n{HINT}"));
    fails(
        &["-c"],
        &format!("pgbench: option requires an argument -- 'c'\n{HINT}"),
    );
    fails(
        &["--client"],
        &format!("pgbench: option '--client' requires an argument\n{HINT}"),
    );
    fails(
        &["--log=1"],
        &format!("pgbench: option '--log' doesn't allow an argument\n{HINT}"),
    );
    fails(
        &["--p", "5"],
        &format!("pgbench: option '--p' is ambiguous; possibilities: '--port' '--progress' '--protocol' '--progress-timestamp' '--partitions' '--partition-method'\n{HINT}"),
    );
    fails(
        &["--de=1"],
        &format!(
            "pgbench: option '--de=1' is ambiguous; possibilities: '--define' '--debug'\n{HINT}"
        ),
    );
    // an error in an earlier option wins over a getopt error later on the line
    fails(
        &["-c", "0", "-x"],
        &error("-c/--client must be in range 1..2147483647"),
    );
}

#[test]
fn permutation_bundles_and_abbreviations() {
    let b = bench(&["mydb", "-nc5", "--trans=7", "-j", "2", "-S"]);
    assert_eq!(b.connection.dbname, "mydb");
    assert!(b.no_vacuum);
    assert_eq!((b.clients, b.threads), (5, 2));
    assert_eq!(b.limit, RunLimit::Transactions(7));
    assert_eq!(b.scripts.len(), 1);
    assert_eq!(b.scripts[0].origin, ScriptOrigin::Builtin("select-only"));
    // `--` ends the options; what follows is an operand even if it looks like one
    let b = bench(&["--", "-db"]);
    assert_eq!(b.connection.dbname, "-db");
    // POSIXLY_CORRECT: options after the first operand are operands
    let r = run_env(&["x", "-n"], &[("POSIXLY_CORRECT", "1")]);
    assert!(matches!(r.outcome, Outcome::Exit(1)));
    assert_eq!(
        r.err,
        format!(
            "{}{HINT}",
            error("too many command-line arguments (first is \"-n\")")
        )
    );
}

#[test]
fn database_name_resolution() {
    assert_eq!(bench(&["-d", "a"]).connection.dbname, "a");
    assert_eq!(
        bench(&["--dbname=postgresql://h/db"]).connection.dbname,
        "postgresql://h/db"
    );
    assert_eq!(
        bench(&["dbname=x application_name=y"]).connection.dbname,
        "dbname=x application_name=y"
    );
    assert_eq!(bench(&[]).connection.dbname, "envdb");
    let user_only = run_env(&[], &[("PGDATABASE", ""), ("PGUSER", "u1")]);
    assert!(matches!(user_only.outcome, Outcome::Bench(ref b) if b.connection.dbname == "u1"));
    let os_user = run_env(&[], &[]);
    assert!(matches!(os_user.outcome, Outcome::Bench(ref b) if !b.connection.dbname.is_empty()));
    // -d wins; a positional then counts as extra
    fails(
        &["-d", "a", "b"],
        &format!(
            "{}{HINT}",
            error("too many command-line arguments (first is \"b\")")
        ),
    );
    fails(
        &["a", "b", "c"],
        &format!(
            "{}{HINT}",
            error("too many command-line arguments (first is \"b\")")
        ),
    );
    let b = bench(&["-h", "/tmp,host2", "-p", "notaport", "-U", "bob"]);
    assert_eq!(b.connection.host.as_deref(), Some("/tmp,host2"));
    assert_eq!(b.connection.port.as_deref(), Some("notaport"));
    assert_eq!(b.connection.user.as_deref(), Some("bob"));
}

#[test]
fn integer_options() {
    fails(
        &["-c", "abc"],
        &error("invalid value \"abc\" for option -c/--client"),
    );
    fails(
        &["-c", ""],
        &error("-c/--client must be in range 1..2147483647"),
    );
    fails(
        &["-c", "99999999999"],
        &error("-c/--client must be in range 1..2147483647"),
    );
    fails(
        &["-j", "0"],
        &error("-j/--jobs must be in range 1..2147483647"),
    );
    fails(
        &["-t", "0"],
        &error("-t/--transactions must be in range 1..2147483647"),
    );
    fails(
        &["-T", "1x"],
        &error("invalid value \"1x\" for option -T/--time"),
    );
    fails(
        &["-P", "-1"],
        &error("-P/--progress must be in range 1..2147483647"),
    );
    fails(
        &["-s", "0"],
        &error("-s/--scale must be in range 1..2147483647"),
    );
    fails(
        &["-i", "-F", "5"],
        &error("-F/--fillfactor must be in range 10..100"),
    );
    fails(
        &["-i", "-F", "101"],
        &error("-F/--fillfactor must be in range 10..100"),
    );
    fails(
        &["-i", "--partitions=-1"],
        &error("--partitions must be in range 0..2147483647"),
    );
    fails(
        &["--aggregate-interval=0"],
        &error("--aggregate-interval must be in range 1..2147483647"),
    );
    assert_eq!(bench(&["-c", " 3 "]).clients, 3);
    assert_eq!(bench(&["-c", "+4"]).clients, 4);
}

#[test]
fn double_options_use_atof() {
    fails(&["-R", "0"], &error("invalid rate limit: \"0\""));
    fails(&["-R", "abc"], &error("invalid rate limit: \"abc\""));
    fails(&["-L", "-1"], &error("invalid latency limit: \"-1\""));
    fails(
        &["--sampling-rate=2", "-l"],
        &error("invalid sampling rate: \"2\""),
    );
    fails(
        &["--sampling-rate=0", "-l"],
        &error("invalid sampling rate: \"0\""),
    );
    let b = bench(&["-R", "100tps", "-L", "2.5ms", "-c", "4", "-j", "2"]);
    assert_eq!(b.rate, Some(100.0));
    assert_eq!(b.throttle_delay_us, 1_000_000.0 / 100.0 * 2.0);
    assert_eq!(b.latency_limit_us, 2500);
    assert_eq!(bench(&["--sampling-rate=0x.8", "-l"]).sampling_rate, 0.5);
}

#[test]
fn threads_are_clamped_to_clients() {
    let b = bench(&["-c", "2", "-j", "8", "-R", "10"]);
    assert_eq!(b.threads, 2);
    assert_eq!(b.throttle_delay_us, 200_000.0);
}

#[test]
fn query_mode_variables_and_max_tries() {
    assert_eq!(bench(&["-M", "prepared"]).query_mode, QueryMode::Prepared);
    assert_eq!(bench(&["-M", "extended"]).query_mode, QueryMode::Extended);
    fails(
        &["-M", "Simple"],
        &error("invalid query mode (-M): \"Simple\""),
    );
    fails(
        &["-D", "foo"],
        &error("invalid variable definition: \"foo\""),
    );
    fails(&["-D", "=x"], &error("invalid variable definition: \"=x\""));
    fails(&["-D", "x="], &error("invalid variable definition: \"x=\""));
    fails(
        &["-D", "1x=2"],
        &error("option: invalid variable name: \"1x\""),
    );
    fails(
        &["-D", "a-b=2"],
        &error("option: invalid variable name: \"a-b\""),
    );
    let b = bench(&["-D", "a=1", "-D", "_b2=x=y", "-D", "a=3", "-D", "é=4"]);
    assert_eq!(
        b.variables,
        vec![
            ("a".into(), "3".into()),
            ("_b2".into(), "x=y".into()),
            ("é".into(), "4".into())
        ]
    );
    fails(
        &["--max-tries=-1"],
        &error("invalid number of maximum tries: \"-1\""),
    );
    fails(
        &["--max-tries=3000000000"],
        &error("invalid number of maximum tries: \"3000000000\""),
    );
    assert_eq!(bench(&["--max-tries=5"]).max_tries, 5);
    assert_eq!(bench(&["--max-tries=abc", "-T", "5"]).max_tries, 0);
    assert_eq!(bench(&["--max-tries=0", "-L", "10"]).max_tries, 0);
}

#[test]
fn builtin_scripts_and_weights() {
    let r = run(&["-b", "list"]);
    assert!(matches!(r.outcome, Outcome::Exit(0)));
    assert_eq!(r.err, "Available builtin scripts:\n      tpcb-like: <builtin: TPC-B (sort of)>\n  simple-update: <builtin: simple update>\n    select-only: <builtin: select only>\n\n");
    let list = "Available builtin scripts:\n      tpcb-like: <builtin: TPC-B (sort of)>\n  simple-update: <builtin: simple update>\n    select-only: <builtin: select only>\n\n";
    fails(
        &["-b", "foo"],
        &format!(
            "{}{list}",
            error("no builtin script found for name \"foo\"")
        ),
    );
    fails(
        &["-b", "s"],
        &format!(
            "{}{list}",
            error("ambiguous builtin name: 2 builtin scripts found for prefix \"s\"")
        ),
    );
    fails(
        &["-b", "list@1"],
        &format!(
            "{}{list}",
            error("no builtin script found for name \"list\"")
        ),
    );
    fails(
        &["-b", "tpcb-like@x"],
        &error("invalid weight specification: @x"),
    );
    fails(
        &["-b", "tpcb-like@"],
        &error("invalid weight specification: @"),
    );
    fails(
        &["-b", "tpcb-like@-2"],
        &error("weight specification out of range (0 .. 2147483647): -2"),
    );
    fails(
        &["-b", "tpcb-like@3000000000"],
        &error("weight specification out of range (0 .. 2147483647): 3000000000"),
    );
    fails(
        &["-b", "tpcb-like@0"],
        &error("total script weight must not be zero"),
    );
    let b = bench(&["-b", "si@2", "-b", "sel@0", "-N"]);
    let got: Vec<(&str, u32)> = b
        .scripts
        .iter()
        .map(|s| (s.desc.as_str(), s.weight))
        .collect();
    assert_eq!(
        got,
        [
            ("<builtin: simple update>", 2),
            ("<builtin: select only>", 0),
            ("<builtin: simple update>", 1)
        ]
    );
    assert!(b.internal_script_used);
    let r = run(&["--show-script=sel", "-x"]);
    assert!(matches!(r.outcome, Outcome::Exit(0)));
    assert_eq!(r.err, "-- select-only: <builtin: select only>\n\\set aid random(1, 100000 * :scale)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n\n");
    // default script
    let b = bench(&[]);
    assert_eq!(b.scripts[0].origin, ScriptOrigin::Builtin("tpcb-like"));
    assert_eq!(b.limit, RunLimit::Transactions(10));
}

#[test]
fn script_files() {
    let dir = pgsurge_testkit::scratch_dir("parse");
    let path = dir.path().join("a@b.sql");
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(b"select 1;\n"))
        .expect("write script");
    let p = path.to_str().expect("utf-8 temp path");
    // the last @ splits the weight off, so a name containing @ needs an explicit weight
    let b = bench(&["-f", &format!("{p}@3")]);
    assert!(b.extensions.replica_scripts.is_empty());
    // A script run on a standby is a script like the others, its index noted.
    let r = bench(&[
        "-b",
        "simple",
        "-f",
        &format!("{p}@3"),
        &format!("--replica-file={p}@2"),
    ]);
    assert_eq!(r.scripts.len(), 3);
    assert_eq!((r.scripts[2].desc.as_str(), r.scripts[2].weight), (p, 2));
    assert_eq!(r.extensions.replica_scripts, [2]);
    fails(
        &["-C", &format!("--replica-file={p}@2")],
        &error("--replica-file cannot be used with -C/--connect"),
    );
    assert_eq!(b.scripts[0].desc, p);
    assert_eq!(b.scripts[0].weight, 3);
    assert_eq!(b.scripts[0].origin, ScriptOrigin::File(path.clone()));
    assert!(!b.internal_script_used);
    fails(
        &["-f", "/nonexistent"],
        &error("could not open file \"/nonexistent\": No such file or directory"),
    );
    let d = dir.path().to_str().expect("utf-8");
    fails(
        &["-f", d],
        &error(&format!("could not read file \"{d}\": Is a directory")),
    );
    let r = run_env_stdin(&["-f", "-"], &[("PGDATABASE", "x")], "select 2;\n");
    match r.outcome {
        Outcome::Bench(b) => {
            assert_eq!(b.scripts[0].origin, ScriptOrigin::Stdin);
            assert_eq!(b.scripts[0].desc, "-");
            assert_eq!(b.scripts[0].text, "select 2;\n");
        }
        other => panic!("{other:?}: {}", r.err),
    }
    let empty = dir.path().join("empty.sql");
    std::fs::write(&empty, "\n").expect("write");
    let e = empty.to_str().expect("utf-8");
    fails(
        &["-f", e],
        &error(&format!("empty command list for script \"{e}\"")),
    );
    // at most 128 scripts
    let args = vec!["-S"; 129];
    fails(&args, &error("at most 128 SQL scripts are allowed"));
}

#[test]
fn random_seed() {
    let r = run(&["--random-seed=5432"]);
    assert_eq!(r.err, "pgbench: setting random seed to 5432\n");
    match r.outcome {
        Outcome::Bench(b) => {
            assert_eq!(b.random_seed.value, 5432);
            assert_eq!(b.random_seed.source, SeedSource::Value);
        }
        other => panic!("{other:?}"),
    }
    fails(
        &["--random-seed=abc"],
        "pgbench: error: unrecognized random seed option \"abc\"\npgbench: detail: Expecting an unsigned integer, \"time\" or \"rand\".\npgbench: error: error while setting random seed from --random-seed option\n",
    );
    let r = run_env(&["--bad"], &[("PGBENCH_RANDOM_SEED", "xyz")]);
    assert_eq!(r.err, "pgbench: error: unrecognized random seed option \"xyz\"\npgbench: detail: Expecting an unsigned integer, \"time\" or \"rand\".\npgbench: error: error while setting random seed from PGBENCH_RANDOM_SEED environment variable\n");
    // environment first, then each option, each announced
    let r = run_env(
        &["--random-seed=2", "-i"],
        &[("PGBENCH_RANDOM_SEED", "1"), ("PGDATABASE", "d")],
    );
    assert_eq!(
        r.err,
        "pgbench: setting random seed to 1\npgbench: setting random seed to 2\npgbench: error: some of the specified options cannot be used in initialization (-i) mode\n"
    );
    let r = run_env(&[], &[("PGBENCH_RANDOM_SEED", "-1"), ("PGDATABASE", "d")]);
    assert!(matches!(r.outcome, Outcome::Bench(ref b) if b.random_seed.value == u64::MAX));
    let b = bench(&[]);
    assert_eq!(
        (b.random_seed.source, b.random_seed.explicit),
        (SeedSource::Time, false)
    );
}

#[test]
fn init_mode() {
    let i = init(&["-i"]);
    assert_eq!(i.spec.steps, "dtgvp");
    assert_eq!(
        (i.spec.scale, i.spec.fillfactor, i.spec.partitions),
        (1, 100, 0)
    );
    assert_eq!(i.spec.partition_method, PartitionMethod::None);
    let i = init(&[
        "-i",
        "-n",
        "--foreign-keys",
        "-I",
        "dtGvvp",
        "-s",
        "3",
        "-F",
        "90",
        "-q",
    ]);
    assert_eq!(i.spec.steps, "dtG  pf");
    assert_eq!(
        (i.spec.scale, i.spec.fillfactor, i.spec.quiet),
        (3, 90, true)
    );
    assert_eq!(
        init(&["-i", "-I", "dtf", "--foreign-keys"]).spec.steps,
        "dtf"
    );
    let i = init(&[
        "-i",
        "--partitions=4",
        "--tablespace=ts",
        "--index-tablespace",
        "its",
        "--unlogged-tables",
        "--debug",
    ]);
    assert_eq!(
        (i.spec.partitions, i.spec.partition_method),
        (4, PartitionMethod::Range)
    );
    assert_eq!(i.spec.tablespace.as_deref(), Some("ts"));
    assert_eq!(i.spec.index_tablespace.as_deref(), Some("its"));
    assert!(i.spec.unlogged);
    assert_eq!(i.debug_level, 1);
    assert_eq!(
        init(&["-i", "--partitions=2", "--partition-method=HASH"])
            .spec
            .partition_method,
        PartitionMethod::Hash
    );
    fails(
        &["-i", "--partition-method=list"],
        &error("invalid partition method, expecting \"range\" or \"hash\", got: \"list\""),
    );
    fails(
        &["-i", "--partition-method=hash"],
        &error("--partition-method requires greater than zero --partitions"),
    );
    fails(&["-i", "-I", "dtx"], "pgbench: error: unrecognized initialization step \"x\"\npgbench: detail: Allowed step characters are: \"dtgGvpf\".\n");
    fails(
        &["-i", "-I", ""],
        &error("no initialization steps specified"),
    );
    // -b/-f scripts are still read (and checked) in -i mode
    fails(&["-i", "-b", "nope"], &format!("{}Available builtin scripts:\n      tpcb-like: <builtin: TPC-B (sort of)>\n  simple-update: <builtin: simple update>\n    select-only: <builtin: select only>\n\n", error("no builtin script found for name \"nope\"")));
}

#[test]
fn mode_conflicts() {
    let init_err =
        error("some of the specified options cannot be used in initialization (-i) mode");
    for opt in [
        &["-t", "5"][..],
        &["-c", "2"],
        &["-C"],
        &["-S"],
        &["-M", "simple"],
        &["-l"],
        &["--exit-on-abort"],
        &["--failures-detailed"],
        &["--verbose-errors"],
        &["--max-tries=2"],
        &["--progress-timestamp"],
        &["--log-prefix=x"],
        &["-r"],
        &["-v"],
        &["-D", "a=1"],
        &["--json=f"],
        &["--percentiles"],
    ] {
        let mut args = vec!["-i"];
        args.extend_from_slice(opt);
        fails(&args, &init_err);
    }
    let bench_err = error("some of the specified options cannot be used in benchmarking mode");
    for opt in [
        &["-F", "90"][..],
        &["-q"],
        &["-I", "dt"],
        &["--unlogged-tables"],
        &["--tablespace=t"],
        &["--index-tablespace=t"],
        &["--foreign-keys"],
        &["--partitions=2"],
        &["--partition-method=hash"],
    ] {
        fails(opt, &bench_err);
    }
    // neutral options work in both modes
    let _ = init(&[
        "-i", "-n", "-s", "2", "-h", "h", "-p", "1", "-U", "u", "-d", "db", "--debug",
    ]);
    let _ = bench(&[
        "-n", "-s", "2", "-h", "h", "-p", "1", "-U", "u", "-d", "db", "--debug",
    ]);
}

#[test]
fn post_parse_checks_in_order() {
    fails(
        &["-t", "5", "-T", "5"],
        &error("specify either a number of transactions (-t) or a duration (-T), not both"),
    );
    // -t/-T conflict is reported before the sampling check
    fails(
        &["-t", "5", "-T", "5", "--sampling-rate=0.5"],
        &error("specify either a number of transactions (-t) or a duration (-T), not both"),
    );
    fails(
        &["--sampling-rate=0.5"],
        &error("log sampling (--sampling-rate) is allowed only when logging transactions (-l)"),
    );
    fails(&["-l", "--sampling-rate=0.5", "--aggregate-interval=1"], &error("log sampling (--sampling-rate) and aggregation (--aggregate-interval) cannot be used at the same time"));
    fails(
        &["--aggregate-interval=1", "--log-prefix=x"],
        &error("log aggregation is allowed only when actually logging transactions"),
    );
    fails(
        &["--log-prefix=x"],
        &error("log file prefix (--log-prefix) is allowed only when logging transactions (-l)"),
    );
    fails(
        &["-l", "--aggregate-interval=10", "-T", "5"],
        &error("number of seconds for aggregation (10) must not be higher than test duration (5)"),
    );
    fails(
        &["-l", "--aggregate-interval=3", "-T", "5"],
        &error("duration (5) must be a multiple of aggregation interval (3)"),
    );
    fails(
        &["--progress-timestamp"],
        &error("--progress-timestamp is allowed only under --progress"),
    );
    fails(&["--max-tries=0"], &error("an unlimited number of transaction tries can only be used with --latency-limit or a duration (-T)"));
    // the weight check comes before the database name and the mode checks
    fails(
        &["-b", "tpcb@0", "-F", "90", "a", "b"],
        &error("total script weight must not be zero"),
    );
    // too many arguments before the mode check
    fails(
        &["-F", "90", "a", "b"],
        &format!(
            "{}{HINT}",
            error("too many command-line arguments (first is \"b\")")
        ),
    );
    let b = bench(&[
        "-l",
        "--aggregate-interval=5",
        "-T",
        "10",
        "--log-prefix=p",
        "-P",
        "1",
        "--progress-timestamp",
    ]);
    assert_eq!(b.limit, RunLimit::Duration(10));
    assert_eq!(
        (
            b.aggregate_interval,
            b.log_prefix.as_deref(),
            b.progress_secs
        ),
        (5, Some("p"), 1)
    );
    assert!(b.progress_timestamp && b.log);
}

#[test]
fn flags_reach_the_options() {
    let b = bench(&[
        "-C",
        "-r",
        "-v",
        "--failures-detailed",
        "--verbose-errors",
        "--exit-on-abort",
        "--debug",
        "--debug",
        "-s",
        "7",
    ]);
    assert!(b.connect_per_transaction && b.report_per_command && b.vacuum_all);
    assert!(b.failures_detailed && b.verbose_errors && b.exit_on_abort);
    assert_eq!(b.debug_level, 2);
    assert_eq!((b.scale, b.scale_given), (7, true));
}

#[test]
fn pgsurge_extensions() {
    let b = bench(&[]);
    assert_eq!(b.extensions, Default::default());
    let b = bench(&["--percentiles", "--json", "out.json", "--hdr-log=h.log"]);
    assert_eq!(b.extensions.percentiles, Some(vec![50.0, 90.0, 99.0, 99.9]));
    assert_eq!(
        b.extensions.json.as_deref(),
        Some(std::path::Path::new("out.json"))
    );
    assert_eq!(
        b.extensions.hdr_log.as_deref(),
        Some(std::path::Path::new("h.log"))
    );
    // a bare --percentiles takes no value: the next argument is the database name
    assert_eq!(bench(&["--percentiles", "db"]).connection.dbname, "db");
    assert_eq!(
        bench(&["--perc=99.99,50"]).extensions.percentiles,
        Some(vec![99.99, 50.0])
    );
    fails(&["--percentiles=0,50"], &error("invalid percentile list: \"0,50\" (expected comma-separated numbers above 0 and at most 100, e.g. 50,90,99,99.9)"));
    fails(&["--percentiles="], &error("invalid percentile list: \"\" (expected comma-separated numbers above 0 and at most 100, e.g. 50,90,99,99.9)"));
    let b = bench(&["--reconnect", "--check-commits=bench.acks"]);
    assert_eq!(b.extensions.check_commits.as_deref(), Some("bench.acks"));
    fails(
        &["--check-commits=acks"],
        &error("--check-commits requires --reconnect"),
    );
    fails(
        &["--reconnect", "--check-commits=acks;drop"],
        &error("invalid --check-commits table: \"acks;drop\" (a name, or schema.name)"),
    );
    // pgbench's own abbreviations keep their meaning: --j is --jobs, --h is --host
    assert_eq!(bench(&["--j", "1"]).threads, 1);
    assert_eq!(bench(&["--h", "x"]).connection.host.as_deref(), Some("x"));
}

#[test]
fn options_given_names_each_option_once_in_order() {
    let b = bench(&["-c", "2", "--rate=5", "-c", "3", "-l", "--json", "f", "db"]);
    assert_eq!(b.options_given, ["client", "rate", "log", "json"]);
    assert!(bench(&[]).options_given.is_empty());
}

#[test]
fn scripts_are_parsed_and_prepared_for_the_query_mode() {
    use pgsurge_script::Command;
    let sql_of = |b: &BenchOptions| -> Vec<String> {
        b.scripts[0]
            .script
            .commands
            .iter()
            .filter_map(|c| match c {
                Command::Sql(s) => Some(s.sql.clone()),
                _ => None,
            })
            .collect()
    };
    let simple = bench(&["-S"]);
    assert_eq!(
        sql_of(&simple),
        ["SELECT abalance FROM pgbench_accounts WHERE aid = :aid;"]
    );
    // -M is applied after all options, even when given after the script
    let extended = bench(&["-S", "-M", "extended"]);
    assert_eq!(
        sql_of(&extended),
        ["SELECT abalance FROM pgbench_accounts WHERE aid = $1;"]
    );
    assert_eq!(extended.scripts[0].script.commands.len(), 2);
}

#[test]
fn script_errors_are_reported_in_option_order() {
    let dir = pgsurge_testkit::scratch_dir("parse");
    let bad = dir.path().join("bad.sql");
    std::fs::write(&bad, "\\set i 1 +\n").expect("write");
    let b = bad.to_str().expect("utf-8");
    let expected = format!(
        "pgbench: error: {b}:1: syntax error in command \"set\"\n\\set i 1 +\n          ^ error found here\n"
    );
    fails(&["-f", b, "-c", "0"], &expected);
    fails(
        &["-c", "0", "-f", b],
        &error("-c/--client must be in range 1..2147483647"),
    );
    // coloured like every other error line when PG_COLOR says so
    let r = run_env(&["-f", b], &[("PG_COLOR", "always"), ("PGDATABASE", "d")]);
    assert!(
        r.err
            .starts_with("\x1b[01mpgbench: \x1b[0m\x1b[01;31merror: \x1b[0m"),
        "{:?}",
        r.err
    );
}

#[test]
fn mix_and_think_times_come_from_the_options_and_the_pack() {
    use pgsurge_engine::{Mix, Pauses};
    let spec = |args: &[&str]| {
        bench(args).into_run_spec(
            pgsurge_wire::ConnConfig::parse("host=/nonexistent dbname=x").unwrap(),
            pgsurge_engine::DatabaseInfo::default(),
        )
    };
    assert_eq!(spec(&["-t", "1"]).mix, Mix::Random);
    assert_eq!(spec(&["--mix=deck", "-t", "1"]).mix, Mix::Deck);
    // The tpcc pack deals from a deck unless --mix=random says otherwise.
    let pack = spec(&["--workload", "tpcc"]);
    assert_eq!(pack.mix, Mix::Deck);
    assert!(pack.pauses.is_empty());
    assert_eq!(
        spec(&["--workload", "tpcc", "--mix=random"]).mix,
        Mix::Random
    );
    // -D think_times=1: each script's keying and mean think time, in µs, scaled.
    let paced = spec(&[
        "--workload",
        "tpcc",
        "-D",
        "think_times=1",
        "-D",
        "think_scale=0.5",
    ]);
    let seconds: Vec<(f64, f64)> = paced
        .pauses
        .iter()
        .map(|p: &Pauses| (p.keying_us as f64 / 1e6, p.think_mean_us as f64 / 1e6))
        .collect();
    assert_eq!(
        seconds,
        [(9.0, 6.0), (1.5, 6.0), (1.0, 5.0), (1.0, 2.5), (1.0, 2.5)]
    );
    assert_eq!(paced.mix, Mix::Deck);
    assert_eq!(paced.validate(), Ok(()));
    // A script given beside the pack runs first and does not pause.
    let beside = spec(&[
        "-b",
        "select-only",
        "--workload",
        "tpcc",
        "-D",
        "think_times=1",
    ]);
    assert_eq!(beside.scripts.len(), 6);
    assert_eq!(beside.pauses[0], Pauses::default());
    assert_eq!(beside.pauses[1].keying_us, 18_000_000);
    fails(
        &["--mix=shuffle"],
        &error("invalid --mix \"shuffle\": expected \"random\" or \"deck\""),
    );
}
