//! `pgsurge replay`'s logs (stderr, csvlog, jsonlog, several files): read or refused
//! line by line with file and line, the same with unreadable lines skipped
//! (`pgsurge_replay::fuzzing::log_one`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| pgsurge_replay::fuzzing::log_one(data));
