//! The static HTML report and `pgsurge compare`: pictures and verdicts from the results
//! store. Reads the store (`pgsurge-store`), never runs anything.
//!
//! * [`cells`] groups runs into matrix cells (exact percentiles over repeats);
//! * [`compare`] states whether B differs from A, with the intervals and verdicts of
//!   `pgsurge-analysis`;
//! * [`charts`], [`html`] and [`pages`] render the offline report, `run_page` the page
//!   of one test, `failure` what a failure cost it (the outage marked, the figures),
//!   `capacity` the searches of a campaign with `[capacity]` and their steps' validity;
//! * [`replay_compare`] compares two stored replays of one log, fingerprint by
//!   fingerprint;
//! * `flames` draws the report's flame graphs (per test, per cell pooled, B against A)
//!   from the profiles stored with the tests;
//! * [`explain`] says why a cell changed from the profiles stored with its repeats
//!   (`compare --explain`, differential flame graphs);
//! * [`sides`] is `compare` as a typed function: sides (run ids, filters, another
//!   store) resolved into cells and compared;
//! * `cli` holds the command lines of `pgsurge report` and `pgsurge compare`.

#![warn(missing_docs)]

mod capacity;
pub mod cells;
pub mod charts;
mod cli;
pub mod compare;
pub mod explain;
mod failure;
mod flames;
pub mod html;
pub mod pages;
pub mod replay_compare;
mod run_page;
pub mod sides;

pub use cli::{
    compare_main, compare_with, report_main, report_with, run_compare, AlongArg, CompareArgs,
    FailOn, Format, ReportArgs, EXIT_REGRESSION,
};
pub use compare::{
    compare_schema, FORMAT as COMPARE_FORMAT, SCHEMA as COMPARE_SCHEMA,
    SCHEMA_VERSION as COMPARE_SCHEMA_VERSION,
};
pub use pages::{write_report, ReportError, ReportFiles, ReportRequest, SETS_ON_ONE_PAGE};
pub use sides::{compare_sides, CompareError, CompareRequest, Side, SideFilter};
