-- sysbench's OLTP table (oltp_common.lua): sbtest1 with a secondary index on k.
DROP TABLE IF EXISTS sbtest1;
CREATE TABLE sbtest1 (
    id integer NOT NULL,
    k integer NOT NULL DEFAULT 0,
    c char(120) NOT NULL DEFAULT '',
    pad char(60) NOT NULL DEFAULT '');
DROP SEQUENCE IF EXISTS sbtest1_insert_id;
-- Ids of rows inserted by oltp_insert continue after the loaded ones.
CREATE SEQUENCE sbtest1_insert_id;
