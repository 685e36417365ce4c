-- sysbench oltp_update_index: one update of the indexed column k.
\set id random(1, :scale * 100000)
UPDATE sbtest1 SET k = k + 1 WHERE id = :id;
