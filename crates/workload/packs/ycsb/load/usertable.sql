-- 100,000 records per unit of scale: keys user<n>, ten fields of :field_length
-- random characters.
INSERT INTO usertable
SELECT 'user' || n,
    left(repeat(md5(random()::text), 8), :field_length), left(repeat(md5(random()::text), 8), :field_length),
    left(repeat(md5(random()::text), 8), :field_length), left(repeat(md5(random()::text), 8), :field_length),
    left(repeat(md5(random()::text), 8), :field_length), left(repeat(md5(random()::text), 8), :field_length),
    left(repeat(md5(random()::text), 8), :field_length), left(repeat(md5(random()::text), 8), :field_length),
    left(repeat(md5(random()::text), 8), :field_length), left(repeat(md5(random()::text), 8), :field_length)
FROM generate_series((:unit - 1) * 100000 + 1, :unit * 100000) AS n
ORDER BY n;
