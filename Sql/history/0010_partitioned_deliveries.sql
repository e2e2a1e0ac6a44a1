-- Herald schema: the delivery ledger partitioned by campaign, and pruning.
--
-- A year of nightly 1M-device campaigns is hundreds of millions of ledger
-- rows. `deliveries` becomes a table partitioned by LIST (campaign_id): one
-- partition per campaign (deliveries_c<ID>), one for the config refresh
-- pushes (campaign_id NULL: deliveries_refresh) and a DEFAULT partition
-- (deliveries_default) for rows written before their campaign has a
-- partition of its own. `herald prune` drops a finished campaign's partition
-- whole, after writing its figures to pruned_delivery_counts in the same
-- transaction; the analyst views add those figures to the live ones, and
-- replies keep everything they need (campaign, device, user, delivery kind).
--
-- Why by campaign and not by month: on a partitioned table every unique
-- index must contain the partition key. The ledger's promise, one campaign
-- delivery per campaign and device (deliveries_campaign_once, the arbiter of
-- the snapshot's ON CONFLICT), contains campaign_id and so survives; by
-- month it could not be enforced at all. Every hot statement of a run names
-- its campaign (claim, outcomes, completion, cancel), so each is pruned to
-- one partition; and what an operator retires is a campaign, so a prune is
-- a DROP TABLE, never a DELETE of millions of rows. See docs/SCALING.md.
--
-- What changes besides the table:
-- * `id` is no longer a primary key (a unique index on a partitioned table
--   must contain campaign_id, which is NULL for config refreshes). Each
--   partition has an index on id; ids stay unique because only
--   deliveries_id_seq hands them out.
-- * replies no longer reference deliveries by a foreign key (pruning must
--   not delete them); a trigger refuses a reply whose delivery does not
--   exist, and records the delivery's kind on the reply (delivery_kind),
--   which the analyst views use instead of joining the ledger; and a
--   trigger keeps a ledger row with replies from being deleted, as the
--   foreign key did.
-- * delivery_id_ranges says which campaign a delivery id belongs to, so
--   that the reply intake (which knows only the id) reads one partition.
-- * the config refresh rule "once per device and config version" is the
--   unique index (campaign_id, device_id, config_etag) NULLS NOT DISTINCT.
--
-- Applied by `herald migrate`, or by hand:
--   psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -1 -f Sql/0010_partitioned_deliveries.sql
-- (`herald migrate` adopts it then, by this test:)
-- applied-if: SELECT coalesce((SELECT relkind = 'p' FROM pg_class WHERE oid = to_regclass('public.deliveries')), false)

-- The views over the ledger are restated below; any other view over it
-- (one added by a later branch of the schema) is kept as it was.
CREATE TEMP TABLE herald_0010_views AS
SELECT DISTINCT v.oid::regclass::text AS name, pg_get_viewdef(v.oid) AS def,
       v.relnamespace = 'analyst'::regnamespace AS for_analysts
FROM pg_depend dep
JOIN pg_rewrite rw ON rw.oid = dep.objid
JOIN pg_class v ON v.oid = rw.ev_class
WHERE dep.classid = 'pg_rewrite'::regclass AND dep.refobjid = 'public.deliveries'::regclass
  AND v.oid <> 'public.deliveries'::regclass
  AND v.oid::regclass::text NOT IN ('analyst.campaign_funnel', 'analyst.action_breakdown', 'analyst.feedback_text',
                                    'analyst.delivery_problems', 'analyst.replies_over_time',
                                    'analyst.config_refreshes', 'analyst.test_sends');

DROP VIEW analyst.campaign_funnel, analyst.action_breakdown, analyst.feedback_text, analyst.delivery_problems,
          analyst.replies_over_time, analyst.config_refreshes, analyst.test_sends;
DO $$
DECLARE
    v record;
BEGIN
    FOR v IN SELECT name FROM herald_0010_views LOOP
        EXECUTE format('DROP VIEW %s', v.name);
    END LOOP;
END $$;

-- Replies: what the analyst views need of the ledger, kept on the reply.
ALTER TABLE replies ADD COLUMN delivery_kind text NOT NULL DEFAULT 'campaign';
UPDATE replies r SET delivery_kind = d.kind FROM deliveries d WHERE d.id = r.delivery_id AND d.kind <> 'campaign';
ALTER TABLE replies DROP CONSTRAINT replies_delivery_id_fkey,
    ADD CONSTRAINT "reply delivery_kind must be campaign or test"
        CHECK (delivery_kind IN ('campaign', 'test'));

-- The partitioned ledger, column for column the old one (LIKE: a column
-- added by an earlier migration comes along).
ALTER SEQUENCE deliveries_id_seq OWNED BY NONE;
ALTER TABLE deliveries RENAME TO deliveries_unpartitioned;
CREATE TABLE deliveries (LIKE deliveries_unpartitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED
                         INCLUDING STORAGE INCLUDING COMMENTS)
    PARTITION BY LIST (campaign_id);
CREATE TABLE deliveries_refresh PARTITION OF deliveries FOR VALUES IN (NULL);
CREATE TABLE deliveries_default PARTITION OF deliveries DEFAULT;
DO $$
DECLARE
    c bigint;
BEGIN
    FOR c IN SELECT DISTINCT campaign_id FROM deliveries_unpartitioned WHERE campaign_id IS NOT NULL ORDER BY 1 LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF deliveries FOR VALUES IN (%s)', 'deliveries_c' || c, c);
    END LOOP;
END $$;
-- Storage parameters (a fillfactor) are a partition's, not the parent's:
-- each partition gets the old table's; a partition made later copies
-- deliveries_default's.
DO $$
DECLARE
    opts text := (SELECT array_to_string(reloptions, ', ') FROM pg_class WHERE oid = 'deliveries_unpartitioned'::regclass);
    p regclass;
BEGIN
    IF opts IS NOT NULL THEN
        FOR p IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'deliveries'::regclass LOOP
            EXECUTE format('ALTER TABLE %s SET (%s)', p, opts);
        END LOOP;
    END IF;
END $$;
INSERT INTO deliveries SELECT * FROM deliveries_unpartitioned;

-- The old table's indexes (but its primary key and the refresh rule, which
-- lack the partition key), foreign keys and grants, by the same names.
CREATE TEMP TABLE herald_0010_carry AS
SELECT 1 AS step, replace(pg_get_indexdef(i.indexrelid), ' ON public.deliveries_unpartitioned USING ', ' ON public.deliveries USING ') AS ddl
FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
WHERE i.indrelid = 'deliveries_unpartitioned'::regclass AND NOT i.indisprimary
  AND ic.relname NOT IN ('deliveries_config_refresh_once')
