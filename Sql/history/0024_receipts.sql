-- Herald schema: delivery receipts (docs/DESIGN.md, contract 8).
--
-- The Notification Service Extension posts a receipt when a notification
-- arrives on the device; one per delivery (the first is kept). Analysts read
-- delivered (a receipt, or a reply: a device that answered had it) beside
-- sent (APNs' 200), and the time from sent to arrival.
-- applied-if: SELECT to_regclass('public.receipts') IS NOT NULL

CREATE TABLE receipts (
    delivery_id    bigint PRIMARY KEY,
    campaign_id    bigint NOT NULL,
    device_id      bigint NOT NULL,
    arrived_at     timestamptz NOT NULL,
    sealed_opened  boolean,
    media_attached boolean,
    received_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX receipts_campaign ON receipts (campaign_id);
COMMENT ON TABLE receipts IS 'a notification arrived on its device, as the service extension said (contract 8)';

-- Stores a batch of receipts once per delivery (the flags as 1 true, 0
-- false, -1 absent): `stored` new ones, and the
-- ids that are no delivery (refused as unknown_delivery). The rest were
-- there already (duplicates).
CREATE FUNCTION herald_store_receipts(p_ids bigint[], p_arrived timestamptz[], p_sealed smallint[], p_media smallint[],
                                      OUT stored integer, OUT unknown bigint[])
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    WITH t AS MATERIALIZED (
        SELECT t.id, t.campaign_id, t.device_id FROM herald_reply_targets(p_ids) t
    ), input AS (
        SELECT DISTINCT ON (x.id) x.id, x.arrived,
               CASE x.sealed WHEN 1 THEN true WHEN 0 THEN false END AS sealed,
               CASE x.media WHEN 1 THEN true WHEN 0 THEN false END AS media
        FROM unnest(p_ids, p_arrived, p_sealed, p_media) WITH ORDINALITY AS x(id, arrived, sealed, media, n)
        ORDER BY x.id, x.n
    ), ins AS (
        INSERT INTO receipts (delivery_id, campaign_id, device_id, arrived_at, sealed_opened, media_attached)
        SELECT i.id, t.campaign_id, t.device_id, i.arrived, i.sealed, i.media
        FROM input i JOIN t ON t.id = i.id
        ON CONFLICT (delivery_id) DO NOTHING
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM ins)::integer,
           coalesce((SELECT array_agg(DISTINCT i.id) FROM input i WHERE NOT EXISTS (SELECT 1 FROM t WHERE t.id = i.id)),
                    '{}')
    INTO stored, unknown;
END $$;
REVOKE ALL ON FUNCTION herald_store_receipts(bigint[], timestamptz[], smallint[], smallint[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald_store_receipts(bigint[], timestamptz[], smallint[], smallint[]) TO herald_intake;

-- Delivered beside sent, per campaign (campaign deliveries only): a
-- delivery is confirmed by its receipt or by a reply; the time from sent
-- (the ledger's sent_at) to arrival, median and 90th percentile.
CREATE VIEW analyst.delivery_confirmation AS
WITH confirmed AS (
    SELECT r.campaign_id, r.delivery_id FROM receipts r
    JOIN deliveries d ON d.campaign_id = r.campaign_id AND d.id = r.delivery_id AND d.kind = 'campaign'
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
    JOIN deliveries d ON d.campaign_id = r.campaign_id AND d.id = r.delivery_id AND d.kind = 'campaign'
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

GRANT SELECT ON analyst.delivery_confirmation TO herald_analyst;
