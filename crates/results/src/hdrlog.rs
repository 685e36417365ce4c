//! `--hdr-log=FILE`: latency histograms per reporting interval in the standard
//! HdrHistogram interval log format (`#[StartTime: …]`, `#[BaseTime: …]`, the
//! legend line, then `start,length,max,base64(V2-deflate histogram)` lines),
//! written with the `hdrhistogram` crate's interval log writer so logs from
//! several machines can be merged exactly by any HdrHistogram tool. Values are
//! µs by default, or ns ([`HdrLogUnit`], `--hdr-log-unit=ns`, the unit
//! HdrHistogram's own tools assume); the "max" column is shown in ms either way
//! (the divisor is 1000 or 1000000), and the file's first comment line names the
//! unit.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;

use crate::error::ResultsError;
use crate::histogram::LatencyHistogram;
use crate::output::OutputFile;

/// Writes one interval histogram at a time.
pub struct HdrIntervalLogWriter<W: Write = OutputFile> {
    out: W,
    serializer: V2DeflateSerializer,
    scratch: Vec<u8>,
    header_len: usize,
    start_epoch_us: i64,
    unit: HdrLogUnit,
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

/// The unit of the values in an HDR interval log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HdrLogUnit {
    /// Microseconds: the run's own resolution (the default).
    #[default]
    Micros,
    /// Nanoseconds: µs values × 1000, for tools that assume ns
    /// (`HistogramLogProcessor`'s default output ratio).
    Nanos,
}

impl HdrLogUnit {
    /// `us` or `ns`, as the option takes it.
    pub fn parse(text: &str) -> Option<HdrLogUnit> {
        match text {
            "us" => Some(HdrLogUnit::Micros),
            "ns" => Some(HdrLogUnit::Nanos),
            _ => None,
        }
    }

    /// The comment line naming the unit, first in the file.
    pub fn comment(self) -> &'static str {
        match self {
            HdrLogUnit::Micros => {
                "pgsurge bench: latency values in microseconds (us); Interval_Max in ms"
            }
            HdrLogUnit::Nanos => {
                "pgsurge bench: latency values in nanoseconds (ns); Interval_Max in ms"
            }
        }
    }

    /// Values per µs.
    fn scale(self) -> u64 {
        match self {
            HdrLogUnit::Micros => 1,
            HdrLogUnit::Nanos => 1000,
        }
    }

    /// Divides the max column down to ms.
    fn max_value_divisor(self) -> f64 {
        1000.0 * self.scale() as f64
    }
}

/// The legend line HdrHistogram writers put after the header.
const LEGEND: &str =
    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n";

/// A builder that writes nothing but the max-value-divisor line.
fn bare_builder(unit: HdrLogUnit) -> IntervalLogWriterBuilder {
    let mut b = IntervalLogWriterBuilder::new();
    b.with_max_value_divisor(unit.max_value_divisor());
    b
}

impl HdrIntervalLogWriter<OutputFile> {
    /// Start the log for `path`, values in `unit` (named in the first comment line).
    /// A regular file is written beside `path` and renamed over it by
    /// [`HdrIntervalLogWriter::finish_file`], so `path` never holds a partial log;
    /// dropped unfinished (or [`HdrIntervalLogWriter::abandon`]ed), it leaves nothing.
    /// A device, FIFO or pipe is written as the run goes (see [`OutputFile`]).
    pub fn create(
        path: &Path,
        start_epoch_us: i64,
        unit: HdrLogUnit,
    ) -> Result<Self, ResultsError> {
        let failed = |source| ResultsError::Write {
            path: path.to_path_buf(),
            source,
        };
        let file = OutputFile::create(path, 64 * 1024).map_err(failed)?;
        HdrIntervalLogWriter::new(file, start_epoch_us, unit.comment(), unit)
    }

    /// Flushes the log and puts it into place; on any failure nothing is left and the
    /// error names the log's path.
    pub fn finish_file(self) -> Result<(), ResultsError> {
        let path = self.out.path().to_path_buf();
        let failed = |source| ResultsError::Write {
            path: path.clone(),
            source,
        };
        let file = self.finish().map_err(|e| match e {
            ResultsError::Io(source) => failed(source),
            other => other,
        })?;
        file.commit().map_err(failed)
    }

    /// Gives the log up (a write failed): the path is left as it was.
    pub fn abandon(self) {}
}

impl<W: Write> HdrIntervalLogWriter<W> {
    /// Start a log on `out`: `comment`, the format version, `StartTime` and
    /// `BaseTime` (both `start_epoch_us`; interval timestamps are relative to
    /// it), the max value divisor and the legend line; values in `unit`.
    pub fn new(
        mut out: W,
        start_epoch_us: i64,
        comment: &str,
        unit: HdrLogUnit,
    ) -> Result<Self, ResultsError> {
        let mut serializer = V2DeflateSerializer::new();
        let mut scratch = Vec::new();
        let mut b = IntervalLogWriterBuilder::new();
        if !comment.is_empty() {
            b.add_comment(comment);
        }
        b.add_comment("[Histogram log format version 1.3]")
            .with_start_time(system_time(start_epoch_us))
            .with_base_time(system_time(start_epoch_us))
            .with_max_value_divisor(unit.max_value_divisor());
        b.begin_log_with(&mut scratch, &mut serializer)?;
        out.write_all(&scratch)?;
        out.write_all(LEGEND.as_bytes())?;
        // What a bare writer puts before each histogram line, to be skipped.
        scratch.clear();
        bare_builder(unit).begin_log_with(&mut scratch, &mut serializer)?;
        let header_len = scratch.len();
        Ok(HdrIntervalLogWriter {
            out,
            serializer,
            scratch,
            header_len,
            start_epoch_us,
            unit,
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
        let hdr = scaled(hist.to_hdr(), self.unit.scale())?;
        {
            let mut w =
                bare_builder(self.unit).begin_log_with(&mut self.scratch, &mut self.serializer)?;
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

    /// Flush and return the writer (no more intervals follow).
    pub fn finish(mut self) -> Result<W, ResultsError> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// `hist` with every value multiplied by `factor` (each bucket's count recorded at
/// its highest equivalent value × `factor`).
fn scaled(
    hist: hdrhistogram::Histogram<u64>,
    factor: u64,
) -> Result<hdrhistogram::Histogram<u64>, ResultsError> {
    if factor == 1 {
        return Ok(hist);
    }
    let mut out = hdrhistogram::Histogram::<u64>::new_with_bounds(
        1,
        hist.high().saturating_mul(factor).max(2),
        hist.sigfig(),
    )
    .map_err(|e| ResultsError::HdrLog(e.to_string()))?;
    for v in hist.iter_recorded() {
        out.record_n(
            v.value_iterated_to().saturating_mul(factor),
            v.count_at_value(),
        )
        .map_err(|e| ResultsError::HdrLog(e.to_string()))?;
    }
    Ok(out)
}
