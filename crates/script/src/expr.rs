//! Owns the expression tree of `\set`, `\if` and `\elif`.
//!
//! Like pgbench, operators are represented as functions ([`Func`]) applied to argument
//! lists; `a > b` is built as `b < a`, `-e` as `0 - e`, `~e` as `e # -1`, and `hash(x)` /
//! `permute(i, n)` get `:default_seed` appended at parse time.

use crate::value::Value;

/// An expression node.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A literal (integer, double, boolean or NULL).
    Const(Value),
    /// A `:name` reference (name without the colon).
    Var(Box<str>),
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
