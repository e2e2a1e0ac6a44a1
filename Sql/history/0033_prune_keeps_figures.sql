-- Herald schema: `herald prune` keeps every analyst figure.
--
-- 0010 kept a pruned campaign's deliveries counted by status and reason
-- (pruned_delivery_counts) and its test sends whole; 0027 grouped the counts
-- by app too, but the unique index stayed on (campaign_id, status, reason),
-- so the prune of a campaign sent to several apps failed on it. And five
-- analyst views still read only the live ledger, so a pruned campaign left
-- them: analyst.variant_comparison, analyst.variant_actions, analyst.lift,
-- analyst.pace and the receipt part of analyst.delivery_confirmation.
--
-- What a prune keeps from here on, written by Sources/Store/Prune.swift in
-- the transaction that drops the partition, each as small as its view allows:
-- * pruned_delivery_counts, also by variant: the variants' targeted and sent;
--   its unique index now covers app and variant.
-- * pruned_answered_deliveries: the campaign deliveries that a receipt or a
--   reply refers to (id, variant, sent_at), no more rows than those receipts
--   and replies, which stay: a reply's variant, a receipt's arrival time.
-- * pruned_sent_minutes: the sent deliveries per calendar minute of sent_at
--   (count, first and last sent_at): analyst.pace's sent, span and busiest
--   minute.
-- * pruned_lift_assignments: for a campaign that held users out (its own
--   holdout or the global control group), each user's arm, variant and
--   assignment time: analyst.lift reads conversions live against them, as
--   it does against the ledger, so a conversion stored later still counts.
-- The views add these to the live ledger and keep their columns. A campaign
-- pruned before this file kept none of them; its figures in these five views
-- were gone already and stay gone.
--
-- applied-if: SELECT to_regclass('public.pruned_sent_minutes') IS NOT NULL

ALTER TABLE pruned_delivery_counts ADD COLUMN variant text;
DROP INDEX pruned_delivery_counts_once;
CREATE UNIQUE INDEX pruned_delivery_counts_once
    ON pruned_delivery_counts (campaign_id, app, variant, status, reason) NULLS NOT DISTINCT;

CREATE TABLE pruned_answered_deliveries (
    id           bigint PRIMARY KEY,
    campaign_id  bigint NOT NULL REFERENCES pruned_campaigns (campaign_id),
    variant      text,
    sent_at      timestamptz
);
CREATE INDEX pruned_answered_deliveries_campaign ON pruned_answered_deliveries (campaign_id);
COMMENT ON TABLE pruned_answered_deliveries IS 'of a pruned campaign, each campaign delivery a receipt or a reply refers to';

CREATE TABLE pruned_sent_minutes (
    campaign_id  bigint NOT NULL REFERENCES pruned_campaigns (campaign_id),
    minute       timestamptz,
    sent         bigint NOT NULL,
    first_sent   timestamptz,
    last_sent    timestamptz
);
CREATE UNIQUE INDEX pruned_sent_minutes_once ON pruned_sent_minutes (campaign_id, minute) NULLS NOT DISTINCT;
COMMENT ON TABLE pruned_sent_minutes IS 'of a pruned campaign, its sent deliveries per minute of sent_at';

CREATE TABLE pruned_lift_assignments (
    campaign_id  bigint NOT NULL REFERENCES pruned_campaigns (campaign_id),
    user_id      bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    treated      boolean NOT NULL,
    variant      text,
    assigned_at  timestamptz NOT NULL,
    PRIMARY KEY (campaign_id, user_id)
);
CREATE INDEX pruned_lift_assignments_user ON pruned_lift_assignments (user_id);
COMMENT ON TABLE pruned_lift_assignments IS 'of a pruned campaign that held users out, each user''s arm as analyst.lift reads it';

