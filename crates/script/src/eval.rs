//! Owns expression evaluation with pgbench's semantics: NULL propagation, lazy
//! `AND`/`OR`/`CASE`, int/double overloading with overflow checks, coercion rules and
//! their messages, and every built-in function.
//!
//! Evaluation does not allocate in steady state: arguments go into a fixed array, and
//! variables are looked up by their numbered names. Messages are built only on failure or
//! by `debug()`.

use crate::expr::{Expr, Func};
use crate::functions::{
    hash_fnv1a, hash_murmur2, permute, random_exponential, random_gaussian, random_uniform,
    random_zipfian,
};
use crate::names::VarName;
use crate::numfmt::{f6, format_double};
use crate::prng::Prng;
use crate::value::Value;
use crate::vars::Variables;

/// Most arguments a function evaluates before failing (`least`/`greatest` only).
const MAX_FARGS: usize = 16;

/// `INT64_MIN` as a double (exact).
const I64_MIN_F: f64 = i64::MIN as f64;

/// An evaluation failure. The engine prints [`EvalError::message`] (if any) as
/// `pgbench: error: <message>` and then aborts the client with
/// `client N aborted in command C (set) of script S; evaluation of meta-command failed`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    /// A message pgbench prints, e.g. `division by zero`.
    #[error("{0}")]
    Message(String),
    /// pgbench fails without a message of its own (a variable whose value is empty).
    #[error("")]
    Silent,
}

impl EvalError {
    /// The line pgbench prints, if any.
    pub fn message(&self) -> Option<&str> {
        match self {
            EvalError::Message(m) => Some(m),
            EvalError::Silent => None,
        }
    }
}

fn err<T>(msg: impl Into<String>) -> Result<T, EvalError> {
    Err(EvalError::Message(msg.into()))
}

/// What one client's evaluation needs.
pub struct EvalCtx<'a> {
    /// The client's variables.
    pub vars: &'a mut Variables,
    /// The client's function PRNG (`random*()`).
    pub prng: &'a mut Prng,
    /// Receives each `debug()` line, without the trailing newline (the engine writes it
    /// to stderr).
    pub debug: &'a mut dyn FnMut(&str),
    /// 0-based script index (printed by `debug()`).
    pub script: usize,
    /// 0-based command index (`debug()` prints it 1-based).
    pub command: usize,
}

/// Evaluates `expr` for one client.
#[cfg_attr(target_os = "linux", link_section = ".text.hot.pgsurge")]
pub fn eval(expr: &Expr, ctx: &mut EvalCtx<'_>) -> Result<Value, EvalError> {
    if let Some(v) = uniform_random_on_ints(expr, ctx) {
        return Ok(v);
    }
    eval_general(expr, ctx)
}

/// The most common `\set` of all (every built-in script's): `random(lb, ub)` whose
/// bounds are integer constants, integer variables or products of two of those
/// (`random(1, 100000 * :scale)`), drawn without going through the interpreter. `None`
/// whenever anything is not plainly so — another shape, a non-integer value, an
/// undefined or malformed variable, an overflowing product, an empty or too large
/// range — and then [`eval_general`] evaluates it, errors included. Nothing here has an
/// effect before the draw (a variable parsed from its text keeps its value, as the
/// general path would keep it).
#[inline]
fn uniform_random_on_ints(expr: &Expr, ctx: &mut EvalCtx<'_>) -> Option<Value> {
    let Expr::Call {
        func: Func::Random,
        args,
    } = expr
    else {
        return None;
    };
    let [a, b] = &args[..] else {
        return None;
    };
    let lb = int_operand(a, ctx)?;
    let ub = int_operand(b, ctx)?;
    if lb > ub || ub.checked_sub(lb)?.checked_add(1).is_none() {
        return None;
    }
    Some(Value::Int(random_uniform(ctx.prng, lb, ub)))
}

/// An integer constant or variable, or the product of two such (see
/// [`uniform_random_on_ints`]).
#[inline]
#[cfg_attr(target_os = "linux", link_section = ".text.hot.pgsurge")]
fn int_operand(e: &Expr, ctx: &mut EvalCtx<'_>) -> Option<i64> {
    match e {
        Expr::Call {
            func: Func::Mul,
            args,
        } => match &args[..] {
            [x, y] => int_leaf(x, ctx)?.checked_mul(int_leaf(y, ctx)?),
            _ => None,
        },
        _ => int_leaf(e, ctx),
    }
}

