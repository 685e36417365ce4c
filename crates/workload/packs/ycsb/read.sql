-- YCSB read: one record, all fields. The key is zipfian over the loaded records,
-- scrambled by permute() so the popular keys are spread over the table.
\set n :scale * 100000
\set k permute(random_zipfian(1, :n, :zipfian_s) - 1, :n) + 1
SELECT * FROM usertable WHERE ycsb_key = 'user' || :k;
