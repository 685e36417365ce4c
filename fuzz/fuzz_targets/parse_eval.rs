//! Script files: any bytes must parse or be rejected without panicking, and everything
//! downstream of a parse must run without panicking or hanging
//! (`pgsurge_script::fuzz_one`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| pgsurge_script::fuzz_bytes(data));
