-- Runs and their leases: a run's row holds the one lease of every delivery it claimed
-- (runs.lease_expires_at), renewed while it lives; a run that stops renewing, or whose
-- database session is gone, gives its claims back.
-- Statements of this file are run by Sources/Store/RunStore.swift.

-- name: begin-run
-- Records a run starting (runs), with its first heartbeat and the lease of whatever it
-- will claim, and answers its id.
INSERT INTO runs (host, pid, dry_run, heartbeat_at, lease_expires_at)
VALUES (:host, :pid, :dry_run, now(), now() + make_interval(secs => :seconds)) RETURNING id

-- name: finish-run
-- Writes a run's figures and how it ended on its row (runs), unless another run declared
-- it gone, and gives back what it still holds in flight: queued again, or cancelled when
-- the campaign was (herald_campaign_cancelled); its spans open at their watermarks
-- (herald_release_spans). The run's in-flight rows are looked for only in the ledger
-- partitions its claims recorded (runs.claimed_campaigns, runs.claimed_refreshes), which
-- PostgreSQL prunes the others by.
-- Filled in by code: the fragment given_back (the columns a row given back takes).
WITH back AS (
    UPDATE deliveries d SET {{given_back}}
    WHERE (d.campaign_id = ANY(:claimed_campaigns::bigint[]) OR (:claimed_refreshes AND d.campaign_id IS NULL))
      AND d.claimed_by = :run AND d.status = 'in_flight'
    RETURNING d.id
), spans AS (
    SELECT herald_release_spans(:run) AS n
), run AS (
    UPDATE runs SET finished_at = now(), status = :status, error = :error,
        campaigns = :campaigns, targeted = :targeted, sent = :sent, invalid = :invalid,
        failed = :failed, retried = :retried, skipped = :skipped, expired = :expired,
        requeued = :requeued + (SELECT count(*) FROM back)
    WHERE id = :run AND status = 'running'
    RETURNING id
)
SELECT (SELECT count(*) FROM back)::bigint, (SELECT count(*) FROM run)::bigint, (SELECT n FROM spans)

-- name: claimed-partitions
-- The ledger partitions where runs may hold deliveries in flight: the campaigns their
-- claims recorded (runs.claimed_campaigns) and whether they claimed config refresh pushes
-- (runs.claimed_refreshes). For the runs named, and, when a lease is given (seconds not
-- negative), every other live run that stopped renewing for that long. No index of
-- deliveries names claimed_by (a claim stays a HOT update), so the statements that look
-- for a run's in-flight rows name these partitions instead.
SELECT coalesce(array_agg(DISTINCT c.id) FILTER (WHERE c.id IS NOT NULL), '{}'), coalesce(bool_or(r.claimed_refreshes), false)
FROM runs r LEFT JOIN LATERAL unnest(r.claimed_campaigns) AS c(id) ON true
WHERE r.id = ANY(:runs::bigint[])
   OR (:seconds >= 0 AND r.status = 'running' AND r.id <> :current AND NOT r.dry_run
       AND coalesce(r.heartbeat_at, r.started_at) < now() - make_interval(secs => :seconds))

-- name: renew-leases
-- Renews the lease of every delivery a run holds (one row, the run's:
-- runs.lease_expires_at) and its heartbeat; no row when the run is no longer running
-- (another run declared it gone).
UPDATE runs SET heartbeat_at = now(), lease_expires_at = now() + make_interval(secs => :seconds)
WHERE id = :run AND status = 'running' RETURNING 1

-- name: gone-runs
-- Other runs still marked running whose own database session is gone (herald_run_gone):
-- their lock is free, so what they held may be taken over.
SELECT id FROM runs
WHERE status = 'running' AND id <> :run AND NOT dry_run AND herald_run_gone(id)
ORDER BY id

-- name: recover-abandoned
-- Marks failed the runs that stopped renewing for a whole lease (crashed, hung, cut off
-- from the database) and the runs known to be gone (their session ended), and gives back
-- the deliveries they held in flight: queued again, or cancelled when the campaign was.
-- Their rows are looked for only in the partitions their claims recorded
-- (runs.claimed_campaigns, runs.claimed_refreshes).
-- Filled in by code: the fragment given_back (the columns a row given back takes).
WITH mark AS (
    UPDATE runs SET status = 'failed', finished_at = now(),
        error = coalesce(error, 'the run stopped before finishing; its in-flight deliveries were requeued')
    WHERE status = 'running' AND id <> :current_run AND NOT dry_run
      AND (id = ANY(:dead_runs::bigint[])
           OR coalesce(heartbeat_at, started_at) < now() - make_interval(secs => :seconds))
    RETURNING id
), requeued AS (
    UPDATE deliveries d SET {{given_back}}
    WHERE (d.campaign_id = ANY(:claimed_campaigns::bigint[]) OR (:claimed_refreshes AND d.campaign_id IS NULL))
      AND d.claimed_by IN (SELECT id FROM mark UNION SELECT unnest(:dead_runs::bigint[]))
      AND d.status = 'in_flight'
    RETURNING d.id
), spans AS (
    -- Their spans open at their watermarks (herald_release_spans).
    SELECT herald_release_spans(r) FROM (SELECT id FROM mark UNION SELECT unnest(:dead_runs::bigint[])) AS gone(r)
)
SELECT (SELECT count(*) FROM requeued)::bigint, (SELECT count(*) FROM spans)::bigint
