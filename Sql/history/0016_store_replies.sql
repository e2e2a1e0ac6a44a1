-- Herald schema: the reply intake's batch stored and committed by one
-- statement.
--
-- A batch of the intake was four statements, each a round trip: the lookup
-- of its deliveries, then BEGIN, INSERT and COMMIT, because a reply may be
-- acknowledged only once it is committed and PostgreSQL reports an INSERT
-- done (in the extended protocol PostgresNIO speaks) before it commits one
-- written outside a transaction block. herald_store_replies inserts the
-- batch and commits inside the call: the row it returns (the reply ids
-- stored now) is sent only after the COMMIT, so the caller holds the answer
-- only once the replies are durable. Two statements a batch instead of four,
-- and the INSERT's plan is kept for the session.
--
-- CALL it outside a transaction block (a procedure may commit only there).
-- Of two replies with the same reply_id the first in the arrays is stored;
-- one stored before is left alone (ON CONFLICT DO NOTHING). A refusal (a
-- constraint, the delivery check of 0013) fails the call and stores nothing.
-- applied-if: SELECT to_regprocedure('public.herald_store_replies(uuid[],bigint[],bigint[],bigint[],bigint[],text[],boolean[],text[],double precision[],text,uuid[])') IS NOT NULL

CREATE PROCEDURE herald_store_replies(
    p_reply_ids uuid[], p_delivery_ids bigint[], p_campaign_ids bigint[], p_device_ids bigint[], p_user_ids bigint[],
    p_actions text[], p_has_text boolean[], p_texts text[], p_occurred double precision[], p_source text,
    INOUT stored uuid[] DEFAULT NULL)
LANGUAGE plpgsql AS $$
BEGIN
    WITH ins AS (
        INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, text, occurred_at, source)
        SELECT r.reply_id, r.delivery_id, r.campaign_id, r.device_id, r.user_id, r.action,
               CASE WHEN r.has_text THEN r.text END, to_timestamp(r.occurred), p_source
        FROM unnest(p_reply_ids, p_delivery_ids, p_campaign_ids, p_device_ids, p_user_ids, p_actions, p_has_text,
                    p_texts, p_occurred)
             WITH ORDINALITY AS r(reply_id, delivery_id, campaign_id, device_id, user_id, action, has_text, text, occurred, n)
        ORDER BY r.n
        ON CONFLICT (reply_id) DO NOTHING
        RETURNING reply_id)
    SELECT coalesce(array_agg(ins.reply_id), '{}') INTO stored FROM ins;
    COMMIT;
END $$;
COMMENT ON PROCEDURE herald_store_replies IS
    'stores a batch of checked replies and commits before answering with the reply ids stored now (the reply intake)';

REVOKE ALL ON PROCEDURE herald_store_replies FROM PUBLIC;
GRANT EXECUTE ON PROCEDURE herald_store_replies TO herald_intake;