#[inline]
fn int_leaf(e: &Expr, ctx: &mut EvalCtx<'_>) -> Option<i64> {
    match e {
        Expr::Const(Value::Int(i)) => Some(*i),
        // A variable not yet parsed from its text goes the general way, which parses it.
        Expr::Var(name) => ctx.vars.int_value(name),
        _ => None,
    }
}

/// Evaluates `expr` by walking it (what [`eval`] does but for its shortcut).
fn eval_general(expr: &Expr, ctx: &mut EvalCtx<'_>) -> Result<Value, EvalError> {
    match expr {
        // Leaves, calls on leaves and calls on those (`random(1, 100000 * :scale)`)
        // cannot nest deeper: no stack check (the check itself shows in profiles).
        Expr::Const(_) | Expr::Var(_) => eval_node(expr, ctx),
        Expr::Call { args, .. } if args.iter().all(is_leaf_or_call_on_leaves) => {
            eval_node(expr, ctx)
        }
        // deep nesting (pgbench accepts ~10000 levels) may need more stack than a thread has
        _ => stacker::maybe_grow(
            crate::exprparse::RED_ZONE,
            crate::exprparse::STACK_GROWTH,
            || eval_node(expr, ctx),
        ),
    }
}

fn is_leaf(e: &Expr) -> bool {
    matches!(e, Expr::Const(_) | Expr::Var(_))
}

fn is_leaf_or_call_on_leaves(e: &Expr) -> bool {
    match e {
        Expr::Const(_) | Expr::Var(_) => true,
        Expr::Call { args, .. } => args.iter().all(is_leaf),
    }
}

/// The value of variable `name`, parsed from its text on first use.
#[inline]
fn var_value(name: &VarName, ctx: &mut EvalCtx<'_>) -> Result<Value, EvalError> {
    match ctx.vars.get_as_value(name) {
        Ok(Some(v)) => Ok(v),
        Ok(None) => err(format!("undefined variable \"{name}\"")),
        Err(e) => Err(match e.message() {
            Some(m) => EvalError::Message(m),
            None => EvalError::Silent,
        }),
    }
}

fn eval_node(expr: &Expr, ctx: &mut EvalCtx<'_>) -> Result<Value, EvalError> {
    match expr {
        Expr::Const(v) => Ok(*v),
        Expr::Var(name) => var_value(name, ctx),
        Expr::Call { func, args } if *func != Func::Case && spine_len(args) >= SPINE_MIN => {
            eval_left_spine(*func, args, ctx)
        }
        Expr::Call { func, args } => match func {
            Func::And | Func::Or | Func::Case => eval_lazy(*func, args, ctx),
            _ => eval_standard(*func, args, ctx),
        },
    }
}

fn type_name(v: &Value) -> &'static str {
    v.value_type().name()
}

fn to_bool(v: &Value) -> Result<bool, EvalError> {
    match v {
        Value::Bool(b) => Ok(*b),
        _ => err(format!("cannot coerce {} to boolean", type_name(v))),
    }
}

/// `coerceToInt`: doubles are rounded half-to-even and range checked.
#[inline(always)]
pub(crate) fn to_int(v: &Value) -> Result<i64, EvalError> {
    match *v {
        Value::Int(i) => Ok(i),
        Value::Double(d) => {
            let r = d.round_ties_even();
            if r.is_nan() || !(I64_MIN_F..-I64_MIN_F).contains(&r) {
                return err(format!("double to int overflow for {}", f6(r)));
            }
            Ok(r as i64)
        }
        _ => err(format!("cannot coerce {} to int", type_name(v))),
    }
}

fn to_double(v: &Value) -> Result<f64, EvalError> {
    match *v {
        Value::Double(d) => Ok(d),
        Value::Int(i) => Ok(i as f64),
        _ => err(format!("cannot coerce {} to double", type_name(v))),
    }
}

