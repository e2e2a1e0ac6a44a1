-- Herald schema: replies stored by one checked path, at the cost of one
-- ledger probe and one index fewer per reply.
--
-- Until now a stored reply cost PostgreSQL about 11 µs of CPU here (durable
-- PostgreSQL, 1M deliveries in ten campaign partitions, batches of 5,000;
-- docs/SCALING.md): the lookup of its delivery (herald_reply_targets, 2.3
-- µs), then an INSERT whose statement trigger (0013) looked the same
-- delivery up again (1.8 µs), with two indexes that one can serve (a random
-- UUID's unique index, 2.0 µs, and the delivery's). What changes:
--
-- * A reply is identified by its delivery and the client's reply_id:
--   UNIQUE (delivery_id, reply_id) replaces UNIQUE (reply_id) and the index
--   on delivery_id (the ledger's "has replies" check and the analysts' joins
--   read its leading column). A retry (contract 4) repeats the delivery with
--   the reply_id, so "nothing stored twice" holds as before; a reply_id
--   reused for another delivery is another reply, and no client can take a
--   reply_id away from another delivery's replies. Inserted in delivery order
--   (as the lookup below writes them), its pages are touched a few at a time
--   instead of one at random per reply.
--
-- * herald_store_checked_replies looks a batch's deliveries up, checks each
--   reply's action against its campaign's category, and inserts what passes,
--   all in the INSERT statements themselves. The ledger is read once per
--   reply: for each delivery_id_ranges range that the batch's ids fall in,
--   one statement reads that campaign's partition (pruned once, when the
--   statement starts, not once per reply) for the batch's slice of ids,
--   found by binary search (width_bucket) in the ids sorted ascending. The
--   caller sends them sorted; in any other order the result is the same,
--   only slower (what the ranges do not cover goes through the general path
--   below). Its INSERTs say they checked the deliveries themselves
--   (herald.replies_checked, set during the call only), and the statement
--   trigger of 0013 skips its second lookup for them; every other INSERT
--   into replies is checked as before. Only the owner and this
--   SECURITY DEFINER function insert replies now: herald_intake's INSERT
--   privilege is revoked, so no other role can skip the check.
--
--   Measured on the durable database above, 1M replies in batches of 5,000:
--   4.5-4.6 s of PostgreSQL for lookup, check and insert together, against
--   2.3 µs + 6.0 µs a reply before (without the COPY that fed it).
--
-- * What the ranges do not cover (rows written by hand, the DEFAULT
--   partition), a refused reply, and a reply_id stored before go through a
--   general path: the ids looked up with herald_reply_targets, each reply
--   checked as herald_take_replies did, the passing ones inserted in the
--   arrays' order with ON CONFLICT DO NOTHING (the first of two replies with
--   one key is stored; the statement trigger checks them again and records a
--   test send's kind). A batch with none of these never takes it; a batch
--   with some sends only those (the fast path's INSERTs return the keys they
--   stored), or all of it when one key stands twice in it.
--
-- * herald_commit_replies calls it and commits before it answers (a
--   procedure may commit; a SECURITY DEFINER one may not), so that when the
--   caller has the answer the replies are durable. `herald serve` and
--   `herald ingest` both store through it. herald_take_replies (0017) and
--   herald_store_replies (0016), which inserted as their caller, are dropped.
-- applied-if: SELECT to_regprocedure('public.herald_commit_replies(uuid[],bigint[],text[],boolean[],text[],double precision[],boolean[],text,integer,integer[],integer[])') IS NOT NULL

ALTER TABLE replies DROP CONSTRAINT replies_reply_id_key;
DROP INDEX replies_delivery;
ALTER TABLE replies ADD CONSTRAINT replies_delivery_reply_id_key UNIQUE (delivery_id, reply_id);

