-- Herald schema: the ledger at a million rows a run. Measured on a 200,000-row
-- audience snapshot (EXPLAIN ANALYZE): the foreign keys of `deliveries` cost
-- 60% of the statement, one referential check per row and key (the campaign,
-- the device, the user, the run). The rows are written only from the
-- devices, users and runs they name (the snapshot's INSERT … SELECT joins
-- them; a claim sets `claimed_by` to its own run), so the checks prove
-- nothing the statements do not; what the keys also did on delete is done
-- here by triggers, once per statement:
--   * deleting a device (an erasure, or its user's) deletes its deliveries;
--   * deleting a campaign that has deliveries is refused (0006 already says
--     so, with the hint to archive it instead);
--   * runs are never deleted.
-- A snapshot that reads a device while another transaction deletes it can
-- still write that device's row; a claim then skips it ('device deleted').
-- (`herald migrate` adopts it when applied by hand with psql, by this test:)
-- applied-if: SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'devices_deleted_deliveries')

DO $$
DECLARE
    fk record;
BEGIN
    FOR fk IN
        SELECT conname FROM pg_constraint
        WHERE conrelid = 'deliveries'::regclass AND contype = 'f' AND conparentid = 0
          AND conkey::int2[] <@ ARRAY(SELECT attnum FROM pg_attribute
                                      WHERE attrelid = 'deliveries'::regclass
                                        AND attname IN ('campaign_id', 'device_id', 'user_id', 'claimed_by'))
    LOOP
        EXECUTE format('ALTER TABLE deliveries DROP CONSTRAINT %I', fk.conname);
    END LOOP;
END $$;

CREATE FUNCTION herald_device_deleted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    DELETE FROM deliveries WHERE device_id IN (SELECT id FROM gone);
    RETURN NULL;
END $$;
CREATE TRIGGER devices_deleted_deliveries AFTER DELETE ON devices
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION herald_device_deleted();

-- Updates that change no indexed column are HOT: PostgreSQL writes the new
-- row version on the same page and touches no index. A delivery is updated
-- twice (claimed, then its outcome); with the indexes of 0001–0008 both
-- updates rewrote every index, because `status` took part in four partial
-- indexes. Measured with a claim and two outcome writes per 1,000 deliveries:
-- 2.2x less database time with the layout below. No index now names a column
-- an outcome changes:
--   * claims walk the campaign's rows in ledger order from where the run's
--     last claim ended (`deliveries_campaign`), not through an index of
--     queued rows;
--   * a run's deliveries in flight are found through `claimed_by`, which an
--     outcome leaves as it is;
--   * a run's lease is one row, `runs.lease_expires_at`, renewed by the run;
--     an in-flight delivery whose run is no longer running or whose lease
--     lapsed may be claimed by another run;
--   * config refresh pushes still waiting carry `refresh_open`, which campaign
--     deliveries never set;
--   * the frequency cap reads the deliveries of the campaigns that may have
--     sent within the window.
DROP INDEX deliveries_pending;
DROP INDEX deliveries_recent_sent;
DROP INDEX deliveries_leases;
DROP INDEX deliveries_config_refresh_pending;
CREATE INDEX deliveries_campaign ON deliveries (campaign_id, id);
CREATE INDEX deliveries_claimed ON deliveries (claimed_by);

ALTER TABLE runs ADD COLUMN lease_expires_at timestamptz;
UPDATE runs r SET lease_expires_at = (SELECT max(d.lease_expires_at) FROM deliveries d WHERE d.claimed_by = r.id)
WHERE r.status = 'running';

ALTER TABLE deliveries ADD COLUMN refresh_open boolean;
UPDATE deliveries SET refresh_open = true WHERE kind = 'config_refresh' AND status IN ('queued', 'in_flight');
CREATE INDEX deliveries_refresh_open ON deliveries (id) WHERE refresh_open;

-- Room on each page for the next version of its rows: a storage parameter
-- of every partition (0010; a partition made later copies
-- deliveries_default's), or of the table when it is not partitioned.
DO $$
DECLARE
    p regclass;
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'deliveries'::regclass) = 'p' THEN
        FOR p IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'deliveries'::regclass LOOP
            EXECUTE format('ALTER TABLE %s SET (fillfactor = 60)', p);
        END LOOP;
    ELSE
        ALTER TABLE deliveries SET (fillfactor = 60);
    END IF;
END $$;

-- After a large snapshot the run asks for fresh statistics of the ledger:
-- a claim planned before them treats the new campaign as a handful of rows
-- (measured: 33 s for a first claim of 1,000 rows among 200,000). Runs
-- connect as herald_job, which may not ANALYZE: the function runs as the
-- schema owner.
CREATE FUNCTION herald_ledger_analyze(campaign bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    part regclass := to_regclass('public.deliveries_c' || campaign);
BEGIN
    IF part IS NOT NULL THEN
        EXECUTE format('ANALYZE %s', part);
    ELSE
        ANALYZE deliveries;
    END IF;
END $$;
REVOKE ALL ON FUNCTION herald_ledger_analyze(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald_ledger_analyze(bigint) TO herald_job;
