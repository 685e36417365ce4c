-- Runs once per unit of scale (:unit = 1..:scale): 1,000 rows each.
INSERT INTO kv (k, v, pad)
SELECT k, (random() * 1000000)::bigint, md5(k::text)
FROM generate_series((:unit - 1) * 1000 + 1, :unit * 1000) AS k;
