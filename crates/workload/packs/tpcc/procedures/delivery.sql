-- TPC-C Delivery as one call of tpcc_delivery(): all ten districts.
\set w_id 1 + :client_id % :scale
\set o_carrier_id random(1, 10)
SELECT tpcc_delivery(:w_id, :o_carrier_id);
