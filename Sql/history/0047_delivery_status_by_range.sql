-- Herald schema: delivery_status reads a span's rows by their id range, one
-- span at a time, whatever the statistics say.
--
-- 0044's view joined deliveries to delivery_spans on the campaign and a
-- range of ids. With delivery_spans not yet analyzed (a run's thousand new
-- spans), the planner chose a merge join on the campaign alone and tested
-- every batch row against every span: a count of a 1,000,000-row campaign's
-- queued rows ran for minutes. Here each span's (and each mark's) rows are
-- a subquery the planner may not flatten (OFFSET 0), so it is read by an
-- index range scan of the campaign's partition for each span: the rows a
-- span holds, once; and so are the rows past a campaign's last span. A reader's filter on the campaign still reaches the
-- spans first; filters on a row's own columns apply to the rows read.
-- The branches and their rule are 0044's (LedgerSpansTests.theViewFollowsTheRule).
-- applied-if: SELECT pg_get_viewdef('public.delivery_status'::regclass) LIKE '%OFFSET 0%'

CREATE OR REPLACE VIEW delivery_status AS
SELECT d.id, d.campaign_id, d.device_id, d.user_id, d.status, d.not_before, d.apns_id, d.attempts, d.last_error,
       d.claimed_by, d.created_at, d.sent_at, d.updated_at, d.lease_expires_at, d.kind, d.config_etag, d.prompted_by,
       d.variant, d.refresh_open
FROM deliveries d WHERE d.status <> 'batch'
UNION ALL
SELECT d.id, sp.campaign_id, d.device_id, d.user_id, herald_delivery_status(d.status, d.id, sp.settled, NULL),
       d.not_before, herald_apns_id(d.id), 1, d.last_error, m.marked_by, d.created_at, m.marked_at, d.updated_at,
       NULL, d.kind, d.config_etag, d.prompted_by, d.variant, d.refresh_open
FROM delivery_spans sp
CROSS JOIN LATERAL (
    SELECT x.mark, x.marked_at, x.marked_by, coalesce(lag(x.mark) OVER (ORDER BY x.i), sp.after) AS low
    FROM unnest(sp.marks, sp.marked_at, sp.marked_by) WITH ORDINALITY AS x(mark, marked_at, marked_by, i)
) m
CROSS JOIN LATERAL (
    SELECT b.* FROM deliveries b
    WHERE b.campaign_id = sp.campaign_id AND b.id > m.low AND b.id <= m.mark AND b.status = 'batch'
    OFFSET 0
) d
UNION ALL
SELECT d.id, sp.campaign_id, d.device_id, d.user_id, herald_delivery_status(d.status, d.id, sp.settled, h.held),
       d.not_before, d.apns_id, d.attempts, d.last_error, CASE WHEN h.held THEN sp.run_id END, d.created_at, d.sent_at,
       d.updated_at, CASE WHEN h.held THEN r.lease_expires_at END, d.kind, d.config_etag, d.prompted_by, d.variant,
       d.refresh_open
FROM delivery_spans sp
LEFT JOIN runs r ON r.id = sp.run_id
CROSS JOIN LATERAL (SELECT herald_run_holds(sp.run_id) AS held) h
CROSS JOIN LATERAL (
    SELECT b.* FROM deliveries b
    WHERE b.campaign_id = sp.campaign_id AND b.id > sp.settled AND b.id <= sp.through AND b.status = 'batch'
    OFFSET 0
) d
WHERE sp.settled < sp.through
UNION ALL
SELECT d.id, e.campaign_id, d.device_id, d.user_id, herald_delivery_status(d.status, d.id, NULL, false),
       d.not_before, d.apns_id, d.attempts, d.last_error, NULL, d.created_at, d.sent_at, d.updated_at, NULL, d.kind,
       d.config_etag, d.prompted_by, d.variant, d.refresh_open
FROM (SELECT c.id AS campaign_id, (SELECT coalesce(max(x.through), 0) FROM delivery_spans x WHERE x.campaign_id = c.id) AS last
      FROM campaigns c) e
CROSS JOIN LATERAL (
    SELECT b.* FROM deliveries b
    WHERE b.campaign_id = e.campaign_id AND b.id > e.last AND b.status = 'batch'
    OFFSET 0
) d;
