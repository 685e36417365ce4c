//! The static HTML report and `pgsurge compare`: pictures and verdicts from the results
//! store. Reads the store (`pgsurge-store`), never runs anything.
//!
//! * [`cells`] groups runs into matrix cells (exact percentiles over repeats);
//! * [`stats`] and [`compare`] state whether B differs from A, with intervals;
//! * [`charts`], [`html`] and [`pages`] render the offline report.

#![warn(missing_docs)]

pub mod cells;
pub mod charts;
mod cli;
pub mod compare;
pub mod html;
pub mod pages;
mod run_page;
pub mod stats;

pub use cli::{compare_main, report_main};
pub use pages::{write_report, ReportError, ReportFiles, ReportRequest};
