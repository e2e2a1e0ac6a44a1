-- What `herald demo` does in the place of an app's backend and a marketer's clock.
-- Statements of this file are run by Sources/Demo.

-- name: purchase-candidates
-- The users of campaigns whose conversion event is a purchase, with whether they were
-- treated (sent to, not held out) and whether they answered "love it": the demo's
-- shoppers draw their purchase from these (Sources/Demo/Purchases.swift).
SELECT u.external_id, bool_or(d.status <> 'held_out'),
       EXISTS (SELECT 1 FROM replies r WHERE r.user_id = u.id AND r.campaign_id = c.id AND r.action = 'love_it')
FROM campaigns c JOIN deliveries d ON d.campaign_id = c.id JOIN users u ON u.id = d.user_id
WHERE c.conversion_event = 'purchase' AND d.kind = 'campaign'
GROUP BY u.id, u.external_id, c.id ORDER BY u.external_id

-- name: bring-sale-due
-- Brings the demo's Live Activity sale forward so that its start is due now: its updates'
-- times and its end move with it (Sources/Demo/DemoLoop.swift).
UPDATE campaigns SET
    live_activity = jsonb_set(live_activity, '{updates}', coalesce((
        SELECT jsonb_agg(u || jsonb_build_object('at', to_char(((u->>'at')::timestamptz - (send_at - now())) AT TIME ZONE 'UTC',
                                                               'YYYY-MM-DD"T"HH24:MI:SS"Z"')) ORDER BY i)
        FROM jsonb_array_elements(live_activity->'updates') WITH ORDINALITY x(u, i)), '[]'::jsonb)),
    send_at = now(), expires_at = expires_at - (send_at - now())
WHERE live_activity IS NOT NULL AND status = 'scheduled' AND send_at > now()

-- name: journey-listeners
-- The users of the demo's journey still listening for an answer to its question: the
-- shop's backend draws who of them buys (Sources/Demo/OrderJourney.swift).
SELECT u.external_id FROM journey_members m
JOIN journeys j ON j.id = m.journey_id JOIN users u ON u.id = m.user_id
WHERE j.name = 'After the order' AND m.state = 'active' AND m.waiting
ORDER BY u.external_id

-- name: journey-two-days-later
-- The demo's clock for its journey: two days pass for the members listening, as if
-- they had reached their step two days ago; their timeout is due now.
UPDATE journey_members m SET reached_at = m.reached_at - interval '2 days', due_at = now()
FROM journeys j
WHERE j.id = m.journey_id AND j.name = 'After the order' AND m.state = 'active' AND m.waiting

-- name: journey-paths
-- How the demo journey's members left its listening step, as analysts see it: by each
-- edge (its kind and where it led) and by the goal.
SELECT f.kind, coalesce(f.to_step, 'out'), f.members
FROM analyst.journey_flow f
WHERE f.journey = 'After the order' AND f.from_step = 'listen'
ORDER BY f.position NULLS LAST, f.kind

-- name: journey-sent
-- What the demo journey's messages did: each one's notifications sent, and the
-- apology's codes drawn.
SELECT c.name, coalesce(f.sent, 0),
       coalesce((SELECT p.drawn FROM analyst.code_pools p WHERE p.pool = c.code_pool), 0)
FROM campaigns c JOIN journeys j ON j.id = c.journey_id
LEFT JOIN analyst.campaign_funnel f ON f.campaign_id = c.id
WHERE j.name = 'After the order'
ORDER BY c.id
