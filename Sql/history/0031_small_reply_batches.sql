-- Herald schema: a small reply batch stored by one INSERT over all its
-- campaigns.
--
-- herald_store_checked_replies (0018) stored a batch with one INSERT per
-- delivery_id_ranges range it touched, each pruned to its campaign's
-- partition when it starts. For the intake's batches (about 30 replies
-- under 64 connections) that is up to one statement per campaign for a
-- few rows each, and a statement's fixed cost is most of it: a batch of
-- 30 replies over 10 campaigns spent 0.61 ms in the function, 9.4 INSERTs
-- of 37 µs each (BENCHMARKS.md, nineteenth sitting). A batch of at most 500
-- replies (ReplyBatching.maxBatch, the intake's largest) is now stored by
-- one INSERT whose deliveries are found in their ranges' partitions row by
-- row; a larger one (herald ingest's 5,000) keeps the statement per range,
-- which costs less a row at that size (BENCHMARKS.md, twelfth sitting:
-- one statement was 15% dearer at 5,000 replies). What is stored, refused
-- and a duplicate is unchanged: the same general path takes whatever the
-- first INSERT did not store.
--
-- The check of an action (and its text) against its category's actions,
-- the same in both forms and in the general path, is herald_reply_allowed,
-- inlined into each.
-- applied-if: SELECT to_regprocedure('public.herald_reply_allowed(text,boolean,text[],text[])') IS NOT NULL

-- Whether a reply's action (with text or not) passes, given its category's
-- actions and those of them that take text: the default and dismiss
-- actions never take text; any other must be one of the category's, and
-- take text if it has some.
CREATE FUNCTION herald_reply_allowed(p_action text, p_has_text boolean, p_allowed text[], p_with_text text[])
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN p_action IN ('com.apple.UNNotificationDefaultActionIdentifier',
                                  'com.apple.UNNotificationDismissActionIdentifier')
                THEN NOT p_has_text
                ELSE p_action = ANY (p_allowed) AND (NOT p_has_text OR p_action = ANY (p_with_text)) END
$$;
COMMENT ON FUNCTION herald_reply_allowed IS
    'whether a reply''s action (and its text) is allowed, given its category''s actions and those that take text';

CREATE OR REPLACE FUNCTION herald_store_checked_replies(
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
      IF total <= 500 THEN
        -- A small batch (the intake's, at most ReplyBatching.maxBatch):
        -- one INSERT over all its campaigns' ranges, each delivery found in
        -- its range's partition (pruned per row). A statement's fixed cost
        -- is most of a small batch's, and the intake's batches span many
        -- campaigns; a large one (ingest's 5,000) is cheaper by range, below.
        WITH ranges AS MATERIALIZED (
            SELECT g.campaign_id, g.ids, c.category_id
            FROM delivery_id_ranges g JOIN campaigns c ON c.id = g.campaign_id
            WHERE g.ids && int8range(least(p_delivery_ids[1], p_delivery_ids[total]),
                                     least(greatest(p_delivery_ids[1], p_delivery_ids[total]), 9223372036854775806) + 1)
        ), categories AS MATERIALIZED (
            -- Each category's actions, and those that take text, read once.
            SELECT k.category_id,
                   coalesce(array_agg(ca.action_id) FILTER (WHERE ca.action_id IS NOT NULL), '{}') AS allowed,
                   coalesce(array_agg(ca.action_id) FILTER (WHERE a.kind = 'text_input'), '{}') AS with_text
            FROM (SELECT DISTINCT ranges.category_id FROM ranges) k
            LEFT JOIN category_actions ca ON ca.category_id = k.category_id
            LEFT JOIN actions a ON a.id = ca.action_id
            GROUP BY k.category_id
        ), ins AS (
            INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, text,
                                 occurred_at, source, delivery_kind)
            SELECT p_reply_ids[u.at], u.id, d.campaign_id, d.device_id, d.user_id, p_actions[u.at],
                   CASE WHEN p_has_text[u.at] THEN p_texts[u.at] END, to_timestamp(p_occurred[u.at]), p_source, d.kind
            FROM unnest(p_delivery_ids) WITH ORDINALITY AS u(id, at)
            JOIN ranges g ON g.ids @> u.id
            JOIN categories k ON k.category_id IS NOT DISTINCT FROM g.category_id
            -- OFFSET 0 keeps the campaign a parameter of the partition scan.
            CROSS JOIN LATERAL (SELECT dl.campaign_id, dl.device_id, dl.user_id, dl.kind FROM deliveries dl
                                WHERE dl.campaign_id = g.campaign_id AND dl.id = u.id OFFSET 0) d
            WHERE p_checked[u.at] AND herald_reply_allowed(p_actions[u.at], p_has_text[u.at], k.allowed, k.with_text)
            RETURNING delivery_id, reply_id)
        SELECT count(*)::integer, coalesce(array_agg(ins.delivery_id), '{}'), coalesce(array_agg(ins.reply_id), '{}')
        INTO stored, inserted_deliveries, inserted_replies FROM ins;
      ELSE
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
                WHERE p_checked[u.at] AND herald_reply_allowed(p_actions[u.at], p_has_text[u.at], allowed, with_text)
                RETURNING delivery_id, reply_id)
            SELECT count(*)::integer, inserted_deliveries || coalesce(array_agg(ins.delivery_id), '{}'),
                   inserted_replies || coalesce(array_agg(ins.reply_id), '{}')
            INTO n, inserted_deliveries, inserted_replies FROM ins;
            stored := stored + n;
        END LOOP;
      END IF;
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
        CROSS JOIN LATERAL (
            SELECT coalesce(array_agg(ca.action_id), '{}') AS allowed,
                   coalesce(array_agg(ca.action_id) FILTER (WHERE a.kind = 'text_input'), '{}') AS with_text
            FROM category_actions ca JOIN actions a ON a.id = ca.action_id
            WHERE ca.category_id = f.category_id) k
        WHERE c.checked AND herald_reply_allowed(c.action, c.has_text, k.allowed, k.with_text)
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
