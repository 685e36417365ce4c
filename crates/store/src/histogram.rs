//! Encoding and merging of the HDR histograms kept in `run_histograms` and
//! `run_intervals.histogram`. Values are microseconds. Merging the whole-run histograms
//! of several repeats gives exact percentiles over the repeats (within HDR precision).

use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer, V2Serializer};
use hdrhistogram::Histogram;

use crate::error::{Result, StoreError};
use crate::model::{
    histogram_encoding, HistogramRecord, IntervalHistogram, IntervalHistogramRecord,
};

/// Serializes `h` in the stored encoding ([`histogram_encoding::HDR_V2`]).
pub fn encode(h: &Histogram<u64>) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    V2Serializer::new()
        .serialize(h, &mut buf)
        .map_err(|e| StoreError::Histogram(format!("encoding: {e:?}")))?;
    Ok(buf)
}

/// Serializes `h` compressed ([`histogram_encoding::HDR_V2_DEFLATE`]): what interval
/// histograms use, a few hundred bytes for a typical second.
pub fn encode_compressed(h: &Histogram<u64>) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut buf)
        .map_err(|e| StoreError::Histogram(format!("encoding: {e:?}")))?;
    Ok(buf)
}

/// Deserializes a histogram stored with [`encode`] (or deflate-compressed V2: the
/// format is recognized from its cookie).
pub fn decode(bytes: &[u8]) -> Result<Histogram<u64>> {
    Deserializer::new()
        .deserialize(&mut std::io::Cursor::new(bytes))
        .map_err(|e| StoreError::Histogram(format!("decoding: {e:?}")))
}

impl HistogramRecord {
    /// Builds a record for `h` (unit: microseconds).
    pub fn from_histogram(
        kind: &str,
        script_index: i64,
        script_name: Option<String>,
        h: &Histogram<u64>,
    ) -> Result<Self> {
        Ok(HistogramRecord {
            kind: kind.to_string(),
            script_index,
            script_name,
            unit: "us".to_string(),
            encoding: histogram_encoding::HDR_V2.to_string(),
            count: i64::try_from(h.len()).unwrap_or(i64::MAX),
            data: encode(h)?,
        })
    }

    /// Decodes the stored histogram.
    pub fn decode(&self) -> Result<Histogram<u64>> {
        check_encoding(&self.encoding)?;
        decode(&self.data)
    }
}

impl IntervalHistogramRecord {
    /// A record for the interval starting at `ts` (epoch seconds) / `elapsed_s` (since
    /// the measured run began), `duration_s` long; None when `h` is empty (empty
    /// intervals are not stored). Unit: microseconds; compressed V2 encoding.
    pub fn from_histogram(
        kind: &str,
        ts: f64,
        elapsed_s: f64,
        duration_s: f64,
        h: &Histogram<u64>,
    ) -> Result<Option<Self>> {
        if h.is_empty() {
            return Ok(None);
        }
        Ok(Some(IntervalHistogramRecord {
            kind: kind.to_string(),
            ts,
            elapsed_s,
            duration_s,
            unit: "us".to_string(),
            encoding: histogram_encoding::HDR_V2_DEFLATE.to_string(),
            count: i64::try_from(h.len()).unwrap_or(i64::MAX),
            data: encode_compressed(h)?,
        }))
    }

    /// Decodes the stored histogram.
    pub fn decode(&self) -> Result<Histogram<u64>> {
        check_encoding(&self.encoding)?;
        decode(&self.data)
    }
}

fn check_encoding(encoding: &str) -> Result<()> {
    if encoding != histogram_encoding::HDR_V2 && encoding != histogram_encoding::HDR_V2_DEFLATE {
        return Err(StoreError::Histogram(format!(
            "unknown encoding {encoding:?}"
        )));
    }
    Ok(())
}

/// Merges interval histograms (e.g. a window of one run, or the same window of several
/// repeats, as returned by [`crate::Store::interval_histograms`]); None when there is
/// none.
pub fn merged_intervals(records: &[IntervalHistogram]) -> Result<Option<Histogram<u64>>> {
    let mut out: Option<Histogram<u64>> = None;
    for r in records {
        let h = r.record.decode()?;
        match out.as_mut() {
            None => out = Some(h),
            Some(acc) => acc
                .add(&h)
                .map_err(|e| StoreError::Histogram(format!("merging: {e:?}")))?,
        }
    }
    Ok(out)
}

/// Merges the histograms of `kind` and `script_index` among `records` (e.g. the
/// histograms of several runs); None when there is none.
pub fn merged(
    records: &[HistogramRecord],
    kind: &str,
    script_index: i64,
) -> Result<Option<Histogram<u64>>> {
    let mut out: Option<Histogram<u64>> = None;
    for r in records
        .iter()
        .filter(|r| r.kind == kind && r.script_index == script_index)
    {
        let h = r.decode()?;
        match out.as_mut() {
            None => out = Some(h),
            Some(acc) => acc
                .add(&h)
                .map_err(|e| StoreError::Histogram(format!("merging: {e:?}")))?,
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_percentiles_equal_those_of_all_values() {
        let mut a = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        let mut b = a.clone();
        let mut all = a.clone();
        for v in 1..=1000u64 {
            a.record(v * 10).unwrap();
            all.record(v * 10).unwrap();
        }
        for v in 1..=3000u64 {
            b.record(v * 7 + 5000).unwrap();
            all.record(v * 7 + 5000).unwrap();
        }
        let recs = vec![
            HistogramRecord::from_histogram("latency", -1, None, &a).unwrap(),
            HistogramRecord::from_histogram("latency", -1, None, &b).unwrap(),
            HistogramRecord::from_histogram("lag", -1, None, &b).unwrap(),
        ];
        let m = merged(&recs, "latency", -1).unwrap().unwrap();
        assert_eq!(m.len(), 4000);
        for q in [0.5, 0.9, 0.99, 0.999] {
            assert_eq!(m.value_at_quantile(q), all.value_at_quantile(q));
        }
        assert!(merged(&recs, "latency", 0).unwrap().is_none());
        assert!(decode(b"garbage").is_err());
    }
}
