-- Herald schema: the analysts' views read the ledger through delivery_status
-- (Sql/0044), so that a batch row counts as its span says (sent, in flight,
-- queued) once the snapshot writes batch rows. Each view is the one it
-- replaces with public.deliveries read as public.delivery_status (same
-- columns, same answers on a ledger written row by row:
-- LedgerReadersTests). Views that read only rows a settlement or a row write
-- stores (delivery_problems, test_sends, config_refreshes, lift's holdouts)
-- are unchanged.
-- applied-if: SELECT pg_get_viewdef('analyst.campaign_funnel'::regclass) LIKE '%delivery_status%'

CREATE OR REPLACE VIEW analyst.apps AS
 WITH ledger AS (
         SELECT COALESCE(dv.app, 'default'::text) AS app,
            d.status,
            count(*) AS n
           FROM (public.delivery_status d
             LEFT JOIN public.devices dv ON ((dv.id = d.device_id)))
          WHERE (d.kind = 'campaign'::text)
          GROUP BY COALESCE(dv.app, 'default'::text), d.status
        UNION ALL
         SELECT pruned_delivery_counts.app,
            pruned_delivery_counts.status,
            pruned_delivery_counts.deliveries
           FROM public.pruned_delivery_counts
        ), figures AS (
         SELECT ledger.app,
            (COALESCE(sum(ledger.n) FILTER (WHERE (ledger.status = 'sent'::text)), (0)::numeric))::bigint AS sent,
            (COALESCE(sum(ledger.n) FILTER (WHERE (ledger.status = 'failed'::text)), (0)::numeric))::bigint AS failed
           FROM ledger
          GROUP BY ledger.app
        ), confirmed AS (
         SELECT dv.app,
            count(DISTINCT x.delivery_id) AS delivered
           FROM (( SELECT receipts.delivery_id,
                    receipts.device_id
                   FROM public.receipts
                UNION
                 SELECT replies.delivery_id,
                    replies.device_id
                   FROM public.replies) x
             JOIN public.devices dv ON ((dv.id = x.device_id)))
          GROUP BY dv.app
        ), answered AS (
         SELECT dv.app,
            count(DISTINCT r_1.delivery_id) AS replied
           FROM (public.replies r_1
             JOIN public.devices dv ON ((dv.id = r_1.device_id)))
          GROUP BY dv.app
        )
 SELECT a.name AS app,
    a.display_name,
    COALESCE(a.topic, '(APNS_TOPIC)'::text) AS topic,
    ( SELECT count(*) AS count
           FROM public.devices dv
          WHERE (dv.app = a.name)) AS devices,
    ( SELECT count(*) AS count
           FROM public.devices dv
          WHERE ((dv.app = a.name) AND (dv.invalidated_at IS NULL))) AS active_devices,
    ( SELECT count(*) AS count
           FROM public.devices dv
          WHERE ((dv.app = a.name) AND (dv.public_key IS NOT NULL))) AS keyed_devices,
    COALESCE(f.sent, (0)::bigint) AS sent,
    COALESCE(f.failed, (0)::bigint) AS failed,
    COALESCE(c.delivered, (0)::bigint) AS delivered,
    COALESCE(r.replied, (0)::bigint) AS replied
   FROM (((public.apps a
     LEFT JOIN figures f ON ((f.app = a.name)))
     LEFT JOIN confirmed c ON ((c.app = a.name)))
     LEFT JOIN answered r ON ((r.app = a.name)));

CREATE OR REPLACE VIEW analyst.campaign_funnel AS
 WITH counts AS (
         SELECT deliveries.campaign_id,
            deliveries.status,
            count(*) AS n
           FROM public.delivery_status deliveries
          WHERE (deliveries.kind = 'campaign'::text)
          GROUP BY deliveries.campaign_id, deliveries.status
        UNION ALL
         SELECT pruned_delivery_counts.campaign_id,
            pruned_delivery_counts.status,
            pruned_delivery_counts.deliveries
           FROM public.pruned_delivery_counts
        ), d AS (
         SELECT counts.campaign_id,
            (sum(counts.n))::bigint AS targeted,
            (COALESCE(sum(counts.n) FILTER (WHERE (counts.status = 'queued'::text)), (0)::numeric))::bigint AS queued,
            (COALESCE(sum(counts.n) FILTER (WHERE (counts.status = 'in_flight'::text)), (0)::numeric))::bigint AS in_flight,
            (COALESCE(sum(counts.n) FILTER (WHERE (counts.status = 'sent'::text)), (0)::numeric))::bigint AS sent,
            (COALESCE(sum(counts.n) FILTER (WHERE (counts.status = 'invalid'::text)), (0)::numeric))::bigint AS invalid,
            (COALESCE(sum(counts.n) FILTER (WHERE (counts.status = 'failed'::text)), (0)::numeric))::bigint AS failed,
            (COALESCE(sum(counts.n) FILTER (WHERE (counts.status = 'expired'::text)), (0)::numeric))::bigint AS expired,
            (COALESCE(sum(counts.n) FILTER (WHERE (counts.status = 'skipped'::text)), (0)::numeric))::bigint AS skipped,
            (COALESCE(sum(counts.n) FILTER (WHERE (counts.status = 'cancelled'::text)), (0)::numeric))::bigint AS cancelled
           FROM counts
          GROUP BY counts.campaign_id
        ), r AS (
         SELECT r_1.campaign_id,
            count(*) AS replies,
            count(DISTINCT r_1.delivery_id) AS responding_devices,
            count(*) FILTER (WHERE (r_1.action = 'com.apple.UNNotificationDefaultActionIdentifier'::text)) AS opened,
            count(*) FILTER (WHERE (r_1.action = 'com.apple.UNNotificationDismissActionIdentifier'::text)) AS dismissed,
            count(*) FILTER (WHERE (r_1.text IS NOT NULL)) AS typed_answers
           FROM public.replies r_1
          WHERE (r_1.delivery_kind = 'campaign'::text)
          GROUP BY r_1.campaign_id
        )
 SELECT c.id AS campaign_id,
    c.name,
    c.kind,
    c.status,
    c.failure_reason,
    c.send_at,
    c.expires_at,
    c.started_at,
    c.completed_at,
    COALESCE(d.targeted, (0)::bigint) AS targeted,
    COALESCE(d.queued, (0)::bigint) AS queued,
    COALESCE(d.in_flight, (0)::bigint) AS in_flight,
    COALESCE(d.sent, (0)::bigint) AS sent,
    COALESCE(d.invalid, (0)::bigint) AS invalid,
    COALESCE(d.failed, (0)::bigint) AS failed,
    COALESCE(d.expired, (0)::bigint) AS expired,
    COALESCE(d.skipped, (0)::bigint) AS skipped,
    COALESCE(d.cancelled, (0)::bigint) AS cancelled,
    COALESCE(r.replies, (0)::bigint) AS replies,
    COALESCE(r.responding_devices, (0)::bigint) AS responding_devices,
    COALESCE(r.opened, (0)::bigint) AS opened,
    COALESCE(r.dismissed, (0)::bigint) AS dismissed,
    COALESCE(r.typed_answers, (0)::bigint) AS typed_answers,
    round(((100.0 * (COALESCE(r.responding_devices, (0)::bigint))::numeric) / (NULLIF(d.sent, 0))::numeric), 1) AS response_rate_pct
   FROM ((public.campaigns c
     LEFT JOIN d ON ((d.campaign_id = c.id)))
     LEFT JOIN r ON ((r.campaign_id = c.id)));

CREATE OR REPLACE VIEW analyst.delivery_confirmation AS
 WITH confirmed AS (
         SELECT r.campaign_id,
            r.delivery_id
           FROM (public.receipts r
             JOIN ( SELECT deliveries.campaign_id,
                    deliveries.id
                   FROM public.delivery_status deliveries
                  WHERE (deliveries.kind = 'campaign'::text)
                UNION ALL
                 SELECT pruned_answered_deliveries.campaign_id,
                    pruned_answered_deliveries.id
                   FROM public.pruned_answered_deliveries) d ON (((d.campaign_id = r.campaign_id) AND (d.id = r.delivery_id))))
        UNION
         SELECT rp.campaign_id,
            rp.delivery_id
           FROM public.replies rp
          WHERE (rp.delivery_kind = 'campaign'::text)
        ), by_campaign AS (
         SELECT confirmed.campaign_id,
            count(*) AS delivered
           FROM confirmed
          GROUP BY confirmed.campaign_id
        ), arrival AS (
         SELECT r.campaign_id,
            count(*) AS receipts,
            percentile_cont((0.5)::double precision) WITHIN GROUP (ORDER BY ((EXTRACT(epoch FROM (r.arrived_at - d.sent_at)))::double precision)) AS median_s,
            percentile_cont((0.9)::double precision) WITHIN GROUP (ORDER BY ((EXTRACT(epoch FROM (r.arrived_at - d.sent_at)))::double precision)) AS p90_s,
            count(*) FILTER (WHERE r.sealed_opened) AS sealed_opened,
            count(*) FILTER (WHERE (NOT r.sealed_opened)) AS sealed_failed,
            count(*) FILTER (WHERE r.media_attached) AS media_attached,
            count(*) FILTER (WHERE (NOT r.media_attached)) AS media_failed
           FROM (public.receipts r
             JOIN ( SELECT deliveries.campaign_id,
                    deliveries.id,
                    deliveries.sent_at
                   FROM public.delivery_status deliveries
                  WHERE (deliveries.kind = 'campaign'::text)
                UNION ALL
                 SELECT pruned_answered_deliveries.campaign_id,
                    pruned_answered_deliveries.id,
                    pruned_answered_deliveries.sent_at
                   FROM public.pruned_answered_deliveries) d ON (((d.campaign_id = r.campaign_id) AND (d.id = r.delivery_id))))
          GROUP BY r.campaign_id
        )
 SELECT f.campaign_id,
    f.name,
    f.sent,
    COALESCE(b.delivered, (0)::bigint) AS delivered,
    round(((100.0 * (COALESCE(b.delivered, (0)::bigint))::numeric) / (NULLIF(f.sent, 0))::numeric), 1) AS delivered_pct,
    COALESCE(a.receipts, (0)::bigint) AS receipts,
    round((a.median_s)::numeric, 1) AS arrival_median_s,
    round((a.p90_s)::numeric, 1) AS arrival_p90_s,
    COALESCE(a.sealed_opened, (0)::bigint) AS sealed_opened,
    COALESCE(a.sealed_failed, (0)::bigint) AS sealed_failed,
    COALESCE(a.media_attached, (0)::bigint) AS media_attached,
    COALESCE(a.media_failed, (0)::bigint) AS media_failed
   FROM ((analyst.campaign_funnel f
     LEFT JOIN by_campaign b ON ((b.campaign_id = f.campaign_id)))
     LEFT JOIN arrival a ON ((a.campaign_id = f.campaign_id)));

CREATE OR REPLACE VIEW analyst.live_activity_steps AS
 WITH counts AS (
         SELECT d.campaign_id,
            d.status,
            count(*) AS n
           FROM public.delivery_status d
          WHERE (d.kind = 'campaign'::text)
          GROUP BY d.campaign_id, d.status
        UNION ALL
         SELECT p.campaign_id,
            p.status,
            p.deliveries
           FROM public.pruned_delivery_counts p
        )
 SELECT st.sale_id AS campaign_id,
    st.sale_step AS step,
    st.send_at AS due_at,
    st.expires_at AS superseded_at,
    st.status,
    (COALESCE(sum(c.n), (0)::numeric))::bigint AS targeted,
    (COALESCE(sum(c.n) FILTER (WHERE (c.status = 'sent'::text)), (0)::numeric))::bigint AS sent,
    (COALESCE(sum(c.n) FILTER (WHERE (c.status = 'expired'::text)), (0)::numeric))::bigint AS expired,
    (COALESCE(sum(c.n) FILTER (WHERE (c.status = 'skipped'::text)), (0)::numeric))::bigint AS skipped,
    ( SELECT count(*) AS count
           FROM public.live_activities la
          WHERE ((la.campaign_id = st.sale_id) AND (la.confirmed_step >= st.sale_step))) AS confirmed,
    ( SELECT count(*) AS count
           FROM public.channel_pushes cp
          WHERE ((cp.campaign_id = st.id) AND (cp.status = 'sent'::text))) AS broadcasts_sent,
    ( SELECT count(*) AS count
           FROM public.channel_pushes cp
          WHERE ((cp.campaign_id = st.id) AND (cp.status = ANY (ARRAY['failed'::text, 'expired'::text])))) AS broadcasts_not_sent
   FROM (public.campaigns st
     LEFT JOIN counts c ON ((c.campaign_id = st.id)))
  WHERE (st.sale_id IS NOT NULL)
  GROUP BY st.id, st.sale_id, st.sale_step, st.send_at, st.expires_at, st.status;

CREATE OR REPLACE VIEW analyst.pace AS
 WITH minutes AS (
         SELECT d.campaign_id,
            count(*) AS n,
            min(d.sent_at) AS first_sent,
            max(d.sent_at) AS last_sent
           FROM public.delivery_status d
          WHERE ((d.kind = 'campaign'::text) AND (d.status = 'sent'::text) AND (d.campaign_id IN ( SELECT campaigns.id
                   FROM public.campaigns
                  WHERE ((campaigns.rate_per_minute IS NOT NULL) OR (campaigns.finish_within IS NOT NULL)))))
          GROUP BY d.campaign_id, (date_trunc('minute'::text, d.sent_at))
        UNION ALL
         SELECT m.campaign_id,
            m.sent,
            m.first_sent,
            m.last_sent
           FROM public.pruned_sent_minutes m
          WHERE (m.campaign_id IN ( SELECT campaigns.id
                   FROM public.campaigns
                  WHERE ((campaigns.rate_per_minute IS NOT NULL) OR (campaigns.finish_within IS NOT NULL))))
        ), sent AS (
         SELECT minutes.campaign_id,
            (sum(minutes.n))::bigint AS sent,
            min(minutes.first_sent) AS first_sent,
            max(minutes.last_sent) AS last_sent,
            max(minutes.n) AS busiest_minute
           FROM minutes
          GROUP BY minutes.campaign_id
        )
 SELECT c.id AS campaign_id,
    c.name,
    c.rate_per_minute,
    c.finish_within,
    COALESCE((c.rate_per_minute)::numeric, round(((f.targeted)::numeric / GREATEST((EXTRACT(epoch FROM c.finish_within) / (60)::numeric), (1)::numeric)), 1)) AS set_per_minute,
    s.sent,
    s.first_sent,
    s.last_sent,
    round((((s.sent - 1))::numeric / NULLIF((EXTRACT(epoch FROM (s.last_sent - s.first_sent)) / (60)::numeric), (0)::numeric)), 1) AS achieved_per_minute,
    s.busiest_minute
   FROM ((public.campaigns c
     JOIN sent s ON ((s.campaign_id = c.id)))
     JOIN analyst.campaign_funnel f ON ((f.campaign_id = c.id)));

CREATE OR REPLACE VIEW analyst.variant_comparison AS
 WITH v AS (
         SELECT cv.campaign_id,
            cv.name AS variant,
            cv.share,
            cv.media_url,
            row_number() OVER (PARTITION BY cv.campaign_id ORDER BY (cv.name COLLATE "C")) AS "position",
            count(*) OVER (PARTITION BY cv.campaign_id) AS variants
           FROM public.campaign_variants cv
        ), d AS (
         SELECT x.campaign_id,
            x.variant,
            (sum(x.n))::bigint AS targeted,
            (COALESCE(sum(x.n) FILTER (WHERE (x.status = 'sent'::text)), (0)::numeric))::bigint AS sent
           FROM ( SELECT deliveries.campaign_id,
                    deliveries.variant,
                    deliveries.status,
                    count(*) AS n
                   FROM public.delivery_status deliveries
                  WHERE ((deliveries.kind = 'campaign'::text) AND (deliveries.variant IS NOT NULL))
                  GROUP BY deliveries.campaign_id, deliveries.variant, deliveries.status
                UNION ALL
                 SELECT pruned_delivery_counts.campaign_id,
                    pruned_delivery_counts.variant,
                    pruned_delivery_counts.status,
                    pruned_delivery_counts.deliveries
                   FROM public.pruned_delivery_counts
                  WHERE (pruned_delivery_counts.variant IS NOT NULL)) x
          GROUP BY x.campaign_id, x.variant
        ), r AS (
         SELECT dl.campaign_id,
            dl.variant,
            count(*) AS replies,
            count(DISTINCT r.delivery_id) AS responding_devices,
            count(*) FILTER (WHERE (r.action = 'com.apple.UNNotificationDefaultActionIdentifier'::text)) AS opened,
            count(*) FILTER (WHERE (r.action = 'com.apple.UNNotificationDismissActionIdentifier'::text)) AS dismissed,
            count(*) FILTER (WHERE (r.text IS NOT NULL)) AS typed_answers
           FROM (public.replies r
             JOIN ( SELECT deliveries.id,
                    deliveries.campaign_id,
                    deliveries.variant
                   FROM public.delivery_status deliveries
                  WHERE ((deliveries.kind = 'campaign'::text) AND (deliveries.variant IS NOT NULL))
                UNION ALL
                 SELECT pruned_answered_deliveries.id,
                    pruned_answered_deliveries.campaign_id,
                    pruned_answered_deliveries.variant
                   FROM public.pruned_answered_deliveries
                  WHERE (pruned_answered_deliveries.variant IS NOT NULL)) dl ON ((dl.id = r.delivery_id)))
          GROUP BY dl.campaign_id, dl.variant
        ), f AS (
         SELECT v.campaign_id,
            c.name AS campaign,
            v.variant,
            v."position",
            v.variants,
            v.share,
            COALESCE(d.targeted, (0)::bigint) AS targeted,
            COALESCE(d.sent, (0)::bigint) AS sent,
            COALESCE(r.replies, (0)::bigint) AS replies,
            COALESCE(r.responding_devices, (0)::bigint) AS responding_devices,
            COALESCE(r.opened, (0)::bigint) AS opened,
            COALESCE(r.dismissed, (0)::bigint) AS dismissed,
            COALESCE(r.typed_answers, (0)::bigint) AS typed_answers
           FROM (((v
             JOIN public.campaigns c ON ((c.id = v.campaign_id)))
             LEFT JOIN d ON (((d.campaign_id = v.campaign_id) AND (d.variant = v.variant))))
             LEFT JOIN r ON (((r.campaign_id = v.campaign_id) AND (r.variant = v.variant))))
        ), cmp AS (
         SELECT f.campaign_id,
            f.campaign,
            f.variant,
            f."position",
            f.variants,
            f.share,
            f.targeted,
            f.sent,
            f.replies,
            f.responding_devices,
            f.opened,
            f.dismissed,
            f.typed_answers,
            b.variant AS baseline,
                CASE
                    WHEN ((f."position" > 1) AND (f.sent > 0) AND (b.sent > 0) AND ((f.responding_devices + b.responding_devices) > 0) AND ((f.responding_devices + b.responding_devices) < (f.sent + b.sent))) THEN ((((f.responding_devices)::double precision / (f.sent)::double precision) - ((b.responding_devices)::double precision / (b.sent)::double precision)) / sqrt((((((f.responding_devices + b.responding_devices))::double precision / ((f.sent + b.sent))::double precision) * ((1)::double precision - (((f.responding_devices + b.responding_devices))::double precision / ((f.sent + b.sent))::double precision))) * (((1.0 / (f.sent)::numeric) + (1.0 / (b.sent)::numeric)))::double precision)))
                    ELSE NULL::double precision
                END AS z
           FROM (f
             JOIN f b ON (((b.campaign_id = f.campaign_id) AND (b."position" = 1))))
        )
 SELECT cmp.campaign_id,
    cmp.campaign,
    cmp.variant,
    cmp."position",
    cmp.variants,
    cmp.share AS share_pct,
    cmp.targeted,
    round(((100.0 * (cmp.targeted)::numeric) / NULLIF(sum(cmp.targeted) OVER (PARTITION BY cmp.campaign_id), (0)::numeric)), 1) AS targeted_pct,
    cmp.sent,
    cmp.replies,
    cmp.responding_devices,
    cmp.opened,
    cmp.dismissed,
    cmp.typed_answers,
    round(((100.0 * (cmp.responding_devices)::numeric) / (NULLIF(cmp.sent, 0))::numeric), 1) AS response_rate_pct,
    cmp.baseline,
    cmp.z,
    public.herald_two_sided_p(cmp.z) AS p_value
   FROM cmp;
