-- Runs once, last.
ALTER TABLE kv ADD PRIMARY KEY (k);
VACUUM ANALYZE kv;
