//! Long expressions: `\set x 1 + 1 + …` with 150,000 (and 1,000,000) terms must parse,
//! evaluate, clone, compare and be freed on an ordinary thread stack. The tree is as deep
//! as the chain is long; freeing it by recursing once per level would abort the process
//! with a stack overflow (exit 134), even when the run stopped before any test ran.

use pgsurge_script::{eval, parse_script, Command, EvalCtx, MetaKind, Prng, Value, Variables};

fn chain(terms: usize) -> String {
    let mut s = String::with_capacity(terms * 4 + 16);
    s.push_str("\\set x 1");
    for _ in 1..terms {
        s.push_str(" + 1");
    }
    s.push_str("\nSELECT :x;\n");
    s
}

/// Runs `f` on a thread with the default stack of spawned threads (2 MiB), the size the
/// engine's and the test harness's threads get.
fn on_default_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::spawn(f)
        .join()
        .expect("no stack overflow or panic")
}

fn parse_eval_clone_drop(terms: usize) {
    let text = chain(terms);
    let got = on_default_stack(move || {
        let script = parse_script("chain.sql", &text).expect("a long chain parses");
        let Command::Meta(m) = &script.commands[0] else {
            panic!("first command is \\set")
        };
        let MetaKind::Set { expr, .. } = &m.kind else {
            panic!("first command is \\set")
        };
        let mut vars = Variables::new();
        let mut prng = Prng::seed(1);
        let mut sink = |_: &str| {};
        let mut ctx = EvalCtx {
            vars: &mut vars,
            prng: &mut prng,
            debug: &mut sink,
            script: 0,
            command: 0,
        };
        let v = eval(expr, &mut ctx).expect("the chain evaluates");
        let copy = script.clone();
        assert!(copy == script, "a clone compares equal");
        if terms <= 150_000 {
            assert!(format!("{:?}", &copy.commands[0]).len() > terms);
        }
        drop(copy);
        drop(script);
        v
    });
    assert_eq!(got, Value::Int(terms as i64));
}

#[test]
fn chain_of_150k_terms_is_freed_without_overflow() {
    parse_eval_clone_drop(150_000);
}

#[test]
fn chain_of_1m_terms_is_freed_without_overflow() {
    parse_eval_clone_drop(1_000_000);
}

#[test]
fn error_after_a_long_chain_drops_the_parsed_part() {
    // the chain is parsed, then a later command fails: the commands parsed so far are
    // dropped on the error path
    let mut text = chain(150_000);
    text.push_str("\\nosuchcommand\n");
    let err = on_default_stack(move || parse_script("chain.sql", &text).map(|_| ()));
    assert!(err.is_err());
}

fn eval_with_debug(expr_text: &str) -> (Result<Value, String>, Vec<String>) {
    let script = parse_script("t.sql", &format!("\\set x {expr_text}\n")).expect("parses");
    let Command::Meta(m) = &script.commands[0] else {
        panic!("\\set")
    };
    let MetaKind::Set { expr, .. } = &m.kind else {
        panic!("\\set")
    };
    let mut vars = Variables::new();
    let mut prng = Prng::seed(1);
    let mut lines = Vec::new();
    let mut sink = |l: &str| lines.push(l.to_string());
    let mut ctx = EvalCtx {
        vars: &mut vars,
        prng: &mut prng,
        debug: &mut sink,
        script: 0,
        command: 0,
    };
    let v = eval(expr, &mut ctx).map_err(|e| e.to_string());
    (v, lines)
}

#[test]
fn long_chains_evaluate_in_pgbench_order() {
    // 40 terms: longer than the length from which chains are evaluated in a loop
    let terms: Vec<String> = (1..=40).map(|i| format!("debug({i})")).collect();
    let (v, lines) = eval_with_debug(&terms.join(" + "));
    assert_eq!(v, Ok(Value::Int(820)));
    assert_eq!(lines.len(), 40);
    for (i, l) in lines.iter().enumerate() {
        assert!(l.ends_with(&format!("int {}", i + 1)), "{l}");
    }
    // AND stops at the first false: debug(99) after it is never evaluated
    let mut conj: Vec<String> = (0..40).map(|i| format!("debug({i}) >= 0")).collect();
    conj[20] = "false".into();
    conj.push("debug(99) = 99".into());
    let (v, lines) = eval_with_debug(&conj.join(" and "));
    assert_eq!(v, Ok(Value::Bool(false)));
    assert_eq!(lines.len(), 20);
    // NULL propagates but every operand is still evaluated; errors stop the chain
    let mut sum: Vec<String> = (0..40).map(|i| format!("debug({i})")).collect();
    sum[5] = "null".into();
    let (v, lines) = eval_with_debug(&sum.join(" + "));
    assert_eq!(v, Ok(Value::Null));
    assert_eq!(lines.len(), 39);
    sum[5] = "1 / 0".into();
    let (v, lines) = eval_with_debug(&sum.join(" * "));
    assert_eq!(v, Err("division by zero".into()));
    assert_eq!(lines.len(), 5);
}
