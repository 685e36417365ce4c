//! pgsurge's options for one load generator of a distributed run:
//! `--start-at`, `--generator-name`, `--generator-index`, `--generator-count`.
//! Owns their parsing and validation only; the engine waits for the start instant
//! and the results record the identity. None of them changes pgbench's behaviour
//! when absent.

/// Who this generator is among the generators of one distributed run, and when its
/// clients start (the engine's type, carried into the `RunSpec` as is).
pub use pgsurge_engine::GeneratorOptions;

pub use pgsurge_generators::start::{now_unix_us, parse_start_at, StartAtError};
