-- TPC-C Delivery (clause 2.7): the oldest undelivered order of each of the ten
-- districts of the home warehouse, in one statement. A district without one is
-- skipped, as the specification allows.
\set w_id 1 + :client_id % :scale
\set o_carrier_id random(1, 10)
BEGIN;
WITH oldest AS (
    SELECT no_d_id, min(no_o_id) AS no_o_id FROM new_order
    WHERE no_w_id = :w_id GROUP BY no_d_id),
no AS (
    DELETE FROM new_order n USING oldest
    WHERE n.no_w_id = :w_id AND n.no_d_id = oldest.no_d_id AND n.no_o_id = oldest.no_o_id
    RETURNING n.no_d_id, n.no_o_id),
o AS (
    UPDATE orders SET o_carrier_id = :o_carrier_id FROM no
    WHERE o_w_id = :w_id AND o_d_id = no.no_d_id AND o_id = no.no_o_id
    RETURNING o_d_id, o_id, o_c_id),
ol AS (
    UPDATE order_line SET ol_delivery_d = now() FROM no
    WHERE ol_w_id = :w_id AND ol_d_id = no.no_d_id AND ol_o_id = no.no_o_id
    RETURNING ol_d_id, ol_o_id, ol_amount),
amount AS (
    SELECT ol_d_id, ol_o_id, sum(ol_amount) AS total FROM ol GROUP BY ol_d_id, ol_o_id)
UPDATE customer SET c_balance = c_balance + amount.total, c_delivery_cnt = c_delivery_cnt + 1
FROM o JOIN amount ON amount.ol_d_id = o.o_d_id AND amount.ol_o_id = o.o_id
WHERE c_w_id = :w_id AND c_d_id = o.o_d_id AND c_id = o.o_c_id;
COMMIT;
