ALTER TABLE usertable ADD PRIMARY KEY (ycsb_key);
SELECT setval('ycsb_insert_key', (SELECT count(*) FROM usertable));
VACUUM ANALYZE usertable;
