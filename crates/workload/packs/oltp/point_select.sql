-- sysbench oltp_point_select: one primary-key lookup, outside a transaction block.
\set id random(1, :scale * 100000)
SELECT c FROM sbtest1 WHERE id = :id;
