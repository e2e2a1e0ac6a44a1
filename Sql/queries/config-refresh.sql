-- Config refresh pushes: a silent push to each device that lacks the current definition of
-- a category a campaign will use, planned per campaign with one statement, claimed like
-- any ledger row (FOR UPDATE SKIP LOCKED) and written back with the ledger's outcomes.
-- Their rows are the ledger's (deliveries, kind config_refresh, campaign_id NULL).
-- Statements of this file are run by Sources/Store/ConfigRefreshStore.swift.

-- name: upcoming
-- Scheduled campaigns with a category whose send_at is ahead, at most :lead seconds away
-- (a campaign already due is sent at once: a refresh could not reach the app before it).
SELECT c.id, c.name, c.category_id, s.name, coalesce(s.rule, '{}'::jsonb)::text, c.apps
FROM campaigns c LEFT JOIN segments s ON s.id = c.segment_id
WHERE c.status = 'scheduled' AND c.category_id IS NOT NULL
  AND c.send_at > now() AND c.send_at <= now() + make_interval(secs => :lead)
  AND (c.expires_at IS NULL OR c.expires_at > now())
ORDER BY c.send_at, c.id

-- name: audience-locales
-- The apps and locales (the device's own, else its user's) of a campaign's audience: each
-- pair has a config document of its own.
-- Filled in by code: the fragment segment (the segment's rule, compiled for this
-- statement; it names devices dv and users u).
SELECT DISTINCT dv.app, coalesce(dv.locale, u.locale)
FROM devices dv JOIN users u ON u.id = dv.user_id
WHERE dv.invalidated_at IS NULL AND u.opted_out_at IS NULL
  AND (:apps::text[] IS NULL OR dv.app = ANY (:apps::text[])) AND ({{segment}})

-- name: plan
-- Queues one refresh push for each audience device that lacks the category's current
-- definition (its reported document holds another, or it reported none), at most once a
-- device and document. The arrays give each app and locale its current document's ETag
-- and the hash of the category in it; a device of another app or locale gets none.
-- Answers the rows queued now.
-- Filled in by code: the fragment segment, as in audience-locales.
WITH ins AS (
    INSERT INTO deliveries (kind, config_etag, prompted_by, device_id, user_id, status, refresh_open)
    SELECT 'config_refresh', m.etag, :campaign, dv.id, u.id, 'queued', true
    FROM devices dv
    JOIN users u ON u.id = dv.user_id
    JOIN unnest(:apps::text[], :locales::text[], :etags::text[], :hashes::text[]) AS m(app, locale, etag, hash)
         ON m.app = dv.app AND m.locale = coalesce(dv.locale, u.locale)
    WHERE dv.invalidated_at IS NULL AND u.opted_out_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM config_documents cd
                      WHERE cd.etag = dv.config_etag AND cd.categories ->> :category::text = m.hash)
      AND ({{segment}})
    ON CONFLICT (campaign_id, device_id, config_etag) WHERE kind = 'config_refresh' DO NOTHING
    RETURNING 1
)
SELECT count(*)::bigint FROM ins

-- name: claim
-- Claims up to :limit queued refresh pushes for :run, under its lease as campaign rows
-- are (runs.lease_expires_at, renewed here too); a lapsed lease's rows may be claimed
-- again. A row whose device was invalidated meanwhile is skipped. Answers the claimed rows
-- with when their campaign's send ends (their APNs expiration).
-- Filled in by code: the fragments claimable and not_of_apps, as in ledger.sql's claim-window.
WITH live AS (
    UPDATE runs SET lease_expires_at = greatest(lease_expires_at, now() + make_interval(secs => :seconds)),
        claimed_refreshes = true
    WHERE id = :run AND status = 'running'
    RETURNING id
), picked AS (
    SELECT d.id FROM deliveries d
    WHERE d.campaign_id IS NULL AND d.refresh_open
      AND {{claimable}}
      AND {{not_of_apps}}
      AND EXISTS (SELECT 1 FROM live)
    ORDER BY d.id LIMIT :limit
    FOR UPDATE SKIP LOCKED
), upd AS (
    UPDATE deliveries d SET
        status = CASE WHEN dv.invalidated_at IS NOT NULL THEN 'skipped' ELSE 'in_flight' END,
        refresh_open = CASE WHEN dv.invalidated_at IS NULL THEN true END,
        last_error = CASE WHEN dv.invalidated_at IS NOT NULL
                          THEN 'device invalidated: ' || coalesce(dv.invalid_reason, 'unknown')
                          ELSE d.last_error END,
        claimed_by = :run,
        lease_expires_at = now() + make_interval(secs => :seconds),
        apns_id = coalesce(d.apns_id, herald_apns_id(d.id, (SELECT p.prefix FROM apns_id_prefix p))),
        updated_at = now()
    FROM picked, devices dv
    WHERE d.campaign_id IS NULL AND d.id = picked.id AND dv.id = d.device_id
    RETURNING d.id, d.device_id, dv.token, dv.environment, d.config_etag, d.apns_id, d.status, d.prompted_by, d.attempts, dv.app
)
SELECT upd.id, upd.device_id, upd.token, upd.environment, upd.config_etag, upd.apns_id, upd.attempts, upd.app,
       extract(epoch FROM coalesce(c.expires_at, c.send_at + interval '1 day'))::bigint
FROM upd LEFT JOIN campaigns c ON c.id = upd.prompted_by
WHERE upd.status = 'in_flight' ORDER BY upd.id

-- name: next-due
-- How long until the next queued refresh push may be sent (a retry's backoff), when one
-- is queued at all.
-- Filled in by code: the fragment not_of_apps, as in ledger.sql's claim-window.
SELECT greatest(extract(epoch FROM min(not_before) - now()), 0)::float8
FROM deliveries d WHERE d.campaign_id IS NULL AND d.refresh_open AND d.status = 'queued'
  AND {{not_of_apps}}
HAVING count(*) > 0
