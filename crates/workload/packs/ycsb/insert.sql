-- YCSB insert: a new record with the next key.
INSERT INTO usertable
SELECT 'user' || nextval('ycsb_insert_key'),
    left(repeat(md5(random()::text), 8), :field_length), left(repeat(md5(random()::text), 8), :field_length),
    left(repeat(md5(random()::text), 8), :field_length), left(repeat(md5(random()::text), 8), :field_length),
    left(repeat(md5(random()::text), 8), :field_length), left(repeat(md5(random()::text), 8), :field_length),
    left(repeat(md5(random()::text), 8), :field_length), left(repeat(md5(random()::text), 8), :field_length),
    left(repeat(md5(random()::text), 8), :field_length), left(repeat(md5(random()::text), 8), :field_length);
