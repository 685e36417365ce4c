-- sysbench oltp_read_write: oltp_read_only's queries, then an index update, a
-- non-index update, and a delete and re-insert of one row, in one transaction.
\set n :scale * 100000
BEGIN;
\set id random(1, :n)
SELECT c FROM sbtest1 WHERE id = :id;
\set id random(1, :n)
SELECT c FROM sbtest1 WHERE id = :id;
\set id random(1, :n)
SELECT c FROM sbtest1 WHERE id = :id;
\set id random(1, :n)
SELECT c FROM sbtest1 WHERE id = :id;
\set id random(1, :n)
SELECT c FROM sbtest1 WHERE id = :id;
\set id random(1, :n)
SELECT c FROM sbtest1 WHERE id = :id;
\set id random(1, :n)
SELECT c FROM sbtest1 WHERE id = :id;
\set id random(1, :n)
SELECT c FROM sbtest1 WHERE id = :id;
\set id random(1, :n)
SELECT c FROM sbtest1 WHERE id = :id;
\set id random(1, :n)
SELECT c FROM sbtest1 WHERE id = :id;
\set lo random(1, :n - :range_size + 1)
\set hi :lo + :range_size - 1
SELECT c FROM sbtest1 WHERE id BETWEEN :lo AND :hi;
\set lo random(1, :n - :range_size + 1)
\set hi :lo + :range_size - 1
SELECT sum(k) FROM sbtest1 WHERE id BETWEEN :lo AND :hi;
\set lo random(1, :n - :range_size + 1)
\set hi :lo + :range_size - 1
SELECT c FROM sbtest1 WHERE id BETWEEN :lo AND :hi ORDER BY c;
\set lo random(1, :n - :range_size + 1)
\set hi :lo + :range_size - 1
SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN :lo AND :hi ORDER BY c;
\set id random(1, :n)
UPDATE sbtest1 SET k = k + 1 WHERE id = :id;
\set id random(1, :n)
UPDATE sbtest1 SET c = left(repeat(md5(random()::text), 4), 120) WHERE id = :id;
\set id random(1, :n)
DELETE FROM sbtest1 WHERE id = :id;
INSERT INTO sbtest1 (id, k, c, pad) VALUES (:id, 1 + floor(random() * :n)::integer, left(repeat(md5(random()::text), 4), 120), left(repeat(md5(random()::text), 2), 60));
COMMIT;
