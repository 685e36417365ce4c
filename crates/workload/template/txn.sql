-- One transaction: a pgbench script (every pgbench meta-command works here).
\set k random(1, 1000 * :scale)
\if random(1, 100) <= :read_percent
SELECT v FROM kv WHERE k = :k;
\else
UPDATE kv SET v = v + 1 WHERE k = :k;
\endif
