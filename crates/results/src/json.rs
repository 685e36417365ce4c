//! `--json=FILE`: the [`RunResult`] as a JSON document, and the JSON Schema it
//! follows (`schema/run-result.v1.json`, versioned by
//! [`crate::result::SCHEMA_VERSION`]).

use std::io::Write;
use std::path::Path;

use crate::error::ResultsError;
use crate::output::OutputFile;
use crate::result::RunResult;

/// The committed JSON Schema of the document [`write_json`] produces.
pub const RUN_RESULT_SCHEMA: &str = include_str!("../schema/run-result.v1.json");

/// Write `r` as pretty-printed JSON to `out`.
pub fn write_json_to(r: &RunResult, out: &mut dyn Write) -> Result<(), ResultsError> {
    serde_json::to_writer_pretty(&mut *out, r)?;
    out.write_all(b"\n")?;
    Ok(())
}

/// Opens `path` for the JSON document before the work that produces it, so that a
/// path that cannot be written fails at once (see [`OutputFile`]).
pub fn open_json(path: &Path) -> Result<OutputFile, ResultsError> {
    OutputFile::create(path, 64 * 1024).map_err(|source| ResultsError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Writes `r` into an output opened by [`open_json`] and commits it: a regular file is
/// replaced whole or left as it was, a device, FIFO or pipe receives the document.
pub fn write_json_into(r: &RunResult, mut out: OutputFile) -> Result<(), ResultsError> {
    let path = out.path().to_path_buf();
    let wrap = |source| ResultsError::Write {
        path: path.clone(),
        source,
    };
    // Encoded first: an encoding error leaves the output untouched.
    let mut bytes = Vec::new();
    write_json_to(r, &mut bytes)?;
    out.write_all(&bytes).map_err(wrap)?;
    out.commit().map_err(wrap)
}

/// Writes `r` as a JSON document to `path` ([`open_json`], then [`write_json_into`]).
pub fn write_json(r: &RunResult, path: &Path) -> Result<(), ResultsError> {
    write_json_into(r, open_json(path)?)
}
