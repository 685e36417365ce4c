-- pgsurge results store, schema version 4: one writer per set.
--
-- A campaign holds the row of its set while it runs and refreshes `heartbeat_epoch`
-- every few seconds; another campaign on the same set refuses to start while the
-- holder is alive (same host: its process exists; any host: its heartbeat is recent).
-- The row is deleted when the campaign ends; a killed campaign's row is taken over.
CREATE TABLE set_locks (
    set_id @INT@ PRIMARY KEY REFERENCES sets(id) ON DELETE CASCADE,
    host TEXT NOT NULL,         -- host name of the holder
    pid @INT@ NOT NULL,         -- its process id
    token TEXT NOT NULL,        -- random per holder, so a process only releases its own lock
    acquired_at TEXT NOT NULL,  -- RFC 3339
    heartbeat_epoch @REAL@ NOT NULL
);
