-- Herald schema: one function owns the reply rule.
--
-- The rule a reply's action (and its text) must pass was written twice:
-- herald_reply_allowed (0031), which the store inlines, said whether it
-- passes, and herald_refusal_reasons (0019) restated it as a CASE to say
-- why it did not. A change to one could leave the other behind, and a reply
-- would then be refused for a reason that is not the one that refused it.
-- herald_reply_refusal now says, for a reply found in the ledger, why its
-- action is refused (NULL: it passes); herald_reply_allowed is "no reason"
-- and herald_refusal_reasons asks it too, so the store's decision and the
-- reason given cannot disagree. What is stored, refused and said is
-- unchanged (RefusalReasonTests; ReplyRuleTests holds the table).
-- applied-if: SELECT to_regprocedure('public.herald_reply_refusal(text,boolean,boolean,text[],text[])') IS NOT NULL

-- Why a reply's action is refused, given its category's actions and those
-- of them that take text (NULL: it passes). The default and dismiss actions
-- never take text; any other must be one of the category's, and take text
-- if it has some. `p_checked` is the caller's own check of the text (a NUL,
-- too long): false refuses it as text_refused, and the caller knows which.
CREATE FUNCTION herald_reply_refusal(p_action text, p_has_text boolean, p_checked boolean,
                                     p_allowed text[], p_with_text text[])
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN p_action IN ('com.apple.UNNotificationDefaultActionIdentifier',
                                  'com.apple.UNNotificationDismissActionIdentifier')
                THEN CASE WHEN p_has_text THEN 'text_not_allowed' WHEN NOT p_checked THEN 'text_refused' END
                WHEN NOT coalesce(p_action = ANY (p_allowed), false) THEN 'action_not_allowed'
                WHEN p_has_text AND NOT coalesce(p_action = ANY (p_with_text), false) THEN 'text_not_allowed'
                WHEN NOT p_checked THEN 'text_refused' END
$$;
COMMENT ON FUNCTION herald_reply_refusal IS
    'why a reply''s action (and its text) is refused, given its category''s actions and those that take text; NULL: it passes';

-- The store's check, inlined into each of its INSERTs: no reason to refuse.
CREATE OR REPLACE FUNCTION herald_reply_allowed(p_action text, p_has_text boolean, p_allowed text[], p_with_text text[])
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT herald_reply_refusal(p_action, p_has_text, true, p_allowed, p_with_text) IS NULL
$$;

-- Why each of the replies at `p_positions` (1-based, in the arrays) was
-- refused: not found, or herald_reply_refusal's reason with the catalogue
-- as it is now. One refused for its action while the catalogue changed
-- under the call (the action added meanwhile) is said to be
-- action_not_allowed: it was not allowed when the statement decided.
CREATE OR REPLACE FUNCTION herald_refusal_reasons(
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
                    ELSE coalesce(herald_reply_refusal(r.action, r.has_text, r.checked, k.allowed, k.with_text),
                                  'action_not_allowed') END AS reason,
               f.category_id
        FROM r
        LEFT JOIN found f ON f.id = r.delivery_id
        LEFT JOIN LATERAL (
            SELECT coalesce(array_agg(ca.action_id), '{}') AS allowed,
                   coalesce(array_agg(ca.action_id) FILTER (WHERE a.kind = 'text_input'), '{}') AS with_text
            FROM category_actions ca JOIN actions a ON a.id = ca.action_id
            WHERE ca.category_id = f.category_id) k ON true
    )
    SELECT coalesce(array_agg(reason ORDER BY o), '{}'), coalesce(array_agg(coalesce(category_id, '') ORDER BY o), '{}')
    FROM judged
$$;