DROP TRIGGER replies_added_delivery ON replies;
CREATE TRIGGER replies_added_delivery AFTER INSERT ON replies
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT
    WHEN (current_setting('herald.replies_checked', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION herald_replies_delivery();

DROP PROCEDURE herald_take_replies;
DROP PROCEDURE herald_store_replies;

-- p_* are parallel arrays, one element per reply, ideally sorted by
-- p_delivery_ids. p_checked: what the caller checked without the delivery
-- (the text's length and characters) passed; a reply with false is refused
-- whatever its delivery, and its text is not read. Returns how many replies
-- were stored now, the positions (1-based, in the arrays) of the refused
-- ones (no such delivery, an action the campaign's category does not have,
-- text where the action takes none, or p_checked false), and of the
-- duplicates (passed, but their delivery_id and reply_id were stored
-- before, or earlier in the arrays). A constraint of the table failing
-- raises, and nothing of the batch is stored.
CREATE FUNCTION herald_store_checked_replies(
    p_reply_ids uuid[], p_delivery_ids bigint[], p_actions text[], p_has_text boolean[], p_texts text[],
    p_occurred double precision[], p_checked boolean[], p_source text,
    OUT stored integer, OUT refused integer[], OUT duplicates integer[])
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = public, pg_temp
-- One plan per statement for the session, pruned to the range's partition
-- when it starts; the slice is read by index probes whatever its estimate.
SET plan_cache_mode = force_generic_plan
SET enable_hashjoin = off
SET enable_mergejoin = off
SET jit = off
AS $$
DECLARE
    total integer := coalesce(cardinality(p_delivery_ids), 0);
    r record;
    first_at integer;
    last_at integer;
    n integer;
    category text;
    allowed text[];
    with_text text[];
    candidates integer[];
    -- The keys the fast path stored.
    inserted_deliveries bigint[] := '{}';
    inserted_replies uuid[] := '{}';
    outside text;
BEGIN
    stored := 0;
    refused := '{}';
    duplicates := '{}';
    IF coalesce(cardinality(p_reply_ids), 0) <> total OR coalesce(cardinality(p_actions), 0) <> total
       OR coalesce(cardinality(p_has_text), 0) <> total OR coalesce(cardinality(p_texts), 0) <> total
       OR coalesce(cardinality(p_occurred), 0) <> total OR coalesce(cardinality(p_checked), 0) <> total THEN
        RAISE EXCEPTION 'herald_store_checked_replies: the arrays differ in length' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF total = 0 THEN
        RETURN;
    END IF;
    -- For this call only (a SET clause would do it, but only a superuser
    -- may store one for a parameter PostgreSQL does not know).
    outside := current_setting('herald.replies_checked', true);
    PERFORM set_config('herald.replies_checked', 'on', true);

    BEGIN
        FOR r IN
            SELECT g.campaign_id, lower(g.ids) AS first_id, upper(g.ids) AS end_id, c.category_id
            FROM delivery_id_ranges g JOIN campaigns c ON c.id = g.campaign_id
            -- [first, last + 1): no range of real ids holds the largest bigint,
            -- whose successor does not exist.
            WHERE g.ids && int8range(least(p_delivery_ids[1], p_delivery_ids[total]),
                                     least(greatest(p_delivery_ids[1], p_delivery_ids[total]), 9223372036854775806) + 1)
            ORDER BY c.category_id
        LOOP
            -- The slice of the sorted ids in [first_id, end_id).
            first_at := width_bucket(r.first_id - 1, p_delivery_ids) + 1;
            last_at := width_bucket(r.end_id - 1, p_delivery_ids);
            CONTINUE WHEN first_at > last_at;
            -- The category's actions, read once for its ranges (in a row).
            IF allowed IS NULL OR r.category_id IS DISTINCT FROM category THEN
                SELECT coalesce(array_agg(ca.action_id), '{}'),
                       coalesce(array_agg(ca.action_id) FILTER (WHERE a.kind = 'text_input'), '{}')
                INTO allowed, with_text
                FROM category_actions ca JOIN actions a ON a.id = ca.action_id
                WHERE ca.category_id = r.category_id;
                category := r.category_id;
            END IF;
            WITH ins AS (
                INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, text,
                                     occurred_at, source, delivery_kind)
                SELECT p_reply_ids[u.at], u.id, d.campaign_id, d.device_id, d.user_id, p_actions[u.at],
                       CASE WHEN p_has_text[u.at] THEN p_texts[u.at] END, to_timestamp(p_occurred[u.at]), p_source, d.kind
                FROM (SELECT s.id, first_at - 1 + s.o::integer AS at
                      FROM unnest(p_delivery_ids[first_at:last_at]) WITH ORDINALITY AS s(id, o)) u
                JOIN deliveries d ON d.campaign_id = r.campaign_id AND d.id = u.id
                WHERE p_checked[u.at]
                  AND CASE WHEN p_actions[u.at] IN ('com.apple.UNNotificationDefaultActionIdentifier',
                                                    'com.apple.UNNotificationDismissActionIdentifier')
                           THEN NOT p_has_text[u.at]
                           ELSE p_actions[u.at] = ANY (allowed) AND (NOT p_has_text[u.at] OR p_actions[u.at] = ANY (with_text)) END
                RETURNING delivery_id, reply_id)
            SELECT count(*)::integer, inserted_deliveries || coalesce(array_agg(ins.delivery_id), '{}'),
                   inserted_replies || coalesce(array_agg(ins.reply_id), '{}')
            INTO n, inserted_deliveries, inserted_replies FROM ins;
            stored := stored + n;
        END LOOP;
        IF stored = total THEN
            PERFORM set_config('herald.replies_checked', coalesce(outside, ''), true);
            RETURN;
        END IF;
        -- The rest (refused, or outside the ranges) takes the general path
        -- below. With a key twice in the batch, which of its replies was
        -- stored here is not known by key: the whole batch goes that way.
        PERFORM set_config('enable_hashjoin', 'on', true);
        IF EXISTS (SELECT FROM unnest(p_delivery_ids, p_reply_ids) AS u(id, reply_id)
                   GROUP BY u.id, u.reply_id HAVING count(*) > 1) THEN
            RAISE EXCEPTION USING ERRCODE = 'HR001';
        END IF;
        SELECT coalesce(array_agg(u.at ORDER BY u.at), '{}') INTO candidates
        FROM unnest(p_delivery_ids, p_reply_ids) WITH ORDINALITY AS u(id, reply_id, at)
        WHERE NOT EXISTS (SELECT FROM unnest(inserted_deliveries, inserted_replies) AS k(id, reply_id)
                          WHERE k.id = u.id AND k.reply_id = u.reply_id);
    EXCEPTION WHEN unique_violation OR SQLSTATE 'HR001' THEN
        -- A key stored before or twice in the batch: the fast path's rows
        -- are gone with its subtransaction; the whole batch goes the general way.
        PERFORM set_config('enable_hashjoin', 'on', true);
        stored := 0;
        SELECT array_agg(at) INTO candidates FROM generate_series(1, total) AS at;
    END;

    -- The general path, for the replies at `candidates`: checked and stored
    -- in their order, the first of one key stored, the others duplicates.
    -- The statement trigger checks the rows again and records a test send's kind.
    PERFORM set_config('herald.replies_checked', 'off', true);
    WITH c AS MATERIALIZED (
        SELECT u.at, p_reply_ids[u.at] AS reply_id, p_delivery_ids[u.at] AS delivery_id, p_actions[u.at] AS action,
               p_has_text[u.at] AS has_text, p_checked[u.at] AS checked
        FROM unnest(candidates) AS u(at)
    ), found AS MATERIALIZED (
        SELECT t.id, t.campaign_id, t.device_id, t.user_id, t.category_id
        FROM herald_reply_targets(ARRAY(SELECT DISTINCT c.delivery_id FROM c)) AS t
    ), passing AS MATERIALIZED (
        SELECT c.at, c.reply_id, c.delivery_id, f.campaign_id, f.device_id, f.user_id, c.action, c.has_text
        FROM c JOIN found f ON f.id = c.delivery_id
        WHERE c.checked
          AND CASE WHEN c.action IN ('com.apple.UNNotificationDefaultActionIdentifier',
                                     'com.apple.UNNotificationDismissActionIdentifier') THEN NOT c.has_text
                   ELSE EXISTS (SELECT 1 FROM category_actions ca JOIN actions a ON a.id = ca.action_id
                                WHERE ca.category_id = f.category_id AND ca.action_id = c.action
                                  AND (NOT c.has_text OR a.kind = 'text_input')) END
    ), ins AS (
        INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, text, occurred_at, source)
        SELECT p.reply_id, p.delivery_id, p.campaign_id, p.device_id, p.user_id, p.action,
               CASE WHEN p.has_text THEN p_texts[p.at] END, to_timestamp(p_occurred[p.at]), p_source
        FROM passing p
        ORDER BY p.at
        ON CONFLICT (delivery_id, reply_id) DO NOTHING
        RETURNING delivery_id, reply_id
    ), firsts AS (
        -- The position stored for each key stored now: its first passing one.
        SELECT min(p.at) AS at FROM passing p JOIN ins i ON i.delivery_id = p.delivery_id AND i.reply_id = p.reply_id
        GROUP BY p.delivery_id, p.reply_id
    )
    SELECT stored + (SELECT count(*) FROM firsts)::integer,
           coalesce((SELECT array_agg(c.at ORDER BY c.at) FROM c WHERE c.at NOT IN (SELECT p.at FROM passing p)), '{}'),
           coalesce((SELECT array_agg(p.at ORDER BY p.at) FROM passing p WHERE p.at NOT IN (SELECT f.at FROM firsts f)), '{}')
    INTO stored, refused, duplicates;
    PERFORM set_config('herald.replies_checked', coalesce(outside, ''), true);
END $$;
COMMENT ON FUNCTION herald_store_checked_replies IS
    'looks up, checks and stores a batch of replies (the only way roles other than the owner store replies)';

-- The intake's and ingest's call: the function above, then COMMIT, before
-- the answer leaves. CALL it outside a transaction block.
CREATE PROCEDURE herald_commit_replies(
    p_reply_ids uuid[], p_delivery_ids bigint[], p_actions text[], p_has_text boolean[], p_texts text[],
    p_occurred double precision[], p_checked boolean[], p_source text,
    INOUT stored integer DEFAULT NULL, INOUT refused integer[] DEFAULT NULL, INOUT duplicates integer[] DEFAULT NULL)
LANGUAGE plpgsql AS $$
BEGIN
    SELECT s.stored, s.refused, s.duplicates INTO stored, refused, duplicates
    FROM herald_store_checked_replies(p_reply_ids, p_delivery_ids, p_actions, p_has_text, p_texts,
                                      p_occurred, p_checked, p_source) AS s;
    COMMIT;
END $$;
COMMENT ON PROCEDURE herald_commit_replies IS
    'stores a batch of replies through herald_store_checked_replies and commits before answering (the reply intake, herald ingest)';

REVOKE INSERT ON replies FROM herald_intake;
REVOKE ALL ON FUNCTION herald_store_checked_replies FROM PUBLIC;
REVOKE ALL ON PROCEDURE herald_commit_replies FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald_store_checked_replies TO herald_intake;
GRANT EXECUTE ON PROCEDURE herald_commit_replies TO herald_intake;
-- Nor does it need what its INSERT and ON CONFLICT (reply_id) did.
REVOKE USAGE ON SEQUENCE replies_id_seq FROM herald_intake;
REVOKE SELECT (reply_id) ON replies FROM herald_intake;
