//! Throwaway PostgreSQL clusters: find or fetch binaries, initdb, start, stop.

use std::ffi::OsString;

/// Entry point of `pgsurge server ...`; `args` follow the word `server`.
pub fn server_main(args: &[OsString]) -> i32 {
    let _ = args;
    eprintln!("pgsurge: error: `pgsurge server` is not implemented yet");
    1
}
