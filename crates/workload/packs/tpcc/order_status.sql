-- TPC-C Order-Status (clause 2.6), read-only; 60 % by last name.
\set w_id 1 + :client_id % :scale
\set d_id random(1, 10)
\set by_name random(1, 100) <= 60
\set c_id ((random(0, 1023) | random(1, 3000)) + :nurand_c_id) % 3000 + 1
\set c_last ((random(0, 255) | random(0, 999)) + :nurand_c_last) % 1000
BEGIN;
\if :by_name
SELECT c_id FROM customer
  WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_last = tpcc_lastname(:c_last)
  ORDER BY c_first
  OFFSET (SELECT (count(*) - 1) / 2 FROM customer
          WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_last = tpcc_lastname(:c_last))
  LIMIT 1 \gset
\endif
SELECT c_balance, c_first, c_middle, c_last FROM customer
  WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_id = :c_id;
SELECT o_id, o_carrier_id, o_entry_d FROM orders
  WHERE o_w_id = :w_id AND o_d_id = :d_id AND o_c_id = :c_id
  ORDER BY o_id DESC LIMIT 1 \gset
SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line
  WHERE ol_w_id = :w_id AND ol_d_id = :d_id AND ol_o_id = :o_id;
COMMIT;
