-- The delivery ledger (deliveries): a campaign's rows claimed by runs, row by row, and the
-- outcomes written back. Work is claimed through PostgreSQL (FOR UPDATE SKIP LOCKED), never
-- through process memory, so any number of runs may overlap without sending a row twice.
-- Statements of this file are run by Sources/Store/DeliveryLedger.swift and its extensions.

-- name: peek-queued
-- The dry run's read: the campaign's queued rows after :after_id with what a send needs,
-- changing nothing.
SELECT d.id, d.device_id, dv.token, dv.environment, coalesce(dv.locale, u.locale), dv.public_key, dv.key_id,
       coalesce(d.apns_id, herald_apns_id(d.id, (SELECT p.prefix FROM apns_id_prefix p))), d.variant, dv.app
FROM delivery_status d JOIN devices dv ON dv.id = d.device_id JOIN users u ON u.id = d.user_id
WHERE d.campaign_id = :campaign AND d.status = 'queued' AND d.id > :after_id
ORDER BY d.id LIMIT :limit

-- name: claim-window
-- Claims for :run the claimable rows among the next :limit rows of the campaign after
-- :after (in ledger order whatever their status: a window the planner reads in index
-- order). They become in_flight, held by the run while its lease holds
-- (runs.lease_expires_at, renewed here too); a row whose device or user changed since the
-- snapshot is skipped with why. Nothing is claimed unless the campaign may be sent now
-- (scheduled or running, approved: herald_approved, its sale's steps in order:
-- herald_step_state). Answers the window's end, its size, whether the run and the
-- campaign are live, and the claimed rows.
-- Filled in by code: the fragments claimable_window and claimable (when a row may be
-- claimed, on the window's alias w and the ledger's d), not_of_apps (rows of apps whose
-- credential APNs refused this run are left), ended and token_join, token_column (the token
-- a row goes to besides its device's: a sale's activity, a widget, and when it is missing),
-- personal_joins, personal_returning and personal_selected (the template variables the
-- claim reads for each row).
WITH live AS (
    UPDATE runs SET lease_expires_at = greatest(lease_expires_at, now() + make_interval(secs => :seconds)),
        claimed_campaigns = CASE WHEN :campaign = ANY (claimed_campaigns) THEN claimed_campaigns
                                 ELSE claimed_campaigns || :campaign::bigint END
    WHERE id = :run AND status = 'running'
      AND EXISTS (SELECT 1 FROM campaigns c WHERE c.id = :campaign AND c.status IN ('scheduled', 'running')
                  AND herald_approved(c.id) AND herald_step_state(c.id) = 'clear')
    RETURNING id
), win AS MATERIALIZED (
    SELECT d.ctid AS tid, d.id, d.status, d.not_before, d.claimed_by FROM deliveries d
    WHERE d.campaign_id = :campaign AND d.kind = 'campaign' AND d.id > :after
    ORDER BY d.id LIMIT :limit
), picked AS (
    -- The window's claimable rows, found again by where the window read them (a TID
    -- scan, no index descent a row), as an array (a join with the window is planned as
    -- the whole table). A row another transaction changed meanwhile is not found there,
    -- or is checked again as it is now.
    SELECT d.ctid AS tid, d.id, d.device_id, d.user_id FROM deliveries d
    WHERE d.campaign_id = :campaign
      AND d.ctid = ANY (ARRAY(SELECT w.tid FROM win w WHERE {{claimable_window}}))
      -- Checked again on the row as it is once locked.
      AND {{claimable}}
      AND {{not_of_apps}}
      AND EXISTS (SELECT 1 FROM live)
    FOR UPDATE OF d SKIP LOCKED
), upd AS (
    UPDATE deliveries d SET
        status = CASE WHEN dv.id IS NULL OR u.id IS NULL OR dv.invalidated_at IS NOT NULL
                           OR u.opted_out_at IS NOT NULL OR dv.user_id <> d.user_id OR {{ended}}
                      THEN 'skipped' ELSE 'in_flight' END,
        last_error = CASE WHEN dv.id IS NULL OR u.id IS NULL THEN 'device deleted'
                          WHEN dv.invalidated_at IS NOT NULL
                          THEN 'device invalidated: ' || coalesce(dv.invalid_reason, 'unknown')
                          WHEN u.opted_out_at IS NOT NULL THEN 'user opted out'
                          -- The token was registered by another user since the snapshot.
                          WHEN dv.user_id <> d.user_id THEN 'device moved to another user'
                          WHEN {{ended}} THEN :missing_reason::text
                          ELSE d.last_error END,
        claimed_by = :run,
        lease_expires_at = now() + make_interval(secs => :seconds),
        apns_id = coalesce(d.apns_id, herald_apns_id(d.id, (SELECT p.prefix FROM apns_id_prefix p))),
        updated_at = now()
    FROM picked LEFT JOIN devices dv ON dv.id = picked.device_id LEFT JOIN users u ON u.id = picked.user_id
    {{personal_joins}}
    {{token_join}}
    -- The rows locked above, where they were locked (a row locked in a newer version than
    -- this statement sees is not found, and is left for a later claim).
    WHERE d.ctid = picked.tid AND d.campaign_id = :campaign
    RETURNING d.id, d.device_id, dv.token, dv.environment, coalesce(dv.locale, u.locale) AS locale, dv.public_key, dv.key_id,
              d.apns_id, d.status, d.variant, d.attempts, dv.app, {{token_column}} AS activity_token{{personal_returning}}
)
SELECT m.last, m.n, m.run_live, EXISTS (SELECT 1 FROM live) AS campaign_live, c.id, c.device_id, c.token, c.environment,
       c.locale, c.public_key, c.key_id, c.apns_id, c.variant, c.attempts, c.app, c.activity_token{{personal_selected}}
