-- Widget pushes (widget_tokens, herald_widget_push): each device's widget token, and a
-- campaign's widget push, a campaign row of its own whose audience is the campaign's
-- devices with a widget token.
-- Statements of this file are run by Sources/Store/WidgetStore.swift.

-- name: lock-push
-- Locks a widget push's campaign row for its snapshot, so that its audience is written
-- once, and answers whether that is still to do (no snapshot_at, and not ended).
SELECT snapshot_at IS NULL AND status IN ('scheduled', 'running') FROM campaigns WHERE id = :push FOR UPDATE

-- name: campaign-written
-- Whether the push's own campaign has written its whole audience (snapshot_at set, no
-- slice left: snapshot_through cleared); until then the push waits for it.
SELECT snapshot_at IS NOT NULL AND snapshot_through IS NULL FROM campaigns WHERE id = :campaign

-- name: snapshot
-- Writes a widget push's audience: the devices of its campaign's ledger rows that the
-- campaign reaches (not held out, skipped, cancelled or invalid) and that registered a
-- widget token (widget_tokens), in device order; answers how many rows it wrote. The
-- statuses read here are written on the row itself, never left to a span.
WITH ins AS (
    INSERT INTO deliveries (campaign_id, device_id, user_id)
    SELECT :push, d.device_id, d.user_id
    FROM deliveries d JOIN widget_tokens wt ON wt.device_id = d.device_id
    WHERE d.campaign_id = :campaign AND d.kind = 'campaign'
      AND d.status NOT IN ('skipped', 'held_out', 'cancelled', 'invalid')
    ORDER BY d.device_id
    RETURNING 1
)
SELECT count(*)::bigint FROM ins

-- name: start-push
-- Marks a widget push running, its audience written (snapshot_at): lock-push then answers
-- that there is nothing left to write.
UPDATE campaigns SET status = 'running', started_at = coalesce(started_at, now()), snapshot_at = now()
WHERE id = :push

-- name: register
-- Stores a device's widget token (widget_tokens: one per device; a new one replaces it),
-- when the device token is registered to that user and app; answers whether the row is
-- new (xmax = 0 on an inserted row), none when the device is unknown.
WITH dev AS (
    SELECT dv.id FROM devices dv JOIN users u ON u.id = dv.user_id
    WHERE dv.token = :token AND u.external_id = :user AND dv.app = :app
)
INSERT INTO widget_tokens (device_id, token) SELECT id, :widget_token FROM dev
ON CONFLICT (device_id) DO UPDATE SET token = EXCLUDED.token, updated_at = now()
RETURNING xmax = 0