UNION ALL
SELECT 2, format('ALTER TABLE deliveries ADD CONSTRAINT %I %s', conname, pg_get_constraintdef(oid))
FROM pg_constraint WHERE conrelid = 'deliveries_unpartitioned'::regclass AND contype = 'f'
UNION ALL
SELECT 3, format('GRANT %s ON deliveries TO %s', a.privilege_type,
                 CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(a.grantee::regrole::text) END)
FROM pg_class c, aclexplode(c.relacl) a
WHERE c.oid = 'deliveries_unpartitioned'::regclass AND a.grantee <> c.relowner
UNION ALL
SELECT 4, format('GRANT %s (%I) ON deliveries TO %s', a.privilege_type, att.attname,
                 CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(a.grantee::regrole::text) END)
FROM pg_attribute att, aclexplode(att.attacl) a
WHERE att.attrelid = 'deliveries_unpartitioned'::regclass AND att.attnum > 0 AND NOT att.attisdropped;

DROP TABLE deliveries_unpartitioned;
ALTER SEQUENCE deliveries_id_seq OWNED BY deliveries.id;

DO $$
DECLARE
    s text;
BEGIN
    FOR s IN SELECT ddl FROM herald_0010_carry ORDER BY step LOOP
        EXECUTE s;
    END LOOP;
END $$;
DROP TABLE herald_0010_carry;

CREATE INDEX deliveries_id ON deliveries (id);
CREATE UNIQUE INDEX deliveries_config_refresh_once ON deliveries (campaign_id, device_id, config_etag)
    NULLS NOT DISTINCT WHERE kind = 'config_refresh';
ANALYZE deliveries;

