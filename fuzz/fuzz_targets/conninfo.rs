//! Conninfo strings and URIs: parse or fail, never panic, and never show a password
//! after redaction (`pgsurge_wire::fuzzing::conninfo_one`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| pgsurge_wire::fuzzing::conninfo_one(data));
