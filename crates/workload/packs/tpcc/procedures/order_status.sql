-- TPC-C Order-Status as one call of tpcc_order_status(): 60 % by last name.
\set w_id 1 + :client_id % :scale
\set d_id random(1, 10)
\set by_name CASE WHEN random(1, 100) <= 60 THEN 1 ELSE 0 END
\set c_id ((random(0, 1023) | random(1, 3000)) + :nurand_c_id) % 3000 + 1
\set c_last ((random(0, 255) | random(0, 999)) + :nurand_c_last) % 1000
SELECT tpcc_order_status(:w_id, :d_id, :c_id, :by_name, :c_last);