-- Which campaign a delivery id belongs to, as ranges of ids: the reply
-- intake knows only the delivery id (contract 4), and a lookup by id alone
-- plans and probes every partition (measured: 0.19 ms unpartitioned, 31 ms
-- over 200 partitions). Each statement that writes a campaign's ledger rows
-- (the snapshot, a test send) records the range of ids it wrote; ranges of
-- concurrent snapshots may overlap, which only adds a candidate. The intake
-- reads the candidate campaigns here, then the ledger with those campaigns
-- named, so that PostgreSQL plans one partition or two. Rows written
-- otherwise (by hand) have no range and are found by the slow lookup.
-- Kept after a prune: a pruned campaign's ids then lead to no partition.
CREATE TABLE delivery_id_ranges (
    campaign_id  bigint NOT NULL,
    ids          int8range NOT NULL
);
CREATE INDEX delivery_id_ranges_ids ON delivery_id_ranges USING gist (ids);
CREATE INDEX delivery_id_ranges_campaign ON delivery_id_ranges (campaign_id);
-- The ledger as it is: one range per run of consecutive ids of a campaign.
INSERT INTO delivery_id_ranges (campaign_id, ids)
SELECT campaign_id, int8range(min(id), max(id), '[]')
FROM (SELECT id, campaign_id, count(*) FILTER (WHERE campaign_id IS DISTINCT FROM prev) OVER (ORDER BY id) AS run
      FROM (SELECT id, campaign_id, lag(campaign_id) OVER (ORDER BY id) AS prev FROM deliveries) x) y
WHERE campaign_id IS NOT NULL
GROUP BY campaign_id, run;
GRANT SELECT, INSERT ON delivery_id_ranges TO herald_job;
GRANT SELECT ON delivery_id_ranges TO herald_intake;

-- A campaign's partition, made when its first run snapshots it (or a test
-- send writes to it), in a transaction of its own: ATTACH PARTITION takes a
-- SHARE UPDATE EXCLUSIVE lock on deliveries (runs keep claiming and
-- writing), ACCESS EXCLUSIVE on the DEFAULT partition (scanned for the
-- campaign's rows, which move over first), and SHARE ROW EXCLUSIVE on the
-- tables the ledger references, for milliseconds. It waits at most 5 s for
-- those locks; when it cannot have them the campaign's rows go to the DEFAULT
-- partition, which is correct, only slower to prune. Runs call it as
-- herald_job, which owns nothing: it runs as the schema owner.
-- Returns true when the campaign has a partition of its own.
CREATE FUNCTION herald_delivery_partition(campaign bigint) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp SET lock_timeout = '5s' AS $$
DECLARE
    part text := 'deliveries_c' || campaign;
    opts text := (SELECT array_to_string(reloptions, ', ') FROM pg_class WHERE oid = 'public.deliveries_default'::regclass);
BEGIN
    IF campaign IS NULL THEN
        RETURN false;
    END IF;
    IF EXISTS (SELECT 1 FROM pruned_campaigns WHERE campaign_id = campaign) THEN
        RAISE EXCEPTION 'campaign % was pruned (herald prune): its ledger is gone and takes no new deliveries', campaign
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF EXISTS (SELECT 1 FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid
               WHERE i.inhparent = 'public.deliveries'::regclass AND p.relname = part) THEN
        RETURN true;
    END IF;
    BEGIN
        -- One partition made at a time (two runs starting the same campaign).
        PERFORM pg_advisory_xact_lock(4845524100010);
        IF EXISTS (SELECT 1 FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid
                   WHERE i.inhparent = 'public.deliveries'::regclass AND p.relname = part) THEN
            RETURN true;
        END IF;
        EXECUTE format('CREATE TABLE %I (LIKE deliveries INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED INCLUDING STORAGE)', part);
        -- The storage parameters (a fillfactor) the other partitions have.
        IF opts IS NOT NULL THEN
            EXECUTE format('ALTER TABLE %I SET (%s)', part, opts);
        END IF;
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (campaign_id IS NOT NULL AND campaign_id = %s)',
                       part, part || '_campaign', campaign);
        -- The rows move (their replies with them: the trigger that keeps a
        -- row with replies from being deleted is off for this transaction).
        ALTER TABLE deliveries_default DISABLE TRIGGER deliveries_keep_replies;
        EXECUTE format('WITH moved AS (DELETE FROM deliveries_default WHERE campaign_id = %s RETURNING *) INSERT INTO %I SELECT * FROM moved',
                       campaign, part);
        ALTER TABLE deliveries_default ENABLE TRIGGER deliveries_keep_replies;
        EXECUTE format('ALTER TABLE deliveries ATTACH PARTITION %I FOR VALUES IN (%s)', part, campaign);
        RETURN true;
    EXCEPTION WHEN lock_not_available THEN
        RAISE WARNING 'campaign %: its ledger partition was not made (a lock was busy for 5 s); its deliveries go to deliveries_default', campaign;
        RETURN false;
    END;