fn eval_lazy(func: Func, args: &[Expr], ctx: &mut EvalCtx<'_>) -> Result<Value, EvalError> {
    match func {
        Func::And | Func::Or => {
            let Some(a) = args.first() else {
                return err("internal error: missing operand");
            };
            let a1 = eval(a, ctx)?;
            and_or_rest(func, a1, &args[1..], ctx)
        }
        _ => {
            // CASE: when, then, when, then, …, else
            let mut rest = args;
            loop {
                match rest {
                    [when, then, tail @ ..] if !tail.is_empty() => {
                        if eval(when, ctx)?.truth() {
                            return eval(then, ctx);
                        }
                        rest = tail;
                    }
                    [else_] => return eval(else_, ctx),
                    _ => return err("odd and >= 3 number of arguments expected"),
                }
            }
        }
    }
}

/// Spines at least this long are evaluated by [`eval_left_spine`] instead of recursion.
const SPINE_MIN: usize = 32;

/// A node whose first argument is evaluated first and completely, as every strict
/// function and `AND`/`OR` do; `CASE` evaluates its first argument lazily too but is
/// only nested through parentheses, which the parser bounds.
fn spine_node(e: &Expr) -> Option<(Func, &[Expr])> {
    match e {
        Expr::Call { func, args } if *func != Func::Case && !args.is_empty() => Some((*func, args)),
        _ => None,
    }
}

/// Length of the chain of first arguments below `args` (capped at [`SPINE_MIN`]).
fn spine_len(args: &[Expr]) -> usize {
    let mut n = 0;
    let mut e = args.first();
    while let Some((_, a)) = e.and_then(spine_node) {
        n += 1;
        if n >= SPINE_MIN {
            break;
        }
        e = a.first();
    }
    n
}

/// Evaluates a long left-leaning chain (`1 + 1 + … + 1`, `a and b and …`,
/// `x notnull notnull …`) bottom-up in a loop: the parser builds these as deep as they
/// are long, and recursing once per term would need a stack as large as the script.
/// The order of evaluation (and so of `random()` draws, `debug()` lines and errors) is
/// the recursive one: the first argument completely, then the others left to right.
fn eval_left_spine(func: Func, args: &[Expr], ctx: &mut EvalCtx<'_>) -> Result<Value, EvalError> {
    let mut spine: Vec<(Func, &[Expr])> = vec![(func, args)];
    let mut bottom = &args[0];
    while let Some((f, a)) = spine_node(bottom) {
        spine.push((f, a));
        bottom = &a[0];
    }
    let mut acc = eval_node(bottom, ctx)?;
    for &(func, args) in spine.iter().rev() {
        acc = match func {
            Func::And | Func::Or => and_or_rest(func, acc, &args[1..], ctx)?,
            _ => {
                let mut vals = [Value::Null; MAX_FARGS];
                vals[0] = acc;
                for (slot, a) in vals[1..].iter_mut().zip(&args[1..]) {
                    *slot = eval(a, ctx)?;
                }
                apply_standard(func, &vals, args.len(), ctx)?
            }
        };
    }
    Ok(acc)
}

/// `AND`/`OR` once the first operand is known.
fn and_or_rest(
    func: Func,
    a1: Value,
    rest: &[Expr],
    ctx: &mut EvalCtx<'_>,
) -> Result<Value, EvalError> {
    let Some(b) = rest.first() else {
        return err("internal error: missing operand");
    };
    if a1 == Value::Null {
        return Ok(Value::Null);
    }
    let b1 = to_bool(&a1)?;
    // AND stops at false, OR at true
    if b1 == (func == Func::Or) {
        return Ok(Value::Bool(b1));
    }
    let a2 = eval(b, ctx)?;
    if a2 == Value::Null {
        return Ok(Value::Null);
    }
    Ok(Value::Bool(to_bool(&a2)?))
}

fn eval_standard(func: Func, args: &[Expr], ctx: &mut EvalCtx<'_>) -> Result<Value, EvalError> {
    // Most calls have a few arguments: a small array is cheaper to set up per call.
    if args.len() <= FEW_FARGS {
        let mut vals = [Value::Null; FEW_FARGS];
        for (slot, a) in vals.iter_mut().zip(args) {
            // a constant or variable argument costs no call
            *slot = match a {
                Expr::Const(v) => *v,
                Expr::Var(name) => var_value(name, ctx)?,
                _ => eval(a, ctx)?,
            };
        }
        return apply_standard(func, &vals, args.len(), ctx);
    }
    let mut vals = [Value::Null; MAX_FARGS];
    for (slot, a) in vals.iter_mut().zip(args) {
        *slot = eval(a, ctx)?;
    }
    apply_standard(func, &vals, args.len(), ctx)
}

