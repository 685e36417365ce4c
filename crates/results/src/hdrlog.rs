//! `--hdr-log=FILE`: latency histograms per reporting interval in the standard
//! HdrHistogram interval log format (`#[StartTime: …]`, `#[BaseTime: …]`, the
//! legend line, then `start,length,max,base64(V2-deflate histogram)` lines),
//! written with the `hdrhistogram` crate's interval log writer so logs from
//! several machines can be merged exactly by any HdrHistogram tool. Values are
//! µs; the "max" column is divided by 1000 (ms) for human readers.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;

use crate::error::ResultsError;
use crate::histogram::LatencyHistogram;

/// Writes one interval histogram at a time.
pub struct HdrIntervalLogWriter<W: Write = BufWriter<File>> {
    out: W,
    serializer: V2DeflateSerializer,
    scratch: Vec<u8>,
    header_len: usize,
    start_epoch_us: i64,
}

impl<W: Write> std::fmt::Debug for HdrIntervalLogWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HdrIntervalLogWriter")
            .finish_non_exhaustive()
    }
}

fn system_time(epoch_us: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_micros(epoch_us.max(0) as u64)
}

/// µs values, shown as ms in the max column.
const MAX_VALUE_DIVISOR: f64 = 1000.0;

/// The legend line HdrHistogram writers put after the header.
const LEGEND: &str =
    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n";

/// A builder that writes nothing but the max-value-divisor line.
fn bare_builder() -> IntervalLogWriterBuilder {
    let mut b = IntervalLogWriterBuilder::new();
    b.with_max_value_divisor(MAX_VALUE_DIVISOR);
    b
}

impl HdrIntervalLogWriter<BufWriter<File>> {
    /// Create (truncate) `path` and write the log header.
    pub fn create(path: &Path, start_epoch_us: i64, comment: &str) -> Result<Self, ResultsError> {
        let f = File::create(path).map_err(|source| ResultsError::Write {
            path: path.to_path_buf(),
            source,
        })?;
        HdrIntervalLogWriter::new(BufWriter::new(f), start_epoch_us, comment)
    }
}

impl<W: Write> HdrIntervalLogWriter<W> {
    /// Start a log on `out`: `comment`, the format version, `StartTime` and
    /// `BaseTime` (both `start_epoch_us`; interval timestamps are relative to
    /// it), the max value divisor and the legend line.
    pub fn new(mut out: W, start_epoch_us: i64, comment: &str) -> Result<Self, ResultsError> {
        let mut serializer = V2DeflateSerializer::new();
        let mut scratch = Vec::new();
        let mut b = IntervalLogWriterBuilder::new();
        if !comment.is_empty() {
            b.add_comment(comment);
        }
        b.add_comment("[Histogram log format version 1.3]")
            .with_start_time(system_time(start_epoch_us))
            .with_base_time(system_time(start_epoch_us))
            .with_max_value_divisor(MAX_VALUE_DIVISOR);
        b.begin_log_with(&mut scratch, &mut serializer)?;
        out.write_all(&scratch)?;
        out.write_all(LEGEND.as_bytes())?;
        // What a bare writer puts before each histogram line, to be skipped.
        scratch.clear();
        bare_builder().begin_log_with(&mut scratch, &mut serializer)?;
        let header_len = scratch.len();
        Ok(HdrIntervalLogWriter {
            out,
            serializer,
            scratch,
            header_len,
            start_epoch_us,
        })
    }

    /// Append one interval: `hist` holds the latencies (µs) recorded from
    /// `interval_start_epoch_us` for `length_us`. `tag` names a series (e.g. a
    /// script; no spaces, commas or `=`), `None` for the run as a whole.
    pub fn write_interval(
        &mut self,
        hist: &LatencyHistogram,
        interval_start_epoch_us: i64,
        length_us: i64,
        tag: Option<&str>,
    ) -> Result<(), ResultsError> {
        let tag = match tag {
            Some(t) => Some(
                Tag::new(t).ok_or_else(|| ResultsError::HdrLog(format!("invalid tag {t:?}")))?,
            ),
            None => None,
        };
        let rel = (interval_start_epoch_us - self.start_epoch_us).max(0) as u64;
        // The crate's writer only exists borrowed from a builder: use a bare one
        // on a scratch buffer and copy the histogram line.
        self.scratch.clear();
        let hdr = hist.to_hdr();
        {
            let mut w = bare_builder().begin_log_with(&mut self.scratch, &mut self.serializer)?;
            w.write_histogram(
                &hdr,
                Duration::from_micros(rel),
                Duration::from_micros(length_us.max(0) as u64),
                tag,
            )
            .map_err(|e| ResultsError::HdrLog(e.to_string()))?;
        }
        self.out.write_all(&self.scratch[self.header_len..])?;
        Ok(())
    }

    /// Flush and return the writer.
    pub fn finish(mut self) -> Result<W, ResultsError> {
        self.out.flush()?;
        Ok(self.out)
    }
}
