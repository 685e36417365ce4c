//! The JSON documents' non-finite floats: serde_json writes them as `null`, and
//! [`nullable_f64`] reads `null` back.

use serde::Deserialize;

/// Non-finite floats are written as JSON `null`; read `null` back as NaN so a
/// document always round-trips.
pub(crate) fn nullable_f64<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}
