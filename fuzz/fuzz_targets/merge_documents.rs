//! `pgsurge merge`: bytes cut at NUL into result documents (or generators' captured
//! output) are read and merged (`pgsurge_generators::fuzzing::merge_documents_one`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| pgsurge_generators::fuzzing::merge_documents_one(data));
