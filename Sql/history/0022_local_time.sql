-- Herald schema: a campaign sent at a local wall-clock time (docs/marketers.md,
-- "Local time").
--
-- send_at_local ('2026-12-01 09:00', no zone) sends each device when its
-- user's time zone reaches that time: the audience snapshot gives each row
-- that moment as its not_before (quiet hours and frequency caps apply as
-- ever), and send_at follows send_at_local as the first moment any zone
-- reaches it (UTC+14), so the campaign is due then. A device whose moment had
-- already passed when the campaign was written (created_at) goes out at once
-- (local_missed = 'send') or is skipped with its reason ('skip'). What is not
-- sent by expires_at expires as ever.
-- applied-if: SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'campaigns' AND column_name = 'send_at_local')

ALTER TABLE campaigns
    ADD COLUMN send_at_local timestamp without time zone,
    ADD COLUMN local_missed text NOT NULL DEFAULT 'send';

ALTER TABLE campaigns
    ADD CONSTRAINT "campaign local_missed must be send or skip" CHECK (local_missed IN ('send', 'skip'));

-- send_at follows send_at_local. Named to fire before campaigns_approval_guard
-- (a table's triggers fire in name order), so that moving send_at_local is a
-- change of schedule to the approval.
CREATE FUNCTION herald_campaign_local_send_at() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.send_at_local IS NOT NULL THEN
        NEW.send_at := NEW.send_at_local AT TIME ZONE 'Etc/GMT-14';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER campaigns_a_local_send_at BEFORE INSERT OR UPDATE ON campaigns
FOR EACH ROW EXECUTE FUNCTION herald_campaign_local_send_at();
