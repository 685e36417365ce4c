-- pgsurge results store, schema version 6: profiles of a test's measured window, one row
-- per (run, kind), the call stacks folded (`outer;…;inner count` per line, as inferno
-- and the flame-graph scripts read them) and deflate-compressed.
CREATE TABLE run_profiles (
    run_id @INT@ NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,         -- 'server-cpu' | 'client-cpu' | 'server-offcpu'
    unit TEXT NOT NULL,         -- what a count is: 'samples' (on-CPU) | 'us' (off-CPU)
    frequency_hz @INT@,         -- on-CPU sampling frequency per running thread
    total @INT@ NOT NULL,       -- sum of the counts
    notes TEXT,                 -- what a reader should know (stacks cut short…), one per line
    encoding TEXT NOT NULL,     -- 'folded-deflate'
    data @BLOB@ NOT NULL,
    PRIMARY KEY (run_id, kind)
);
