-- herald prune: a finished campaign's ledger partition (made by herald_delivery_partition)
-- is detached and dropped, in one transaction that first keeps what the analyst views read
-- of it in the pruned_* tables (they add them to the live ledger's) and records the campaign
-- in pruned_campaigns. Replies are never touched.
-- Statements of this file are run by Sources/Store/Prune.swift.

-- name: candidates
-- The campaigns that may be pruned, oldest activity first: finished, not in
-- pruned_campaigns, with a ledger (a partition of their own, found through pg_inherits, or
-- rows in deliveries_default), nothing queued or in flight (delivery_status), and idle
-- longer than asked and than settings.frequency_window, which the frequency cap looks back on.
WITH parts AS (
    SELECT p.relname::text AS relname, substring(p.relname FROM '^deliveries_c([0-9]+)$')::bigint AS campaign_id
    FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid
    WHERE i.inhparent = 'public.deliveries'::regclass
), c AS (
    SELECT c.id, c.name, c.status, c.completed_at, c.created_at, parts.relname
    FROM campaigns c LEFT JOIN parts ON parts.campaign_id = c.id
    WHERE c.status IN ('completed', 'cancelled', 'failed', 'archived')
      AND NOT EXISTS (SELECT 1 FROM pruned_campaigns pc WHERE pc.campaign_id = c.id)
      AND (parts.relname IS NOT NULL OR EXISTS (SELECT 1 FROM deliveries_default dd WHERE dd.campaign_id = c.id))
), l AS (
    SELECT c.*, x.n, x.pending, x.last_write
    FROM c CROSS JOIN LATERAL (
        SELECT count(*) AS n,
               count(*) FILTER (WHERE d.status IN ('queued', 'in_flight')) AS pending,
               max(d.updated_at) AS last_write
        FROM delivery_status d WHERE d.campaign_id = c.id) x
)
SELECT l.id, l.name, l.status,
       coalesce(greatest(l.completed_at, l.last_write), l.created_at) AS last_activity,
       l.n, l.relname
FROM l, settings st
WHERE l.pending = 0
  AND coalesce(greatest(l.completed_at, l.last_write), l.created_at)
      < now() - greatest(make_interval(secs => :seconds), st.frequency_window)
ORDER BY last_activity, l.id

-- name: campaign-state
-- Checked again once the campaign's row is locked (it may have changed since it was found):
-- whether it is in pruned_campaigns already, has deliveries queued or in flight
-- (delivery_status), and has rows in deliveries_default, which must move into a partition
-- of its own (herald_delivery_partition) first, so that what goes is one partition.
SELECT EXISTS (SELECT 1 FROM pruned_campaigns WHERE campaign_id = :campaign),
       EXISTS (SELECT 1 FROM delivery_status WHERE campaign_id = :campaign AND status IN ('queued', 'in_flight')),
       EXISTS (SELECT 1 FROM deliveries_default WHERE campaign_id = :campaign)

-- name: partition
-- The campaign's own ledger partition by its name (deliveries_c and the campaign's id, a
-- child of deliveries in pg_inherits), none when it has none: the table the prune locks,
-- exports, detaches and drops.
SELECT p.relname::text FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid
WHERE i.inhparent = 'public.deliveries'::regclass AND p.relname = :partition

-- name: record-pruned
-- Records the campaign as pruned (pruned_campaigns) with how many ledger rows it had and
-- the file they were exported to, if any; herald_delivery_partition refuses it new rows
-- from then on. Answers the number of rows.
INSERT INTO pruned_campaigns (campaign_id, deliveries, exported_to)
SELECT :campaign, count(*), :exported_to FROM deliveries WHERE campaign_id = :campaign
RETURNING deliveries

-- name: keep-delivery-counts
-- Keeps the campaign's deliveries counted by status, reason, app and variant
-- (pruned_delivery_counts), as delivery_status reads them, for analyst.campaign_funnel,
-- analyst.delivery_problems, analyst.apps and analyst.variant_comparison.
INSERT INTO pruned_delivery_counts (campaign_id, status, reason, deliveries, app, variant)
SELECT :campaign, d.status, d.last_error, count(*), coalesce(dv.app, 'default'), d.variant
FROM delivery_status d LEFT JOIN devices dv ON dv.id = d.device_id
WHERE d.campaign_id = :campaign AND d.kind = 'campaign'
GROUP BY d.status, d.last_error, coalesce(dv.app, 'default'), d.variant

-- name: keep-answered-deliveries
-- Keeps the deliveries a receipt or a reply refers to, with their variant and when they were
-- sent (pruned_answered_deliveries), for analyst.variant_comparison, analyst.variant_actions
-- and analyst.delivery_confirmation, which read receipts and replies beside them.
INSERT INTO pruned_answered_deliveries (id, campaign_id, variant, sent_at)
SELECT d.id, d.campaign_id, d.variant, d.sent_at FROM delivery_status d
WHERE d.campaign_id = :campaign AND d.kind = 'campaign'
  AND (EXISTS (SELECT 1 FROM receipts r WHERE r.campaign_id = d.campaign_id AND r.delivery_id = d.id)
       OR EXISTS (SELECT 1 FROM replies r WHERE r.campaign_id = d.campaign_id AND r.delivery_id = d.id))

-- name: keep-sent-minutes
-- Keeps the campaign's sent deliveries per minute, with the first and the last of each
-- minute (pruned_sent_minutes), for analyst.pace.
INSERT INTO pruned_sent_minutes (campaign_id, minute, sent, first_sent, last_sent)
SELECT :campaign, date_trunc('minute', d.sent_at), count(*), min(d.sent_at), max(d.sent_at)
FROM delivery_status d
WHERE d.campaign_id = :campaign AND d.kind = 'campaign' AND d.status = 'sent'
GROUP BY date_trunc('minute', d.sent_at)

-- name: keep-lift-assignments
-- When the campaign held users out, keeps each user's arm (pruned_lift_assignments) for
-- analyst.lift: treated unless all its rows were held out, its variant, and when. It reads
-- deliveries itself: held_out is written on the row by the snapshot, never left to a span.
INSERT INTO pruned_lift_assignments (campaign_id, user_id, treated, variant, assigned_at)
SELECT :campaign, d.user_id, bool_or(d.status <> 'held_out'),
       min(d.variant) FILTER (WHERE d.status <> 'held_out'), min(d.created_at)
FROM deliveries d
WHERE d.campaign_id = :campaign AND d.kind = 'campaign'
  AND EXISTS (SELECT 1 FROM deliveries h WHERE h.campaign_id = :campaign AND h.kind = 'campaign' AND h.status = 'held_out')
GROUP BY d.user_id

-- name: test-delivery-columns
-- The columns pruned_test_deliveries has, quoted, in their order: the test sends are copied
-- by these, so that a column added to deliveries is kept once it is added there too.
SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute
WHERE attrelid = 'public.pruned_test_deliveries'::regclass AND attnum > 0 AND NOT attisdropped

-- name: keep-test-deliveries
-- Keeps the campaign's test sends whole (pruned_test_deliveries), for analyst.test_sends.
-- Filled in by code: the fragment test_columns (the columns of pruned_test_deliveries, as
-- test-delivery-columns answers them).
INSERT INTO pruned_test_deliveries ({{test_columns}}) SELECT {{test_columns}} FROM deliveries
WHERE campaign_id = :campaign AND kind = 'test'
