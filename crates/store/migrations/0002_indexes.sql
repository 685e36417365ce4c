-- pgsurge results store, schema version 2: indexes for the report's lookups
-- (runs of a target, warnings of a set or run, intervals/metrics by time).
CREATE INDEX runs_target ON runs(target_id);
CREATE INDEX warnings_set ON warnings(set_id);
CREATE INDEX warnings_run ON warnings(run_id);
CREATE INDEX targets_set ON targets(set_id);
