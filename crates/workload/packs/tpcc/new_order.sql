-- TPC-C New-Order (clause 2.4), client-side: each statement is one round trip.
-- The client's home warehouse is 1 + client_id % scale; the district is random.
\set w_id 1 + :client_id % :scale
\set d_id random(1, 10)
\set c_id ((random(0, 1023) | random(1, 3000)) + :nurand_c_id) % 3000 + 1
\set ol_cnt random(5, 15)
-- 1 % of New-Orders name an unused item on their last line and roll back
-- (clause 2.4.1.4): an expected rollback, counted by a sequence, not a failure.
\set rollback random(1, 100) = 1
\set remote_lines 0
BEGIN;
SELECT c_discount, c_last, c_credit, w_tax
  FROM customer JOIN warehouse ON w_id = c_w_id
  WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_id = :c_id;
UPDATE district SET d_next_o_id = d_next_o_id + 1
  WHERE d_w_id = :w_id AND d_id = :d_id
  RETURNING d_next_o_id - 1 AS o_id, d_tax \gset
INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
  VALUES (:o_id, :d_id, :w_id, :c_id, now(), NULL, :ol_cnt, 1);
INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (:o_id, :d_id, :w_id);
-- Order lines 1..ol_cnt, written out (the script language has no loop). Each line:
-- an item by NURand(8191, 1, 100000); a remote supplying warehouse for 1 % of the
-- lines when there are several; the stock update and the order line in one
-- statement, which writes nothing when the item does not exist (line_ok = 0).
-- (The casts type the parameters of the extended and prepared query modes.)
-- line 1
\set ol_number 1
\set i_id CASE WHEN :rollback AND :ol_number = :ol_cnt THEN 100001 ELSE ((random(0, 8191) | random(1, 100000)) + :nurand_ol_i_id) % 100000 + 1 END
\set remote CASE WHEN :scale > 1 AND random(1, 100) = 1 THEN random(1, :scale - 1) ELSE 0 END
\set supply_w_id CASE WHEN :remote = 0 THEN :w_id WHEN :remote >= :w_id THEN :remote + 1 ELSE :remote END
\set remote_lines :remote_lines + CASE WHEN :remote = 0 THEN 0 ELSE 1 END
\set quantity random(1, 10)
WITH i AS (SELECT i_price FROM item WHERE i_id = :i_id),
s AS (UPDATE stock SET s_quantity = CASE WHEN s_quantity >= :quantity + 10 THEN s_quantity - :quantity ELSE s_quantity - :quantity + 91 END,
        s_ytd = s_ytd + :quantity, s_order_cnt = s_order_cnt + 1,
        s_remote_cnt = s_remote_cnt + CASE WHEN s_w_id = :w_id THEN 0 ELSE 1 END
      WHERE s_w_id = :supply_w_id AND s_i_id = :i_id AND EXISTS (SELECT FROM i)
      RETURNING (ARRAY[s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10])[:d_id] AS dist_info),
l AS (INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
      SELECT :o_id::integer, :d_id::integer, :w_id::integer, :ol_number::integer, :i_id::integer,
             :supply_w_id::integer, NULL, :quantity::integer, :quantity * i_price, dist_info FROM i, s
      RETURNING 1)
SELECT count(*) AS line_ok FROM l \gset
-- line 2
\set ol_number 2
\set i_id CASE WHEN :rollback AND :ol_number = :ol_cnt THEN 100001 ELSE ((random(0, 8191) | random(1, 100000)) + :nurand_ol_i_id) % 100000 + 1 END
\set remote CASE WHEN :scale > 1 AND random(1, 100) = 1 THEN random(1, :scale - 1) ELSE 0 END
\set supply_w_id CASE WHEN :remote = 0 THEN :w_id WHEN :remote >= :w_id THEN :remote + 1 ELSE :remote END
\set remote_lines :remote_lines + CASE WHEN :remote = 0 THEN 0 ELSE 1 END
\set quantity random(1, 10)
WITH i AS (SELECT i_price FROM item WHERE i_id = :i_id),
s AS (UPDATE stock SET s_quantity = CASE WHEN s_quantity >= :quantity + 10 THEN s_quantity - :quantity ELSE s_quantity - :quantity + 91 END,
        s_ytd = s_ytd + :quantity, s_order_cnt = s_order_cnt + 1,
        s_remote_cnt = s_remote_cnt + CASE WHEN s_w_id = :w_id THEN 0 ELSE 1 END
      WHERE s_w_id = :supply_w_id AND s_i_id = :i_id AND EXISTS (SELECT FROM i)
      RETURNING (ARRAY[s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10])[:d_id] AS dist_info),
