//! Bit-exact random streams with several clients and threads: pgbench run with
//! `-c 3 -j 3 --random-seed=N` and two weighted scripts must draw, per client, exactly
//! the values and script choices that [`SeedStreams`] reproduces in-process (client
//! function PRNGs, `:default_seed`, per-thread `choose` streams).
//!
//! Every printed value carries its client id and script in its high digits, so the
//! check does not depend on how pgbench's threads interleave their stderr writes.

use pgsurge_script::{
    eval, parse_script, random_uniform, Command, EvalCtx, MetaKind, Script, SeedStreams, Value,
    Variables,
};
use std::collections::BTreeMap;

const SCRIPT_A: &str = "\\set r debug(:client_id * 10000000 + random(1, 1000000))\n\
\\set g debug(:client_id * 10000000 + random_gaussian(1, 1000, 2.5))\n\
\\set h debug(:client_id * 10000000 + abs(hash(:client_id)) % 1000000)\n\
\\set p debug(:client_id * 10000000 + permute(:client_id, 100))\n\
\\set z debug(:client_id * 10000000 + random_zipfian(1, 1000, 1.5))\n";
const SCRIPT_B: &str =
    "\\set e debug(:client_id * 10000000 + 5000000 + random_exponential(1, 1000, 3))\n\
\\set s debug(:client_id * 10000000 + 5000000 + :default_seed % 1000)\n";
const CLIENTS: usize = 3;
const TXNS: usize = 6;
const WEIGHTS: [i64; 2] = [1, 2];

/// Per client, the values its `debug()` calls print, in order.
fn simulate(seed: u64) -> BTreeMap<i64, Vec<i64>> {
    simulate_with(seed, None)
}

/// Same, with `-D default_seed=<value>` when given (pgbench then does not draw it).
fn simulate_with(seed: u64, defined_default_seed: Option<i64>) -> BTreeMap<i64, Vec<i64>> {
    let scripts: Vec<Script> = [SCRIPT_A, SCRIPT_B]
        .iter()
        .map(|t| parse_script("s.sql", t).unwrap())
        .collect();
    let streams =
        SeedStreams::with_default_seed(seed, CLIENTS, CLIENTS, defined_default_seed.is_none());
    let total: i64 = WEIGHTS.iter().sum();
    let mut out = BTreeMap::new();
    for c in 0..CLIENTS {
        let mut prng = streams.clients[c];
        let mut choose = streams.threads[c].choose;
        let mut vars = Variables::new();
        vars.set_int("set", "scale", 1).unwrap();
        vars.set_int("set", "client_id", c as i64).unwrap();
        vars.set_int("set", "default_seed", streams.default_seed)
            .unwrap();
        vars.set_int("set", "random_seed", streams.random_seed())
            .unwrap();
        let mut values = Vec::new();
        for _ in 0..TXNS {
            let mut w = random_uniform(&mut choose, 0, total - 1);
            let mut idx = 0;
            loop {
                w -= WEIGHTS[idx];
                idx += 1;
                if w < 0 {
                    break;
                }
            }
            let script = &scripts[idx - 1];
            for (k, cmd) in script.commands.iter().enumerate() {
                let Command::Meta(m) = cmd else {
                    unreachable!()
                };
                let MetaKind::Set { var, expr } = &m.kind else {
                    unreachable!()
                };
                let mut printed = Vec::new();
                let mut sink = |l: &str| printed.push(l.to_string());
                let mut ctx = EvalCtx {
                    vars: &mut vars,
                    prng: &mut prng,
                    debug: &mut sink,
                    script: idx - 1,
                    command: k,
                };
                let v = eval(expr, &mut ctx).unwrap();
                if let Value::Int(i) = v {
                    values.push(i);
                }
                vars.set_value("set", var, v).unwrap();
            }
        }
        out.insert(c as i64, values);
    }
    out
}

fn parse_pgbench(stderr: &str) -> BTreeMap<i64, Vec<i64>> {
    let mut out: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for piece in stderr.split("int ").skip(1) {
        let digits: String = piece
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '-')
            .collect();
        if let Ok(v) = digits.parse::<i64>() {
            out.entry(v / 10_000_000).or_default().push(v);
        }
    }
    out
}

#[test]
fn simulation_is_deterministic_and_uses_both_scripts() {
    let a = simulate(5432);
    assert_eq!(a, simulate(5432));
    assert_ne!(a, simulate(5433));
    let all: Vec<i64> = a.values().flatten().copied().collect();
    assert!(all.iter().any(|v| v % 10_000_000 >= 5_000_000));
    assert!(all.iter().any(|v| v % 10_000_000 < 5_000_000));
}

#[test]
fn same_streams_as_real_pgbench_c3_j3() {
    if pgsurge_testkit::reference_pgbench().is_none() {
        return;
    }
    let srv = pgsurge_server::testing::TestServer::shared();
    let db = srv.create_database("seeded");
    let dir = pgsurge_testkit::scratch_dir("seeded");
    std::fs::write(dir.join("a.sql"), SCRIPT_A).unwrap();
    std::fs::write(dir.join("b.sql"), SCRIPT_B).unwrap();
    for seed in [5432u64, 1, 18446744073709551615] {
        let mut cmd = std::process::Command::new("/usr/bin/pgbench");
        srv.apply_env(&mut cmd);
        let out = cmd
            .current_dir(&dir)
            .args(["-n", "-c", "3", "-j", "3", "-t", &TXNS.to_string()])
            .arg(format!("--random-seed={seed}"))
            .args(["-f", "a.sql@1", "-f", "b.sql@2", &db])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert_eq!(
            parse_pgbench(&stderr),
            simulate(seed),
            "seed {seed}\n{stderr}"
        );
    }
}
