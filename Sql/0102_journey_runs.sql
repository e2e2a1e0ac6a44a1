-- What a run reads and writes to move journey members (docs/DESIGN.md, contract 11, "How a
-- run moves members"): whether each edge holds for a member, evaluated here, the rules' one
-- authority; entries by an event, in the transaction that stores it.
--
-- applied-if: SELECT to_regprocedure('public.herald_journey_edge_holds(journey_edges,bigint,timestamp with time zone,timestamp with time zone,bigint)') IS NOT NULL

-- A member's replies to a journey's message, found by user and campaign.
CREATE INDEX replies_user_campaign ON replies (user_id, campaign_id);
COMMENT ON INDEX replies_user_campaign IS 'A journey member''s replies to the message of the step it listens to (herald_journey_edge_holds).';

-- The replies that are not answers: an open, a dismissal.
CREATE FUNCTION herald_reply_is_answer(p_action text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN p_action NOT IN ('com.apple.UNNotificationDefaultActionIdentifier', 'com.apple.UNNotificationDismissActionIdentifier');
COMMENT ON FUNCTION herald_reply_is_answer(p_action text) IS 'Whether a reply''s action is an answer (a button, typed text), not an open or a dismissal: what a journey''s reply edge waits for.';

CREATE FUNCTION herald_journey_edge_holds(p_edge journey_edges, p_user bigint, p_entered timestamptz,
                                          p_reached timestamptz, p_message bigint)
    RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
    SELECT CASE p_edge.kind
        WHEN 'reply' THEN EXISTS (
            SELECT 1 FROM replies r
            WHERE r.user_id = p_user AND r.campaign_id = p_message AND r.occurred_at >= p_entered
              AND herald_reply_is_answer(r.action))
        WHEN 'action' THEN EXISTS (
            SELECT 1 FROM replies r
            WHERE r.user_id = p_user AND r.campaign_id = p_message AND r.occurred_at >= p_entered
              AND r.action = p_edge.rule->>'action')
        WHEN 'text' THEN EXISTS (
            SELECT 1 FROM replies r JOIN devices dv ON dv.id = r.device_id JOIN users u ON u.id = r.user_id
            WHERE r.user_id = p_user AND r.campaign_id = p_message AND r.occurred_at >= p_entered
              AND herald_reply_is_answer(r.action)
              AND herald_text_rule_holds(p_edge.rule, r.text, coalesce(dv.locale, u.locale)))
        WHEN 'opened' THEN EXISTS (
            SELECT 1 FROM replies r
            WHERE r.user_id = p_user AND r.campaign_id = p_message AND r.occurred_at >= p_entered
              AND r.action = 'com.apple.UNNotificationDefaultActionIdentifier')
        WHEN 'received' THEN EXISTS (
            SELECT 1 FROM devices dv
            JOIN deliveries d ON d.device_id = dv.id AND d.campaign_id = p_message AND d.kind = 'campaign'
            JOIN receipts rc ON rc.delivery_id = d.id
            WHERE dv.user_id = p_user AND rc.arrived_at >= p_entered)
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
COMMENT ON FUNCTION herald_journey_edge_holds(p_edge journey_edges, p_user bigint, p_entered timestamptz, p_reached timestamptz, p_message bigint) IS 'Whether an edge''s rule holds for a member (contract 11): its user''s replies (an answer, an action, typed text by herald_text_rule_holds, an open) and receipts of the message of the step it listens to (p_message) since it entered, a conversion since it reached the step, or its bucket of a split. The edges a run decides by itself (next, timeout, else) and segment edges (compiled by the run) are false here.';

CREATE FUNCTION herald_journey_goal_reached(p_user bigint, p_event text, p_entered timestamptz) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
    SELECT p_event IS NOT NULL AND EXISTS (
        SELECT 1 FROM conversions c WHERE c.user_id = p_user AND c.event = p_event AND c.occurred_at >= p_entered)
$$;
COMMENT ON FUNCTION herald_journey_goal_reached(p_user bigint, p_event text, p_entered timestamptz) IS 'Whether a member reached its journey''s goal: a conversion of the goal''s event by its user since it entered. As the owner, so that a run learns that, not the conversions.';

REVOKE ALL ON FUNCTION herald_journey_edge_holds(journey_edges, bigint, timestamptz, timestamptz, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION herald_journey_goal_reached(bigint, text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald_journey_edge_holds(journey_edges, bigint, timestamptz, timestamptz, bigint) TO herald_job;
GRANT EXECUTE ON FUNCTION herald_journey_goal_reached(bigint, text, timestamptz) TO herald_job;

-- Entries by an event: a conversion or a reply makes its user a member of the running
-- journeys it enters, in the transaction that stores it.
CREATE FUNCTION herald_journey_enter(p_journey bigint, p_users bigint[]) RETURNS bigint
    LANGUAGE sql
    SET search_path TO 'public', 'pg_temp'
    AS $$
    WITH j AS (
        SELECT * FROM journeys WHERE id = p_journey AND status = 'running'
    ), fresh AS (
        SELECT DISTINCT u.id AS user_id FROM unnest(p_users) AS u(id), j
        WHERE NOT EXISTS (SELECT 1 FROM journey_members m WHERE m.journey_id = j.id AND m.user_id = u.id AND m.state = 'active')
          AND CASE j.reentry
                  WHEN 'always' THEN true
                  WHEN 'never' THEN NOT EXISTS (SELECT 1 FROM journey_members m WHERE m.journey_id = j.id AND m.user_id = u.id)
                  ELSE NOT EXISTS (SELECT 1 FROM journey_members m WHERE m.journey_id = j.id AND m.user_id = u.id
                                   AND m.entered_at > now() - j.reentry_after)
              END
          AND (j.apps IS NULL OR EXISTS (SELECT 1 FROM devices dv WHERE dv.user_id = u.id AND dv.app = ANY (j.apps)))
    ), ins AS (
        INSERT INTO journey_members (journey_id, version, user_id, step, state, due_at)
        SELECT j.id, j.version, f.user_id, j.first_step,
               CASE WHEN herald_bucket10k('journey:' || j.id || ':' || f.user_id) < j.holdout_pct * 100 THEN 'held_out' ELSE 'active' END,
               CASE WHEN herald_bucket10k('journey:' || j.id || ':' || f.user_id) < j.holdout_pct * 100 THEN NULL ELSE now() END
        FROM fresh f, j
        ON CONFLICT DO NOTHING
        RETURNING 1
    )
    SELECT count(*) FROM ins
$$;
COMMENT ON FUNCTION herald_journey_enter(p_journey bigint, p_users bigint[]) IS 'Makes these users members of a running journey at its first step, due now, as its reentry allows (never: not a member before; after: not within reentry_after; always: not an active member), held out for the journey''s holdout_pct by a stable hash of the journey and the user. Answers how many entered. The one entry rule: the event triggers and a run''s entries by segment call it.';

CREATE FUNCTION herald_journey_event_entries() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_journey bigint;
    v_users bigint[];
BEGIN
    IF TG_TABLE_NAME = 'conversions' THEN
        FOR v_journey, v_users IN
            SELECT j.id, array_agg(DISTINCT n.user_id) FROM new_rows n JOIN journeys j ON j.entry = 'conversion' AND j.entry_event = n.event
            WHERE j.status = 'running' GROUP BY j.id
        LOOP
            PERFORM herald_journey_enter(v_journey, v_users);
        END LOOP;
    ELSE
        FOR v_journey, v_users IN
            SELECT j.id, array_agg(DISTINCT n.user_id) FROM new_rows n
            JOIN journeys j ON j.entry = 'reply' AND j.entry_campaign_id = n.campaign_id
                           AND (j.entry_action IS NULL OR j.entry_action = n.action)
            WHERE j.status = 'running' AND n.delivery_kind = 'campaign' GROUP BY j.id
        LOOP
            PERFORM herald_journey_enter(v_journey, v_users);
        END LOOP;
    END IF;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION herald_journey_event_entries() IS 'Enters the users of the conversions or replies just stored into the running journeys whose entry they are (herald_journey_enter), in the storing transaction. Fired by conversions_enter_journeys and replies_enter_journeys.';

CREATE TRIGGER conversions_enter_journeys AFTER INSERT ON conversions
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_journey_event_entries();
COMMENT ON TRIGGER conversions_enter_journeys ON conversions IS 'A conversion enters its user into the journeys that start with it (herald_journey_event_entries).';
CREATE TRIGGER replies_enter_journeys AFTER INSERT ON replies
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_journey_event_entries();
COMMENT ON TRIGGER replies_enter_journeys ON replies IS 'A reply enters its user into the journeys that start with a reply to its campaign (herald_journey_event_entries).';

REVOKE ALL ON FUNCTION herald_journey_event_entries() FROM PUBLIC;
REVOKE ALL ON FUNCTION herald_journey_enter(bigint, bigint[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald_journey_enter(bigint, bigint[]) TO herald_job;

-- What analysts see of a journey: its flow, edge by edge, and where its members are.
CREATE VIEW analyst.journey_flow AS
SELECT t.journey_id, j.name AS journey, m.version, t.from_step, t.position, t.kind, t.to_step,
       count(*) AS members, min(t.at) AS first_at, max(t.at) AS last_at
FROM journey_transitions t
JOIN journey_members m ON m.id = t.member_id
JOIN journeys j ON j.id = t.journey_id
GROUP BY t.journey_id, j.name, m.version, t.from_step, t.position, t.kind, t.to_step;
COMMENT ON VIEW analyst.journey_flow IS 'A journey as a flow (contract 11): for each edge of each version (from_step, position, kind, to_step; kind goal for the journey-wide goal, to_step NULL out of the journey) how many members took it, and when the first and the last did.';

CREATE VIEW analyst.journey_steps AS
SELECT m.journey_id, j.name AS journey, m.version, m.step,
       count(*) FILTER (WHERE m.state = 'active') AS active,
       count(*) FILTER (WHERE m.state = 'active' AND m.waiting) AS waiting_for_an_event,
       count(*) FILTER (WHERE m.state = 'done') AS done_here,
       count(*) FILTER (WHERE m.state = 'goal') AS goal_here,
       count(*) FILTER (WHERE m.state = 'exited') AS exited_here
FROM journey_members m JOIN journeys j ON j.id = m.journey_id
WHERE m.state <> 'held_out'
GROUP BY m.journey_id, j.name, m.version, m.step;
COMMENT ON VIEW analyst.journey_steps IS 'Where a journey''s members are (contract 11): by step, how many are at it (and of those, waiting for an event), and how many left from it done, at the goal or exited.';

CREATE VIEW analyst.journey_goal AS
SELECT j.id AS journey_id, j.name AS journey, j.goal_event,
       count(*) FILTER (WHERE m.state <> 'held_out') AS entered,
       count(*) FILTER (WHERE m.state = 'goal') AS reached_goal,
       count(*) FILTER (WHERE m.state = 'held_out') AS held_out,
       count(*) FILTER (WHERE m.state = 'held_out' AND EXISTS (
           SELECT 1 FROM conversions c WHERE c.user_id = m.user_id AND c.event = j.goal_event AND c.occurred_at >= m.entered_at)) AS held_out_converted
FROM journeys j JOIN journey_members m ON m.journey_id = j.id
GROUP BY j.id, j.name, j.goal_event;
COMMENT ON VIEW analyst.journey_goal IS 'Each journey''s goal (contract 11): its entrants, how many reached the goal, and, of the entrants held out at the entry (holdout_pct), how many converted with the goal''s event anyway: the baseline its rate is compared with.';

GRANT SELECT ON analyst.journey_flow, analyst.journey_steps, analyst.journey_goal TO herald_analyst;
