-- Herald schema: approval before a campaign goes out (docs/marketers.md,
-- "Approval").
--
-- When the deployment requires it (settings.require_approval), a campaign
-- is due only once a member of herald_approver other than its author has
-- approved it (SELECT herald_approve(42)). Changing what it sends or when
-- (its text, media, segment, category, sealed or custom fields, variants,
-- schedule, expiry or pace) withdraws the approval. Every approval and
-- withdrawal is kept in campaign_approvals with who and when. The author is
-- the database role that wrote the campaign (session_user, as each person
-- logs in as a role of their own).
-- applied-if: SELECT to_regclass('public.campaign_approvals') IS NOT NULL

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'herald_approver') THEN
        BEGIN
            CREATE ROLE herald_approver NOLOGIN;
        EXCEPTION
            WHEN duplicate_object OR unique_violation THEN
                NULL; -- made by a migration of another database just now
            WHEN insufficient_privilege THEN
                RAISE EXCEPTION 'role herald_approver does not exist and % may not create roles', current_user
                    USING HINT = 'An administrator runs once per server: CREATE ROLE herald_approver NOLOGIN;';
        END;
    END IF;
END $$;

ALTER TABLE settings ADD COLUMN require_approval boolean NOT NULL DEFAULT false;

ALTER TABLE campaigns
    ADD COLUMN created_by  text NOT NULL DEFAULT session_user,
    ADD COLUMN approved_by text,
    ADD COLUMN approved_at timestamptz;

CREATE TABLE campaign_approvals (
    id           bigserial PRIMARY KEY,
    campaign_id  bigint NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    action       text NOT NULL CHECK (action IN ('approved', 'withdrawn')),
    by_role      text NOT NULL,
    at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    reason       text
);
CREATE INDEX campaign_approvals_campaign ON campaign_approvals (campaign_id, id);

-- Whether a campaign may go out as far as approval goes: the one rule, used
-- by the due campaigns' query and by every claim of its deliveries.
CREATE FUNCTION herald_approved(p_campaign bigint) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT NOT coalesce((SELECT require_approval FROM settings), false)
        OR EXISTS (SELECT 1 FROM campaigns WHERE id = p_campaign AND approved_at IS NOT NULL)
$$;

-- Approves a campaign, as a member of herald_approver who did not write it.
CREATE FUNCTION herald_approve(p_campaign bigint, p_reason text DEFAULT NULL) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    v_author text;
BEGIN
    SELECT created_by INTO v_author FROM campaigns WHERE id = p_campaign;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'campaign % does not exist', p_campaign;
    END IF;
    IF NOT pg_has_role(session_user, 'herald_approver', 'MEMBER') THEN
        RAISE EXCEPTION '% may not approve campaigns: only members of herald_approver may', session_user
            USING HINT = 'An administrator grants it: GRANT herald_approver TO ' || quote_ident(session_user) || ';';
    END IF;
    IF v_author = session_user THEN
        RAISE EXCEPTION 'campaign % was written by %: someone else must approve it', p_campaign, v_author;
    END IF;
    PERFORM set_config('herald.approving', 'on', true);
    UPDATE campaigns SET approved_by = session_user, approved_at = clock_timestamp() WHERE id = p_campaign;
    PERFORM set_config('herald.approving', 'off', true);
    INSERT INTO campaign_approvals (campaign_id, action, by_role, reason)
    VALUES (p_campaign, 'approved', session_user, p_reason);
END $$;

-- Clears a campaign's approval and records why; false when it had none.
CREATE FUNCTION herald_clear_approval(p_campaign bigint, p_reason text) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    v_rows integer;
BEGIN
    PERFORM set_config('herald.approving', 'on', true);
    UPDATE campaigns SET approved_by = NULL, approved_at = NULL WHERE id = p_campaign AND approved_at IS NOT NULL;
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    PERFORM set_config('herald.approving', 'off', true);
    IF v_rows > 0 THEN
        INSERT INTO campaign_approvals (campaign_id, action, by_role, reason)
        VALUES (p_campaign, 'withdrawn', session_user, p_reason);
    END IF;
    RETURN v_rows > 0;
END $$;
REVOKE ALL ON FUNCTION herald_clear_approval(bigint, text) FROM PUBLIC;

