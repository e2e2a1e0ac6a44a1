-- Two corrections of journeys' rules (docs/DESIGN.md, contract 11):
-- * text rules in languages written without spaces: a word of Chinese, Japanese or Thai
--   is found inside the reply, since those scripts mark no word boundary ("慢" in
--   "配送有点慢。"); a word of any other script is still matched whole;
-- * a reply or a receipt counts for a member when Herald stored it after the member
--   entered (received_at), not by the device's own clock (occurred_at, arrived_at),
--   which an app sends to the second and a phone may have wrong: a reply made in the
--   second its user entered was not seen.
--
-- applied-if: SELECT herald_text_rule_holds('{"any_words": {"zh": ["慢"]}}', '配送有点慢。', 'zh')

CREATE OR REPLACE FUNCTION herald_text_rule_holds(p_rule jsonb, p_text text, p_locale text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE
        WHEN p_rule ? 'empty' THEN (coalesce(btrim(p_text), '') = '') = (p_rule->>'empty')::boolean
        WHEN p_text IS NULL THEN false
        WHEN p_rule ? 'any_words' THEN EXISTS (
            SELECT 1
            FROM jsonb_array_elements_text(coalesce(p_rule->'any_words'->p_locale,
                                                    p_rule->'any_words'->split_part(p_locale, '-', 1),
                                                    p_rule->'any_words'->'*', '[]')) w,
                 LATERAL (SELECT herald_text_fold(btrim(w)) AS word) f
            WHERE f.word <> ''
              AND herald_text_fold(p_text) ~ (
                  -- A boundary on each side whose letter is of a script written with spaces.
                  CASE WHEN f.word ~ '^[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]' THEN '' ELSE '\m' END
                  || regexp_replace(f.word, '([.^$*+?()\[\]{}|\\-])', '\\\1', 'g')
                  || CASE WHEN f.word ~ '[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]$' THEN '' ELSE '\M' END))
        WHEN p_rule ? 'pattern' THEN p_text ~* (p_rule->>'pattern')
        WHEN p_rule ? 'number' THEN
            btrim(p_text) ~ '^[+-]?[0-9]{1,15}([.,][0-9]{1,15})?$'
            AND replace(btrim(p_text), ',', '.')::numeric BETWEEN (p_rule->'number'->>0)::numeric AND (p_rule->'number'->>1)::numeric
        ELSE false
    END
$$;
COMMENT ON FUNCTION herald_text_rule_holds(p_rule jsonb, p_text text, p_locale text) IS 'Whether typed text matches a text rule (contract 11): any_words (a word or phrase of the reply''s locale, its language, else "*", case and Latin accents ignored; whole, except that a word of Chinese, Japanese or Thai, scripts written without spaces, is found inside the text), pattern (a regular expression, case ignored), number (a number in the closed range, with . or , as its decimal mark), empty (no text, or only spaces). The one authority of text rules; JourneyRuleTests holds its golden table.';

CREATE OR REPLACE FUNCTION herald_journey_edge_holds(p_edge journey_edges, p_user bigint, p_entered timestamptz,
                                          p_reached timestamptz, p_message bigint)
    RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
    SELECT CASE p_edge.kind
        WHEN 'reply' THEN EXISTS (
            SELECT 1 FROM replies r
            WHERE r.user_id = p_user AND r.campaign_id = p_message AND r.received_at >= p_entered
              AND herald_reply_is_answer(r.action))
        WHEN 'action' THEN EXISTS (
            SELECT 1 FROM replies r
            WHERE r.user_id = p_user AND r.campaign_id = p_message AND r.received_at >= p_entered
              AND r.action = p_edge.rule->>'action')
        WHEN 'text' THEN EXISTS (
            SELECT 1 FROM replies r JOIN devices dv ON dv.id = r.device_id JOIN users u ON u.id = r.user_id
            WHERE r.user_id = p_user AND r.campaign_id = p_message AND r.received_at >= p_entered
              AND herald_reply_is_answer(r.action)
              AND herald_text_rule_holds(p_edge.rule, r.text, coalesce(dv.locale, u.locale)))
        WHEN 'opened' THEN EXISTS (
            SELECT 1 FROM replies r
            WHERE r.user_id = p_user AND r.campaign_id = p_message AND r.received_at >= p_entered
              AND r.action = 'com.apple.UNNotificationDefaultActionIdentifier')
        WHEN 'received' THEN EXISTS (
            SELECT 1 FROM devices dv
            JOIN deliveries d ON d.device_id = dv.id AND d.campaign_id = p_message AND d.kind = 'campaign'
            JOIN receipts rc ON rc.delivery_id = d.id
            WHERE dv.user_id = p_user AND rc.received_at >= p_entered)
        WHEN 'converted' THEN EXISTS (
            SELECT 1 FROM conversions c
            WHERE c.user_id = p_user AND c.event = p_edge.rule->>'event' AND c.occurred_at >= p_reached)
        WHEN 'share' THEN (
            -- The user's bucket (0-99) for this step, against the shares laid end to end in
            -- position order.
            SELECT herald_bucket10k(p_edge.journey_id || ':' || p_edge.from_step || ':' || p_user) / 100
                   BETWEEN coalesce(sum((x.rule->>'share')::int) FILTER (WHERE x.position < p_edge.position), 0)
                       AND coalesce(sum((x.rule->>'share')::int) FILTER (WHERE x.position <= p_edge.position), 0) - 1
            FROM journey_edges x
            WHERE x.journey_id = p_edge.journey_id AND x.version = p_edge.version AND x.from_step = p_edge.from_step
              AND x.kind = 'share')
        ELSE false
    END
$$;
COMMENT ON FUNCTION herald_journey_edge_holds(p_edge journey_edges, p_user bigint, p_entered timestamptz, p_reached timestamptz, p_message bigint) IS 'Whether an edge''s rule holds for a member (contract 11): its user''s replies (an answer, an action, typed text by herald_text_rule_holds, an open) and receipts of the message of the step it listens to (p_message) stored since it entered (received_at: Herald''s clock, not the device''s), a conversion that occurred since it reached the step, or its bucket of a split. The edges a run decides by itself (next, timeout, else) and segment edges (compiled by the run) are false here.';
