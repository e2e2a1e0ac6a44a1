-- Herald schema, part 2: what analysts query, and the read-only role that
-- may query it and nothing else.
--
-- Give a person access with:
--   CREATE ROLE ann LOGIN PASSWORD '…' IN ROLE herald_analyst;

CREATE SCHEMA analyst;

-- Per campaign: how many devices were targeted and what became of them.
CREATE VIEW analyst.campaign_funnel AS
WITH d AS (
    SELECT campaign_id,
           count(*)                                        AS targeted,
           count(*) FILTER (WHERE status = 'queued')       AS queued,
           count(*) FILTER (WHERE status = 'in_flight')    AS in_flight,
           count(*) FILTER (WHERE status = 'sent')         AS sent,
           count(*) FILTER (WHERE status = 'invalid')      AS invalid,
           count(*) FILTER (WHERE status = 'failed')       AS failed,
           count(*) FILTER (WHERE status = 'expired')      AS expired,
           count(*) FILTER (WHERE status = 'skipped')      AS skipped,
           count(*) FILTER (WHERE status = 'cancelled')    AS cancelled
    FROM deliveries GROUP BY campaign_id
), r AS (
    SELECT campaign_id,
           count(*)                    AS replies,
           count(DISTINCT delivery_id) AS responding_devices,
           count(*) FILTER (WHERE action = 'com.apple.UNNotificationDefaultActionIdentifier') AS opened,
           count(*) FILTER (WHERE action = 'com.apple.UNNotificationDismissActionIdentifier') AS dismissed,
           count(*) FILTER (WHERE text IS NOT NULL)  AS typed_answers
    FROM replies GROUP BY campaign_id
)
SELECT c.id AS campaign_id, c.name, c.kind, c.status, c.failure_reason,
       c.send_at, c.expires_at, c.started_at, c.completed_at,
       coalesce(d.targeted, 0)  AS targeted,
       coalesce(d.queued, 0)    AS queued,
       coalesce(d.in_flight, 0) AS in_flight,
       coalesce(d.sent, 0)      AS sent,
       coalesce(d.invalid, 0)   AS invalid,
       coalesce(d.failed, 0)    AS failed,
       coalesce(d.expired, 0)   AS expired,
       coalesce(d.skipped, 0)   AS skipped,
       coalesce(d.cancelled, 0) AS cancelled,
       coalesce(r.replies, 0)   AS replies,
       coalesce(r.responding_devices, 0) AS responding_devices,
       coalesce(r.opened, 0)    AS opened,
       coalesce(r.dismissed, 0) AS dismissed,
       coalesce(r.typed_answers, 0) AS typed_answers,
       round(100.0 * coalesce(r.responding_devices, 0) / nullif(d.sent, 0), 1) AS response_rate_pct
FROM campaigns c
LEFT JOIN d ON d.campaign_id = c.id
LEFT JOIN r ON r.campaign_id = c.id;

-- Per campaign and action: which buttons users pressed.
CREATE VIEW analyst.action_breakdown AS
SELECT r.campaign_id, c.name AS campaign, r.action,
       CASE r.action
           WHEN 'com.apple.UNNotificationDefaultActionIdentifier' THEN '(opened)'
           WHEN 'com.apple.UNNotificationDismissActionIdentifier' THEN '(dismissed)'
           ELSE a.title
       END AS action_title,
       count(*) AS replies,
       round(100.0 * count(*) / sum(count(*)) OVER (PARTITION BY r.campaign_id), 1) AS share_pct
FROM replies r
JOIN campaigns c ON c.id = r.campaign_id
LEFT JOIN actions a ON a.id = r.action
GROUP BY r.campaign_id, c.name, r.action, a.title;

-- What users typed into feedback prompts, verbatim.
CREATE VIEW analyst.feedback_text AS
SELECT r.campaign_id, c.name AS campaign, r.action, r.text,
       u.locale, r.occurred_at, r.received_at
FROM replies r
JOIN campaigns c ON c.id = r.campaign_id
JOIN users u ON u.id = r.user_id
WHERE r.text IS NOT NULL;

-- Why deliveries did not go out.
CREATE VIEW analyst.delivery_problems AS
SELECT campaign_id, status, last_error AS reason, count(*) AS deliveries
FROM deliveries
WHERE status IN ('invalid', 'failed', 'expired', 'skipped', 'cancelled')
GROUP BY campaign_id, status, last_error;

-- The batch runs and their figures.
CREATE VIEW analyst.runs AS
SELECT id AS run_id, started_at, finished_at, finished_at - started_at AS duration,
       host, dry_run, status, error, campaigns, targeted, sent, invalid, failed,
       retried, skipped, expired
FROM runs;

DO $$
BEGIN
    CREATE ROLE herald_analyst NOLOGIN;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL; -- roles belong to the whole server; another database made it already
END $$;

GRANT USAGE ON SCHEMA analyst TO herald_analyst;
GRANT SELECT ON ALL TABLES IN SCHEMA analyst TO herald_analyst;
