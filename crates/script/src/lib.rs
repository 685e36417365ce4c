//! The pgbench script language, with no I/O of its own.
//!
//! This crate owns everything pgbench does with a script before and while a client runs
//! it, except talking to the server and to the operating system:
//!
//! * [`parse_script`]: splitting a script into SQL and meta commands with psql's lexing
//!   rules, every syntax-time check, and the exact error text pgbench prints
//!   ([`ScriptError`]);
//! * [`Script::prepare`]: the per-query-mode SQL rewrite (`:var` → `$n`) and
//!   [`substitute_simple`] for the simple protocol;
//! * [`Variables`] and [`Value`]: pgbench's variable table, its lazy string parsing and
//!   number formatting;
//! * [`Expr`], [`parse_expr`] and [`eval`]: the `\set`/`\if` expression language;
//! * [`Prng`] and the distributions, hashes and `permute`, bit-exact with pgbench 15–18,
//!   plus [`RandomSeed`] and [`SeedStreams`] (the order in which pgbench seeds its streams);
//! * [`BUILTINS`]: the built-in scripts, name lookup and weights;
//! * run-time helpers the engine calls: [`CondStack`], [`sleep_usec`], [`shell_command`],
//!   [`gset_variable_name`].
//!
//! It must not do I/O: output produced by `debug()` goes to a sink the caller supplies,
//! and shell commands are assembled here but run by the engine.

#![warn(missing_docs)]

mod builtins;
mod cnum;
mod cond;
mod error;
mod eval;
mod expr;
mod exprlex;
mod exprparse;
mod functions;
mod fuzzing;
mod meta;
mod numfmt;
mod prepare;
mod prng;
mod runtime;
mod script;
mod splitter;
mod value;
mod vars;

pub use builtins::{
    builtin_list_text, find_builtin, parse_weight, show_script_text, split_weight, Builtin,
    BuiltinError, WeightError, BUILTINS, MAX_SCRIPTS,
};
pub use cond::{CondCommand, CondError, CondStack, CondState, SkipStep};
pub use error::ScriptError;
pub use eval::{eval, EvalCtx, EvalError};
pub use expr::{Expr, Func};
pub use exprparse::{parse_expr, ExprError};
pub use functions::{
    hash_fnv1a, hash_murmur2, permute, poisson_delay, random_exponential, random_gaussian,
    random_uniform, random_zipfian,
};
#[doc(hidden)]
pub use fuzzing::fuzz_one;
pub use numfmt::{format_double, format_f, format_g};
pub use prepare::{substitute_simple, PrepareError, QueryMode, MAX_PARAMS};
pub use prng::{Prng, RandomSeed, SeedError, SeedStreams, ThreadStreams};
pub use runtime::{
    gset_variable_name, parse_shell_output, shell_command, sleep_usec, store_result_column,
    ShellError, SleepError,
};
pub use script::{
    parse_script, Command, MetaCommand, MetaKind, Script, SleepAmount, SleepSpec, SleepUnit,
    SqlCommand, SqlMeta,
};
pub use value::{Value, ValueType};
pub use vars::{is_valid_variable_name, VarError, Variables};
