//! The integration tests of `pgsurge-report`, as modules of one test binary: one
//! build and link for all of them, and one shared test server per run.

mod common;

mod agreement;
mod compare_explain;
mod compare_names;
mod report_flames;
mod report_html;
mod report_layout;
mod report_outliers;
mod where_time_goes;
