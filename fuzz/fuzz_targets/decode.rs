//! Backend messages: any bytes decode to messages or errors, never a panic
//! (`pgsurge_wire::fuzzing::decode_one`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| pgsurge_wire::fuzzing::decode_one(data));
