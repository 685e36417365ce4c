//! Conninfo strings and URIs: arbitrary text must parse or give an error, never
//! panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pgsurge_wire::ConnConfig;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        let env = |k: &str| (k == "HOME").then(|| "/nonexistent".to_string());
        let _ = ConnConfig::parse_with_env(s, &env);
    }
});
