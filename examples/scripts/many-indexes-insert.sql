-- One row into a table with eight indexes (created by the campaign's before_test hook).
\set id random(1, 1000000000)
INSERT INTO many_indexes VALUES (:id, :id % 1000, :id % 7919, :id % 104729, :client_id, :id % 100, :id % 31, md5(:id::text));
