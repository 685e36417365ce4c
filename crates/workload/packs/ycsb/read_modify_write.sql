-- YCSB read-modify-write (workload F): read a record, then update one field of it.
\set n :scale * 100000
\set k permute(random_zipfian(1, :n, :zipfian_s) - 1, :n) + 1
BEGIN;
SELECT * FROM usertable WHERE ycsb_key = 'user' || :k;
UPDATE usertable SET field0 = left(repeat(md5(random()::text), 8), :field_length)
WHERE ycsb_key = 'user' || :k;
COMMIT;