l AS (INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
      SELECT :o_id::integer, :d_id::integer, :w_id::integer, :ol_number::integer, :i_id::integer,
             :supply_w_id::integer, NULL, :quantity::integer, :quantity * i_price, dist_info FROM i, s
      RETURNING 1)
SELECT count(*) AS line_ok FROM l \gset
-- line 3
\set ol_number 3
\set i_id CASE WHEN :rollback AND :ol_number = :ol_cnt THEN 100001 ELSE ((random(0, 8191) | random(1, 100000)) + :nurand_ol_i_id) % 100000 + 1 END
\set remote CASE WHEN :scale > 1 AND random(1, 100) = 1 THEN random(1, :scale - 1) ELSE 0 END
\set supply_w_id CASE WHEN :remote = 0 THEN :w_id WHEN :remote >= :w_id THEN :remote + 1 ELSE :remote END
\set remote_lines :remote_lines + CASE WHEN :remote = 0 THEN 0 ELSE 1 END
\set quantity random(1, 10)
WITH i AS (SELECT i_price FROM item WHERE i_id = :i_id),
s AS (UPDATE stock SET s_quantity = CASE WHEN s_quantity >= :quantity + 10 THEN s_quantity - :quantity ELSE s_quantity - :quantity + 91 END,
        s_ytd = s_ytd + :quantity, s_order_cnt = s_order_cnt + 1,
        s_remote_cnt = s_remote_cnt + CASE WHEN s_w_id = :w_id THEN 0 ELSE 1 END
      WHERE s_w_id = :supply_w_id AND s_i_id = :i_id AND EXISTS (SELECT FROM i)
      RETURNING (ARRAY[s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10])[:d_id] AS dist_info),
l AS (INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
      SELECT :o_id::integer, :d_id::integer, :w_id::integer, :ol_number::integer, :i_id::integer,
             :supply_w_id::integer, NULL, :quantity::integer, :quantity * i_price, dist_info FROM i, s
      RETURNING 1)
SELECT count(*) AS line_ok FROM l \gset
-- line 4
\set ol_number 4
\set i_id CASE WHEN :rollback AND :ol_number = :ol_cnt THEN 100001 ELSE ((random(0, 8191) | random(1, 100000)) + :nurand_ol_i_id) % 100000 + 1 END
\set remote CASE WHEN :scale > 1 AND random(1, 100) = 1 THEN random(1, :scale - 1) ELSE 0 END
\set supply_w_id CASE WHEN :remote = 0 THEN :w_id WHEN :remote >= :w_id THEN :remote + 1 ELSE :remote END
\set remote_lines :remote_lines + CASE WHEN :remote = 0 THEN 0 ELSE 1 END
\set quantity random(1, 10)
WITH i AS (SELECT i_price FROM item WHERE i_id = :i_id),
s AS (UPDATE stock SET s_quantity = CASE WHEN s_quantity >= :quantity + 10 THEN s_quantity - :quantity ELSE s_quantity - :quantity + 91 END,
        s_ytd = s_ytd + :quantity, s_order_cnt = s_order_cnt + 1,
        s_remote_cnt = s_remote_cnt + CASE WHEN s_w_id = :w_id THEN 0 ELSE 1 END
      WHERE s_w_id = :supply_w_id AND s_i_id = :i_id AND EXISTS (SELECT FROM i)
      RETURNING (ARRAY[s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10])[:d_id] AS dist_info),