/// Argument count up to which [`eval_standard`] uses a small array.
const FEW_FARGS: usize = 4;

/// Applies a strict function to its evaluated arguments (`vals[..n]`; `n` may exceed
/// the array, which is the "too many arguments" error). It mirrors pgbench's
/// `evalStandardFunc`: one arm per built-in function, with its checks and errors.
fn apply_standard(
    func: Func,
    vals: &[Value],
    n: usize,
    ctx: &mut EvalCtx<'_>,
) -> Result<Value, EvalError> {
    if n > MAX_FARGS {
        return err(format!(
            "too many function arguments, maximum is {MAX_FARGS}"
        ));
    }
    let v = &vals[..n];
    let has_null = v.contains(&Value::Null);
    if has_null && func != Func::Is && func != Func::Debug {
        return Ok(Value::Null);
    }
    let arg = |i: usize| v.get(i).copied().unwrap_or(Value::Null);
    match func {
        Func::Add
        | Func::Sub
        | Func::Mul
        | Func::Div
        | Func::Eq
        | Func::Ne
        | Func::Le
        | Func::Lt
            if matches!(arg(0), Value::Double(_)) || matches!(arg(1), Value::Double(_)) =>
        {
            let l = to_double(&arg(0))?;
            let r = to_double(&arg(1))?;
            Ok(match func {
                Func::Add => Value::Double(l + r),
                Func::Sub => Value::Double(l - r),
                Func::Mul => Value::Double(l * r),
                Func::Div => Value::Double(l / r),
                Func::Eq => Value::Bool(l == r),
                Func::Ne => Value::Bool(l != r),
                Func::Le => Value::Bool(l <= r),
                _ => Value::Bool(l < r),
            })
        }
        Func::Add
        | Func::Sub
        | Func::Mul
        | Func::Div
        | Func::Mod
        | Func::Eq
        | Func::Ne
        | Func::Le
        | Func::Lt => {
            let l = to_int(&arg(0))?;
            let r = to_int(&arg(1))?;
            Ok(match func {
                Func::Add => Value::Int(
                    l.checked_add(r)
                        .ok_or_else(|| msg("bigint add out of range"))?,
                ),
                Func::Sub => Value::Int(
                    l.checked_sub(r)
                        .ok_or_else(|| msg("bigint sub out of range"))?,
                ),
                Func::Mul => Value::Int(
                    l.checked_mul(r)
                        .ok_or_else(|| msg("bigint mul out of range"))?,
                ),
                Func::Eq => Value::Bool(l == r),
                Func::Ne => Value::Bool(l != r),
                Func::Le => Value::Bool(l <= r),
                Func::Lt => Value::Bool(l < r),
                _ => {
                    if r == 0 {
                        return err("division by zero");
                    }
                    if r == -1 {
                        if func == Func::Div {
                            if l == i64::MIN {
                                return err("bigint div out of range");
                            }
                            Value::Int(-l)
                        } else {
                            Value::Int(0)
                        }
                    } else if func == Func::Div {
                        Value::Int(l / r)
                    } else {
                        Value::Int(l % r)
                    }
                }
            })
        }
        Func::BitAnd | Func::BitOr | Func::BitXor | Func::LShift | Func::RShift => {
            let l = to_int(&arg(0))?;
            let r = to_int(&arg(1))?;
            // x86-64 masks the shift count to 6 bits, as pgbench's C shifts do in practice
            Ok(Value::Int(match func {
                Func::BitAnd => l & r,
                Func::BitOr => l | r,
                Func::BitXor => l ^ r,
                Func::LShift => l.wrapping_shl(r as u32),
                _ => l.wrapping_shr(r as u32),
            }))
        }
        Func::Not => Ok(Value::Bool(!to_bool(&arg(0))?)),
        Func::Pi => Ok(Value::Double(std::f64::consts::PI)),
        Func::Abs => Ok(match arg(0) {
            Value::Int(i) => Value::Int(if i < 0 { i.wrapping_neg() } else { i }),
            Value::Double(d) => Value::Double(if d < 0.0 { -d } else { d }),
            // pgbench reads a boolean's storage as a double here
            Value::Bool(b) => Value::Double(f64::from_bits(u64::from(b))),
            Value::Null => Value::Null,
        }),
        Func::Debug => {
            let x = arg(0);
            let mut line = format!("debug(script={},command={}): ", ctx.script, ctx.command + 1);
            match x {
                Value::Null => line.push_str("null"),
                Value::Bool(b) => line.push_str(if b { "boolean true" } else { "boolean false" }),
                Value::Int(i) => {
                    line.push_str("int ");
                    line.push_str(&i.to_string());
                }
                Value::Double(d) => {
                    line.push_str("double ");
                    format_double(d, &mut line);
                }
            }
            (ctx.debug)(&line);
            Ok(x)
        }
        Func::Double | Func::Sqrt | Func::Ln | Func::Exp => {
            let d = to_double(&arg(0))?;
            Ok(Value::Double(match func {
                Func::Sqrt => d.sqrt(),
                Func::Ln => d.ln(),
                Func::Exp => d.exp(),
                _ => d,
            }))
        }
        Func::Int => Ok(Value::Int(to_int(&arg(0))?)),
        Func::Least | Func::Greatest => {
            let least = func == Func::Least;
            if v.iter().any(|x| matches!(x, Value::Double(_))) {
                let mut ext = to_double(&arg(0))?;
                for x in &v[1..] {
                    let d = to_double(x)?;
                    // C's Min/Max macros, including their NaN behaviour
                    ext = if least {
                        if ext < d {
                            ext
                        } else {
                            d
                        }
                    } else if ext > d {
                        ext
                    } else {
                        d
                    };
                }
                Ok(Value::Double(ext))
            } else {
                let mut ext = to_int(&arg(0))?;
                for x in &v[1..] {
                    let i = to_int(x)?;
                    ext = if least { ext.min(i) } else { ext.max(i) };
                }
                Ok(Value::Int(ext))
            }
        }
        Func::Random | Func::RandomExponential | Func::RandomGaussian | Func::RandomZipfian => {
            let lb = to_int(&arg(0))?;
            let ub = to_int(&arg(1))?;
            if lb > ub {
                return err("empty range given to random");
            }
            if ub.checked_sub(lb).and_then(|d| d.checked_add(1)).is_none() {
                return err("random range is too large");
            }
            if func == Func::Random {
                return Ok(Value::Int(random_uniform(ctx.prng, lb, ub)));
            }
            let p = to_double(&arg(2))?;
            Ok(Value::Int(match func {
                Func::RandomGaussian => {
                    if p < 2.0 {
                        return err(format!(
                            "gaussian parameter must be at least 2.000000 (not {})",
                            f6(p)
                        ));
                    }
                    random_gaussian(ctx.prng, lb, ub, p)
                }
                Func::RandomZipfian => {
                    // pgbench would loop forever on NaN; reject it with the range message
                    if !(1.001..=1000.0).contains(&p) {
                        return err(format!(
                            "zipfian parameter must be in range [1.001, 1000] (not {})",
                            f6(p)
                        ));
                    }
                    random_zipfian(ctx.prng, lb, ub, p)
                }
                _ => {
                    if p <= 0.0 {
                        return err(format!(
                            "exponential parameter must be greater than zero (not {})",
                            f6(p)
                        ));
                    }
                    random_exponential(ctx.prng, lb, ub, p)
                }
            }))
        }
        Func::Pow => Ok(Value::Double(to_double(&arg(0))?.powf(to_double(&arg(1))?))),
        Func::Is => {
            let (a, b) = (arg(0), arg(1));
            Ok(Value::Bool(match (a, b) {
                (Value::Null, Value::Null) => true,
                (Value::Bool(x), Value::Bool(y)) => x == y,
                // same type, compare the storage's first byte as pgbench does
                (Value::Int(x), Value::Int(y)) => (x as u8 != 0) == (y as u8 != 0),
                (Value::Double(x), Value::Double(y)) => {
                    (x.to_bits() as u8 != 0) == (y.to_bits() as u8 != 0)
                }
                _ => false,
            }))
        }
        Func::HashMurmur2 | Func::HashFnv1a => {
            let val = to_int(&arg(0))?;
            let seed = to_int(&arg(1))?;
            Ok(Value::Int(if func == Func::HashMurmur2 {
                hash_murmur2(val, seed)
            } else {
                hash_fnv1a(val, seed)
            }))
        }
        Func::Permute => {
            let val = to_int(&arg(0))?;
            let size = to_int(&arg(1))?;
            let seed = to_int(&arg(2))?;
            if size <= 0 {
                return err("permute size parameter must be greater than zero");
            }
            Ok(Value::Int(permute(val, size, seed)))
        }
        Func::And | Func::Or | Func::Case => {
            err("internal error: lazy function evaluated strictly")
        }
    }
}

