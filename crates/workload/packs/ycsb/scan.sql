-- YCSB scan (workload E): up to :max_scan_length records (uniform length) from a
-- zipfian start key, in key order.
\set n :scale * 100000
\set k permute(random_zipfian(1, :n, :zipfian_s) - 1, :n) + 1
\set len random(1, :max_scan_length)
SELECT * FROM usertable WHERE ycsb_key >= 'user' || :k ORDER BY ycsb_key LIMIT :len;
