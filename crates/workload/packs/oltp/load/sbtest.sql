-- 100,000 rows per unit of scale: k uniform in 1..table size, c and pad groups of
-- 11 digits joined by '-', as sysbench generates them.
INSERT INTO sbtest1 (id, k, c, pad)
SELECT id, 1 + floor(random() * :scale * 100000)::integer,
    (SELECT string_agg(lpad(floor(random() * 1e11)::bigint::text, 11, '0'), '-')
     FROM generate_series(1, 10) WHERE id > 0),
    (SELECT string_agg(lpad(floor(random() * 1e11)::bigint::text, 11, '0'), '-')
     FROM generate_series(1, 5) WHERE id > 0)
FROM generate_series((:unit - 1) * 100000 + 1, :unit * 100000) AS id
ORDER BY id;