l AS (INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
      SELECT :o_id::integer, :d_id::integer, :w_id::integer, :ol_number::integer, :i_id::integer,
             :supply_w_id::integer, NULL, :quantity::integer, :quantity * i_price, dist_info FROM i, s
      RETURNING 1)
SELECT count(*) AS line_ok FROM l \gset
-- line 5
\set ol_number 5
\set i_id CASE WHEN :rollback AND :ol_number = :ol_cnt THEN 100001 ELSE ((random(0, 8191) | random(1, 100000)) + :nurand_ol_i_id) % 100000 + 1 END
\set remote CASE WHEN :scale > 1 AND random(1, 100) = 1 THEN random(1, :scale - 1) ELSE 0 END
\set supply_w_id CASE WHEN :remote = 0 THEN :w_id WHEN :remote >= :w_id THEN :remote + 1 ELSE :remote END
\set remote_lines :remote_lines + CASE WHEN :remote = 0 THEN 0 ELSE 1 END
\set quantity random(1, 10)
WITH i AS (SELECT i_price FROM item WHERE i_id = :i_id),
s AS (UPDATE stock SET s_quantity = CASE WHEN s_quantity >= :quantity + 10 THEN s_quantity - :quantity ELSE s_quantity - :quantity + 91 END,
        s_ytd = s_ytd + :quantity, s_order_cnt = s_order_cnt + 1,
        s_remote_cnt = s_remote_cnt + CASE WHEN s_w_id = :w_id THEN 0 ELSE 1 END
      WHERE s_w_id = :supply_w_id AND s_i_id = :i_id AND EXISTS (SELECT FROM i)
      RETURNING (ARRAY[s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10])[:d_id] AS dist_info),
l AS (INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
      SELECT :o_id::integer, :d_id::integer, :w_id::integer, :ol_number::integer, :i_id::integer,
             :supply_w_id::integer, NULL, :quantity::integer, :quantity * i_price, dist_info FROM i, s
      RETURNING 1)
SELECT count(*) AS line_ok FROM l \gset
-- line 6
\if :ol_cnt >= 6
\set ol_number 6
\set i_id CASE WHEN :rollback AND :ol_number = :ol_cnt THEN 100001 ELSE ((random(0, 8191) | random(1, 100000)) + :nurand_ol_i_id) % 100000 + 1 END
\set remote CASE WHEN :scale > 1 AND random(1, 100) = 1 THEN random(1, :scale - 1) ELSE 0 END
\set supply_w_id CASE WHEN :remote = 0 THEN :w_id WHEN :remote >= :w_id THEN :remote + 1 ELSE :remote END
\set remote_lines :remote_lines + CASE WHEN :remote = 0 THEN 0 ELSE 1 END
\set quantity random(1, 10)
WITH i AS (SELECT i_price FROM item WHERE i_id = :i_id),
s AS (UPDATE stock SET s_quantity = CASE WHEN s_quantity >= :quantity + 10 THEN s_quantity - :quantity ELSE s_quantity - :quantity + 91 END,
        s_ytd = s_ytd + :quantity, s_order_cnt = s_order_cnt + 1,
        s_remote_cnt = s_remote_cnt + CASE WHEN s_w_id = :w_id THEN 0 ELSE 1 END
      WHERE s_w_id = :supply_w_id AND s_i_id = :i_id AND EXISTS (SELECT FROM i)
      RETURNING (ARRAY[s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10])[:d_id] AS dist_info),
l AS (INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
      SELECT :o_id::integer, :d_id::integer, :w_id::integer, :ol_number::integer, :i_id::integer,
             :supply_w_id::integer, NULL, :quantity::integer, :quantity * i_price, dist_info FROM i, s
      RETURNING 1)
