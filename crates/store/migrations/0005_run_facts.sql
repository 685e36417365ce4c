-- pgsurge results store: facts about a test that are neither a result column nor a
-- time series, one row per (run, name). Written by campaigns against real servers:
--
--   server_host_metrics_source   local | node_exporter | pg_read_file | none — where the
--                                os.* (server host) samples came from; 'none' means the
--                                server's host was not measured (never the client's)
--   client_bound                 'true' | 'false': a driver thread near 100 % of a core
--                                or the client host's CPU saturated during the test
--   client_bound_reason          why, in words (present when client_bound is 'true')
--   init_performed               'true' | 'false': this test (re)built the pgbench tables
--   init_method                  client | server (data generation of -i)
--   init_duration_s              seconds the initialization took
--   init_reason                  why it was (or was not) initialized
--   data_dir_fstype              filesystem type of the server's data directory
--
-- Later additions use new names; readers ignore names they do not know.
CREATE TABLE run_facts (
    run_id @INT@ NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    value TEXT,
    PRIMARY KEY (run_id, name)
);
