//! The campaign file, before anything runs: its types, reading and validating it,
//! the ordered tests it plans, its thresholds, a replay's report as the run it is
//! stored as, and a pgbench-tools `config` converted into one. What it plans is run by `pgsurge-campaign`; what it describes is read
//! back from a stored set by `pgsurge-records` (a set's `[capacity]` objective), with
//! no runner in between.
//!
//! Modules, ground floor first: each uses only modules listed before it (`spec` and
//! `load` read each other's items: `load` is the reading of `spec`'s types).
//!
//! | module | owns |
//! |---|---|
//! | [`spec`] | the campaign file's types (serde), a loaded [`Campaign`], [`SpecError`] |
//! | [`stored`] | the campaign file as kept with its set: as written, passwords masked; whether a stored set is of the same file |
//! | [`thresholds`] | `[thresholds]`: CI gates per test |
//! | [`replay`] | a replay of PostgreSQL logs as a workload of the matrix: its log, pace, name and spec |
//! | [`replay_record`] | a replay's report as a stored run (a campaign's test of a replay, `replay --store`) |
//! | [`matrix`] | expansion into ordered tests, test identity, seeded shuffle, the data a test needs |
//! | [`capacity`] | `[capacity]`: the tests of each step of a cell's search for the highest rate meeting a latency objective |
//! | [`repeats`] | `[repeats] until`: whether a test's repeat is still needed, from its cell's stored repeats; the precision each cell reached, stored with its runs; the repeats an earlier set says the precision needs |
//! | [`restarts`] | when a running throwaway server is replaced by a new one before a test: the rule the runner follows and the estimate counts by |
//! | [`reloads`] | when a target's data is checked on its server and loaded again before a test: the rule the runner follows and the estimate counts by |
//! | [`estimate`] | what `campaign plan` estimates: the time of runs, of the steps between tests, of initializations |
//! | [`kube`] | `[distributed.kube]` checked, and where the pods connect and store |
//! | [`extra`] | `[run] extra_args` read once into typed flags, kept on the campaign |
//! | [`load`] | reading a campaign file: interpolation, parsing, validation |
//! | [`convert`] | a pgbench-tools `config` (read, not executed) as a campaign file |
//! | `fuzzing` | the bodies of the campaign-file fuzz targets |

#![warn(missing_docs)]

pub mod capacity;
pub mod convert;
pub mod estimate;
pub mod extra;
#[doc(hidden)]
pub mod fuzzing;
pub mod kube;
pub mod load;
pub mod matrix;
pub mod reloads;
pub mod repeats;
pub mod replay;
pub mod replay_record;
pub mod restarts;
pub mod spec;
pub mod stored;
pub mod thresholds;

pub use spec::{Campaign, SpecError};