SELECT count(*) AS line_ok FROM l \gset
\endif
-- line 7
\if :ol_cnt >= 7
\set ol_number 7
\set i_id CASE WHEN :rollback AND :ol_number = :ol_cnt THEN 100001 ELSE ((random(0, 8191) | random(1, 100000)) + :nurand_ol_i_id) % 100000 + 1 END
\set remote CASE WHEN :scale > 1 AND random(1, 100) = 1 THEN random(1, :scale - 1) ELSE 0 END
\set supply_w_id CASE WHEN :remote = 0 THEN :w_id WHEN :remote >= :w_id THEN :remote + 1 ELSE :remote END
\set remote_lines :remote_lines + CASE WHEN :remote = 0 THEN 0 ELSE 1 END
\set quantity random(1, 10)
WITH i AS (SELECT i_price FROM item WHERE i_id = :i_id),
s AS (UPDATE stock SET s_quantity = CASE WHEN s_quantity >= :quantity + 10 THEN s_quantity - :quantity ELSE s_quantity - :quantity + 91 END,
        s_ytd = s_ytd + :quantity, s_order_cnt = s_order_cnt + 1,
        s_remote_cnt = s_remote_cnt + CASE WHEN s_w_id = :w_id THEN 0 ELSE 1 END
      WHERE s_w_id = :supply_w_id AND s_i_id = :i_id AND EXISTS (SELECT FROM i)
      RETURNING (ARRAY[s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10])[:d_id] AS dist_info),
l AS (INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
      SELECT :o_id::integer, :d_id::integer, :w_id::integer, :ol_number::integer, :i_id::integer,
             :supply_w_id::integer, NULL, :quantity::integer, :quantity * i_price, dist_info FROM i, s
      RETURNING 1)
SELECT count(*) AS line_ok FROM l \gset
\endif
-- line 8
\if :ol_cnt >= 8
\set ol_number 8
\set i_id CASE WHEN :rollback AND :ol_number = :ol_cnt THEN 100001 ELSE ((random(0, 8191) | random(1, 100000)) + :nurand_ol_i_id) % 100000 + 1 END
\set remote CASE WHEN :scale > 1 AND random(1, 100) = 1 THEN random(1, :scale - 1) ELSE 0 END
\set supply_w_id CASE WHEN :remote = 0 THEN :w_id WHEN :remote >= :w_id THEN :remote + 1 ELSE :remote END
\set remote_lines :remote_lines + CASE WHEN :remote = 0 THEN 0 ELSE 1 END
\set quantity random(1, 10)
WITH i AS (SELECT i_price FROM item WHERE i_id = :i_id),
s AS (UPDATE stock SET s_quantity = CASE WHEN s_quantity >= :quantity + 10 THEN s_quantity - :quantity ELSE s_quantity - :quantity + 91 END,
        s_ytd = s_ytd + :quantity, s_order_cnt = s_order_cnt + 1,
        s_remote_cnt = s_remote_cnt + CASE WHEN s_w_id = :w_id THEN 0 ELSE 1 END
      WHERE s_w_id = :supply_w_id AND s_i_id = :i_id AND EXISTS (SELECT FROM i)
      RETURNING (ARRAY[s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10])[:d_id] AS dist_info),
l AS (INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
      SELECT :o_id::integer, :d_id::integer, :w_id::integer, :ol_number::integer, :i_id::integer,
             :supply_w_id::integer, NULL, :quantity::integer, :quantity * i_price, dist_info FROM i, s
      RETURNING 1)
