//! Workload packs: a directory with a manifest (`workload.toml`) naming its
//! parameters, schema and loader SQL, transaction scripts (pgbench scripts) with
//! weights, metrics and consistency checks. The built-in packs (`tpcc`,
//! `tpcc-procedures`, `ycsb-a`…`ycsb-f`, `oltp-read-write` and the other sysbench-like
//! ones) are the same files, compiled into the binary (`crates/workload/packs/`).
//!
//! `pgsurge bench --workload` and campaigns use [`Pack::resolve`], [`load::load`] (`-i`)
//! and [`run`]: the one way from a pack to a run (its scripts, parameters, mix and
//! pauses applied to the engine's `RunSpec`, its metrics read around the run);
//! `pgsurge workload` is [`workload_main`].
//!
//! Modules: `error` ([`WorkloadError`]), `manifest` (the manifest's types and its
//! reading), `pack` (a pack's files, the built-in packs), `load` (the loader),
//! `marker` (the record of a finished load, checked before a run), `metrics` (numbers
//! read before and after a run), `run` (a pack applied to a run), `scale` (the loaded scale), `check` (consistency
//! conditions), `cli` (`pgsurge workload`).
#![warn(missing_docs)]

pub mod check;
mod cli;
mod error;
pub mod load;
pub mod manifest;
pub mod marker;
pub mod metrics;
mod pack;
pub mod run;
mod scale;

pub use cli::{connect, new_pack, workload_cli, workload_main, WorkloadArgs};
pub use error::WorkloadError;
pub use pack::{builtin_names, Origin, Pack, BUILTIN, MANIFEST};
pub use scale::read_scale;