END $$;
REVOKE ALL ON FUNCTION herald_delivery_partition(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald_delivery_partition(bigint) TO herald_job;

-- A reply must answer a delivery that exists (the foreign key's job before);
-- it carries the delivery's kind for the analyst views. The lookup names the
-- campaign, so it reads one partition. Runs as the owner: the intake may not
-- read deliveries.kind.
CREATE FUNCTION herald_reply_delivery() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    k text;
BEGIN
    SELECT d.kind INTO k FROM deliveries d
    WHERE d.id = NEW.delivery_id AND d.campaign_id = NEW.campaign_id;
    IF k IS NULL THEN
        RAISE EXCEPTION 'reply % answers delivery %, which campaign % does not have', NEW.reply_id, NEW.delivery_id, NEW.campaign_id
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    NEW.delivery_kind := k;
    RETURN NEW;
END $$;
CREATE TRIGGER replies_delivery BEFORE INSERT OR UPDATE OF delivery_id, campaign_id ON replies
    FOR EACH ROW EXECUTE FUNCTION herald_reply_delivery();

-- …and a ledger row with replies is not deleted, as the foreign key had it
-- (0006): checked when the statement ends, so an erasure (deleting a user or
-- a device, which removes their deliveries and replies) still goes through,
-- and so does a row moved between partitions. A prune drops partitions,
-- which deletes no row.
CREATE FUNCTION herald_delivery_keeps_replies() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM replies r WHERE r.delivery_id = OLD.id AND r.campaign_id = OLD.campaign_id)
       AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.id = OLD.id AND d.campaign_id = OLD.campaign_id) THEN
        RAISE EXCEPTION 'delivery % has replies and cannot be deleted', OLD.id
            USING ERRCODE = 'foreign_key_violation',
                  HINT = 'Archive its campaign instead; herald prune retires old ledgers and keeps their replies.';
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER deliveries_keep_replies AFTER DELETE ON deliveries
    FOR EACH ROW EXECUTE FUNCTION herald_delivery_keeps_replies();

-- What `herald prune` leaves of a campaign's ledger: the campaign, when and
-- where it went; its campaign deliveries counted by status and reason (what
-- the analyst views show); its test sends whole (analyst.test_sends lists
-- them one by one, and they are few).
CREATE TABLE pruned_campaigns (
    campaign_id  bigint PRIMARY KEY REFERENCES campaigns (id),
    pruned_at    timestamptz NOT NULL DEFAULT now(),
    deliveries   bigint NOT NULL,
    exported_to  text
);
CREATE TABLE pruned_delivery_counts (
    campaign_id  bigint NOT NULL REFERENCES pruned_campaigns (campaign_id),
    status       text NOT NULL,
    reason       text,
    deliveries   bigint NOT NULL
);
CREATE UNIQUE INDEX pruned_delivery_counts_once ON pruned_delivery_counts (campaign_id, status, reason) NULLS NOT DISTINCT;
CREATE TABLE pruned_test_deliveries (LIKE deliveries,
    CONSTRAINT pruned_test_deliveries_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES campaigns (id),
    CONSTRAINT pruned_test_deliveries_device_id_fkey FOREIGN KEY (device_id) REFERENCES devices (id) ON DELETE CASCADE,
    CONSTRAINT pruned_test_deliveries_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE);
CREATE INDEX pruned_test_deliveries_campaign ON pruned_test_deliveries (campaign_id);

