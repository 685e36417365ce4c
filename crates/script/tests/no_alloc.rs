//! Evaluating the tpcb-like `\set` block (and substituting its SQL in simple mode into a
//! reused buffer) performs no heap allocation once variables exist.
//!
//! A test binary of its own: the global allocator is process-wide.

use pgsurge_script::{
    eval, parse_script, substitute_simple, Command, EvalCtx, MetaKind, Prng, Variables, BUILTINS,
};
use pgsurge_testkit::{allocations, CountingAllocator};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

#[test]
fn tpcb_set_block_does_not_allocate() {
    let script = parse_script(BUILTINS[0].desc, BUILTINS[0].script).unwrap();
    let sets: Vec<(&str, &pgsurge_script::Expr)> = script
        .commands
        .iter()
        .filter_map(|c| match c {
            Command::Meta(m) => match &m.kind {
                MetaKind::Set { var, expr } => Some((var.as_str(), expr)),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(sets.len(), 4);
    let sqls: Vec<&str> = script
        .commands
        .iter()
        .filter_map(|c| match c {
            Command::Sql(s) => Some(s.sql.as_str()),
            _ => None,
        })
        .collect();
    let mut vars = Variables::new();
    vars.set_int("set", "scale", 10).unwrap();
    // a double variable too, so that %.15g rendering is covered
    vars.set_value("set", "ratio", pgsurge_script::Value::Double(1.0 / 3.0))
        .unwrap();
    let mut prng = Prng::seed(42);
    let mut sink = |_: &str| {};
    let mut buf = String::with_capacity(4096);
    let mut run = |vars: &mut Variables, prng: &mut Prng, buf: &mut String| {
        for (k, (var, expr)) in sets.iter().enumerate() {
            let mut ctx = EvalCtx {
                vars: &mut *vars,
                prng: &mut *prng,
                debug: &mut sink,
                script: 0,
                command: k,
            };
            let v = eval(expr, &mut ctx).unwrap();
            vars.set_value("set", var, v).unwrap();
        }
        for sql in &sqls {
            buf.clear();
            substitute_simple(sql, vars, buf);
        }
        vars.set_value("set", "ratio", pgsurge_script::Value::Double(0.1 * 3.0))
            .unwrap();
        buf.clear();
        substitute_simple("SELECT :ratio", vars, buf);
    };
    // first transaction creates the variables
    run(&mut vars, &mut prng, &mut buf);
    let before = allocations();
    for _ in 0..1000 {
        run(&mut vars, &mut prng, &mut buf);
    }
    let after = allocations();
    assert_eq!(after - before, 0, "allocations in steady state");
}
