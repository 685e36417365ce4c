//! Evaluator unit tests with the reference values of the spec (§5.6, pgbench's TAP
//! expressions test) and the PRNG model's seeded vectors.

use pgsurge_script::{eval, parse_expr, EvalCtx, Prng, SeedStreams, Value, Variables};

fn run_with(
    src: &str,
    vars: &mut Variables,
    prng: &mut Prng,
) -> (Result<Value, String>, Vec<String>) {
    let expr = parse_expr(src).unwrap_or_else(|e| panic!("{src}: {e}"));
    let mut lines = Vec::new();
    let mut sink = |l: &str| lines.push(l.to_string());
    let mut ctx = EvalCtx {
        vars,
        prng,
        debug: &mut sink,
        script: 0,
        command: 0,
    };
    let r = eval(&expr, &mut ctx).map_err(|e| e.message().unwrap_or("").to_string());
    (r, lines)
}

fn ev(src: &str) -> Result<Value, String> {
    let mut vars = Variables::new();
    vars.set_int("set", "min", i64::MIN).unwrap();
    vars.set_int("set", "default_seed", 0).unwrap();
    let mut prng = Prng::seed(0);
    run_with(src, &mut vars, &mut prng).0
}

#[test]
fn spec_reference_results() {
    assert_eq!(ev("17 / (4|1) + (4 + (7 >> 2))"), Ok(Value::Int(8)));
    assert_eq!(ev("pow(-3,3)"), Ok(Value::Double(-27.0)));
    assert_eq!(ev("pow(2.0,10)"), Ok(Value::Double(1024.0)));
    assert_eq!(ev("pow(0,0)"), Ok(Value::Double(1.0)));
    assert_eq!(ev("pow(-2,-3)"), Ok(Value::Double(-0.125)));
    assert_eq!(ev("power(-5.0,-5.0)"), Ok(Value::Double(-0.00032)));
    assert_eq!(
        ev("pow(9223372036854775807, 2)").map(|v| v.to_text()),
        Ok("8.50705917302346e+37".to_string())
    );
    assert_eq!(ev("hash(10, 5432)"), Ok(Value::Int(-5817877081768721676)));
    assert_eq!(
        ev("hash_fnv1a(10, 5432)"),
        Ok(Value::Int(-7793829335365542153))
    );
    assert_eq!(ev("-9223372036854775808"), Ok(Value::Int(i64::MIN)));
    assert_eq!(ev("-(:min + 1)"), Ok(Value::Int(i64::MAX)));
    assert_eq!(ev("~1 + 2"), Ok(Value::Int(-4)));
    assert_eq!(ev("-2 * 3 + ~0 * 2"), Ok(Value::Int(-7)));
    assert_eq!(ev("~1 | 2"), Ok(Value::Int(-2)));
    assert_eq!(ev("1 | 2 + 4"), Ok(Value::Int(7)));
    assert_eq!(ev("8 >> 1 + 1"), Ok(Value::Int(2)));
    assert_eq!(ev("2 + 3 * 4 % 5"), Ok(Value::Int(4)));
    assert_eq!(ev("not 1 = 2"), Ok(Value::Bool(true)));
    assert_eq!(ev("1 << 64"), Ok(Value::Int(1)));
    assert_eq!(ev("5.5 % 2"), Ok(Value::Int(0)));
    assert_eq!(ev("-7 % 3"), Ok(Value::Int(-1)));
    assert_eq!(ev("int(2.5)"), Ok(Value::Int(2)));
    assert_eq!(ev("int(-2.5)"), Ok(Value::Int(-2)));
    assert_eq!(
        ev("1.0 / 0").map(|v| v.to_text()),
        Ok("Infinity".to_string())
    );
    assert_eq!(
        ev("ln(0)").map(|v| v.to_text()),
        Ok("-Infinity".to_string())
    );
    assert_eq!(ev("sqrt(-1)").map(|v| v.to_text()), Ok("NaN".to_string()));
    assert_eq!(ev("1 is true"), Ok(Value::Bool(false)));
    assert_eq!(ev("null and false"), Ok(Value::Null));
    assert_eq!(ev("false and null"), Ok(Value::Bool(false)));
    assert_eq!(ev("case when false then 1 end"), Ok(Value::Null));
}

