//! The scale a pack's data was loaded at, read back from the database with the
//! manifest's `scale_query`, once the load marker says its load finished.

use pgsurge_wire::Connection;

use crate::error::WorkloadError;
use crate::pack::Pack;

/// The pack's scale in the database of `conn`: its `scale_query`'s value, a positive
/// integer, when a load of the pack's loader finished there
/// ([`crate::marker::read`]). An error says the pack is not (completely) loaded.
pub fn read_scale(pack: &Pack, conn: &mut Connection) -> Result<i64, WorkloadError> {
    crate::marker::read(pack, conn)?;
    let fail = |message: String| WorkloadError::Scale {
        pack: pack.name().to_string(),
        message,
    };
    let rows = conn.simple_query(&pack.manifest.scale_query).map_err(|e| {
        fail(format!(
            "{} (was it loaded with -i?)",
            e.to_string().trim_end()
        ))
    })?;
    let text = rows
        .last()
        .and_then(|r| r.get(0, 0))
        .unwrap_or("")
        .to_string();
    match text.trim().parse::<i64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(fail(format!(
            "its scale query gave \"{text}\", not a positive integer (was it loaded with -i?)"
        ))),
    }
}