-- The variants' figures: targeted and sent from the live ledger and the
-- pruned counts, each reply's variant from its delivery, live or kept.
CREATE OR REPLACE VIEW analyst.variant_comparison AS
WITH v AS (
    SELECT cv.campaign_id, cv.name AS variant, cv.share, cv.media_url,
           row_number() OVER (PARTITION BY cv.campaign_id ORDER BY cv.name COLLATE "C") AS position,
           count(*) OVER (PARTITION BY cv.campaign_id) AS variants
    FROM campaign_variants cv
), d AS (
    SELECT campaign_id, variant,
           sum(n)::bigint                                             AS targeted,
           coalesce(sum(n) FILTER (WHERE status = 'sent'), 0)::bigint AS sent
    FROM (SELECT campaign_id, variant, status, count(*) AS n
          FROM deliveries WHERE kind = 'campaign' AND variant IS NOT NULL
          GROUP BY campaign_id, variant, status
          UNION ALL
          SELECT campaign_id, variant, status, deliveries
          FROM pruned_delivery_counts WHERE variant IS NOT NULL) x
    GROUP BY campaign_id, variant
), r AS (
    SELECT dl.campaign_id, dl.variant,
           count(*)                      AS replies,
           count(DISTINCT r.delivery_id) AS responding_devices,
           count(*) FILTER (WHERE r.action = 'com.apple.UNNotificationDefaultActionIdentifier') AS opened,
           count(*) FILTER (WHERE r.action = 'com.apple.UNNotificationDismissActionIdentifier') AS dismissed,
           count(*) FILTER (WHERE r.text IS NOT NULL) AS typed_answers
    FROM replies r
    JOIN (SELECT id, campaign_id, variant FROM deliveries WHERE kind = 'campaign' AND variant IS NOT NULL
          UNION ALL
          SELECT id, campaign_id, variant FROM pruned_answered_deliveries WHERE variant IS NOT NULL) dl
      ON dl.id = r.delivery_id
    GROUP BY dl.campaign_id, dl.variant
), f AS (
    SELECT v.campaign_id, c.name AS campaign, v.variant, v.position, v.variants, v.share,
           coalesce(d.targeted, 0) AS targeted, coalesce(d.sent, 0) AS sent,
           coalesce(r.replies, 0) AS replies, coalesce(r.responding_devices, 0) AS responding_devices,
           coalesce(r.opened, 0) AS opened, coalesce(r.dismissed, 0) AS dismissed,
           coalesce(r.typed_answers, 0) AS typed_answers
    FROM v
    JOIN campaigns c ON c.id = v.campaign_id
    LEFT JOIN d ON d.campaign_id = v.campaign_id AND d.variant = v.variant
    LEFT JOIN r ON r.campaign_id = v.campaign_id AND r.variant = v.variant
), cmp AS (
    SELECT f.*, b.variant AS baseline,
           CASE WHEN f.position > 1 AND f.sent > 0 AND b.sent > 0
                     AND (f.responding_devices + b.responding_devices) > 0
                     AND (f.responding_devices + b.responding_devices) < (f.sent + b.sent)
           THEN ((f.responding_devices::float8 / f.sent) - (b.responding_devices::float8 / b.sent))
                / sqrt(((f.responding_devices + b.responding_devices)::float8 / (f.sent + b.sent))
                       * (1 - (f.responding_devices + b.responding_devices)::float8 / (f.sent + b.sent))
                       * (1.0 / f.sent + 1.0 / b.sent))
           END AS z
    FROM f JOIN f AS b ON b.campaign_id = f.campaign_id AND b.position = 1
)
SELECT campaign_id, campaign, variant, position, variants, share AS share_pct,
       targeted,
       round(100.0 * targeted / nullif(sum(targeted) OVER (PARTITION BY campaign_id), 0), 1) AS targeted_pct,
       sent, replies, responding_devices, opened, dismissed, typed_answers,
       round(100.0 * responding_devices / nullif(sent, 0), 1) AS response_rate_pct,
       baseline, z, herald_two_sided_p(z) AS p_value
FROM cmp;

