-- TPC-C Payment (clause 2.5). 15 % of payments are for a customer of another
-- warehouse (when there are several); 60 % select the customer by last name.
\set w_id 1 + :client_id % :scale
\set d_id random(1, 10)
\set remote CASE WHEN :scale > 1 AND random(1, 100) <= 15 THEN random(1, :scale - 1) ELSE 0 END
\set c_w_id CASE WHEN :remote = 0 THEN :w_id WHEN :remote >= :w_id THEN :remote + 1 ELSE :remote END
\set c_d_id CASE WHEN :remote = 0 THEN :d_id ELSE random(1, 10) END
\set by_name random(1, 100) <= 60
\set c_id ((random(0, 1023) | random(1, 3000)) + :nurand_c_id) % 3000 + 1
\set c_last ((random(0, 255) | random(0, 999)) + :nurand_c_last) % 1000
-- H_AMOUNT in cents: 1.00 .. 5,000.00
\set h_amount random(100, 500000)
BEGIN;
UPDATE warehouse SET w_ytd = w_ytd + :h_amount * 0.01 WHERE w_id = :w_id
  RETURNING w_name, w_street_1, w_street_2, w_city, w_state, w_zip;
UPDATE district SET d_ytd = d_ytd + :h_amount * 0.01 WHERE d_w_id = :w_id AND d_id = :d_id
  RETURNING d_name, d_street_1, d_street_2, d_city, d_state, d_zip;
\if :by_name
-- The customer in the middle (n/2 rounded up) of those with this last name,
-- ordered by first name (clause 2.5.2.2).
SELECT c_id FROM customer
  WHERE c_w_id = :c_w_id AND c_d_id = :c_d_id AND c_last = tpcc_lastname(:c_last)
  ORDER BY c_first
  OFFSET (SELECT (count(*) - 1) / 2 FROM customer
          WHERE c_w_id = :c_w_id AND c_d_id = :c_d_id AND c_last = tpcc_lastname(:c_last))
  LIMIT 1 \gset
\endif
UPDATE customer SET c_balance = c_balance - :h_amount * 0.01,
    c_ytd_payment = c_ytd_payment + :h_amount * 0.01,
    c_payment_cnt = c_payment_cnt + 1,
    c_data = CASE WHEN c_credit = 'BC'
        THEN left(format('%s %s %s %s %s %s | %s', c_id, c_d_id, c_w_id, :d_id::integer, :w_id::integer, :h_amount * 0.01, c_data), 500)
        ELSE c_data END
  WHERE c_w_id = :c_w_id AND c_d_id = :c_d_id AND c_id = :c_id
  RETURNING c_first, c_middle, c_last, c_street_1, c_city, c_phone, c_since, c_credit,
    c_credit_lim, c_discount, c_balance;
INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
  SELECT :c_id::integer, :c_d_id::integer, :c_w_id::integer, :d_id::integer, :w_id::integer,
    now(), :h_amount * 0.01, w_name || '    ' || d_name
  FROM warehouse, district WHERE w_id = :w_id AND d_w_id = :w_id AND d_id = :d_id;
COMMIT;
