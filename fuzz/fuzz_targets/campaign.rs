//! Campaign files: parse, expand and store without panicking
//! (`pgsurge_plan::fuzzing::campaign_one`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| pgsurge_plan::fuzzing::campaign_one(data));
