-- Herald schema: a campaign's own recipients, with data for each
-- (docs/marketers.md, "Text made for each person"; DESIGN, "Personal text").
--
--   * campaign_recipients holds, per campaign, the users it goes to (by
--     their external id, as the marketer's own tables know them) and a JSON
--     object of data each, which templates read as recipient.<key>;
--   * campaigns.audience says whom a campaign reaches: its segment (as
--     before), or its recipients (narrowed by its segment when it has one);
--     Herald's rules (opted out, invalidated devices, holdouts, caps, quiet
--     hours) still apply;
--   * a change to the recipients of an approved campaign withdraws its
--     approval, as a change to its segment's rule does.
-- applied-if: SELECT to_regclass('public.campaign_recipients') IS NOT NULL

ALTER TABLE campaigns ADD COLUMN audience text NOT NULL DEFAULT 'segment'
    CONSTRAINT "campaign audience must be segment or recipients" CHECK (audience IN ('segment', 'recipients'));
-- Each occurrence of a series is a campaign of its own: a list belongs to one.
ALTER TABLE campaigns ADD CONSTRAINT "only a one-off campaign may reach a recipients list"
    CHECK (audience = 'segment' OR (repeat_unit IS NULL AND NOT on_segment_entry));

INSERT INTO campaign_approval_columns (column_name, written_by, withdraws, why) VALUES
    ('audience', 'marketer', 'segment', 'who receives it');
GRANT INSERT (audience), UPDATE (audience) ON campaigns TO herald_marketer;

-- Written by COPY or INSERT … SELECT; one index (the key), so a million rows
-- load at COPY's pace.
CREATE TABLE campaign_recipients (
    campaign_id bigint NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    external_id text   NOT NULL,
    data        jsonb  NOT NULL DEFAULT '{}',
    CONSTRAINT "recipient data must be a JSON object" CHECK (jsonb_typeof(data) = 'object'),
    PRIMARY KEY (campaign_id, external_id)
);

GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON campaign_recipients TO herald_marketer;
GRANT SELECT ON campaign_recipients TO herald_job;

-- A change to the recipients (or their data) of an approved, unfinished
-- campaign withdraws its approval: one statement, one withdrawal per campaign.
CREATE FUNCTION herald_recipients_approval_guard() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    v_ids bigint[];
    v_id bigint;
BEGIN
    -- Each branch names only the transition tables its trigger has.
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(DISTINCT campaign_id) INTO v_ids FROM new_rows;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(DISTINCT campaign_id) INTO v_ids FROM old_rows;
    ELSIF TG_OP = 'UPDATE' THEN
        SELECT array_agg(DISTINCT campaign_id) INTO v_ids
        FROM (SELECT campaign_id FROM new_rows UNION SELECT campaign_id FROM old_rows) x;
    END IF;
    FOR v_id IN
        SELECT c.id FROM campaigns c
        WHERE c.approved_at IS NOT NULL AND c.status IN ('draft', 'scheduled', 'running', 'paused')
          AND CASE WHEN TG_OP = 'TRUNCATE' THEN c.audience = 'recipients' ELSE c.id = ANY (v_ids) END
        ORDER BY c.id
    LOOP
        PERFORM herald_clear_approval(v_id, 'changed: recipients');
    END LOOP;
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION herald_recipients_approval_guard() FROM PUBLIC;
CREATE TRIGGER campaign_recipients_inserted AFTER INSERT ON campaign_recipients
REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_recipients_approval_guard();
CREATE TRIGGER campaign_recipients_updated AFTER UPDATE ON campaign_recipients
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_recipients_approval_guard();
CREATE TRIGGER campaign_recipients_deleted AFTER DELETE ON campaign_recipients
REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_recipients_approval_guard();
CREATE TRIGGER campaign_recipients_truncated AFTER TRUNCATE ON campaign_recipients
FOR EACH STATEMENT EXECUTE FUNCTION herald_recipients_approval_guard();
