-- Flash sales as Live Activities: each step's audience and its pushes to the sale's
-- channels, and what apps register (push-to-start tokens, running activities).
-- Statements of this file are run by Sources/Store/LiveActivityStore.swift and
-- Sources/Store/LiveActivityStore+Channels.swift.

-- name: snapshot-step
-- Writes a step's delivery rows, once, when it falls due: one for every device whose
-- activity of the sale (live_activities) registered an update token and has not ended,
-- on a device still valid. An activity that registers later was started with the state
-- of its day, so it is not added afterwards. Answers how many rows it wrote.
WITH ins AS (
    INSERT INTO deliveries (campaign_id, device_id, user_id)
    SELECT :step, la.device_id, dv.user_id
    FROM live_activities la JOIN devices dv ON dv.id = la.device_id
    WHERE la.campaign_id = :sale AND la.update_token IS NOT NULL AND la.ended_at IS NULL
      AND dv.invalidated_at IS NULL
    ORDER BY la.device_id
    RETURNING 1
)
SELECT count(*)::bigint FROM ins

-- name: queue-step-channel-pushes
-- Queues the step's one push to each channel of the sale not deleted
-- (activity_channels): devices on a channel get the channel's push, not one of
-- their own. A channel already queued for the step keeps its row (channel_pushes).
INSERT INTO channel_pushes (campaign_id, app, environment, channel_id)
SELECT :step, app, environment, channel_id FROM activity_channels
WHERE campaign_id = :sale AND deleted_at IS NULL
ON CONFLICT DO NOTHING

-- name: register-push-to-start
-- Stores the device's push-to-start token for Herald's sales (push_to_start_tokens):
-- one per device and attributes type, a new token replacing the old. Answers whether
-- the row was made rather than updated.
INSERT INTO push_to_start_tokens (device_id, attributes_type, token)
VALUES (:device, 'HeraldSaleAttributes', :token)
ON CONFLICT (device_id, attributes_type) DO UPDATE SET token = EXCLUDED.token, updated_at = now()
RETURNING xmax = 0

-- name: register-activity
-- Stores a running activity of the sale on the device (live_activities): its update
-- token or its channel, who started it, and the step it shows. The step the device
-- confirmed never goes back (a late report of an earlier one leaves it, and its time,
-- as they were), and registering again revives an ended activity. Answers whether the
-- row was made rather than updated.
INSERT INTO live_activities (campaign_id, device_id, update_token, channel_id, started_by, confirmed_step, confirmed_at)
VALUES (:campaign, :device, :update_token, :channel, :started_by, :confirmed,
        CASE WHEN :confirmed::int IS NOT NULL THEN now() END)
ON CONFLICT (campaign_id, device_id) DO UPDATE SET
    update_token = EXCLUDED.update_token, channel_id = EXCLUDED.channel_id,
    confirmed_step = greatest(live_activities.confirmed_step, EXCLUDED.confirmed_step),
    confirmed_at = CASE WHEN EXCLUDED.confirmed_step > coalesce(live_activities.confirmed_step, -1)
                        THEN now() ELSE live_activities.confirmed_at END,
    ended_at = NULL
RETURNING xmax = 0

-- name: channels-needed
-- The apps and environments of the valid devices with a push-to-start token
-- (push_to_start_tokens) in the given apps (NULL: every app): each needs a channel
-- of the sale for its activities to be started on.
SELECT DISTINCT dv.app, dv.environment
FROM push_to_start_tokens p JOIN devices dv ON dv.id = p.device_id
WHERE dv.invalidated_at IS NULL AND (:apps::text[] IS NULL OR dv.app = ANY(:apps::text[]))

-- name: push-to-start-devices
-- How many valid devices of the given apps (NULL: every app) hold a push-to-start
-- token (push_to_start_tokens): the devices a sale's start can reach.
SELECT count(*) FROM push_to_start_tokens p JOIN devices dv ON dv.id = p.device_id
WHERE dv.invalidated_at IS NULL AND (:apps::text[] IS NULL OR dv.app = ANY(:apps::text[]))

-- name: record-channel
-- Records a channel made for the sale (activity_channels), one per app and
-- environment. No row back: another run recorded one first, and the caller deletes
-- its own and uses the one recorded.
INSERT INTO activity_channels (campaign_id, app, environment, channel_id)
VALUES (:sale, :app, :environment, :channel)
ON CONFLICT (campaign_id, app, environment) DO NOTHING RETURNING 1

