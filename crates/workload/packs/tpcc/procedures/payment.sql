-- TPC-C Payment as one call of tpcc_payment(): 15 % remote, 60 % by last name.
\set w_id 1 + :client_id % :scale
\set d_id random(1, 10)
\set remote CASE WHEN :scale > 1 AND random(1, 100) <= 15 THEN random(1, :scale - 1) ELSE 0 END
\set c_w_id CASE WHEN :remote = 0 THEN :w_id WHEN :remote >= :w_id THEN :remote + 1 ELSE :remote END
\set c_d_id CASE WHEN :remote = 0 THEN :d_id ELSE random(1, 10) END
\set by_name CASE WHEN random(1, 100) <= 60 THEN 1 ELSE 0 END
\set c_id ((random(0, 1023) | random(1, 3000)) + :nurand_c_id) % 3000 + 1
\set c_last ((random(0, 255) | random(0, 999)) + :nurand_c_last) % 1000
\set h_amount random(100, 500000)
SELECT tpcc_payment(:w_id, :d_id, :c_w_id, :c_d_id, :c_id, :by_name, :c_last, :h_amount);
