-- pgsurge results store, schema version 3: per-interval latency histograms in their own
-- table, so percentiles over any time window of a run, and over the same window of
-- several repeats, are exact (merge the window's histograms, then query).
--
-- One row per interval that recorded at least one value (empty intervals are skipped),
-- serialized with HdrHistogram's compressed V2 format. Kept apart from run_intervals so
-- reading the per-second series does not read the blobs. The merge of a run's rows
-- equals its whole-run histogram in run_histograms (kind 'latency', script_index -1).
-- run_intervals.histogram (version 1) is superseded by this table and left empty.
CREATE TABLE run_interval_histograms (
    run_id @INT@ NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,     -- 'latency'
    ts @REAL@ NOT NULL,     -- interval start, epoch seconds (as run_intervals.ts)
    elapsed_s @REAL@ NOT NULL, -- interval start, seconds since the measured run began
    duration_s @REAL@ NOT NULL,
    unit TEXT NOT NULL,     -- unit of recorded values: 'us'
    encoding TEXT NOT NULL, -- 'hdr-v2-deflate' (or 'hdr-v2', uncompressed)
    count @INT@ NOT NULL,   -- values recorded
    data @BLOB@ NOT NULL,
    PRIMARY KEY (run_id, kind, ts)
);