-- Withdraws an approval by hand (an approver or the author changed their mind).
CREATE FUNCTION herald_withdraw_approval(p_campaign bigint, p_reason text DEFAULT NULL) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    IF NOT pg_has_role(session_user, 'herald_approver', 'MEMBER')
       AND NOT EXISTS (SELECT 1 FROM campaigns WHERE id = p_campaign AND created_by = session_user) THEN
        RAISE EXCEPTION '% may not withdraw the approval of campaign %: only its author or a member of herald_approver may',
            session_user, p_campaign;
    END IF;
    PERFORM herald_clear_approval(p_campaign, coalesce(p_reason, 'withdrawn by hand'));
END $$;

-- An approval is given only through herald_approve; a change to what the
-- campaign sends or when withdraws it (recorded with what changed).
CREATE FUNCTION herald_campaign_approval_guard() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    v_changed text[] := ARRAY[]::text[];
BEGIN
    IF current_setting('herald.approving', true) IS DISTINCT FROM 'on' THEN
        IF TG_OP = 'INSERT' THEN
            IF NEW.approved_by IS NOT NULL OR NEW.approved_at IS NOT NULL THEN
                RAISE EXCEPTION 'a campaign is approved with SELECT herald_approve(id), by someone other than its author';
            END IF;
            NEW.created_by := session_user;
            RETURN NEW;
        END IF;
        IF NEW.approved_by IS DISTINCT FROM OLD.approved_by OR NEW.approved_at IS DISTINCT FROM OLD.approved_at THEN
            RAISE EXCEPTION 'a campaign is approved with SELECT herald_approve(%), by someone other than its author', OLD.id;
        END IF;
        IF NEW.created_by IS DISTINCT FROM OLD.created_by THEN
            RAISE EXCEPTION 'a campaign''s author (created_by) cannot be changed';
        END IF;
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.approved_at IS NOT NULL AND NEW.approved_at IS NOT NULL THEN
        IF NEW.content IS DISTINCT FROM OLD.content THEN v_changed := array_append(v_changed, 'content'); END IF;
        IF NEW.media_url IS DISTINCT FROM OLD.media_url OR NEW.media_type IS DISTINCT FROM OLD.media_type THEN
            v_changed := array_append(v_changed, 'media'); END IF;
        IF NEW.segment_id IS DISTINCT FROM OLD.segment_id THEN v_changed := array_append(v_changed, 'segment'); END IF;
        IF NEW.category_id IS DISTINCT FROM OLD.category_id THEN v_changed := array_append(v_changed, 'category'); END IF;
        IF NEW.sensitive IS DISTINCT FROM OLD.sensitive OR NEW.custom IS DISTINCT FROM OLD.custom THEN
            v_changed := array_append(v_changed, 'fields'); END IF;
        IF NEW.send_at IS DISTINCT FROM OLD.send_at OR NEW.expires_at IS DISTINCT FROM OLD.expires_at THEN
            v_changed := array_append(v_changed, 'schedule'); END IF;
        IF NEW.rate_per_minute IS DISTINCT FROM OLD.rate_per_minute OR NEW.finish_within IS DISTINCT FROM OLD.finish_within THEN
            v_changed := array_append(v_changed, 'pace'); END IF;
        IF cardinality(v_changed) > 0 THEN
            NEW.approved_by := NULL;
            NEW.approved_at := NULL;
            INSERT INTO campaign_approvals (campaign_id, action, by_role, reason)
            VALUES (OLD.id, 'withdrawn', session_user, 'changed: ' || array_to_string(v_changed, ', '));
        END IF;
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER campaigns_approval_guard BEFORE INSERT OR UPDATE ON campaigns
FOR EACH ROW EXECUTE FUNCTION herald_campaign_approval_guard();

-- A change to a campaign's variants withdraws its approval too.
CREATE FUNCTION herald_variant_approval_guard() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    PERFORM herald_clear_approval(CASE WHEN TG_OP = 'DELETE' THEN OLD.campaign_id ELSE NEW.campaign_id END,
                                  'changed: variants');
    RETURN NULL;
END $$;

CREATE TRIGGER campaign_variants_approval_guard AFTER INSERT OR UPDATE OR DELETE ON campaign_variants
FOR EACH ROW EXECUTE FUNCTION herald_variant_approval_guard();

GRANT SELECT ON campaign_approvals TO herald_job, herald_approver;
GRANT SELECT ON campaigns TO herald_approver;
-- Anyone may call the two functions: they say themselves who may not.
