-- TPC-C tables with the specification's table and column names (clause 1.3).
-- The ORDER table is called orders (ORDER is a reserved word in SQL).
DROP TABLE IF EXISTS warehouse, district, customer, history, new_order, orders,
    order_line, item, stock CASCADE;
DROP SEQUENCE IF EXISTS tpcc_new_order_rollbacks;

CREATE TABLE warehouse (
    w_id integer NOT NULL,
    w_name varchar(10), w_street_1 varchar(20), w_street_2 varchar(20),
    w_city varchar(20), w_state char(2), w_zip char(9),
    w_tax numeric(4,4), w_ytd numeric(12,2));

CREATE TABLE district (
    d_id integer NOT NULL, d_w_id integer NOT NULL,
    d_name varchar(10), d_street_1 varchar(20), d_street_2 varchar(20),
    d_city varchar(20), d_state char(2), d_zip char(9),
    d_tax numeric(4,4), d_ytd numeric(12,2), d_next_o_id integer);

CREATE TABLE customer (
    c_id integer NOT NULL, c_d_id integer NOT NULL, c_w_id integer NOT NULL,
    c_first varchar(16), c_middle char(2), c_last varchar(16),
    c_street_1 varchar(20), c_street_2 varchar(20), c_city varchar(20),
    c_state char(2), c_zip char(9), c_phone char(16), c_since timestamp,
    c_credit char(2), c_credit_lim numeric(12,2), c_discount numeric(4,4),
    c_balance numeric(12,2), c_ytd_payment numeric(12,2),
    c_payment_cnt integer, c_delivery_cnt integer, c_data varchar(500));

CREATE TABLE history (
    h_c_id integer, h_c_d_id integer, h_c_w_id integer,
    h_d_id integer, h_w_id integer, h_date timestamp,
    h_amount numeric(6,2), h_data varchar(24));

CREATE TABLE new_order (
    no_o_id integer NOT NULL, no_d_id integer NOT NULL, no_w_id integer NOT NULL);

CREATE TABLE orders (
    o_id integer NOT NULL, o_d_id integer NOT NULL, o_w_id integer NOT NULL,
    o_c_id integer, o_entry_d timestamp, o_carrier_id integer,
    o_ol_cnt integer, o_all_local integer);

CREATE TABLE order_line (
    ol_o_id integer NOT NULL, ol_d_id integer NOT NULL, ol_w_id integer NOT NULL,
    ol_number integer NOT NULL, ol_i_id integer, ol_supply_w_id integer,
    ol_delivery_d timestamp, ol_quantity integer, ol_amount numeric(6,2),
    ol_dist_info char(24));

CREATE TABLE item (
    i_id integer NOT NULL, i_im_id integer, i_name varchar(24),
    i_price numeric(5,2), i_data varchar(50));

CREATE TABLE stock (
    s_i_id integer NOT NULL, s_w_id integer NOT NULL, s_quantity integer,
    s_dist_01 char(24), s_dist_02 char(24), s_dist_03 char(24), s_dist_04 char(24),
    s_dist_05 char(24), s_dist_06 char(24), s_dist_07 char(24), s_dist_08 char(24),
    s_dist_09 char(24), s_dist_10 char(24),
    s_ytd integer, s_order_cnt integer, s_remote_cnt integer, s_data varchar(50));

-- Counts the New-Orders rolled back on purpose (clause 2.4.2.3): a sequence is not
-- rolled back with the transaction that advances it.
CREATE SEQUENCE tpcc_new_order_rollbacks;

-- Data generation helpers (clause 4.3.2). random() is seeded by the loader.
-- The pools are ASCII and cut as bytes: a text substring in a multi-byte database
-- encoding walks every character before the offset, many times slower.

