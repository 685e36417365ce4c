-- Runs once, first: drop and create the tables.
DROP TABLE IF EXISTS kv;
CREATE TABLE kv (k integer NOT NULL, v bigint NOT NULL, pad text NOT NULL);
