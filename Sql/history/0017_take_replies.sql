-- Herald schema: an intake batch looked up, stored and committed by one
-- statement.
--
-- Since 0016 a batch of `herald serve` was two statements: the lookup of its
-- deliveries (herald_reply_targets), which Herald needs to check each reply,
-- then herald_store_replies. herald_take_replies does both in one call: it
-- looks the deliveries up, stores the replies that pass the checks that
-- need them, commits, and answers with the deliveries it found, the replies
-- that passed and the reply ids stored now. Herald still checks every reply
-- itself, with the same rules, to say why one is refused (ReplyRules.check);
-- the rules here decide what is stored, so a reply is never stored that
-- the catalogue as committed refuses, even when Herald's copy of the
-- catalogue (kept up to a second) is older.
--
-- The rules, those of ReplyRules.check: the delivery exists; the action is
-- iOS's default or dismiss identifier (without text), or an action of the
-- campaign's category (with text only if it is a text input); and
-- p_checked, what Herald checked without the delivery (the text's length
-- and characters). Of replies with the same reply_id the first that passes
-- is stored; one stored before is left alone. CALL it outside a transaction
-- block. (The deliveries found are `known`: FOUND is PL/pgSQL's own.)
-- applied-if: SELECT to_regprocedure('public.herald_take_replies(uuid[],bigint[],text[],boolean[],text[],double precision[],boolean[],text,bigint[],bigint[],bigint[],bigint[],text[],boolean[],integer[],uuid[])') IS NOT NULL

CREATE PROCEDURE herald_take_replies(
    p_reply_ids uuid[], p_delivery_ids bigint[], p_actions text[], p_has_text boolean[], p_texts text[],
    p_occurred double precision[], p_checked boolean[], p_source text,
    INOUT known bigint[] DEFAULT NULL, INOUT campaigns bigint[] DEFAULT NULL, INOUT devices bigint[] DEFAULT NULL,
    INOUT users bigint[] DEFAULT NULL, INOUT categories text[] DEFAULT NULL, INOUT categorized boolean[] DEFAULT NULL,
    INOUT passed integer[] DEFAULT NULL, INOUT stored uuid[] DEFAULT NULL)
LANGUAGE plpgsql AS $$
BEGIN
    SELECT coalesce(array_agg(t.id), '{}'), coalesce(array_agg(t.campaign_id), '{}'), coalesce(array_agg(t.device_id), '{}'),
           coalesce(array_agg(t.user_id), '{}'), coalesce(array_agg(coalesce(t.category_id, '')), '{}'),
           coalesce(array_agg(t.category_id IS NOT NULL), '{}')
    INTO known, campaigns, devices, users, categories, categorized
    FROM herald_reply_targets(ARRAY(SELECT DISTINCT unnest(p_delivery_ids))) AS t;

    SELECT coalesce(array_agg(r.n::integer ORDER BY r.n), '{}') INTO passed
    FROM unnest(p_delivery_ids, p_actions, p_has_text, p_checked) WITH ORDINALITY AS r(delivery_id, action, has_text, checked, n)
    JOIN unnest(known, categories, categorized) AS t(id, category_id, has_category) ON t.id = r.delivery_id
    WHERE r.checked
      AND (CASE WHEN r.action IN ('com.apple.UNNotificationDefaultActionIdentifier',
                                  'com.apple.UNNotificationDismissActionIdentifier') THEN NOT r.has_text
                ELSE EXISTS (SELECT 1 FROM category_actions ca JOIN actions a ON a.id = ca.action_id
                             WHERE t.has_category AND ca.category_id = t.category_id AND ca.action_id = r.action
                               AND (NOT r.has_text OR a.kind = 'text_input')) END);

    WITH ins AS (
        INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, text, occurred_at, source)
        SELECT r.reply_id, r.delivery_id, t.campaign_id, t.device_id, t.user_id, r.action,
               CASE WHEN r.has_text THEN r.text END, to_timestamp(r.occurred), p_source
        FROM unnest(p_reply_ids, p_delivery_ids, p_actions, p_has_text, p_texts, p_occurred)
             WITH ORDINALITY AS r(reply_id, delivery_id, action, has_text, text, occurred, n)
        JOIN unnest(known, campaigns, devices, users) AS t(id, campaign_id, device_id, user_id) ON t.id = r.delivery_id
        WHERE r.n = ANY(passed)
        ORDER BY r.n
        ON CONFLICT (reply_id) DO NOTHING
        RETURNING reply_id)
    SELECT coalesce(array_agg(ins.reply_id), '{}') INTO stored FROM ins;
    COMMIT;
END $$;
COMMENT ON PROCEDURE herald_take_replies IS
    'looks up, checks and stores a batch of replies and commits before answering (the reply intake)';

REVOKE ALL ON PROCEDURE herald_take_replies FROM PUBLIC;
GRANT EXECUTE ON PROCEDURE herald_take_replies TO herald_intake;
