//! `pgsurge bench --workload` and a campaign's `{ workload = "NAME" }` take a pack to
//! a run by the same way: for every built-in pack, the same scripts, weights,
//! variables, mix and keying and think times in the engine's `RunSpec`.

use std::ffi::OsString;

use pgsurge_campaign::execute::{spec_on, TestSetup};
use pgsurge_campaign::spec::Limit;
use pgsurge_engine::{DatabaseInfo, RunSpec};
use pgsurge_wire::ConnConfig;

fn conn() -> ConnConfig {
    ConnConfig::parse("host=/nonexistent dbname=x").expect("conninfo")
}

/// The spec `pgsurge bench` builds from `args`.
fn bench_spec(args: &[String]) -> RunSpec {
    let argv: Vec<OsString> = args.iter().map(OsString::from).collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    match pgsurge_args::parse(&argv, &|_| None, &mut out, &mut err) {
        pgsurge_args::Outcome::Bench(o) => o.into_run_spec(conn(), DatabaseInfo::default()),
        other => panic!(
            "{args:?} not accepted ({other:?}): {}",
            String::from_utf8_lossy(&err)
        ),
    }
}

/// The spec a campaign builds for its one test, with `[run]` holding `run`.
fn campaign_spec(pack: &str, run: &str) -> RunSpec {
    let text = format!(
        "[campaign]\nname = \"t\"\n[[target]]\nname = \"a\"\n\
         [matrix]\nscales = [1]\nclients = [4]\nscripts = [{{ workload = \"{pack}\" }}]\n\
         [run]\nduration = 10\n{run}"
    );
    let c = pgsurge_campaign::Campaign::parse(&text, "t.toml", std::path::Path::new("."))
        .unwrap_or_else(|e| panic!("{pack}: {e}"));
    let m = pgsurge_campaign::matrix::expand(&c).expect("the matrix");
    let setup = TestSetup {
        campaign: &c,
        plan: &m.tests[0],
        workload: &m.workloads[m.tests[0].workload],
        set_id: 1,
        store: "unused.db",
    };
    spec_on(&setup, conn(), Limit::Duration(10), DatabaseInfo::default()).expect("the pack applies")
}

/// What a pack gives a run.
fn from_pack(spec: &RunSpec) -> String {
    let scripts: Vec<(&str, u32, &str)> = spec
        .scripts
        .iter()
        .map(|s| (s.desc.as_str(), s.weight, s.text.as_str()))
        .collect();
    format!(
        "scripts {scripts:?}\nvariables {:?}\nmix {:?}\npauses {:?}",
        spec.variables, spec.mix, spec.pauses
    )
}

#[test]
fn bench_and_campaigns_apply_every_built_in_pack_alike() {
    // (bench's options, the campaign's [run] lines): as given, paced, drawn by weight.
    // `defines` is a table, read in name order: the `-D`s are given in that order.
    let variants: [(&[&str], &str); 3] = [
        (&[], ""),
        (
            &["-D", "think_scale=0.5", "-D", "think_times=1"],
            "defines = { think_times = 1, think_scale = 0.5 }\n",
        ),
        (&["--mix=random"], "extra_args = [\"--mix=random\"]\n"),
    ];
    for (name, _) in pgsurge_workload::BUILTIN {
        let pack = pgsurge_workload::Pack::resolve(name).expect("a built-in pack");
        for (options, run) in variants {
            let mut args: Vec<String> = ["--workload", name, "-c", "4", "-T", "10"]
                .iter()
                .chain(options)
                .map(|a| a.to_string())
                .collect();
            args.push("x".into());
            let bench = bench_spec(&args);
            let campaign = campaign_spec(name, run);
            assert_eq!(
                from_pack(&bench),
                from_pack(&campaign),
                "{name} {options:?}"
            );
            assert_eq!(bench.scripts.len(), pack.manifest.scripts.len(), "{name}");
            assert_eq!(bench.validate(), Ok(()), "{name} {options:?}");
        }
    }
    // The variants differ where they should: tpcc's pauses and deck.
    let tpcc = |run: &str| campaign_spec("tpcc", run);
    assert!(tpcc("").pauses.is_empty());
    assert_eq!(tpcc(variants[1].1).pauses.len(), 5);
    assert_eq!(tpcc("").mix, pgsurge_engine::Mix::Deck);
    assert_eq!(tpcc(variants[2].1).mix, pgsurge_engine::Mix::Random);
}
