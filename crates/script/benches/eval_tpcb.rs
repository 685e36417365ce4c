//! Criterion benchmark: evaluating the tpcb-like `\set` block for one transaction
//! (4 expressions with `random()` and `:scale`), and the same plus simple-mode SQL
//! substitution. `tests/no_alloc.rs` shows the loop does not allocate.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use pgsurge_script::{
    eval, parse_script, substitute_simple, Command, EvalCtx, Expr, MetaKind, Prng, VarName,
    Variables, BUILTINS,
};

fn set_block() -> (Vec<(VarName, Expr)>, Vec<String>) {
    let script = parse_script(BUILTINS[0].desc, BUILTINS[0].script).expect("builtin parses");
    let mut sets = Vec::new();
    let mut sqls = Vec::new();
    for c in script.commands {
        match c {
            Command::Meta(m) => {
                if let MetaKind::Set { var, expr } = m.kind {
                    sets.push((var, expr));
                }
            }
            Command::Sql(s) => sqls.push(s.sql),
        }
    }
    (sets, sqls)
}

fn bench(c: &mut Criterion) {
    let (sets, sqls) = set_block();
    let mut vars = Variables::new();
    vars.set_int("set", "scale", 100).expect("valid name");
    let mut prng = Prng::seed(5432);
    let mut sink = |_: &str| {};
    c.bench_function("tpcb_set_block", |b| {
        b.iter(|| {
            for (k, (var, expr)) in sets.iter().enumerate() {
                let mut ctx = EvalCtx {
                    vars: &mut vars,
                    prng: &mut prng,
                    debug: &mut sink,
                    script: 0,
                    command: k,
                };
                let v = eval(black_box(expr), &mut ctx).expect("evaluates");
                vars.set_value("set", var, v).expect("valid name");
            }
        })
    });
    let mut buf = String::with_capacity(4096);
    c.bench_function("tpcb_set_block_and_sql_substitution", |b| {
        b.iter(|| {
            for (k, (var, expr)) in sets.iter().enumerate() {
                let mut ctx = EvalCtx {
                    vars: &mut vars,
                    prng: &mut prng,
                    debug: &mut sink,
                    script: 0,
                    command: k,
                };
                let v = eval(expr, &mut ctx).expect("evaluates");
                vars.set_value("set", var, v).expect("valid name");
            }
            for sql in &sqls {
                buf.clear();
                substitute_simple(sql, &mut vars, &mut buf);
            }
            black_box(buf.len())
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
