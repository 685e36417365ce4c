-- Reads concentrated on the first :hot accounts (zipfian), to show cache effects.
\set aid random_zipfian(1, :hot, 1.1)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
