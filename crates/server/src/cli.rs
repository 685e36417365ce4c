//! `pgsurge server start|stop|status` (placeholder until the CLI lands).

use std::ffi::OsString;

pub(crate) fn main(args: &[OsString]) -> i32 {
    let _ = args;
    eprintln!("pgsurge: error: `pgsurge server` is not implemented yet");
    1
}
