-- Herald schema: test sends (`herald send-test`). A marketer sends a
-- campaign's notification to their own device before it goes out; the ledger
-- records it as a delivery of kind 'test'. A test row belongs to its campaign
-- (its reply token works, its replies are stored) but never counts in the
-- campaign's figures, never takes the place of the real delivery to that
-- device (the one-delivery-per-device rule now holds for campaign rows only)
-- and never counts towards a user's frequency cap.
-- (`herald migrate` adopts it when applied by hand with psql, by this test:)
-- applied-if: SELECT to_regclass('public.deliveries_campaign_once') IS NOT NULL

ALTER TABLE deliveries
    DROP CONSTRAINT "delivery kind must be campaign or config_refresh",
    DROP CONSTRAINT "campaign deliveries name a campaign, config refreshes an ETag",
    ADD CONSTRAINT "delivery kind must be campaign, config_refresh or test"
        CHECK (kind IN ('campaign', 'config_refresh', 'test')),
    ADD CONSTRAINT "campaign and test deliveries name a campaign, refreshes an ETag"
        CHECK ((kind IN ('campaign', 'test') AND campaign_id IS NOT NULL AND config_etag IS NULL)
            OR (kind = 'config_refresh' AND campaign_id IS NULL AND config_etag IS NOT NULL));

-- One delivery per campaign and device, for the campaign itself; test sends
-- may repeat.
CREATE UNIQUE INDEX deliveries_campaign_once ON deliveries (campaign_id, device_id) WHERE kind = 'campaign';
ALTER TABLE deliveries DROP CONSTRAINT deliveries_campaign_id_device_id_key;

-- The analyst views count campaign deliveries, and replies to them, only.
CREATE OR REPLACE VIEW analyst.campaign_funnel AS
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
    FROM deliveries WHERE kind = 'campaign' GROUP BY campaign_id
), r AS (
    SELECT r.campaign_id,
           count(*)                    AS replies,
           count(DISTINCT r.delivery_id) AS responding_devices,
           count(*) FILTER (WHERE r.action = 'com.apple.UNNotificationDefaultActionIdentifier') AS opened,
           count(*) FILTER (WHERE r.action = 'com.apple.UNNotificationDismissActionIdentifier') AS dismissed,
           count(*) FILTER (WHERE r.text IS NOT NULL)  AS typed_answers
    FROM replies r JOIN deliveries dl ON dl.id = r.delivery_id AND dl.kind = 'campaign'
    GROUP BY r.campaign_id
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

CREATE OR REPLACE VIEW analyst.action_breakdown AS
SELECT r.campaign_id, c.name AS campaign, r.action,
       CASE r.action
           WHEN 'com.apple.UNNotificationDefaultActionIdentifier' THEN '(opened)'
           WHEN 'com.apple.UNNotificationDismissActionIdentifier' THEN '(dismissed)'
           ELSE a.title
       END AS action_title,
       count(*) AS replies,
       round(100.0 * count(*) / sum(count(*)) OVER (PARTITION BY r.campaign_id), 1) AS share_pct
FROM replies r
JOIN deliveries dl ON dl.id = r.delivery_id AND dl.kind = 'campaign'
JOIN campaigns c ON c.id = r.campaign_id
LEFT JOIN actions a ON a.id = r.action
GROUP BY r.campaign_id, c.name, r.action, a.title;

CREATE OR REPLACE VIEW analyst.feedback_text AS
SELECT r.campaign_id, c.name AS campaign, r.action, r.text,
       u.locale, r.occurred_at, r.received_at
FROM replies r
JOIN deliveries dl ON dl.id = r.delivery_id AND dl.kind = 'campaign'
JOIN campaigns c ON c.id = r.campaign_id
JOIN users u ON u.id = r.user_id
WHERE r.text IS NOT NULL;

CREATE OR REPLACE VIEW analyst.delivery_problems AS
SELECT campaign_id, status, last_error AS reason, count(*) AS deliveries
FROM deliveries
WHERE kind = 'campaign' AND status IN ('invalid', 'failed', 'expired', 'skipped', 'cancelled')
GROUP BY campaign_id, status, last_error;

CREATE OR REPLACE VIEW analyst.replies_over_time AS
SELECT r.campaign_id,
       date_trunc('minute', r.occurred_at AT TIME ZONE 'UTC') AS minute_utc,
       r.action,
       count(*) AS replies
FROM replies r
JOIN deliveries dl ON dl.id = r.delivery_id AND dl.kind = 'campaign'
GROUP BY r.campaign_id, date_trunc('minute', r.occurred_at AT TIME ZONE 'UTC'), r.action;

-- For the marketer: the test sends and what APNs answered.
CREATE VIEW analyst.test_sends AS
SELECT d.id AS delivery_id, d.campaign_id, c.name AS campaign, u.external_id AS user_external_id,
       d.status, d.last_error AS reason, d.apns_id, d.created_at, d.sent_at
FROM deliveries d
JOIN campaigns c ON c.id = d.campaign_id
JOIN users u ON u.id = d.user_id
WHERE d.kind = 'test';

GRANT SELECT ON analyst.test_sends TO herald_analyst;