SELECT count(*) AS line_ok FROM l \gset
\endif
-- line 9
\if :ol_cnt >= 9
\set ol_number 9
\set i_id CASE WHEN :rollback AND :ol_number = :ol_cnt THEN 100001 ELSE ((random(0, 8191) | random(1, 100000)) + :nurand_ol_i_id) % 100000 + 1 END
\set remote CASE WHEN :scale > 1 AND random(1, 100) = 1 THEN random(1, :scale - 1) ELSE 0 END
\set supply_w_id CASE WHEN :remote = 0 THEN :w_id WHEN :remote >= :w_id THEN :remote + 1 ELSE :remote END
\set remote_lines :remote_lines + CASE WHEN :remote = 0 THEN 0 ELSE 1 END
\set quantity random(1, 10)
WITH i AS (SELECT i_price FROM item WHERE i_id = :i_id),
s AS (UPDATE stock SET s_quantity = CASE WHEN s_quantity >= :quantity + 10 THEN s_quantity - :quantity ELSE s_quantity - :quantity + 91 END,
        s_ytd = s_ytd + :quantity, s_order_cnt = s_order_cnt + 1,
        s_remote_cnt = s_remote_cnt + CASE WHEN s_w_id = :w_id THEN 0 ELSE 1 END
      WHERE s_w_id = :supply_w_id AND s_i_id = :i_id AND EXISTS (SELECT FROM i)
      RETURNING (ARRAY[s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10])[:d_id] AS dist_info),
l AS (INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
      SELECT :o_id::integer, :d_id::integer, :w_id::integer, :ol_number::integer, :i_id::integer,
             :supply_w_id::integer, NULL, :quantity::integer, :quantity * i_price, dist_info FROM i, s
      RETURNING 1)
SELECT count(*) AS line_ok FROM l \gset
\endif
-- line 10
\if :ol_cnt >= 10
\set ol_number 10
\set i_id CASE WHEN :rollback AND :ol_number = :ol_cnt THEN 100001 ELSE ((random(0, 8191) | random(1, 100000)) + :nurand_ol_i_id) % 100000 + 1 END
\set remote CASE WHEN :scale > 1 AND random(1, 100) = 1 THEN random(1, :scale - 1) ELSE 0 END
\set supply_w_id CASE WHEN :remote = 0 THEN :w_id WHEN :remote >= :w_id THEN :remote + 1 ELSE :remote END
\set remote_lines :remote_lines + CASE WHEN :remote = 0 THEN 0 ELSE 1 END
\set quantity random(1, 10)
WITH i AS (SELECT i_price FROM item WHERE i_id = :i_id),
s AS (UPDATE stock SET s_quantity = CASE WHEN s_quantity >= :quantity + 10 THEN s_quantity - :quantity ELSE s_quantity - :quantity + 91 END,
        s_ytd = s_ytd + :quantity, s_order_cnt = s_order_cnt + 1,
        s_remote_cnt = s_remote_cnt + CASE WHEN s_w_id = :w_id THEN 0 ELSE 1 END
      WHERE s_w_id = :supply_w_id AND s_i_id = :i_id AND EXISTS (SELECT FROM i)
      RETURNING (ARRAY[s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10])[:d_id] AS dist_info),
l AS (INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
      SELECT :o_id::integer, :d_id::integer, :w_id::integer, :ol_number::integer, :i_id::integer,
             :supply_w_id::integer, NULL, :quantity::integer, :quantity * i_price, dist_info FROM i, s
      RETURNING 1)
SELECT count(*) AS line_ok FROM l \gset
\endif
-- line 11
\if :ol_cnt >= 11
\set ol_number 11
\set i_id CASE WHEN :rollback AND :ol_number = :ol_cnt THEN 100001 ELSE ((random(0, 8191) | random(1, 100000)) + :nurand_ol_i_id) % 100000 + 1 END
\set remote CASE WHEN :scale > 1 AND random(1, 100) = 1 THEN random(1, :scale - 1) ELSE 0 END
\set supply_w_id CASE WHEN :remote = 0 THEN :w_id WHEN :remote >= :w_id THEN :remote + 1 ELSE :remote END
\set remote_lines :remote_lines + CASE WHEN :remote = 0 THEN 0 ELSE 1 END
\set quantity random(1, 10)
WITH i AS (SELECT i_price FROM item WHERE i_id = :i_id),
s AS (UPDATE stock SET s_quantity = CASE WHEN s_quantity >= :quantity + 10 THEN s_quantity - :quantity ELSE s_quantity - :quantity + 91 END,
        s_ytd = s_ytd + :quantity, s_order_cnt = s_order_cnt + 1,
        s_remote_cnt = s_remote_cnt + CASE WHEN s_w_id = :w_id THEN 0 ELSE 1 END
      WHERE s_w_id = :supply_w_id AND s_i_id = :i_id AND EXISTS (SELECT FROM i)
      RETURNING (ARRAY[s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10])[:d_id] AS dist_info),
