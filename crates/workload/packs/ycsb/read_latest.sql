-- YCSB read with the "latest" distribution (workload D): zipfian over the
-- records, counted back from the most recently inserted one.
\set z random_zipfian(1, :scale * 100000, :zipfian_s)
SELECT * FROM usertable
WHERE ycsb_key = 'user' || greatest(1, (SELECT last_value FROM ycsb_insert_key) - :z + 1);