-- A random a-string of lo..hi characters (letters and digits), cut from a fixed
-- pool at a random offset.
CREATE OR REPLACE FUNCTION tpcc_astring(lo integer, hi integer) RETURNS text
LANGUAGE sql VOLATILE AS $$
SELECT encode(substring('oHBvRPOIvGrv5iFlbCBFNOgmBjMtpsiaOclRz3AwzKsbVRJN9wVGFYGW2WmQzCudiH7YFjS1on43XkMtECqOxSF2O3GYRdo1XKXWNqRs7rpEmoKiuPKdYR7osjOrU1xxDO0CzUZREN68k4tUNpfZ46pdJQIPvjiQvlb5lZXOIgfFwD3HJoKyrbmEYYmdhQj38AruHr4iwRxpVHSbKdA9u4uQgwLg6G3oT1ogmMJXwKi9x7h6AmUfBH7X41zTPDP4k8FFuf0EwixIIqe8jKQh3mb9N7iwusMtTZqpXc5hcHPOEVBljOlOAEtoDOE5C3VEgPRqfNiIu74kkePyezaMGGqbWbad3uDrppGDZuVz3GPMMicIbLRdP37Ecz32jGDpi1AF7w2PKafeN3Z5DKYAYQ7yydSbs9uyjqtfJMSN9DlviDvUDDleg62hKD9gF2LEmEr3PZH84kPlmCnFaqlkhU7QNqtUPQZIqpTdU7w7EAdnkGEiNgQI7W4E4PXSKc1itTnzphAq0jT7qG84IQH4GvjJRSmNtVNro2QgfQ562DFob1RCAVxIoQKvcjtbjAHE84s5JiC1XljJbICTX57y3C5WNrPqGWxj43anvJ77P3KzzL4aBLv7Vy7azq3vzPRKysGY3C2eOM06dWT0y3OOBqMZVR3E9xRWpgZr1iV8BH4QLl9QCGmbWuyUbmgHY5kMQCtbAh7ziru8vvqMXbE8q6VnUq2Hu5TgTqaUZsSjIMaq8Yrv5LnkTZj1ATSNbylmpUdccrNgey59yvKqFSgqonVF08wPrTOzMJBCPen2xEda4okMtsYfZPJpsA5w3x4GxbOLz9shdDjP62HdIzdqhjmU8w5cn0u5gb16jc5Kv3ecQwP1oRxxhfoPRcEtSPRVU5iFIJOYsJtNEaaVidaDN1aY5xl8sB24wkYeA8WTwY2591aivvizm5OfORbfBYVqrzZuK1d6IniB6ZlkqBFpbI3dLDQYUNdUVw4YRw81aQ1FeBviD8WOpEx9pCwB8PM1'::bytea,
    1 + floor(random() * (1024 - hi))::integer,
    lo + floor(random() * (hi - lo + 1))::integer), 'escape')
$$;

-- A random n-string of n digits (n <= 200).
CREATE OR REPLACE FUNCTION tpcc_nstring(n integer) RETURNS text
LANGUAGE sql VOLATILE AS $$
SELECT encode(substring('5260181590830166131860913909960308246281948219935181909378657975432319487574911862527601895559797114710497465075291703423667127684268465632122330792440268599528907866661760313721590109281590139624595711777741215472803852808414852538885393363387500474395755'::bytea, 1 + floor(random() * (256 - n))::integer, n), 'escape')
$$;

-- Two random upper-case letters (a state).
CREATE OR REPLACE FUNCTION tpcc_state() RETURNS text
LANGUAGE sql VOLATILE AS $$
SELECT chr(65 + floor(random() * 26)::integer) || chr(65 + floor(random() * 26)::integer)
$$;

-- "ORIGINAL" at a random position of s in 10 % of the calls (I_DATA, S_DATA).
CREATE OR REPLACE FUNCTION tpcc_original(s text) RETURNS text
LANGUAGE sql VOLATILE AS $$
SELECT CASE WHEN random() < 0.1
    THEN overlay(s PLACING 'ORIGINAL' FROM 1 + floor(random() * (length(s) - 7))::integer)
    ELSE s END
$$;

-- NURand(A, x, y) with the constant c (clause 2.1.6).
CREATE OR REPLACE FUNCTION tpcc_nurand(a integer, x integer, y integer, c integer)
RETURNS integer LANGUAGE sql VOLATILE AS $$
SELECT (((floor(random() * (a + 1))::integer
    | (x + floor(random() * (y - x + 1))::integer)) + c) % (y - x + 1)) + x
$$;

-- The last name of number n (0..999): three syllables, one per digit (clause 4.3.2.3).
CREATE OR REPLACE FUNCTION tpcc_lastname(n integer) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
SELECT s[n / 100 + 1] || s[(n / 10) % 10 + 1] || s[n % 10 + 1]
FROM (SELECT ARRAY['BAR', 'OUGHT', 'ABLE', 'PRI', 'PRES', 'ESE', 'ANTI', 'CALLY',
    'ATION', 'EING'] AS s) syllables
$$;
