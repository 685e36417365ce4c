-- pgsurge results store, schema version 7: what a running campaign tells, for a reader
-- in another process (`pgsurge campaign watch`).
--
-- One row per event the live page shows (a test planned, started, each of its seconds,
-- ended; targets, outages, lines said; the set's end), its body the event as JSON,
-- passwords masked. A test's seconds are deleted in the transaction that stores the
-- test (its intervals are then in run_intervals); a set's rows are deleted when an
-- invocation starts it again. `id` orders the rows: a reader asks for those after the
-- last it read.
CREATE TABLE live_events (
    id @ID@,
    set_id @INT@ NOT NULL REFERENCES sets(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,         -- 'set_started' | 'test_planned' | 'interval' | …
    test_key TEXT,              -- the test it is about, if any
    body TEXT NOT NULL          -- the event, JSON
);
CREATE INDEX live_events_set ON live_events(set_id, id);