FROM (SELECT max(id) AS last, count(*)::bigint AS n,
             EXISTS (SELECT 1 FROM runs WHERE id = :run AND status = 'running') AS run_live FROM win) m
LEFT JOIN (SELECT * FROM upd WHERE status = 'in_flight') c ON true
ORDER BY c.id

-- name: first-claimable
-- The campaign's first claimable row after :after (queued and due, or held by a run that
-- is gone), one read of its rows: where a claim walk starts, and finds rows given back
-- behind it.
-- Filled in by code: the fragments claimable and not_of_apps, as in claim-window.
SELECT min(d.id) FROM deliveries d
WHERE d.campaign_id = :campaign AND d.kind = 'campaign' AND d.id > :after
  AND {{claimable}}
  AND {{not_of_apps}}

-- name: next-due
-- How long until the campaign's next queued row may be sent (a backoff, quiet hours), when
-- one is queued at all. A sale's step waiting for an earlier one is looked at again after
-- :poll seconds; one a later step superseded has nothing left to send (herald_step_state).
-- Filled in by code: the fragment not_of_apps, as in claim-window.
SELECT CASE s.state WHEN 'superseded' THEN NULL WHEN 'waits' THEN greatest(q.wait, :poll::float8) ELSE q.wait END
FROM (SELECT greatest(extract(epoch FROM min(not_before) - now()), 0)::float8 AS wait
      FROM deliveries d WHERE d.campaign_id = :campaign AND d.status = 'queued'
        AND {{not_of_apps}}
      HAVING count(*) > 0) q,
     LATERAL (SELECT herald_step_state(:campaign) AS state) s

