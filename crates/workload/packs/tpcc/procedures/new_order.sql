-- TPC-C New-Order as one call of tpcc_new_order() (procedures.sql). The client
-- draws what the terminal enters; the order lines are drawn in the function from
-- :seed. Returns the order's id, or 0 for an expected rollback (1 %).
\set w_id 1 + :client_id % :scale
\set d_id random(1, 10)
\set c_id ((random(0, 1023) | random(1, 3000)) + :nurand_c_id) % 3000 + 1
\set ol_cnt random(5, 15)
\set rbk CASE WHEN random(1, 100) = 1 THEN 1 ELSE 0 END
\set seed random(0, 2147483647)
SELECT tpcc_new_order(:w_id, :d_id, :c_id, :ol_cnt, :rbk, :seed, :scale, :nurand_ol_i_id);
