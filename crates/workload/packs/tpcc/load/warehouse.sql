-- One warehouse (:unit) and everything that belongs to it (clause 4.3.3.1).

INSERT INTO warehouse
SELECT :unit, tpcc_astring(6, 10), tpcc_astring(10, 20), tpcc_astring(10, 20),
    tpcc_astring(10, 20), tpcc_state(), tpcc_nstring(4) || '11111',
    round((random() * 0.2)::numeric, 4), 300000;

INSERT INTO district
SELECT d, :unit, tpcc_astring(6, 10), tpcc_astring(10, 20), tpcc_astring(10, 20),
    tpcc_astring(10, 20), tpcc_state(), tpcc_nstring(4) || '11111',
    round((random() * 0.2)::numeric, 4), 30000, 3001
FROM generate_series(1, 10) AS d;

-- STOCK: 100,000 rows, "ORIGINAL" in 10 % of S_DATA.
INSERT INTO stock
SELECT i, :unit, 10 + floor(random() * 91)::integer,
    tpcc_astring(24, 24), tpcc_astring(24, 24), tpcc_astring(24, 24), tpcc_astring(24, 24),
    tpcc_astring(24, 24), tpcc_astring(24, 24), tpcc_astring(24, 24), tpcc_astring(24, 24),
    tpcc_astring(24, 24), tpcc_astring(24, 24),
    0, 0, 0, tpcc_original(tpcc_astring(26, 50))
FROM generate_series(1, 100000) AS i;

-- CUSTOMER: 3,000 per district. The first 1,000 take the last names 0..999 in
-- order, the others NURand(255, 0, 999) with the load constant :nurand_c_last_load;
-- 10 % have bad credit.
INSERT INTO customer
SELECT c, d, :unit, tpcc_astring(8, 16), 'OE',
    tpcc_lastname(CASE WHEN c <= 1000 THEN c - 1
        ELSE tpcc_nurand(255, 0, 999, :nurand_c_last_load) END),
    tpcc_astring(10, 20), tpcc_astring(10, 20), tpcc_astring(10, 20), tpcc_state(),
    tpcc_nstring(4) || '11111', tpcc_nstring(16), now(),
    CASE WHEN random() < 0.1 THEN 'BC' ELSE 'GC' END, 50000,
    round((random() * 0.5)::numeric, 4), -10, 10, 1, 0, tpcc_astring(300, 500)
FROM generate_series(1, 10) AS d, generate_series(1, 3000) AS c
ORDER BY d, c;

-- HISTORY: one row per customer.
INSERT INTO history
SELECT c, d, :unit, d, :unit, now(), 10, tpcc_astring(12, 24)
FROM generate_series(1, 10) AS d, generate_series(1, 3000) AS c
ORDER BY d, c;

-- ORDERS: 3,000 per district, their customers a random permutation of 1..3,000;
-- orders below 2,101 are delivered (have a carrier).
INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
SELECT p.o, d, :unit, p.c, now(),
    CASE WHEN p.o < 2101 THEN 1 + floor(random() * 10)::integer END,
    5 + floor(random() * 11)::integer, 1
FROM generate_series(1, 10) AS d,
    LATERAL (SELECT c, row_number() OVER (ORDER BY random(), c) AS o
             FROM generate_series(1, 3000) AS c WHERE d > 0) AS p
ORDER BY d, p.o;

-- ORDER_LINE: O_OL_CNT lines per order.
INSERT INTO order_line
SELECT o_id, o_d_id, o_w_id, n, 1 + floor(random() * 100000)::integer, o_w_id,
    CASE WHEN o_id < 2101 THEN o_entry_d END, 5,
    CASE WHEN o_id < 2101 THEN 0 ELSE round((0.01 + random() * 9999.98)::numeric, 2) END,
    tpcc_astring(24, 24)
FROM orders, generate_series(1, o_ol_cnt) AS n
WHERE o_w_id = :unit
ORDER BY o_d_id, o_id, n;

-- NEW_ORDER: the last 900 orders of each district.
INSERT INTO new_order (no_o_id, no_d_id, no_w_id)
SELECT o, d, :unit FROM generate_series(1, 10) AS d, generate_series(2101, 3000) AS o;
