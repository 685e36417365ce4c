//! The benchmark engine: clients, drivers, throttling, statistics, the pgbench report and logs.

use std::ffi::OsString;

/// Entry point of `pgsurge bench` and of the binary invoked as `pgbench`.
/// `args` excludes the program name. Returns the process exit code.
pub fn bench_main(args: &[OsString]) -> i32 {
    let _ = args;
    eprintln!("pgbench: error: pgsurge bench is not implemented yet");
    1
}
