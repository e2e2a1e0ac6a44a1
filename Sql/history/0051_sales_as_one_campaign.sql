-- Herald schema: a Live Activity sale is one campaign for analysts, with its
-- steps under it, and what its devices confirmed counts as delivered
-- (DESIGN, contract 10, "What analysts see of a sale").
--
--   * analyst.campaign_funnel: the campaigns marketers wrote, without the
--     rows Herald makes for a sale's steps (each step's figures are in
--     analyst.live_activity_steps, under its sale);
--   * analyst.live_activity_steps: also names the step's own row
--     (step_campaign_id), for its ledger;
--   * analyst.apps: a Live Activity push sends no receipt, so `delivered`
--     also counts each push its device confirmed through the activity
--     endpoints: a start once the device registered its activity, a step
--     once the activity showed that step or a later one.
-- applied-if: SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'analyst.live_activity_steps'::regclass AND attname = 'step_campaign_id' AND NOT attisdropped)

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
     LEFT JOIN r ON ((r.campaign_id = c.id)))
  WHERE (c.sale_id IS NULL);

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
          WHERE ((cp.campaign_id = st.id) AND (cp.status = ANY (ARRAY['failed'::text, 'expired'::text])))) AS broadcasts_not_sent,
    st.id AS step_campaign_id
   FROM (public.campaigns st
     LEFT JOIN counts c ON ((c.campaign_id = st.id)))
  WHERE (st.sale_id IS NOT NULL)
  GROUP BY st.id, st.sale_id, st.sale_step, st.send_at, st.expires_at, st.status;

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
                   FROM public.replies
                UNION
                 -- A Live Activity push sends no receipt: the device confirms it through the
                 -- activity endpoints (a start by registering its activity, a step by its number).
                 SELECT d.id, d.device_id
                   FROM public.delivery_status d
                     JOIN public.campaigns st ON st.id = d.campaign_id
                     JOIN public.live_activities la ON la.campaign_id = COALESCE(st.sale_id, st.id) AND la.device_id = d.device_id
                  WHERE d.kind = 'campaign' AND d.status = 'sent' AND (st.live_activity IS NOT NULL OR st.sale_id IS NOT NULL)
                    AND (st.sale_id IS NULL OR la.confirmed_step >= st.sale_step)) x
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