fn msg(m: &str) -> EvalError {
    EvalError::Message(m.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exprparse::parse_expr;

    /// Evaluates `src` through `f` with the given variables and a fixed seed; returns
    /// the result (or error message) and the generator's state afterwards.
    /// `parsed`: the variables' texts were used as values before (as by an earlier
    /// command), so they hold their parsed values.
    fn run(
        f: fn(&Expr, &mut EvalCtx<'_>) -> Result<Value, EvalError>,
        src: &str,
        vars: &[(&str, &str)],
        parsed: bool,
    ) -> (Result<Value, Option<String>>, Prng, Vec<String>) {
        let expr = parse_expr(src).unwrap_or_else(|e| panic!("{src}: {e}"));
        let mut v = Variables::new();
        for (name, text) in vars {
            v.set_string("option", *name, text).unwrap();
            if parsed {
                let _ = v.get_as_value(*name);
            }
        }
        v.set_int("set", "big", i64::MAX / 2).unwrap();
        v.set_value("set", "dbl", Value::Double(7.5)).unwrap();
        let mut prng = Prng::seed(5432);
        let mut lines = Vec::new();
        let mut sink = |l: &str| lines.push(l.to_string());
        let mut ctx = EvalCtx {
            vars: &mut v,
            prng: &mut prng,
            debug: &mut sink,
            script: 0,
            command: 0,
        };
        let r = f(&expr, &mut ctx).map_err(|e| e.message().map(str::to_string));
        let texts = ["scale", "n", "bad"]
            .iter()
            .map(|n| format!("{:?}", v.get_text(*n)))
            .collect();
        (r, prng, texts)
    }

    /// The shortcut alone: its value, or an error where it steps aside.
    fn shortcut_only(expr: &Expr, ctx: &mut EvalCtx<'_>) -> Result<Value, EvalError> {
        uniform_random_on_ints(expr, ctx).ok_or(EvalError::Silent)
    }

    #[test]
    fn the_random_shortcut_agrees_with_the_interpreter() {
        let vars = [("scale", "10"), ("n", " -3"), ("bad", "1x")];
        let cases = [
            // taken by the shortcut
            "random(1, 100000 * :scale)",
            "random(1, :scale)",
            "random(:n, 10 * :scale)",
            "random(-5000, 5000)",
            "random(:scale * :scale, :scale * 1000)",
            "random(7, 7)",
            // left to the interpreter: errors and other values
            "random(2, 1)",
            "random(0, 9223372036854775807)",
            "random(-9223372036854775808, 0)",
            "random(1, :big * 3)",
            "random(1, :undefined)",
            "random(1, :bad)",
            "random(1, :dbl)",
            "random(1, 2.5 * :scale)",
            "random(1, 3 + :scale)",
            "random(1, null)",
            "random(1.4, 10)",
            "1 + random(1, 10 * :scale)",
            "random(1, 10) * random(1, 10)",
        ];
        for parsed in [false, true] {
            let mut shortcut_taken = 0;
            for src in cases {
                let fast = run(eval, src, &vars, parsed);
                let slow = run(eval_general, src, &vars, parsed);
                assert_eq!(fast, slow, "{src}");
                if run(shortcut_only, src, &vars, parsed).0.is_ok() {
                    shortcut_taken += 1;
                }
            }
            // Once the variables hold values, the first six cases above (and only those)
            // take the shortcut; a text not parsed yet leaves it to the interpreter, so
            // then only the two on constants take it.
            assert_eq!(
                shortcut_taken,
                if parsed { 6 } else { 2 },
                "parsed: {parsed}"
            );
        }
    }
}
