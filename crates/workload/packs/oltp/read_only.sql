-- sysbench oltp_read_only: 10 point selects and one of each range query
-- (range size :range_size), in one transaction.
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
COMMIT;