-- The analyst views, as in 0005/0007/0008, with pruned campaigns' figures
-- added to the live ones, and replies filtered by their own delivery_kind.
CREATE VIEW analyst.campaign_funnel AS
WITH counts AS (
    SELECT campaign_id, status, count(*) AS n FROM deliveries WHERE kind = 'campaign' GROUP BY campaign_id, status
    UNION ALL
    SELECT campaign_id, status, deliveries FROM pruned_delivery_counts
), d AS (
    SELECT campaign_id,
           sum(n)::bigint                                                  AS targeted,
           coalesce(sum(n) FILTER (WHERE status = 'queued'), 0)::bigint    AS queued,
           coalesce(sum(n) FILTER (WHERE status = 'in_flight'), 0)::bigint AS in_flight,
           coalesce(sum(n) FILTER (WHERE status = 'sent'), 0)::bigint      AS sent,
           coalesce(sum(n) FILTER (WHERE status = 'invalid'), 0)::bigint   AS invalid,
           coalesce(sum(n) FILTER (WHERE status = 'failed'), 0)::bigint    AS failed,
           coalesce(sum(n) FILTER (WHERE status = 'expired'), 0)::bigint   AS expired,
           coalesce(sum(n) FILTER (WHERE status = 'skipped'), 0)::bigint   AS skipped,
           coalesce(sum(n) FILTER (WHERE status = 'cancelled'), 0)::bigint AS cancelled
    FROM counts GROUP BY campaign_id
), r AS (
    SELECT r.campaign_id,
           count(*)                    AS replies,
           count(DISTINCT r.delivery_id) AS responding_devices,
           count(*) FILTER (WHERE r.action = 'com.apple.UNNotificationDefaultActionIdentifier') AS opened,
           count(*) FILTER (WHERE r.action = 'com.apple.UNNotificationDismissActionIdentifier') AS dismissed,
           count(*) FILTER (WHERE r.text IS NOT NULL)  AS typed_answers
    FROM replies r WHERE r.delivery_kind = 'campaign'
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
WHERE r.delivery_kind = 'campaign'
GROUP BY r.campaign_id, c.name, r.action, a.title;

CREATE VIEW analyst.feedback_text AS
SELECT r.campaign_id, c.name AS campaign, r.action, r.text,
       u.locale, r.occurred_at, r.received_at
FROM replies r
JOIN campaigns c ON c.id = r.campaign_id
JOIN users u ON u.id = r.user_id
WHERE r.text IS NOT NULL AND r.delivery_kind = 'campaign';

CREATE VIEW analyst.delivery_problems AS
SELECT campaign_id, status, reason, sum(deliveries)::bigint AS deliveries
FROM (
    SELECT campaign_id, status, last_error AS reason, count(*) AS deliveries
    FROM deliveries
    WHERE kind = 'campaign' AND status IN ('invalid', 'failed', 'expired', 'skipped', 'cancelled')
    GROUP BY campaign_id, status, last_error
    UNION ALL
    SELECT campaign_id, status, reason, deliveries
    FROM pruned_delivery_counts
    WHERE status IN ('invalid', 'failed', 'expired', 'skipped', 'cancelled')
) p
GROUP BY campaign_id, status, reason;

CREATE VIEW analyst.replies_over_time AS
SELECT r.campaign_id,
       date_trunc('minute', r.occurred_at AT TIME ZONE 'UTC') AS minute_utc,
       r.action,
       count(*) AS replies
FROM replies r
WHERE r.delivery_kind = 'campaign'
GROUP BY r.campaign_id, date_trunc('minute', r.occurred_at AT TIME ZONE 'UTC'), r.action;

-- Config refresh pushes belong to no campaign and are never pruned.
CREATE VIEW analyst.config_refreshes AS
SELECT d.prompted_by AS campaign_id, d.config_etag, d.status, count(*) AS devices,
       min(d.sent_at) AS first_sent_at, max(d.sent_at) AS last_sent_at
FROM deliveries d
WHERE d.kind = 'config_refresh'
GROUP BY d.prompted_by, d.config_etag, d.status;

CREATE VIEW analyst.test_sends AS
SELECT d.id AS delivery_id, d.campaign_id, c.name AS campaign, u.external_id AS user_external_id,
       d.status, d.last_error AS reason, d.apns_id, d.created_at, d.sent_at
FROM (SELECT id, campaign_id, user_id, status, last_error, apns_id, created_at, sent_at
      FROM deliveries WHERE kind = 'test'
      UNION ALL
      SELECT id, campaign_id, user_id, status, last_error, apns_id, created_at, sent_at
      FROM pruned_test_deliveries) d
JOIN campaigns c ON c.id = d.campaign_id
JOIN users u ON u.id = d.user_id;

-- Views over the ledger that this file does not restate, as they were.
DO $$
DECLARE
    v record;
BEGIN
    FOR v IN SELECT name, def, for_analysts FROM herald_0010_views LOOP
        EXECUTE format('CREATE VIEW %s AS %s', v.name, v.def);
        IF v.for_analysts THEN
            EXECUTE format('GRANT SELECT ON %s TO herald_analyst', v.name);
        END IF;
    END LOOP;
END $$;
DROP TABLE herald_0010_views;

GRANT SELECT ON analyst.campaign_funnel, analyst.action_breakdown, analyst.feedback_text, analyst.delivery_problems,
                analyst.replies_over_time, analyst.config_refreshes, analyst.test_sends TO herald_analyst;
