//! Fuzz target: any text must parse or be rejected without panicking, render its error,
//! prepare in every query mode, and every expression must evaluate (or fail) without
//! panicking or hanging.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        pgsurge_script::fuzz_one(text);
    }
});
