//! Owns the expression tree of `\set`, `\if` and `\elif`.
//!
//! Like pgbench, operators are represented as functions ([`Func`]) applied to argument
//! lists; `a > b` is built as `b < a`, `-e` as `0 - e`, `~e` as `e # -1`, and `hash(x)` /
//! `permute(i, n)` get `:default_seed` appended at parse time.

use crate::names::VarName;
use crate::value::Value;

/// An expression node.
///
/// A left-associative chain such as `1 + 1 + … + 1` is a tree as deep as it is long
/// (pgbench's parser accepts any length, its bison stack does not grow with it), so
/// `Drop`, `Clone` and `PartialEq` are written as loops over an explicit stack: the
/// derived ones would recurse once per level and overflow the thread's stack on a
/// 150,000-term `\set`. `Debug` recurses on a stack that grows on the heap.
pub enum Expr {
    /// A literal (integer, double, boolean or NULL).
    Const(Value),
    /// A `:name` reference (name without the colon).
    Var(VarName),
    /// An operator or function applied to its arguments.
    Call {
        /// Which function.
        func: Func,
        /// Its arguments, in order (for CASE: when, then, …, else).
        args: Vec<Expr>,
    },
}

/// Every function and operator of the expression language.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Abs,
    Least,
    Greatest,
    Debug,
    Pi,
    Sqrt,
    Ln,
    Exp,
    Int,
    Double,
    Random,
    RandomGaussian,
    RandomExponential,
    RandomZipfian,
    Pow,
    And,
    Or,
    Not,
    BitAnd,
    BitOr,
    BitXor,
    LShift,
    RShift,
    Eq,
    Ne,
    Le,
    Lt,
    Is,
    Case,
    HashMurmur2,
    HashFnv1a,
    Permute,
}

/// How many arguments a function takes, as pgbench's function table says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arity {
    Exactly(usize),
    /// one or more (`least`, `greatest`)
    AtLeastOne,
    /// one or two (hash functions, seed optional)
    Hash,
    /// two or three (`permute`, seed optional)
    Permute,
}

/// Function names callable from scripts (case-insensitive), with the canonical name pgbench
/// prints in arity errors.
pub(crate) const NAMED_FUNCTIONS: &[(&str, Func, Arity)] = &[
    ("mod", Func::Mod, Arity::Exactly(2)),
    ("abs", Func::Abs, Arity::Exactly(1)),
    ("least", Func::Least, Arity::AtLeastOne),
    ("greatest", Func::Greatest, Arity::AtLeastOne),
    ("debug", Func::Debug, Arity::Exactly(1)),
    ("pi", Func::Pi, Arity::Exactly(0)),
    ("sqrt", Func::Sqrt, Arity::Exactly(1)),
    ("ln", Func::Ln, Arity::Exactly(1)),
    ("exp", Func::Exp, Arity::Exactly(1)),
    ("int", Func::Int, Arity::Exactly(1)),
    ("double", Func::Double, Arity::Exactly(1)),
    ("random", Func::Random, Arity::Exactly(2)),
    ("random_gaussian", Func::RandomGaussian, Arity::Exactly(3)),
    (
        "random_exponential",
        Func::RandomExponential,
        Arity::Exactly(3),
    ),
    ("random_zipfian", Func::RandomZipfian, Arity::Exactly(3)),
    ("pow", Func::Pow, Arity::Exactly(2)),
    ("power", Func::Pow, Arity::Exactly(2)),
    ("hash", Func::HashMurmur2, Arity::Hash),
    ("hash_murmur2", Func::HashMurmur2, Arity::Hash),
    ("hash_fnv1a", Func::HashFnv1a, Arity::Hash),
    ("permute", Func::Permute, Arity::Permute),
];

impl Expr {
    /// Shorthand for a call node.
    pub fn call(func: Func, args: Vec<Expr>) -> Expr {
        Expr::Call { func, args }
    }
}

impl std::fmt::Debug for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        stacker::maybe_grow(
            crate::exprparse::RED_ZONE,
            crate::exprparse::STACK_GROWTH,
            || match self {
                Expr::Const(v) => f.debug_tuple("Const").field(v).finish(),
                Expr::Var(name) => f.debug_tuple("Var").field(name).finish(),
                Expr::Call { func, args } => f
                    .debug_struct("Call")
                    .field("func", func)
                    .field("args", args)
                    .finish(),
            },
        )
    }
}

impl Drop for Expr {
    fn drop(&mut self) {
        let Expr::Call { args, .. } = self else {
            return;
        };
        // fast path: the children have no children of their own, so dropping them does
        // not recurse further (most nodes of real scripts)
        if !args
            .iter()
            .any(|a| matches!(a, Expr::Call { args, .. } if !args.is_empty()))
        {
            return;
        }
        // detach every descendant into one flat list; each node is then dropped with an
        // empty argument list, so this function never runs more than one level deep
        let mut pending = std::mem::take(args);
        while let Some(mut node) = pending.pop() {
            if let Expr::Call { args, .. } = &mut node {
                pending.append(args);
            }
        }
    }
}

impl Clone for Expr {
    fn clone(&self) -> Expr {
        enum Step<'a> {
            Visit(&'a Expr),
            /// Build a call from the last `n` finished nodes.
            Build(Func, usize),
        }
        let mut todo = vec![Step::Visit(self)];
        let mut done: Vec<Expr> = Vec::new();
        while let Some(step) = todo.pop() {
            match step {
                Step::Visit(Expr::Const(v)) => done.push(Expr::Const(*v)),
                Step::Visit(Expr::Var(name)) => done.push(Expr::Var(name.clone())),
                Step::Visit(Expr::Call { func, args }) => {
                    todo.push(Step::Build(*func, args.len()));
                    todo.extend(args.iter().rev().map(Step::Visit));
                }
                Step::Build(func, n) => {
                    let args = done.split_off(done.len() - n);
                    done.push(Expr::Call { func, args });
                }
            }
        }
        done.pop().expect("the root is built last")
    }
}

impl PartialEq for Expr {
    fn eq(&self, other: &Expr) -> bool {
        let mut todo = vec![(self, other)];
        while let Some(pair) = todo.pop() {
            match pair {
                (Expr::Const(a), Expr::Const(b)) if a == b => {}
                (Expr::Var(a), Expr::Var(b)) if a == b => {}
                (Expr::Call { func: f, args: a }, Expr::Call { func: g, args: b })
                    if f == g && a.len() == b.len() =>
                {
                    todo.extend(a.iter().zip(b));
                }
                _ => return false,
            }
        }
        true
    }
}
