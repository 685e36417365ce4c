//! Campaign files with `${VAR}` references, loaded with a few variables set: parse,
//! interpolate, expand and store without panicking, the stored text holding no value
//! of the environment and the hooks as written
//! (`pgsurge_plan::fuzzing::campaign_env_one`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| pgsurge_plan::fuzzing::campaign_env_one(data));
