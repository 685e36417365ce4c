ALTER TABLE sbtest1 ADD PRIMARY KEY (id);
CREATE INDEX k_1 ON sbtest1 (k);
SELECT setval('sbtest1_insert_id', (SELECT max(id) FROM sbtest1));
VACUUM ANALYZE sbtest1;
