-- Herald schema: the reply statement says why it refused each reply.
--
-- herald_store_checked_replies (0018) decides which replies are stored,
-- with the catalogue as committed, and returned only the positions it
-- refused; the intake then read the deliveries and a copy of the catalogue
-- again to say why. Now the database that decided says it: one code per
-- refused position, in the order of the checks of contract 4 (with the
-- campaign's category, '' where there is none) —
--   unknown_delivery    no such delivery (in no range, or pruned);
--   action_not_allowed  not an action of the campaign's category (the
--                       category is returned beside it, for the message);
--   text_not_allowed    text, where the action takes none;
--   text_refused        the caller's own check of the text failed (p_checked
--                       false: a NUL, too long); the caller knows which.
-- A reply refused for its action while the catalogue changed under the call
-- (the action added meanwhile) is said to be action_not_allowed: it was not
-- allowed when the statement decided.
--
-- herald_commit_replies keeps its 0018 form (a binary of the previous
-- version still calls it during a rolling upgrade); the form with two more
-- INOUT arrays (reasons, categories; no defaults, so a call names which one
-- it means) also explains.
-- applied-if: SELECT to_regprocedure('public.herald_commit_replies(uuid[],bigint[],text[],boolean[],text[],double precision[],boolean[],text,integer,integer[],integer[],text[],text[])') IS NOT NULL

-- Why each of the replies at `p_positions` (1-based, in the arrays) was refused.
CREATE FUNCTION herald_refusal_reasons(
    p_positions integer[], p_delivery_ids bigint[], p_actions text[], p_has_text boolean[], p_checked boolean[],
    OUT reasons text[], OUT categories text[])
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    WITH r AS (
        SELECT u.o, u.at, p_delivery_ids[u.at] AS delivery_id, p_actions[u.at] AS action,
               p_has_text[u.at] AS has_text, p_checked[u.at] AS checked
        FROM unnest(p_positions) WITH ORDINALITY AS u(at, o)
    ), found AS (
        SELECT t.id, t.category_id FROM herald_reply_targets(ARRAY(SELECT DISTINCT r.delivery_id FROM r)) AS t
    ), judged AS (
        SELECT r.o,
               CASE WHEN f.id IS NULL THEN 'unknown_delivery'
                    WHEN r.action IN ('com.apple.UNNotificationDefaultActionIdentifier',
                                      'com.apple.UNNotificationDismissActionIdentifier')
                         THEN CASE WHEN r.has_text THEN 'text_not_allowed' ELSE 'text_refused' END
                    WHEN a.kind IS NULL THEN 'action_not_allowed'
                    WHEN r.has_text AND a.kind <> 'text_input' THEN 'text_not_allowed'
                    WHEN NOT r.checked THEN 'text_refused'
                    ELSE 'action_not_allowed' END AS reason,
               f.category_id
        FROM r
        LEFT JOIN found f ON f.id = r.delivery_id
        LEFT JOIN LATERAL (SELECT ac.kind FROM category_actions ca JOIN actions ac ON ac.id = ca.action_id
                           WHERE ca.category_id = f.category_id AND ca.action_id = r.action) a ON true
    )
    SELECT coalesce(array_agg(reason ORDER BY o), '{}'), coalesce(array_agg(coalesce(category_id, '') ORDER BY o), '{}')
    FROM judged
$$;
COMMENT ON FUNCTION herald_refusal_reasons IS
    'why each refused reply of a batch was refused (unknown_delivery, action_not_allowed, text_not_allowed, text_refused), with its category';

-- The intake's and ingest's call: store, explain what was refused, COMMIT,
-- then answer. CALL it outside a transaction block.
CREATE PROCEDURE herald_commit_replies(
    p_reply_ids uuid[], p_delivery_ids bigint[], p_actions text[], p_has_text boolean[], p_texts text[],
    p_occurred double precision[], p_checked boolean[], p_source text,
    INOUT stored integer, INOUT refused integer[], INOUT duplicates integer[],
    INOUT reasons text[], INOUT categories text[])
LANGUAGE plpgsql AS $$
BEGIN
    SELECT s.stored, s.refused, s.duplicates INTO stored, refused, duplicates
    FROM herald_store_checked_replies(p_reply_ids, p_delivery_ids, p_actions, p_has_text, p_texts,
                                      p_occurred, p_checked, p_source) AS s;
    reasons := '{}';
    categories := '{}';
    IF cardinality(refused) > 0 THEN
        SELECT e.reasons, e.categories INTO reasons, categories
        FROM herald_refusal_reasons(refused, p_delivery_ids, p_actions, p_has_text, p_checked) AS e;
    END IF;
    COMMIT;
END $$;
COMMENT ON PROCEDURE herald_commit_replies(uuid[], bigint[], text[], boolean[], text[], double precision[], boolean[], text,
                                           integer, integer[], integer[], text[], text[]) IS
    'stores a batch of replies, says why each refused one was refused, and commits before answering (the reply intake, herald ingest)';

REVOKE ALL ON FUNCTION herald_refusal_reasons FROM PUBLIC;
REVOKE ALL ON PROCEDURE herald_commit_replies(uuid[], bigint[], text[], boolean[], text[], double precision[], boolean[], text,
                                              integer, integer[], integer[], text[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald_refusal_reasons TO herald_intake;
GRANT EXECUTE ON PROCEDURE herald_commit_replies(uuid[], bigint[], text[], boolean[], text[], double precision[], boolean[], text,
                                                 integer, integer[], integer[], text[], text[]) TO herald_intake;
