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
