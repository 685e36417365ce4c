-- The five transactions as PL/pgSQL functions, for the tpcc-procedures pack: each
-- transaction is one call (as HammerDB runs TPC-C). The client draws the inputs the
-- specification gives the terminal; New-Order draws its order lines here, from
-- random() seeded with a number the client draws, so a run's --random-seed still
-- fixes every key.

-- New-Order (clause 2.4). Returns the new order's id, or 0 when it rolled back
-- because its last line names an unused item (rbk = 1): the order's writes are
-- undone by the exception block and tpcc_new_order_rollbacks counts it.
CREATE OR REPLACE FUNCTION tpcc_new_order(
    p_w_id integer, p_d_id integer, p_c_id integer, p_ol_cnt integer, p_rbk integer,
    p_seed integer, p_scale integer, p_c_ol_i_id integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_o_id integer;
    v_i_id integer;
    v_supply integer;
    v_quantity integer;
    v_price numeric;
    v_dist char(24);
    v_remote integer := 0;
BEGIN
    PERFORM setseed(p_seed / 2147483648.0);
    BEGIN
        PERFORM c_discount, c_last, c_credit, w_tax
            FROM customer JOIN warehouse ON w_id = c_w_id
            WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_id = p_c_id;
        UPDATE district SET d_next_o_id = d_next_o_id + 1
            WHERE d_w_id = p_w_id AND d_id = p_d_id
            RETURNING d_next_o_id - 1 INTO v_o_id;
        INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
            VALUES (v_o_id, p_d_id, p_w_id, p_c_id, now(), NULL, p_ol_cnt, 1);
        INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o_id, p_d_id, p_w_id);
        FOR n IN 1..p_ol_cnt LOOP
            v_i_id := CASE WHEN p_rbk = 1 AND n = p_ol_cnt THEN 100001
                ELSE tpcc_nurand(8191, 1, 100000, p_c_ol_i_id) END;
            v_supply := p_w_id;
            IF p_scale > 1 AND random() < 0.01 THEN
                v_supply := 1 + floor(random() * (p_scale - 1))::integer;
                IF v_supply >= p_w_id THEN
                    v_supply := v_supply + 1;
                END IF;
                v_remote := v_remote + 1;
            END IF;
            v_quantity := 1 + floor(random() * 10)::integer;
            SELECT i_price INTO v_price FROM item WHERE i_id = v_i_id;
            IF NOT FOUND THEN
                RAISE EXCEPTION USING ERRCODE = 'P0002', MESSAGE = 'unused item';
            END IF;
            UPDATE stock SET s_quantity = CASE WHEN s_quantity >= v_quantity + 10
                    THEN s_quantity - v_quantity ELSE s_quantity - v_quantity + 91 END,
                s_ytd = s_ytd + v_quantity, s_order_cnt = s_order_cnt + 1,
                s_remote_cnt = s_remote_cnt + CASE WHEN s_w_id = p_w_id THEN 0 ELSE 1 END
                WHERE s_w_id = v_supply AND s_i_id = v_i_id
                RETURNING (ARRAY[s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05,
                    s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10])[p_d_id] INTO v_dist;
            INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id,
                    ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
                VALUES (v_o_id, p_d_id, p_w_id, n, v_i_id, v_supply, NULL, v_quantity,
                    v_quantity * v_price, v_dist);
        END LOOP;
        IF v_remote > 0 THEN
            UPDATE orders SET o_all_local = 0
                WHERE o_w_id = p_w_id AND o_d_id = p_d_id AND o_id = v_o_id;
        END IF;
    EXCEPTION WHEN no_data_found THEN
        PERFORM nextval('tpcc_new_order_rollbacks');
        RETURN 0;
    END;
    RETURN v_o_id;
END
$$;

-- The customer in the middle (n/2 rounded up) of those with last name n, ordered
-- by first name (clause 2.5.2.2).
CREATE OR REPLACE FUNCTION tpcc_customer_by_name(p_w_id integer, p_d_id integer, p_last integer)
RETURNS integer LANGUAGE sql STABLE AS $$
SELECT c_id FROM customer
WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_last = tpcc_lastname(p_last)
ORDER BY c_first
OFFSET (SELECT (count(*) - 1) / 2 FROM customer
        WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_last = tpcc_lastname(p_last))
LIMIT 1
$$;

