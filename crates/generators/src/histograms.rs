//! Decoding, merging and encoding the HDR histograms carried in result documents
//! (base64 of the V2-deflate serialization, see `pgsurge_results::LatencySummary`).
//! Merging adds counts bucket by bucket, so percentiles of the union are exact to
//! the histograms' precision — never an average of percentiles.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;

use crate::MergeError;

/// Decodes one histogram as stored in a result document.
pub fn decode(encoded: &str) -> Result<Histogram<u64>, MergeError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|e| MergeError::Histogram(format!("not base64: {e}")))?;
    let mut h: Histogram<u64> = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| MergeError::Histogram(format!("not an HdrHistogram V2 encoding: {e:?}")))?;
    h.auto(true);
    // The decoder adds the bucket counts up with saturation: a total of 2^64 − 1 is
    // buckets whose sum does not fit in a `u64` (no run records that many values).
    if h.len() == u64::MAX {
        return Err(MergeError::Histogram(format!(
            "its bucket counts add up to {} or more",
            u64::MAX
        )));
    }
    Ok(h)
}

/// Encodes a histogram the way result documents store it.
pub fn encode(h: &Histogram<u64>) -> Option<String> {
    let mut buf = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut buf).ok()?;
    Some(base64::engine::general_purpose::STANDARD.encode(buf))
}

/// Adds `other` into `into` (which grows as needed), bucket by bucket. Refuses
/// counts that together do not fit in a `u64` (the crate would saturate them).
pub fn add(into: &mut Option<Histogram<u64>>, other: &Histogram<u64>) -> Result<(), MergeError> {
    if let Some(h) = into {
        if h.len().checked_add(other.len()).is_none() {
            return Err(MergeError::Histogram(format!(
                "counts of {} and {} add up to more than {}",
                h.len(),
                other.len(),
                u64::MAX
            )));
        }
    }
    match into {
        None => {
            let mut h = other.clone();
            h.auto(true);
            *into = Some(h);
        }
        Some(h) => h
            .add(other)
            .map_err(|e| MergeError::Histogram(format!("cannot add histograms: {e:?}")))?,
    }
    Ok(())
}

/// Every recorded bucket as `(highest equivalent value, count)`: what "equal bucket
/// for bucket" compares.
pub fn buckets(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    h.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}