#[test]
fn runtime_error_messages() {
    assert_eq!(ev("1 / 0"), Err("division by zero".into()));
    assert_eq!(ev("1 % 0"), Err("division by zero".into()));
    assert_eq!(
        ev("9223372036854775807 + 1"),
        Err("bigint add out of range".into())
    );
    assert_eq!(ev(":min - 1"), Err("bigint sub out of range".into()));
    assert_eq!(ev(":min * -1"), Err("bigint mul out of range".into()));
    assert_eq!(ev(":min / -1"), Err("bigint div out of range".into()));
    assert_eq!(ev(":min % -1"), Ok(Value::Int(0)));
    assert_eq!(
        ev("int(1e19)"),
        Err("double to int overflow for 10000000000000000000.000000".into())
    );
    assert_eq!(
        ev("int(0.0/0)"),
        Err("double to int overflow for NaN".into())
    );
    assert_eq!(ev("true + 1"), Err("cannot coerce boolean to int".into()));
    assert_eq!(
        ev("true + 1.5"),
        Err("cannot coerce boolean to double".into())
    );
    assert_eq!(ev("1 and true"), Err("cannot coerce int to boolean".into()));
    assert_eq!(ev("not 1.5"), Err("cannot coerce double to boolean".into()));
    assert_eq!(ev(":nosuch"), Err("undefined variable \"nosuch\"".into()));
    assert_eq!(
        ev("random(2, 1)"),
        Err("empty range given to random".into())
    );
    assert_eq!(
        ev("random(0, 9223372036854775807)"),
        Err("random range is too large".into())
    );
    assert_eq!(
        ev("random_exponential(1, 2, 0)"),
        Err("exponential parameter must be greater than zero (not 0.000000)".into())
    );
    assert_eq!(
        ev("random_gaussian(1, 2, 1.5)"),
        Err("gaussian parameter must be at least 2.000000 (not 1.500000)".into())
    );
    assert_eq!(
        ev("random_zipfian(1, 2, 1)"),
        Err("zipfian parameter must be in range [1.001, 1000] (not 1.000000)".into())
    );
    assert_eq!(
        ev("random_zipfian(1, 2, 0.0/0)"),
        Err("zipfian parameter must be in range [1.001, 1000] (not NaN)".into())
    );
    assert_eq!(
        ev("permute(1, 0)"),
        Err("permute size parameter must be greater than zero".into())
    );
    assert_eq!(
        ev("greatest(1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17)"),
        Err("too many function arguments, maximum is 16".into())
    );
}

#[test]
fn debug_output_format() {
    let mut vars = Variables::new();
    let mut prng = Prng::seed(0);
    let (r, lines) = run_with("debug(debug(1.5) > debug(null))", &mut vars, &mut prng);
    assert_eq!(r, Ok(Value::Null));
    // `a > b` is evaluated as `b < a`: the right operand first
    assert_eq!(
        lines,
        [
            "debug(script=0,command=1): null",
            "debug(script=0,command=1): double 1.5",
            "debug(script=0,command=1): null"
        ]
    );
    let (_, lines) = run_with("debug(true) and debug(7)", &mut vars, &mut prng);
    assert_eq!(
        lines,
        [
            "debug(script=0,command=1): boolean true",
            "debug(script=0,command=1): int 7"
        ]
    );
}

#[test]
fn seeded_tap_vectors_through_the_evaluator() {
    // --random-seed=5432, one client (pgbench's TAP test and the PRNG model)
    let s = SeedStreams::new(5432, 1, 1);
    let mut prng = s.clients[0];
    let mut vars = Variables::new();
    let mut got = Vec::new();
    for e in [
        "random(10, 19)",
        "random_exponential(100, 199, 10.0)",
        "random_gaussian(1000, 1999, 10.0)",
        "random_zipfian(1, 9, 1.3)",
    ] {
        got.push(run_with(e, &mut vars, &mut prng).0.unwrap());
    }
    assert_eq!(
        got,
        [
            Value::Int(17),
            Value::Int(104),
            Value::Int(1498),
            Value::Int(3)
        ]
    );
}

#[test]
fn variables_from_strings_in_expressions() {
    let mut vars = Variables::new();
    for (k, v) in [
        ("foo", "-10.1"),
        ("bla", "false"),
        ("i", "+3"),
        ("n", "null"),
        ("t", "t"),
        ("f", "of"),
        ("e", ""),
    ] {
        vars.set_string("option", k, v).unwrap();
    }
    let mut prng = Prng::seed(0);
    let mut r = |s: &str| run_with(s, &mut vars, &mut prng).0;
    assert_eq!(r(":foo * 2"), Ok(Value::Double(-20.2)));
    assert_eq!(r("not :bla"), Ok(Value::Bool(true)));
    assert_eq!(r(":i + 1"), Ok(Value::Int(4)));
    assert_eq!(r(":n is null"), Ok(Value::Bool(true)));
    assert_eq!(r(":t and not :f"), Ok(Value::Bool(true)));
    // an empty value fails without a message of its own
    assert_eq!(r(":e"), Err(String::new()));
}
