//! Campaigns, OS/PG metric samplers, the environment manifest, and quickstart.

use std::ffi::OsString;

/// Entry point of `pgsurge campaign ...`.
pub fn campaign_main(args: &[OsString]) -> i32 {
    let _ = args;
    eprintln!("pgsurge: error: `pgsurge campaign` is not implemented yet");
    1
}

/// Entry point of `pgsurge results ...`.
pub fn results_main(args: &[OsString]) -> i32 {
    let _ = args;
    eprintln!("pgsurge: error: `pgsurge results` is not implemented yet");
    1
}

/// Entry point of `pgsurge quickstart`.
pub fn quickstart_main(args: &[OsString]) -> i32 {
    let _ = args;
    eprintln!("pgsurge: error: `pgsurge quickstart` is not implemented yet");
    1
}
