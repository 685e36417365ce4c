-- TPC-C Stock-Level as one call of tpcc_stock_level(), in the client's own district.
\set w_id 1 + :client_id % :scale
\set d_id 1 + (:client_id / :scale) % 10
\set threshold random(10, 20)
SELECT tpcc_stock_level(:w_id, :d_id, :threshold);
