//! `--json=FILE`: the [`RunResult`] as a JSON document, and the JSON Schema it
//! follows (`schema/run-result.v1.json`, versioned by
//! [`crate::result::SCHEMA_VERSION`]).

use std::io::Write;
use std::path::Path;

use crate::error::ResultsError;
use crate::result::RunResult;

/// The committed JSON Schema of the document [`write_json`] produces.
pub const RUN_RESULT_SCHEMA: &str = include_str!("../schema/run-result.v1.json");

/// Write `r` as pretty-printed JSON to `out`.
pub fn write_json_to(r: &RunResult, out: &mut dyn Write) -> Result<(), ResultsError> {
    serde_json::to_writer_pretty(&mut *out, r)?;
    out.write_all(b"\n")?;
    Ok(())
}

/// Write `r` as a JSON document to `path`, whole or not at all (through a temporary
/// file renamed over `path`).
pub fn write_json(r: &RunResult, path: &Path) -> Result<(), ResultsError> {
    let wrap = |source| ResultsError::Write {
        path: path.to_path_buf(),
        source,
    };
    // The whole document or nothing: a failed write leaves no partial file.
    let mut bytes = Vec::new();
    write_json_to(r, &mut bytes)?;
    crate::atomic::write_atomically(path, &bytes).map_err(wrap)
}
