-- Herald schema: a claim that PostgreSQL writes as a HOT update.
--
-- A claim sets a delivery's `claimed_by`, `status` and lease; an outcome sets
-- its status, error and times. 0011 left one index naming a column a claim
-- changes, `deliveries_claimed (claimed_by)`, so every claim wrote a new
-- entry into every index of the row (five per partition), while the outcome
-- write, which changes no indexed column, stayed on its page. Measured on a
-- durable PostgreSQL with a 1,000,000-device run (pg_stat_statements): the
-- claims took 44.7 s of statement time against 8.9 s for the outcome
-- writes of the same rows.
--
-- The index served one purpose: finding what a run holds in flight when it
-- ends (its unsent claims go back) and when another run declares it gone.
-- Both now read the partitions of the campaigns the run claimed from, which
-- each claim records on the run (`runs.claimed_campaigns`, and
-- `claimed_refreshes` for config refresh pushes, whose rows have no
-- campaign); a run claims from a handful of campaigns, each a partition.
-- Fencing needs no index: an outcome write names its deliveries by id.
-- (`herald migrate` adopts it when applied by hand with psql, by this test:)
-- applied-if: SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'public.runs'::regclass AND attname = 'claimed_campaigns' AND NOT attisdropped)

ALTER TABLE runs ADD COLUMN claimed_campaigns bigint[] NOT NULL DEFAULT '{}';
ALTER TABLE runs ADD COLUMN claimed_refreshes boolean NOT NULL DEFAULT false;

-- Runs under way while this applies: what they hold, read once through the
-- index before it goes.
UPDATE runs r SET
    claimed_campaigns = ARRAY(SELECT DISTINCT d.campaign_id FROM deliveries d
                              WHERE d.claimed_by = r.id AND d.status = 'in_flight' AND d.campaign_id IS NOT NULL
                              ORDER BY 1),
    claimed_refreshes = EXISTS (SELECT 1 FROM deliveries d
                                WHERE d.claimed_by = r.id AND d.status = 'in_flight' AND d.campaign_id IS NULL)
WHERE r.status = 'running';

DROP INDEX deliveries_claimed;

-- Room on each page for the claimed version of every row: a row is about
-- 120 bytes as the snapshot writes it and 150 once claimed (its run, lease
-- and apns-id set), so at the fillfactor of 0011 (60) only half of a page's
-- rows found room for their new version beside the old one, and the other
-- half were written to another page with a new entry in every index.
-- At 40 each claim stays on its page; the outcome write that follows finds
-- room again once PostgreSQL prunes the versions the claim left behind.
-- Measured on a 200,000-row partition (1,000-row updates, EXPLAIN ANALYZE):
-- 19-20 ms at 60, 8 ms at 40, for 43% more pages. A storage parameter of
-- every partition (a partition made later copies deliveries_default's).
DO $$
DECLARE
    p regclass;
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'deliveries'::regclass) = 'p' THEN
        FOR p IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'deliveries'::regclass LOOP
            EXECUTE format('ALTER TABLE %s SET (fillfactor = 40)', p);
        END LOOP;
    ELSE
        ALTER TABLE deliveries SET (fillfactor = 40);
    END IF;
END $$;
