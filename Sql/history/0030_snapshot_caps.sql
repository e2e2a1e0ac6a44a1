-- Herald schema: a snapshot's frequency-capped users, found once a snapshot.
--
-- The audience of a frequency-capped campaign (the default) leaves out the
-- users who got `settings.frequency_cap` campaigns within
-- `settings.frequency_window`. Each slice of a snapshot (0014) found them
-- again by aggregating every send of that window from the ledger: a
-- snapshot of ten million devices is 13 slices, and each read the whole
-- recent ledger (a million sends of the last hour: 1.2 s a slice,
-- BENCHMARKS.md, seventeenth sitting). The first slice now finds them and
-- keeps them here; the next slices read them back, and the last one
-- deletes the row. So the cap counts, for the whole audience, what
-- was sent before the snapshot began (as `snapshot_at` bounds what a series
-- has had), not what each slice happened to see.
--
-- applied-if: SELECT to_regclass('public.snapshot_caps') IS NOT NULL

CREATE TABLE snapshot_caps (
    campaign_id bigint PRIMARY KEY REFERENCES campaigns (id) ON DELETE CASCADE,
    -- The users at the cap when the snapshot's first slice was written.
    users bigint[] NOT NULL,
    found_at timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE snapshot_caps IS 'a campaign''s frequency-capped users, found by the first slice of its audience snapshot and read by the next ones; deleted with the last slice';

GRANT SELECT, INSERT, DELETE ON snapshot_caps TO herald_job;

-- A campaign that ends before its last slice (cancelled, failed, completed
-- by hand) leaves no row behind; one paused keeps it for when it resumes.
-- A slice that finds no row finds the users again (a campaign failed and
-- scheduled anew, one snapshotted in part before this migration).
CREATE FUNCTION herald_snapshot_caps_done() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    DELETE FROM snapshot_caps WHERE campaign_id = NEW.id;
    RETURN NULL;
END $$;

CREATE TRIGGER campaigns_snapshot_caps_done AFTER UPDATE OF status ON campaigns
FOR EACH ROW WHEN (NEW.status IN ('completed', 'cancelled', 'failed', 'archived'))
EXECUTE FUNCTION herald_snapshot_caps_done();
