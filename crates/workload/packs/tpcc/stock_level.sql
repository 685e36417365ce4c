-- TPC-C Stock-Level (clause 2.8), read-only: items of the district's last 20
-- orders whose stock is below a threshold. The district is the client's own.
\set w_id 1 + :client_id % :scale
\set d_id 1 + (:client_id / :scale) % 10
\set threshold random(10, 20)
SELECT count(DISTINCT s_i_id) AS low_stock
  FROM district, order_line, stock
  WHERE d_w_id = :w_id AND d_id = :d_id
    AND ol_w_id = :w_id AND ol_d_id = :d_id
    AND ol_o_id < d_next_o_id AND ol_o_id >= d_next_o_id - 20
    AND s_w_id = :w_id AND s_i_id = ol_i_id AND s_quantity < :threshold;