CREATE OR REPLACE VIEW analyst.variant_actions AS
SELECT r.campaign_id, c.name AS campaign, dl.variant, r.action,
       CASE r.action
           WHEN 'com.apple.UNNotificationDefaultActionIdentifier' THEN '(opened)'
           WHEN 'com.apple.UNNotificationDismissActionIdentifier' THEN '(dismissed)'
           ELSE a.title
       END AS action_title,
       count(*) AS replies,
       round(100.0 * count(*) / sum(count(*)) OVER (PARTITION BY r.campaign_id, dl.variant), 1) AS share_pct
FROM replies r
JOIN (SELECT id, campaign_id, variant FROM deliveries WHERE kind = 'campaign' AND variant IS NOT NULL
      UNION ALL
      SELECT id, campaign_id, variant FROM pruned_answered_deliveries WHERE variant IS NOT NULL) dl
  ON dl.id = r.delivery_id
JOIN campaigns c ON c.id = r.campaign_id
LEFT JOIN actions a ON a.id = r.action
GROUP BY r.campaign_id, c.name, dl.variant, r.action, a.title;

-- Receipts: each joined to its delivery, live or kept, for its sent_at.
CREATE OR REPLACE VIEW analyst.delivery_confirmation AS
WITH confirmed AS (
    SELECT r.campaign_id, r.delivery_id FROM receipts r
    JOIN (SELECT campaign_id, id FROM deliveries WHERE kind = 'campaign'
          UNION ALL
          SELECT campaign_id, id FROM pruned_answered_deliveries) d
      ON d.campaign_id = r.campaign_id AND d.id = r.delivery_id
    UNION
    SELECT rp.campaign_id, rp.delivery_id FROM replies rp WHERE rp.delivery_kind = 'campaign'
), by_campaign AS (
    SELECT campaign_id, count(*) AS delivered FROM confirmed GROUP BY campaign_id
), arrival AS (
    SELECT r.campaign_id, count(*) AS receipts,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM r.arrived_at - d.sent_at)) AS median_s,
           percentile_cont(0.9) WITHIN GROUP (ORDER BY extract(epoch FROM r.arrived_at - d.sent_at)) AS p90_s,
           count(*) FILTER (WHERE r.sealed_opened) AS sealed_opened,
           count(*) FILTER (WHERE NOT r.sealed_opened) AS sealed_failed,
           count(*) FILTER (WHERE r.media_attached) AS media_attached,
           count(*) FILTER (WHERE NOT r.media_attached) AS media_failed
    FROM receipts r
    JOIN (SELECT campaign_id, id, sent_at FROM deliveries WHERE kind = 'campaign'
          UNION ALL
          SELECT campaign_id, id, sent_at FROM pruned_answered_deliveries) d
      ON d.campaign_id = r.campaign_id AND d.id = r.delivery_id
    GROUP BY r.campaign_id
)
SELECT f.campaign_id, f.name, f.sent,
       coalesce(b.delivered, 0) AS delivered,
       round(100.0 * coalesce(b.delivered, 0) / nullif(f.sent, 0), 1) AS delivered_pct,
       coalesce(a.receipts, 0) AS receipts,
       round(a.median_s::numeric, 1) AS arrival_median_s,
       round(a.p90_s::numeric, 1) AS arrival_p90_s,
       coalesce(a.sealed_opened, 0) AS sealed_opened,
       coalesce(a.sealed_failed, 0) AS sealed_failed,
       coalesce(a.media_attached, 0) AS media_attached,
       coalesce(a.media_failed, 0) AS media_failed
FROM analyst.campaign_funnel f
LEFT JOIN by_campaign b ON b.campaign_id = f.campaign_id
LEFT JOIN arrival a ON a.campaign_id = f.campaign_id;

