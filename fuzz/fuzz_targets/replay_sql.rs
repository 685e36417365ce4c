//! A logged statement's text and its parameter list: scanned, fingerprinted, matched
//! and sent as well-formed messages (`pgsurge_replay::fuzzing::sql_one`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| pgsurge_replay::fuzzing::sql_one(data));
