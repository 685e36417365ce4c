//! `results import`: reports and logs parse, and what passes the checks is stored
//! (`pgsurge_records::fuzzing::import_one`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| pgsurge_records::fuzzing::import_one(data));