-- The pace from sent deliveries per minute, live or kept.
CREATE OR REPLACE VIEW analyst.pace AS
WITH minutes AS (
    SELECT d.campaign_id, count(*) AS n, min(d.sent_at) AS first_sent, max(d.sent_at) AS last_sent
    FROM deliveries d
    WHERE d.kind = 'campaign' AND d.status = 'sent'
      AND d.campaign_id IN (SELECT id FROM campaigns WHERE rate_per_minute IS NOT NULL OR finish_within IS NOT NULL)
    GROUP BY d.campaign_id, date_trunc('minute', d.sent_at)
    UNION ALL
    SELECT m.campaign_id, m.sent, m.first_sent, m.last_sent
    FROM pruned_sent_minutes m
    WHERE m.campaign_id IN (SELECT id FROM campaigns WHERE rate_per_minute IS NOT NULL OR finish_within IS NOT NULL)
), sent AS (
    SELECT campaign_id, sum(n)::bigint AS sent, min(first_sent) AS first_sent, max(last_sent) AS last_sent,
           max(n) AS busiest_minute
    FROM minutes GROUP BY campaign_id
)
SELECT c.id AS campaign_id, c.name, c.rate_per_minute, c.finish_within,
       coalesce(c.rate_per_minute::numeric,
                round(f.targeted / greatest(extract(epoch FROM c.finish_within) / 60, 1), 1)) AS set_per_minute,
       s.sent, s.first_sent, s.last_sent,
       round((s.sent - 1) / nullif(extract(epoch FROM s.last_sent - s.first_sent) / 60, 0), 1) AS achieved_per_minute,
       s.busiest_minute
FROM campaigns c
JOIN sent s ON s.campaign_id = c.id
JOIN analyst.campaign_funnel f ON f.campaign_id = c.id;

