-- Herald schema, part 3: leases on claimed deliveries, retries with a
-- backoff, runs that stop for an outage, operator controls that always work,
-- and an audit of every campaign status change.
--
-- Applied by `herald migrate`, or by hand:
--   psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -1 -f Sql/0003_leases_audit.sql
-- (`herald migrate` adopts it then, by this test:)
-- applied-if: SELECT to_regclass('public.campaign_status_changes') IS NOT NULL

-- A claimed (in_flight) delivery belongs to run `claimed_by` until
-- `lease_expires_at`; the live run renews its leases, another run takes a
-- delivery over only once its lease has expired.
ALTER TABLE deliveries ADD COLUMN lease_expires_at timestamptz;
UPDATE deliveries SET lease_expires_at = now() WHERE status = 'in_flight';
CREATE INDEX deliveries_leases ON deliveries (claimed_by) WHERE status = 'in_flight';
-- Joins from devices and replies to the ledger.
CREATE INDEX deliveries_device ON deliveries (device_id);
CREATE INDEX replies_delivery ON replies (delivery_id);

-- A run says it is alive by renewing its leases; `stopped` is a run that
-- ended early (an outage, a stop signal) and left work for the next one.
ALTER TABLE runs ADD COLUMN heartbeat_at timestamptz;
ALTER TABLE runs ADD COLUMN requeued bigint NOT NULL DEFAULT 0;
ALTER TABLE runs DROP CONSTRAINT "run status must be running, succeeded or failed";
ALTER TABLE runs ADD CONSTRAINT "run status must be running, succeeded, stopped or failed"
    CHECK (status IN ('running', 'succeeded', 'stopped', 'failed'));

-- When the audience was written. A campaign is snapshotted once, whether it
-- was resumed as `running` or `scheduled`, paused before or after.
ALTER TABLE campaigns ADD COLUMN snapshot_at timestamptz;
UPDATE campaigns SET snapshot_at = coalesce(started_at, now())
WHERE status NOT IN ('draft', 'scheduled') OR started_at IS NOT NULL;

-- Every change of a campaign's status: by a run, or by a marketer's UPDATE.
CREATE TABLE campaign_status_changes (
    id           bigserial PRIMARY KEY,
    campaign_id  bigint NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    from_status  text,
    to_status    text NOT NULL,
    changed_by   text NOT NULL,
    changed_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    reason       text
);
CREATE INDEX campaign_status_changes_campaign ON campaign_status_changes (campaign_id, id);

-- Who changed it: the database role, and the application name when the
-- client gave one (Herald's runs say `herald run <id>`). The reason is the
-- session's `herald.reason` setting when set (SET LOCAL herald.reason = '…'),
-- else the campaign's failure reason for a failure.
CREATE FUNCTION herald_campaign_status_audit() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    app text := nullif(current_setting('application_name', true), '');
    why text := nullif(current_setting('herald.reason', true), '');
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.status IS NOT DISTINCT FROM OLD.status THEN
        RETURN NULL;
    END IF;
    INSERT INTO campaign_status_changes (campaign_id, from_status, to_status, changed_by, reason)
    VALUES (NEW.id, CASE WHEN TG_OP = 'UPDATE' THEN OLD.status END, NEW.status,
            session_user || coalesce(' (' || app || ')', ''),
            coalesce(why, CASE WHEN NEW.status = 'failed' THEN NEW.failure_reason END));
    RETURN NULL;
END $$;
CREATE TRIGGER campaigns_status_audit AFTER INSERT OR UPDATE OF status ON campaigns
    FOR EACH ROW EXECUTE FUNCTION herald_campaign_status_audit();

-- Cancel means cancel, with or without a run on the campaign: what is queued
-- is cancelled at once. What a run holds in flight is cancelled when the run
-- gives it back unsent, or recorded as it went.
CREATE FUNCTION herald_campaign_cancelled() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE deliveries SET status = 'cancelled', last_error = 'campaign cancelled', updated_at = now()
    WHERE campaign_id = NEW.id AND status = 'queued';
    RETURN NULL;
END $$;
CREATE TRIGGER campaigns_cancelled AFTER UPDATE OF status ON campaigns
    FOR EACH ROW WHEN (NEW.status = 'cancelled' AND OLD.status IS DISTINCT FROM 'cancelled')
    EXECUTE FUNCTION herald_campaign_cancelled();
UPDATE deliveries d SET status = 'cancelled', last_error = 'campaign cancelled', updated_at = now()
FROM campaigns c WHERE c.id = d.campaign_id AND c.status = 'cancelled' AND d.status = 'queued';

-- Who paused, resumed, cancelled or failed which campaign, and when.
CREATE VIEW analyst.campaign_status_changes AS
SELECT h.campaign_id, c.name AS campaign, h.from_status, h.to_status, h.changed_by, h.changed_at, h.reason
FROM campaign_status_changes h JOIN campaigns c ON c.id = h.campaign_id;

-- The runs view with the new figures.
CREATE OR REPLACE VIEW analyst.runs AS
SELECT id AS run_id, started_at, finished_at, finished_at - started_at AS duration,
       host, dry_run, status, error, campaigns, targeted, sent, invalid, failed,
       retried, skipped, expired, requeued
FROM runs;

GRANT SELECT ON analyst.campaign_status_changes, analyst.runs TO herald_analyst;