l AS (INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
      SELECT :o_id::integer, :d_id::integer, :w_id::integer, :ol_number::integer, :i_id::integer,
             :supply_w_id::integer, NULL, :quantity::integer, :quantity * i_price, dist_info FROM i, s
      RETURNING 1)
SELECT count(*) AS line_ok FROM l \gset
\endif
-- line 12
\if :ol_cnt >= 12
\set ol_number 12
\set i_id CASE WHEN :rollback AND :ol_number = :ol_cnt THEN 100001 ELSE ((random(0, 8191) | random(1, 100000)) + :nurand_ol_i_id) % 100000 + 1 END
\set remote CASE WHEN :scale > 1 AND random(1, 100) = 1 THEN random(1, :scale - 1) ELSE 0 END
\set supply_w_id CASE WHEN :remote = 0 THEN :w_id WHEN :remote >= :w_id THEN :remote + 1 ELSE :remote END
\set remote_lines :remote_lines + CASE WHEN :remote = 0 THEN 0 ELSE 1 END
\set quantity random(1, 10)
WITH i AS (SELECT i_price FROM item WHERE i_id = :i_id),
s AS (UPDATE stock SET s_quantity = CASE WHEN s_quantity >= :quantity + 10 THEN s_quantity - :quantity ELSE s_quantity - :quantity + 91 END,
        s_ytd = s_ytd + :quantity, s_order_cnt = s_order_cnt + 1,
        s_remote_cnt = s_remote_cnt + CASE WHEN s_w_id = :w_id THEN 0 ELSE 1 END
      WHERE s_w_id = :supply_w_id AND s_i_id = :i_id AND EXISTS (SELECT FROM i)
      RETURNING (ARRAY[s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10])[:d_id] AS dist_info),
l AS (INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
      SELECT :o_id::integer, :d_id::integer, :w_id::integer, :ol_number::integer, :i_id::integer,
             :supply_w_id::integer, NULL, :quantity::integer, :quantity * i_price, dist_info FROM i, s
      RETURNING 1)
SELECT count(*) AS line_ok FROM l \gset
\endif
-- line 13
\if :ol_cnt >= 13
\set ol_number 13
\set i_id CASE WHEN :rollback AND :ol_number = :ol_cnt THEN 100001 ELSE ((random(0, 8191) | random(1, 100000)) + :nurand_ol_i_id) % 100000 + 1 END
\set remote CASE WHEN :scale > 1 AND random(1, 100) = 1 THEN random(1, :scale - 1) ELSE 0 END
\set supply_w_id CASE WHEN :remote = 0 THEN :w_id WHEN :remote >= :w_id THEN :remote + 1 ELSE :remote END
\set remote_lines :remote_lines + CASE WHEN :remote = 0 THEN 0 ELSE 1 END
\set quantity random(1, 10)
WITH i AS (SELECT i_price FROM item WHERE i_id = :i_id),
s AS (UPDATE stock SET s_quantity = CASE WHEN s_quantity >= :quantity + 10 THEN s_quantity - :quantity ELSE s_quantity - :quantity + 91 END,
        s_ytd = s_ytd + :quantity, s_order_cnt = s_order_cnt + 1,
        s_remote_cnt = s_remote_cnt + CASE WHEN s_w_id = :w_id THEN 0 ELSE 1 END
      WHERE s_w_id = :supply_w_id AND s_i_id = :i_id AND EXISTS (SELECT FROM i)
      RETURNING (ARRAY[s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10])[:d_id] AS dist_info),
l AS (INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
      SELECT :o_id::integer, :d_id::integer, :w_id::integer, :ol_number::integer, :i_id::integer,
             :supply_w_id::integer, NULL, :quantity::integer, :quantity * i_price, dist_info FROM i, s
      RETURNING 1)