-- Lift: each user's arm from the live ledger or, once pruned, as kept.
CREATE OR REPLACE VIEW analyst.lift AS
WITH assigned AS (
    SELECT d.campaign_id, d.user_id,
           bool_or(d.status <> 'held_out') AS treated,
           min(d.variant) FILTER (WHERE d.status <> 'held_out') AS variant,
           min(d.created_at) AS assigned_at
    FROM deliveries d
    JOIN campaigns c ON c.id = d.campaign_id AND c.conversion_event IS NOT NULL
    WHERE d.kind = 'campaign'
    GROUP BY d.campaign_id, d.user_id
    UNION ALL
    SELECT p.campaign_id, p.user_id, p.treated, p.variant, p.assigned_at
    FROM pruned_lift_assignments p
    JOIN campaigns c ON c.id = p.campaign_id AND c.conversion_event IS NOT NULL
), outcome AS (
    SELECT a.campaign_id, a.treated, a.variant, a.assigned_at + c.attribution_window <= now() AS window_closed,
           EXISTS (SELECT 1 FROM conversions v
                   WHERE v.user_id = a.user_id AND v.event = c.conversion_event
                     AND v.occurred_at >= a.assigned_at AND v.occurred_at < a.assigned_at + c.attribution_window) AS converted,
           (SELECT sum(v.amount) FROM conversions v
            WHERE v.user_id = a.user_id AND v.event = c.conversion_event
              AND v.occurred_at >= a.assigned_at AND v.occurred_at < a.assigned_at + c.attribution_window) AS revenue,
           (SELECT min(v.currency) FROM conversions v
            WHERE v.user_id = a.user_id AND v.event = c.conversion_event AND v.currency IS NOT NULL) AS currency
    FROM assigned a JOIN campaigns c ON c.id = a.campaign_id
), groups AS (
    -- The campaign as a whole (variant NULL) and each of its variants.
    SELECT DISTINCT campaign_id, NULL::text AS variant FROM outcome
    UNION ALL
    SELECT DISTINCT campaign_id, variant FROM outcome WHERE variant IS NOT NULL
), arms AS (
    -- Each against the same held out.
    SELECT g.campaign_id, g.variant,
           count(*) FILTER (WHERE o.treated AND (g.variant IS NULL OR o.variant = g.variant)) AS n1,
           count(*) FILTER (WHERE o.treated AND (g.variant IS NULL OR o.variant = g.variant) AND o.converted) AS x1,
           count(*) FILTER (WHERE NOT o.treated) AS n0,
           count(*) FILTER (WHERE NOT o.treated AND o.converted) AS x0,
           sum(o.revenue) FILTER (WHERE o.treated AND (g.variant IS NULL OR o.variant = g.variant)) AS revenue1,
           sum(o.revenue) FILTER (WHERE NOT o.treated) AS revenue0,
           CASE WHEN count(DISTINCT o.currency) = 1 THEN min(o.currency) END AS currency,
           bool_and(o.window_closed) AS window_closed
    FROM groups g JOIN outcome o ON o.campaign_id = g.campaign_id
    GROUP BY g.campaign_id, g.variant
), rates AS (
    SELECT a.*, x1::float8 / nullif(n1, 0) AS p1, x0::float8 / nullif(n0, 0) AS p0,
           (x1 + x0)::float8 / nullif(n1 + n0, 0) AS pp
    FROM arms a
), stats AS (
    SELECT r.*, p1 - p0 AS diff,
           sqrt(p1 * (1 - p1) / n1 + p0 * (1 - p0) / n0) AS se,
           sqrt(pp * (1 - pp) * (1.0 / n1 + 1.0 / n0)) AS se_pooled
    FROM rates r
    WHERE n1 > 0 AND n0 > 0
)
SELECT s.campaign_id, c.name, s.variant, c.conversion_event, c.attribution_window,
       s.n1 AS treated, s.x1 AS treated_converted, round((100 * s.p1)::numeric, 2) AS treated_rate_pct,
       s.n0 AS held_out, s.x0 AS held_out_converted, round((100 * s.p0)::numeric, 2) AS held_out_rate_pct,
       round((100 * s.diff)::numeric, 2) AS lift_pts,
       round((100 * (s.diff - 1.96 * s.se))::numeric, 2) AS lift_low_pts,
       round((100 * (s.diff + 1.96 * s.se))::numeric, 2) AS lift_high_pts,
       round((100 * s.diff / nullif(s.p0, 0))::numeric, 1) AS relative_lift_pct,
       CASE WHEN s.se_pooled > 0 THEN s.diff / s.se_pooled END AS z,
       CASE WHEN s.se_pooled > 0 THEN herald_two_sided_p(s.diff / s.se_pooled) END AS p_value,
       round((100 * 2.8 * s.se_pooled)::numeric, 2) AS min_detectable_pts,
       round(s.revenue1 / s.n1, 2) AS revenue_per_treated_user,
       round(s.revenue0 / s.n0, 2) AS revenue_per_held_out_user,
       s.currency,
       s.window_closed,
       CASE
           WHEN s.se_pooled IS NULL OR s.se_pooled = 0 THEN
               'no measurable effect yet: no conversions on either side'
           WHEN herald_two_sided_p(s.diff / s.se_pooled) < 0.05 THEN
               format('%s of %s points (95%% CI %s to %s) against the held out, p = %s',
                      CASE WHEN s.diff > 0 THEN 'a lift' ELSE 'a drop' END,
                      round((100 * abs(s.diff))::numeric, 2),
                      round((100 * (s.diff - 1.96 * s.se))::numeric, 2),
                      round((100 * (s.diff + 1.96 * s.se))::numeric, 2),
                      round(herald_two_sided_p(s.diff / s.se_pooled)::numeric, 4))
           ELSE
               format('no measurable effect yet: %s treated and %s held out can show a lift of %s points or more',
                      s.n1, s.n0, round((100 * 2.8 * s.se_pooled)::numeric, 2))
       END || CASE WHEN s.window_closed THEN '' ELSE ' (attribution windows still open)' END AS verdict
FROM stats s JOIN campaigns c ON c.id = s.campaign_id;

GRANT SELECT ON analyst.variant_comparison, analyst.variant_actions, analyst.delivery_confirmation,
                analyst.pace, analyst.lift TO herald_analyst;