-- name: record-outcomes
-- Writes a batch of a run's outcomes (one row of the arrays each), fenced: only rows :run
-- still holds in flight take theirs. A row given back (queued, retry) waits as long as the
-- run's DeliveryPolicy decided, or is cancelled with its campaign. Answers how many rows of
-- each campaign were written.
-- Filled in by code: the fragments partitions (the ledger partitions the rows are in, as
-- literals the planner prunes by) and cancelled (whether the row's campaign was cancelled).
WITH o AS (
    SELECT * FROM unnest(:campaigns::bigint[], :ids::bigint[], :statuses::text[], :errors::text[], :attempts::int4[], :delays::float8[])
        AS o(campaign, id, status, error, attempts, delay)
), w AS (
    UPDATE deliveries AS d SET
        status = CASE WHEN o.status NOT IN ('queued', 'retry') THEN o.status
                      WHEN {{cancelled}} THEN 'cancelled'
                      ELSE 'queued' END,
        last_error = CASE WHEN o.status IN ('queued', 'retry') AND {{cancelled}} THEN 'campaign cancelled'
                          WHEN o.status = 'queued' AND o.error = '' THEN d.last_error
                          ELSE nullif(o.error, '') END,
        attempts = d.attempts + o.attempts,
        -- The wait was decided by the run's DeliveryPolicy; SQL only stores it.
        not_before = CASE WHEN o.status IN ('queued', 'retry')
                          THEN greatest(d.not_before, now() + make_interval(secs => o.delay))
                          ELSE d.not_before END,
        sent_at = CASE WHEN o.status = 'sent' THEN now() ELSE d.sent_at END,
        claimed_by = CASE WHEN o.status IN ('queued', 'retry') THEN NULL ELSE d.claimed_by END,
        refresh_open = CASE WHEN o.status IN ('queued', 'retry') THEN d.refresh_open END,
        lease_expires_at = NULL,
        updated_at = now()
    FROM o
    -- IS NOT DISTINCT FROM keeps the planner on the ids: a run's id is always new to the
    -- statistics, and reading all its rows through deliveries_claimed grows with every write.
    WHERE {{partitions}}
      AND d.id = o.id AND d.claimed_by IS NOT DISTINCT FROM :run AND d.status = 'in_flight'
    RETURNING d.campaign_id
)
SELECT campaign_id, count(*)::bigint FROM w GROUP BY campaign_id

-- name: invalidate-devices
-- Marks the devices APNs said are gone (an unregistered token, a bad one) invalid since
-- when APNs said, unless the device registered again after that.
UPDATE devices AS dv SET invalidated_at = to_timestamp(o.since), invalid_reason = o.reason
FROM unnest(:devices::bigint[], :reasons::text[], :since::float8[]) AS o(id, reason, since)
WHERE dv.id = o.id AND dv.invalidated_at IS NULL
  AND (dv.registered_at IS NULL OR dv.registered_at <= to_timestamp(o.since))

-- name: span-rows
-- The batch rows of a span in id order with what a send needs, each row whose device was
-- invalidated or deleted, or whose user opted out or no longer has the device, since the
-- snapshot with why it is to be skipped (the settlement writes it skipped).
-- Filled in by code: the fragments personal_joins and personal_returning, as in claim-window.
SELECT d.id, d.device_id, dv.token, dv.environment, coalesce(dv.locale, u.locale), dv.public_key, dv.key_id,
       herald_apns_id(d.id, (SELECT p.prefix FROM apns_id_prefix p)), d.variant, dv.app,
       CASE WHEN dv.id IS NULL OR u.id IS NULL THEN 'device deleted'
            WHEN dv.invalidated_at IS NOT NULL THEN 'device invalidated: ' || coalesce(dv.invalid_reason, 'unknown')
            WHEN u.opted_out_at IS NOT NULL THEN 'user opted out'
            WHEN dv.user_id <> d.user_id THEN 'device moved to another user' END{{personal_returning}}
FROM deliveries d LEFT JOIN devices dv ON dv.id = d.device_id LEFT JOIN users u ON u.id = d.user_id
{{personal_joins}}
WHERE d.campaign_id = :campaign AND d.id > :after AND d.id <= :through AND d.status = 'batch'
ORDER BY d.id

-- name: personal-values
-- Each row's values of the variables its campaign's templates name, with its locale,
-- variant and user: of the rows named, or (:queued) of every queued row of the campaign
-- (a preview).
-- Filled in by code: the fragments columns (one a variable; every key a marketer wrote is
-- a parameter of its own), recipients and codes (the joins of campaign_recipients and
-- pool_codes, when a variable reads them).
SELECT d.id, u.time_zone{{columns}}, coalesce(dv.locale, u.locale), d.variant, u.external_id
FROM deliveries d
JOIN users u ON u.id = d.user_id
JOIN devices dv ON dv.id = d.device_id
{{recipients}}
{{codes}}
WHERE d.campaign_id = :campaign
  AND CASE WHEN :queued THEN d.status = 'queued' AND d.kind = 'campaign' ELSE d.id = ANY (:ids::int8[]) END

-- name: draw-codes
-- Draws a code from the pool for each user of the claimed rows named who has none yet
-- (pool_codes): the oldest free codes in order, one a user. The free codes are read in the
-- pool's order through its partial index, at most one a row: a limit the planner knows, so
-- it never sorts the whole pool. Answers how many users needed one and how many got one.
WITH need AS (
    SELECT DISTINCT d.user_id FROM deliveries d
    WHERE d.campaign_id = :campaign AND d.id = ANY (:ids::int8[]) AND d.kind = 'campaign'
      AND NOT EXISTS (SELECT 1 FROM pool_codes pc WHERE pc.campaign_id = :campaign AND pc.user_id = d.user_id)
), numbered AS (
    SELECT user_id, row_number() OVER (ORDER BY user_id) AS n FROM need
), free AS (
    SELECT pc.pool, pc.code FROM pool_codes pc
    WHERE pc.pool = :pool AND pc.campaign_id IS NULL
    ORDER BY pc.code LIMIT :limit
    FOR UPDATE SKIP LOCKED
), picked AS (
    SELECT pool, code, row_number() OVER (ORDER BY code) AS n FROM free
), drawn AS (
    UPDATE pool_codes pc SET campaign_id = :campaign, user_id = nb.user_id, drawn_at = now()
    FROM picked p JOIN numbered nb USING (n)
    WHERE pc.pool = p.pool AND pc.code = p.code AND pc.campaign_id IS NULL
    RETURNING pc.user_id
)
SELECT (SELECT count(*) FROM need)::int8, (SELECT count(*) FROM drawn)::int8

-- name: begin-test-send
-- A test send's rows (kind test): one for each valid device named by its token or its
-- user's external id, written failed with why until what APNs answered is written over it,
-- so a test send cut short never looks sent and never enters a run's queue. Their ids are
-- recorded in delivery_id_ranges, where the app server finds a reply's campaign.
WITH ins AS (
    INSERT INTO deliveries (kind, campaign_id, device_id, user_id, status, last_error, apns_id, not_before, variant)
    SELECT 'test', :campaign, dv.id, u.id, 'failed', 'test send: no answer from APNs recorded', gen_random_uuid(), now(), :variant
    FROM devices dv JOIN users u ON u.id = dv.user_id
    WHERE dv.invalidated_at IS NULL AND u.opted_out_at IS NULL
      AND (dv.token = :token OR u.external_id = :user)
    ORDER BY dv.id
    RETURNING id, device_id, apns_id
), ids AS (
    INSERT INTO delivery_id_ranges (campaign_id, ids)
    SELECT :campaign, int8range(min(id), max(id), '[]') FROM ins HAVING count(*) > 0
)
SELECT ins.id, ins.device_id, dv.token, dv.environment, coalesce(dv.locale, u.locale), dv.public_key, dv.key_id, ins.apns_id, dv.app
FROM ins JOIN devices dv ON dv.id = ins.device_id JOIN users u ON u.id = dv.user_id
ORDER BY ins.id
