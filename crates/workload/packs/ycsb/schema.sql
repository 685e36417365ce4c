-- YCSB's usertable (the JDBC binding's layout): a key and ten text fields.
DROP TABLE IF EXISTS usertable;
DROP SEQUENCE IF EXISTS ycsb_insert_key;
CREATE TABLE usertable (
    ycsb_key varchar(255) NOT NULL,
    field0 text, field1 text, field2 text, field3 text, field4 text,
    field5 text, field6 text, field7 text, field8 text, field9 text);
-- Keys of inserted records continue after the loaded ones.
CREATE SEQUENCE ycsb_insert_key;
