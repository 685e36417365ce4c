//! The static HTML report and A/B comparison statistics.

pub mod charts;
pub mod html;
pub mod stats;

use std::ffi::OsString;

/// Entry point of `pgsurge report ...`.
pub fn report_main(args: &[OsString]) -> i32 {
    let _ = args;
    eprintln!("pgsurge: error: `pgsurge report` is not implemented yet");
    1
}

/// Entry point of `pgsurge compare ...`.
pub fn compare_main(args: &[OsString]) -> i32 {
    let _ = args;
    eprintln!("pgsurge: error: `pgsurge compare` is not implemented yet");
    1
}
