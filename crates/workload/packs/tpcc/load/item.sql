-- ITEM: 100,000 rows (clause 4.3.3.1), "ORIGINAL" in 10 % of I_DATA.
INSERT INTO item (i_id, i_im_id, i_name, i_price, i_data)
SELECT i, 1 + floor(random() * 10000)::integer, tpcc_astring(14, 24),
    round((1 + random() * 99)::numeric, 2), tpcc_original(tpcc_astring(26, 50))
FROM generate_series(1, 100000) AS i;