-- Payment (clause 2.5); h_amount in cents.
CREATE OR REPLACE FUNCTION tpcc_payment(
    p_w_id integer, p_d_id integer, p_c_w_id integer, p_c_d_id integer, p_c_id integer,
    p_by_name integer, p_c_last integer, p_h_amount integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_amount numeric := p_h_amount * 0.01;
    v_c_id integer := p_c_id;
    v_w_name text;
    v_d_name text;
BEGIN
    UPDATE warehouse SET w_ytd = w_ytd + v_amount WHERE w_id = p_w_id
        RETURNING w_name INTO v_w_name;
    UPDATE district SET d_ytd = d_ytd + v_amount WHERE d_w_id = p_w_id AND d_id = p_d_id
        RETURNING d_name INTO v_d_name;
    IF p_by_name = 1 THEN
        v_c_id := tpcc_customer_by_name(p_c_w_id, p_c_d_id, p_c_last);
    END IF;
    UPDATE customer SET c_balance = c_balance - v_amount,
        c_ytd_payment = c_ytd_payment + v_amount,
        c_payment_cnt = c_payment_cnt + 1,
        c_data = CASE WHEN c_credit = 'BC'
            THEN left(format('%s %s %s %s %s %s | %s', c_id, c_d_id, c_w_id, p_d_id, p_w_id, v_amount, c_data), 500)
            ELSE c_data END
        WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = v_c_id;
    INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
        VALUES (v_c_id, p_c_d_id, p_c_w_id, p_d_id, p_w_id, now(), v_amount,
            v_w_name || '    ' || v_d_name);
    RETURN v_c_id;
END
$$;

-- Order-Status (clause 2.6): returns the customer's last order's id.
CREATE OR REPLACE FUNCTION tpcc_order_status(
    p_w_id integer, p_d_id integer, p_c_id integer, p_by_name integer, p_c_last integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_c_id integer := p_c_id;
    v_o_id integer;
BEGIN
    IF p_by_name = 1 THEN
        v_c_id := tpcc_customer_by_name(p_w_id, p_d_id, p_c_last);
    END IF;
    PERFORM c_balance, c_first, c_middle, c_last FROM customer
        WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_id = v_c_id;
    SELECT o_id INTO v_o_id FROM orders
        WHERE o_w_id = p_w_id AND o_d_id = p_d_id AND o_c_id = v_c_id
        ORDER BY o_id DESC LIMIT 1;
    PERFORM ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line
        WHERE ol_w_id = p_w_id AND ol_d_id = p_d_id AND ol_o_id = v_o_id;
    RETURN v_o_id;
END
$$;

-- Delivery (clause 2.7): the oldest undelivered order of each district; returns how
-- many were delivered.
CREATE OR REPLACE FUNCTION tpcc_delivery(p_w_id integer, p_carrier integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_o_id integer;
    v_c_id integer;
    v_total numeric;
    v_done integer := 0;
BEGIN
    FOR d IN 1..10 LOOP
        DELETE FROM new_order WHERE no_w_id = p_w_id AND no_d_id = d AND no_o_id =
            (SELECT min(no_o_id) FROM new_order WHERE no_w_id = p_w_id AND no_d_id = d)
            RETURNING no_o_id INTO v_o_id;
        CONTINUE WHEN v_o_id IS NULL;
        UPDATE orders SET o_carrier_id = p_carrier
            WHERE o_w_id = p_w_id AND o_d_id = d AND o_id = v_o_id
            RETURNING o_c_id INTO v_c_id;
        UPDATE order_line SET ol_delivery_d = now()
            WHERE ol_w_id = p_w_id AND ol_d_id = d AND ol_o_id = v_o_id;
        SELECT sum(ol_amount) INTO v_total FROM order_line
            WHERE ol_w_id = p_w_id AND ol_d_id = d AND ol_o_id = v_o_id;
        UPDATE customer SET c_balance = c_balance + v_total, c_delivery_cnt = c_delivery_cnt + 1
            WHERE c_w_id = p_w_id AND c_d_id = d AND c_id = v_c_id;
        v_done := v_done + 1;
    END LOOP;
    RETURN v_done;
END
$$;

-- Stock-Level (clause 2.8).
CREATE OR REPLACE FUNCTION tpcc_stock_level(p_w_id integer, p_d_id integer, p_threshold integer)
RETURNS bigint LANGUAGE sql STABLE AS $$
SELECT count(DISTINCT s_i_id)
FROM district, order_line, stock
WHERE d_w_id = p_w_id AND d_id = p_d_id
  AND ol_w_id = p_w_id AND ol_d_id = p_d_id
  AND ol_o_id < d_next_o_id AND ol_o_id >= d_next_o_id - 20
  AND s_w_id = p_w_id AND s_i_id = ol_i_id AND s_quantity < p_threshold
$$;
