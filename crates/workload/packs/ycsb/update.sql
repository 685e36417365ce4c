-- YCSB update: one random field of one record (zipfian key, as read.sql).
\set n :scale * 100000
\set k permute(random_zipfian(1, :n, :zipfian_s) - 1, :n) + 1
\set f random(0, 9)
UPDATE usertable SET
    field0 = CASE WHEN :f = 0 THEN left(repeat(md5(random()::text), 8), :field_length) ELSE field0 END,
    field1 = CASE WHEN :f = 1 THEN left(repeat(md5(random()::text), 8), :field_length) ELSE field1 END,
    field2 = CASE WHEN :f = 2 THEN left(repeat(md5(random()::text), 8), :field_length) ELSE field2 END,
    field3 = CASE WHEN :f = 3 THEN left(repeat(md5(random()::text), 8), :field_length) ELSE field3 END,
    field4 = CASE WHEN :f = 4 THEN left(repeat(md5(random()::text), 8), :field_length) ELSE field4 END,
    field5 = CASE WHEN :f = 5 THEN left(repeat(md5(random()::text), 8), :field_length) ELSE field5 END,
    field6 = CASE WHEN :f = 6 THEN left(repeat(md5(random()::text), 8), :field_length) ELSE field6 END,
    field7 = CASE WHEN :f = 7 THEN left(repeat(md5(random()::text), 8), :field_length) ELSE field7 END,
    field8 = CASE WHEN :f = 8 THEN left(repeat(md5(random()::text), 8), :field_length) ELSE field8 END,
    field9 = CASE WHEN :f = 9 THEN left(repeat(md5(random()::text), 8), :field_length) ELSE field9 END
WHERE ycsb_key = 'user' || :k;
