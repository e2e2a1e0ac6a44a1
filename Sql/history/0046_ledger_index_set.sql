-- Herald schema: the ledger's index set for rows written once (DESIGN, "The
-- ledger by ranges", Statements: the snapshot).
--
--   * one unique index on device and campaign instead of two indexes: the
--     snapshot's ON CONFLICT arbiter (which matches its columns in any
--     order) and, by its leading column, the probe for a device's campaign
--     rows. A campaign row pays two index entries (this and `(id)`), not
--     three;
--   * the other kinds' rows (config refreshes, test sends: few) keep a
--     device index of their own, partial, which holds no campaign row;
--   * a device deleted deletes its rows kind by kind, each through its index
--     (one statement over both kinds could use neither partial index);
--   * a campaign sent by ranges gets its partition at fillfactor 100: its
--     rows are written once, and a row-by-row campaign keeps the space its
--     two updates use in place (the DEFAULT partition's options, 0012).
-- applied-if: SELECT to_regclass('public.deliveries_device_campaign_once') IS NOT NULL

CREATE UNIQUE INDEX deliveries_device_campaign_once ON deliveries (device_id, campaign_id) WHERE kind = 'campaign';
CREATE INDEX deliveries_device_other ON deliveries (device_id) WHERE kind <> 'campaign';
DROP INDEX deliveries_campaign_once;
DROP INDEX deliveries_device;

CREATE OR REPLACE FUNCTION herald_device_deleted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    LOCK TABLE replies IN SHARE ROW EXCLUSIVE MODE;
    DELETE FROM replies WHERE device_id IN (SELECT id FROM gone);
    DELETE FROM deliveries WHERE kind = 'campaign' AND device_id IN (SELECT id FROM gone);
    DELETE FROM deliveries WHERE kind <> 'campaign' AND device_id IN (SELECT id FROM gone);
    RETURN NULL;
END $$;

-- 0010's function, with the fillfactor of a campaign whose rows are written
-- once. Runs as the schema owner (herald_job owns nothing).
DROP FUNCTION herald_delivery_partition(bigint);
CREATE FUNCTION herald_delivery_partition(campaign bigint, written_once boolean DEFAULT false) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp SET lock_timeout = '5s' AS $$
DECLARE
    part text := 'deliveries_c' || campaign;
    opts text := CASE WHEN written_once THEN 'fillfactor = 100'
                      ELSE (SELECT array_to_string(reloptions, ', ') FROM pg_class WHERE oid = 'public.deliveries_default'::regclass) END;
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
REVOKE ALL ON FUNCTION herald_delivery_partition(bigint, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald_delivery_partition(bigint, boolean) TO herald_job;
