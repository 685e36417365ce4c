//! The pgbench script language, with no I/O of its own.
//!
//! This crate owns everything pgbench does with a script before and while a client runs
//! it, except talking to the server and to the operating system:
//!
//! * [`script_text`]: a script file's bytes as lossless text (pgbench sends a script's
//!   bytes as they are; [`script_bytes`] gives them back);
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
//!
//! Modules: `bytes` (script files as bytes), `splitter` (SQL statements by psql's lexing
//! rules), `meta` (one meta command), `exprlex` and `exprparse` (the tokenizer and
//! grammar of expressions), `expr` (the expression tree), `script` (the parsed script
//! and [`parse_script`]), `error` ([`ScriptError`]), `prepare` (SQL per query mode),
//! `names` (variable names numbered at load), `vars` (a client's variable table),
//! `value` ([`Value`]), `eval` (expression evaluation), `functions` (the random and
//! hash algorithms), `prng` (the PRNG and seeding order), `cnum` (C number parsing),
//! `numfmt` (C printf number formats), `cond` (the run-time `\if` stack), `runtime`
//! (`\sleep`, `\shell` and result-storage helpers), `builtins` (the built-in
//! scripts), `fuzzing` (the body of the parse-and-evaluate fuzz target).
//!
//! # Using it to run scripts (what pgbench does, in order)
//!
//! 1. [`parse_script`]`(name, text)` for each `-f`/`-b` script (errors print with
//!    [`ScriptError::render`], exit 1), then [`Script::prepare`]`(mode)` once all options
//!    are known (`statement has too many arguments …`, exit 1).
//! 2. Client 0's [`Variables`] get the `-D` values with `set_string("option", …)`; other
//!    clients clone them. Unless `-D` defined them: `scale`, `client_id`, then
//!    `default_seed`, then `random_seed` with `set_int`. Streams come from
//!    [`SeedStreams::with_default_seed`]`(seed, nclients, nthreads, !defined("default_seed"))`
//!    — pgbench draws `:default_seed` only when `-D` did not set it.
//! 3. SQL commands: simple mode sends [`substitute_simple`] of `sql`; extended/prepared
//!    send `sql` with one text parameter per `params` name ([`Variables::get_as_text`];
//!    undefined → SQL NULL). Results of a `\gset`/`\aset` command go through
//!    [`store_result_column`] (NULL → empty string).
//! 4. Meta commands: `\set` → [`eval`] then `set_value("set", var, v)`; `\if`/`\elif`/
//!    `\else`/`\endif` → [`CondStack`] (skipped commands through [`CondStack::skip_step`]);
//!    `\sleep` → [`sleep_usec`]; `\shell`/`\setshell` → [`shell_command`], the process's
//!    first output line (≤ 63 bytes) → [`parse_shell_output`] → `set_int("setshell", …)`.
//!    Failures print their message (if any) as `pgbench: error: …` before the engine's
//!    `client N aborted in command C (<argv[0]>) of script S; …` line.
//! 5. The `-r` report prints each command's [`Command::first_line`].

#![warn(missing_docs)]

mod builtins;
mod bytes;
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
mod names;
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
pub use bytes::{script_bytes, script_display, script_text};
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
pub use fuzzing::{fuzz_bytes, fuzz_one};
pub use names::VarName;
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
pub use vars::{is_valid_variable_name, VarError, VarKey, VarSlot, Variables};