SELECT count(*) AS line_ok FROM l \gset
\endif
-- line 14
\if :ol_cnt >= 14
\set ol_number 14
\set i_id CASE WHEN :rollback AND :ol_number = :ol_cnt THEN 100001 ELSE ((random(0, 8191) | random(1, 100000)) + :nurand_ol_i_id) % 100000 + 1 END
\set remote CASE WHEN :scale > 1 AND random(1, 100) = 1 THEN random(1, :scale - 1) ELSE 0 END
\set supply_w_id CASE WHEN :remote = 0 THEN :w_id WHEN :remote >= :w_id THEN :remote + 1 ELSE :remote END
\set remote_lines :remote_lines + CASE WHEN :remote = 0 THEN 0 ELSE 1 END
\set quantity random(1, 10)
WITH i AS (SELECT i_price FROM item WHERE i_id = :i_id),
s AS (UPDATE stock SET s_quantity = CASE WHEN s_quantity >= :quantity + 10 THEN s_quantity - :quantity ELSE s_quantity - :quantity + 91 END,
        s_ytd = s_ytd + :quantity, s_order_cnt = s_order_cnt + 1,
        s_remote_cnt = s_remote_cnt + CASE WHEN s_w_id = :w_id THEN 0 ELSE 1 END
      WHERE s_w_id = :supply_w_id AND s_i_id = :i_id AND EXISTS (SELECT FROM i)
      RETURNING (ARRAY[s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10])[:d_id] AS dist_info),
l AS (INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
      SELECT :o_id::integer, :d_id::integer, :w_id::integer, :ol_number::integer, :i_id::integer,
             :supply_w_id::integer, NULL, :quantity::integer, :quantity * i_price, dist_info FROM i, s
      RETURNING 1)
SELECT count(*) AS line_ok FROM l \gset
\endif
-- line 15
\if :ol_cnt >= 15
\set ol_number 15
\set i_id CASE WHEN :rollback AND :ol_number = :ol_cnt THEN 100001 ELSE ((random(0, 8191) | random(1, 100000)) + :nurand_ol_i_id) % 100000 + 1 END
\set remote CASE WHEN :scale > 1 AND random(1, 100) = 1 THEN random(1, :scale - 1) ELSE 0 END
\set supply_w_id CASE WHEN :remote = 0 THEN :w_id WHEN :remote >= :w_id THEN :remote + 1 ELSE :remote END
\set remote_lines :remote_lines + CASE WHEN :remote = 0 THEN 0 ELSE 1 END
\set quantity random(1, 10)
WITH i AS (SELECT i_price FROM item WHERE i_id = :i_id),
s AS (UPDATE stock SET s_quantity = CASE WHEN s_quantity >= :quantity + 10 THEN s_quantity - :quantity ELSE s_quantity - :quantity + 91 END,
        s_ytd = s_ytd + :quantity, s_order_cnt = s_order_cnt + 1,
        s_remote_cnt = s_remote_cnt + CASE WHEN s_w_id = :w_id THEN 0 ELSE 1 END
      WHERE s_w_id = :supply_w_id AND s_i_id = :i_id AND EXISTS (SELECT FROM i)
      RETURNING (ARRAY[s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10])[:d_id] AS dist_info),
l AS (INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
      SELECT :o_id::integer, :d_id::integer, :w_id::integer, :ol_number::integer, :i_id::integer,
             :supply_w_id::integer, NULL, :quantity::integer, :quantity * i_price, dist_info FROM i, s
      RETURNING 1)
SELECT count(*) AS line_ok FROM l \gset
\endif
\if :line_ok = 0
-- The last line named an unused item: roll the whole New-Order back.
SELECT nextval('tpcc_new_order_rollbacks');
ROLLBACK;
\else
\if :remote_lines > 0
UPDATE orders SET o_all_local = 0 WHERE o_w_id = :w_id AND o_d_id = :d_id AND o_id = :o_id;
\endif
COMMIT;
\endif
