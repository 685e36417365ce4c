//! The command line becomes the engine's `RunSpec` with every value in the engine's
//! units, and the pgbench command a spec renders for people (stored by campaigns) reads
//! back as the same run.

use std::ffi::OsString;
use std::path::PathBuf;

use pgsurge_args::{parse_with_stdin, Outcome};
use pgsurge_engine::{
    DatabaseInfo, ProgressSpec, QueryMode, RunLimit, RunScript, RunSpec, TxnLogSpec,
};
use pgsurge_init::PartitionMethod;
use pgsurge_wire::ConnConfig;

fn conn() -> ConnConfig {
    ConnConfig::parse("host=/nonexistent dbname=x").expect("conninfo")
}

fn database() -> DatabaseInfo {
    DatabaseInfo {
        scale: 7,
        partition_method: PartitionMethod::Range,
        partitions: 3,
        server_version: Some("17.2".into()),
    }
}

fn parse_spec(args: &[String]) -> RunSpec {
    let argv: Vec<OsString> = args.iter().map(OsString::from).collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let mut stdin: &[u8] = b"";
    match parse_with_stdin(&argv, &|_| None, &mut stdin, &mut out, &mut err) {
        Outcome::Bench(o) => o.into_run_spec(conn(), database()),
        other => panic!(
            "{args:?} not accepted ({other:?}): {}",
            String::from_utf8_lossy(&err)
        ),
    }
}

#[test]
fn command_line_values_arrive_in_engine_units() {
    let args: Vec<String> = [
        "-c4",
        "-j2",
        "-T",
        "3",
        "-M",
        "extended",
        "-R",
        "250.5",
        "-L",
        "2.5",
        "-S",
        "--max-tries=3",
        "-D",
        "k=v",
        "--random-seed=99",
        "-P",
        "2",
        "-l",
        "--sampling-rate=0.5",
        "-r",
        "--percentiles=50,99",
        "--exit-on-abort",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let spec = parse_spec(&args);
    assert_eq!((spec.clients, spec.threads), (4, 2));
    assert_eq!(spec.limit, RunLimit::Duration(3));
    assert_eq!(spec.query_mode, QueryMode::Extended);
    assert_eq!(spec.rate_tps, Some(250.5));
    // -L is in ms on the command line, µs in the spec.
    assert_eq!(spec.latency_limit_us, Some(2500));
    assert_eq!(spec.max_tries, 3);
    assert_eq!(spec.variables, vec![("k".to_string(), "v".to_string())]);
    assert_eq!(spec.random_seed, 99);
    assert_eq!(
        spec.output.progress,
        Some(ProgressSpec {
            interval_s: 2,
            timestamp: false
        })
    );
    assert_eq!(
        spec.output.txn_log,
        Some(TxnLogSpec {
            prefix: None,
            sampling_rate: Some(0.5),
            aggregate_interval_s: None
        })
    );
    assert!(spec.output.per_command && spec.errors.exit_on_abort);
    assert_eq!(spec.output.percentiles, Some(vec![50.0, 99.0]));
    assert_eq!(spec.scripts.len(), 1);
    assert_eq!(spec.scripts[0].desc, "<builtin: select only>");
    // The script arrives parsed: nothing downstream parses it again.
    assert_eq!(spec.scripts[0].script.commands.len(), 2);
    assert_eq!(spec.database, database());
    assert_eq!(spec.validate(), Ok(()));
}

#[test]
fn rendered_command_line_reads_back_as_the_same_run() {
    let dir = pgsurge_testkit::scratch_dir("run-spec");
    let file = dir.path().join("custom.sql");
    std::fs::write(&file, "\\set a random(1, 10)\nSELECT :a;\n").expect("write");
    let custom = RunScript::parse(
        &file.display().to_string(),
        &std::fs::read_to_string(&file).expect("read"),
        3,
    )
    .expect("parses");
    let mut spec = RunSpec::new(
        conn(),
        vec![
            RunScript::builtin("simple-update", 2).expect("builtin"),
            custom,
        ],
    );
    spec.clients = 6;
    spec.threads = 3;
    spec.limit = RunLimit::Transactions(40);
    spec.query_mode = QueryMode::Prepared;
    spec.rate_tps = Some(1000.0);
    spec.latency_limit_us = Some(1250);
    spec.max_tries = 0;
    spec.connect_per_transaction = true;
    spec.variables = vec![("x".into(), "1".into()), ("y".into(), "two words".into())];
    spec.random_seed = 12345;
    spec.errors.failures_detailed = true;
    spec.errors.verbose_errors = true;
    spec.output.per_command = true;
    spec.output.progress = Some(ProgressSpec {
        interval_s: 5,
        timestamp: true,
    });
    spec.output.txn_log = Some(TxnLogSpec {
        prefix: Some("runlog".into()),
        sampling_rate: None,
        aggregate_interval_s: Some(10),
    });
    spec.output.percentiles = Some(vec![90.0, 99.9]);
    spec.output.json = Some(PathBuf::from("out.json"));
    spec.output.hdr_log = Some(PathBuf::from("out.hlog"));
    spec.database = database();
    spec.mix = pgsurge_engine::Mix::Deck;
    assert_eq!(spec.validate(), Ok(()));

    let back = parse_spec(&spec.pgbench_args());
    assert_eq!(back.mix, pgsurge_engine::Mix::Deck);
    assert_eq!(back.pgbench_args(), spec.pgbench_args());
    assert_eq!((back.clients, back.threads, back.limit), (6, 3, spec.limit));
    assert_eq!(back.query_mode, spec.query_mode);
    assert_eq!(back.rate_tps, spec.rate_tps);
    assert_eq!(back.latency_limit_us, spec.latency_limit_us);
    assert_eq!(back.max_tries, 0);
    assert!(back.connect_per_transaction);
    assert_eq!(back.variables, spec.variables);
    assert_eq!(back.random_seed, spec.random_seed);
    assert_eq!(back.errors, spec.errors);
    assert_eq!(back.output, spec.output);
    let weights: Vec<(String, u32)> = back
        .scripts
        .iter()
        .map(|s| (s.desc.clone(), s.weight))
        .collect();
    assert_eq!(
        weights,
        vec![
            ("<builtin: simple update>".to_string(), 2),
            (file.display().to_string(), 3)
        ]
    );
}
