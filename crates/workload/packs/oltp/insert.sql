-- sysbench oltp_insert: one row with a new id (from a sequence past the loaded ids).
INSERT INTO sbtest1 (id, k, c, pad)
VALUES (nextval('sbtest1_insert_id'), 1 + floor(random() * :scale * 100000)::integer,
    left(repeat(md5(random()::text), 4), 120), left(repeat(md5(random()::text), 2), 60));
