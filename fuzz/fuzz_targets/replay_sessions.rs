//! Sequences of log entries through the session assembler and the protocol machine
//! (`pgsurge_replay::fuzzing::sessions_one`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| pgsurge_replay::fuzzing::sessions_one(data));