-- name: expire-superseded-channel-pushes
-- Expires the step's channel pushes (channel_pushes) left unsent when the step
-- expired, which the next step supersedes: queued ones, and those in flight under a
-- run that no longer holds its lease (runs). Nothing older goes after something newer.
UPDATE channel_pushes cp SET status = 'expired', last_error = 'superseded by the next step before it was sent',
       updated_at = now()
FROM campaigns c WHERE c.id = cp.campaign_id AND cp.campaign_id = :step
  AND cp.status IN ('queued', 'in_flight') AND c.expires_at <= now()
  AND (cp.status = 'queued' OR NOT EXISTS (
      SELECT 1 FROM runs r WHERE r.id = cp.claimed_by AND r.status = 'running' AND r.lease_expires_at >= now()))

-- name: claim-channel-pushes
-- Claims the step's channel pushes (channel_pushes) that are due for this run, as
-- deliveries are claimed under a run's lease: queued ones whose retry time has come,
-- and those in flight under another run whose lease lapsed (a killed run's).
UPDATE channel_pushes cp SET status = 'in_flight', claimed_by = :run, attempts = cp.attempts + 1, updated_at = now()
WHERE cp.campaign_id = :step
  AND ((cp.status = 'queued' AND cp.next_attempt_at <= now())
       OR (cp.status = 'in_flight' AND cp.claimed_by IS DISTINCT FROM :run AND NOT EXISTS (
           SELECT 1 FROM runs r WHERE r.id = cp.claimed_by AND r.status = 'running' AND r.lease_expires_at >= now())))
RETURNING cp.app, cp.environment, cp.channel_id, cp.attempts

-- name: channel-push-sent
-- Records that APNs accepted a step's push to a channel (channel_pushes), with the
-- request id it answered; only the run that holds the claim records it.
UPDATE channel_pushes SET status = 'sent', sent_at = now(), apns_request_id = :request_id, last_error = NULL,
       updated_at = now()
WHERE campaign_id = :step AND app = :app AND environment = :environment AND claimed_by = :run

-- name: channel-push-retry
-- Queues a step's push to a channel (channel_pushes) again after a transient answer,
-- due once the given seconds have passed, with the error that held it back; only
-- while the run that holds the claim still has it in flight.
UPDATE channel_pushes SET status = 'queued', next_attempt_at = now() + make_interval(secs => :seconds),
       last_error = :error, updated_at = now()
WHERE campaign_id = :step AND app = :app AND environment = :environment AND claimed_by = :run
  AND status = 'in_flight'

-- name: channel-push-failed
-- Records that a step's push to a channel (channel_pushes) failed for good, and why;
-- only the run that holds the claim records it.
UPDATE channel_pushes SET status = 'failed', last_error = :reason, updated_at = now()
WHERE campaign_id = :step AND app = :app AND environment = :environment AND claimed_by = :run

-- name: next-channel-push
-- When the step's next channel push (channel_pushes) is due: none when none is left
-- to send or a later step superseded this one, and no sooner than the poll interval
-- when the step waits for an earlier one to finish (herald_step_state).
SELECT CASE s.state WHEN 'superseded' THEN NULL
                    WHEN 'waits' THEN greatest(q.next, now() + make_interval(secs => :poll)) ELSE q.next END
FROM (SELECT min(next_attempt_at) AS next FROM channel_pushes
      WHERE campaign_id = :step AND status IN ('queued', 'in_flight')) q,
     LATERAL (SELECT herald_step_state(:step) AS state) s

-- name: channels-to-delete
-- The channels not yet deleted (activity_channels) of sales that were cancelled or
-- failed, or whose last step's dismissal date (the steps' expires_at, else the sale's)
-- has passed: no activity needs them any more.
SELECT ac.campaign_id, ac.app, ac.environment, ac.channel_id
FROM activity_channels ac JOIN campaigns s ON s.id = ac.campaign_id
WHERE ac.deleted_at IS NULL
  AND (s.status IN ('cancelled', 'failed')
       OR coalesce((SELECT max(st.expires_at) FROM campaigns st WHERE st.sale_id = s.id), s.expires_at) <= now())
ORDER BY 1, 2, 3
