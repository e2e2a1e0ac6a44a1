-- Herald schema: approval as a security boundary (docs/marketers.md,
-- "Approval"; docs/operators.md, "Database roles").
--
-- 0021 opened its approval guard on a session setting (herald.approving),
-- which any session may set: a marketer could approve their own campaign.
-- From here on:
--   * the guard opens only for a grant that herald_approve (and the other
--     functions that own the approval) write into approval_grants, a table
--     no client role may write, for their own transaction and campaign;
--   * one list, campaign_approval_columns, says for every column of
--     campaigns who writes it and whether a change withdraws the approval
--     (a column missing from it withdraws; ApprovalTests fails for it);
--   * a change to a segment's rule or to a category's actions and titles
--     withdraws the approval of every unfinished campaign that uses them;
--   * herald_marketer is the marketers' role: campaigns, variants, segments
--     and the catalogue, never approval, settings or the ledger;
--   * herald_admin is the only role (with the owner) that changes settings,
--     and every change is kept in settings_changes;
--   * herald_occurrence, restated for the grant, also copies the series'
--     holdout and conversion settings into each occurrence.
-- applied-if: SELECT to_regclass('public.campaign_approval_columns') IS NOT NULL

DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['herald_marketer', 'herald_admin'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN', r);
            EXCEPTION
                WHEN duplicate_object OR unique_violation THEN
                    NULL; -- made by a migration of another database just now
                WHEN insufficient_privilege THEN
                    RAISE EXCEPTION 'role % does not exist and % may not create roles', r, current_user
                        USING HINT = format('An administrator runs once per server: CREATE ROLE %I NOLOGIN;', r);
            END;
        END IF;
    END LOOP;
END $$;

-- The grants that open the guard: written and deleted by the functions that
-- own approval (SECURITY DEFINER, run as the schema's owner), each for its
-- own transaction. No role is granted anything on it.
CREATE TABLE approval_grants (
    xact        xid8   NOT NULL,
    campaign_id bigint NOT NULL,
    PRIMARY KEY (xact, campaign_id)
);
REVOKE ALL ON approval_grants FROM PUBLIC;

-- Tables only Herald's own functions write (they run as the schema's owner):
-- a row written by anyone else is refused, whatever an operator granted on
-- the tables. SECURITY INVOKER on purpose: current_user is who writes.
CREATE FUNCTION herald_owner_writes_only() RETURNS trigger
LANGUAGE plpgsql SET search_path = public, pg_temp AS $$
BEGIN
    IF NOT pg_has_role(current_user, (SELECT relowner FROM pg_class WHERE oid = TG_RELID), 'MEMBER') THEN
        RAISE EXCEPTION '% is written by Herald''s own functions only, not by %', TG_TABLE_NAME, current_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END $$;
CREATE TRIGGER approval_grants_owner_only BEFORE INSERT OR UPDATE OR DELETE ON approval_grants
FOR EACH ROW EXECUTE FUNCTION herald_owner_writes_only();
CREATE TRIGGER campaign_approvals_owner_only BEFORE INSERT OR UPDATE OR DELETE ON campaign_approvals
FOR EACH ROW EXECUTE FUNCTION herald_owner_writes_only();

CREATE FUNCTION herald_approval_open(p_campaign bigint) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT EXISTS (SELECT 1 FROM approval_grants WHERE xact = pg_current_xact_id() AND campaign_id = p_campaign)
$$;
REVOKE ALL ON FUNCTION herald_approval_open(bigint) FROM PUBLIC;

-- Every column of campaigns: who writes it (marketer: herald_marketer may
-- insert and update it; herald: only Herald's own functions and the job),
-- and what a change to it withdraws the approval as (NULL: it does not).
CREATE TABLE campaign_approval_columns (
    column_name text PRIMARY KEY,
    written_by  text NOT NULL CHECK (written_by IN ('marketer', 'herald')),
    withdraws   text,
    why         text NOT NULL
);
INSERT INTO campaign_approval_columns (column_name, written_by, withdraws, why) VALUES
    ('id',                   'herald',   'identity', 'the campaign''s key, never changed'),
    ('name',                 'marketer', NULL,       'a label for people; no device sees it'),
    ('kind',                 'marketer', 'content',  'shapes the payload'),
    ('status',               'marketer', NULL,       'a pause, a resume, a cancel or an archive keeps the approval'),
    ('segment_id',           'marketer', 'segment',  'who receives it'),
    ('content',              'marketer', 'content',  'the text devices show'),
    ('default_locale',       'marketer', 'content',  'which text a device without its language shows'),
    ('media_url',            'marketer', 'media',    'what devices show'),
    ('media_type',           'marketer', 'media',    'what devices show'),
    ('category_id',          'marketer', 'category', 'the buttons devices show'),
    ('custom',               'marketer', 'fields',   'data the app reads'),
    ('sensitive',            'marketer', 'fields',   'sealed data the app shows'),
    ('send_at',              'marketer', 'schedule', 'when it goes out'),
    ('expires_at',           'marketer', 'schedule', 'until when it goes out'),
    ('priority',             'marketer', 'delivery', 'how APNs delivers it'),
    ('collapse_id',          'marketer', 'delivery', 'which notification it replaces on the device'),
    ('thread_id',            'marketer', 'delivery', 'how devices group it'),
    ('interruption_level',   'marketer', 'delivery', 'whether it breaks through Focus'),
    ('relevance_score',      'marketer', 'delivery', 'how devices rank it'),
    ('sound',                'marketer', 'delivery', 'what devices play'),
    ('quiet_hours',          'marketer', 'audience', 'whether users are reached at night'),
    ('frequency_capped',     'marketer', 'audience', 'whether capped users are reached'),
    ('failure_reason',       'herald',   NULL,       'written by the run'),
    ('created_at',           'herald',   NULL,       'bookkeeping'),
    ('started_at',           'herald',   NULL,       'written by the run'),
    ('completed_at',         'herald',   NULL,       'written by the run'),
    ('snapshot_at',          'herald',   NULL,       'written by the run'),
    ('snapshot_through',     'herald',   NULL,       'written by the run'),
    ('rate_per_minute',      'marketer', 'pace',     'how fast it goes out'),
    ('finish_within',        'marketer', 'pace',     'how fast it goes out'),
    ('created_by',           'herald',   NULL,       'the author, set by the guard and never changed'),
    ('approved_by',          'herald',   NULL,       'the approval itself (herald_approve)'),
    ('approved_at',          'herald',   NULL,       'the approval itself (herald_approve)'),
    ('send_at_local',        'marketer', 'schedule', 'when it goes out'),
    ('local_missed',         'marketer', 'schedule', 'whether a missed local time still goes out'),
    ('repeat_unit',          'marketer', 'schedule', 'when it goes out again'),
    ('repeat_every',         'marketer', 'schedule', 'when it goes out again'),
    ('repeat_on',            'marketer', 'schedule', 'when it goes out again'),
    ('repeat_day',           'marketer', 'schedule', 'when it goes out again'),
    ('repeat_until',         'marketer', 'schedule', 'when it goes out again'),
    ('repeat_count',         'marketer', 'schedule', 'when it goes out again'),
    ('on_segment_entry',     'marketer', 'schedule', 'when it goes out'),
    ('resend_after',         'marketer', 'schedule', 'when it goes out again'),
    ('series_id',            'herald',   'series',   'set when an occurrence is made'),
    ('occurrence',           'herald',   'series',   'set when an occurrence is made'),
    ('open_until',           'herald',   'schedule', 'set when an occurrence is made'),
    ('resumed_at',           'herald',   NULL,       'written when a series resumes'),
    ('holdout_pct',          'marketer', 'audience', 'who is held out'),
    ('conversion_event',     'marketer', NULL,       'what analysts count; no device sees it'),
    ('attribution_window',   'marketer', NULL,       'what analysts count; no device sees it'),
    ('apps',                 'marketer', 'apps',     'which apps'' devices receive it');
GRANT SELECT ON campaign_approval_columns TO herald_marketer, herald_approver, herald_job;

-- Writes an approval's grant for this transaction (the functions below only).
CREATE FUNCTION herald_open_approval(p_campaign bigint) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    INSERT INTO approval_grants (xact, campaign_id) VALUES (pg_current_xact_id(), p_campaign)
    ON CONFLICT DO NOTHING
$$;
REVOKE ALL ON FUNCTION herald_open_approval(bigint) FROM PUBLIC;

CREATE FUNCTION herald_close_approval(p_campaign bigint) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    DELETE FROM approval_grants WHERE xact = pg_current_xact_id() AND campaign_id = p_campaign
$$;
REVOKE ALL ON FUNCTION herald_close_approval(bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION herald_approve(p_campaign bigint, p_reason text DEFAULT NULL) RETURNS void
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
            USING ERRCODE = 'insufficient_privilege', HINT = 'An administrator grants it: GRANT herald_approver TO ' || quote_ident(session_user) || ';';
    END IF;
    IF v_author = session_user THEN
        RAISE EXCEPTION 'campaign % was written by %: someone else must approve it', p_campaign, v_author
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    PERFORM herald_open_approval(p_campaign);
    UPDATE campaigns SET approved_by = session_user, approved_at = clock_timestamp() WHERE id = p_campaign;
    PERFORM herald_close_approval(p_campaign);
    INSERT INTO campaign_approvals (campaign_id, action, by_role, reason)
    VALUES (p_campaign, 'approved', session_user, p_reason);
END $$;

CREATE OR REPLACE FUNCTION herald_clear_approval(p_campaign bigint, p_reason text) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    v_rows integer;
BEGIN
    PERFORM herald_open_approval(p_campaign);
    UPDATE campaigns SET approved_by = NULL, approved_at = NULL WHERE id = p_campaign AND approved_at IS NOT NULL;
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    PERFORM herald_close_approval(p_campaign);
    IF v_rows > 0 THEN
        INSERT INTO campaign_approvals (campaign_id, action, by_role, reason)
        VALUES (p_campaign, 'withdrawn', session_user, p_reason);
    END IF;
    RETURN v_rows > 0;
END $$;
REVOKE ALL ON FUNCTION herald_clear_approval(bigint, text) FROM PUBLIC;

-- An occurrence is written by its series' author and approved as the series
-- is (0023's function, with the approval's grant), and holds out and counts
-- conversions as its series does: 0023's copied neither holdout_pct nor
-- conversion_event and attribution_window, so occurrences held out no one.
CREATE OR REPLACE FUNCTION herald_occurrence(p_series bigint, p_number integer, p_at timestamptz, p_open_until timestamptz DEFAULT NULL)
RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    s campaigns%ROWTYPE;
    v_id bigint;
    v_send_at timestamptz;
    v_local timestamp;
BEGIN
    SELECT * INTO s FROM campaigns WHERE id = p_series;
    IF NOT FOUND OR (s.repeat_unit IS NULL AND NOT s.on_segment_entry) THEN
        RAISE EXCEPTION 'campaign % is neither recurring nor on segment entry', p_series;
    END IF;
    IF s.send_at_local IS NOT NULL THEN
        v_local := p_at AT TIME ZONE 'UTC';
        v_send_at := v_local AT TIME ZONE 'Etc/GMT-14';
    ELSE
        v_send_at := p_at;
    END IF;
    INSERT INTO campaigns (name, kind, status, segment_id, content, default_locale, media_url, media_type,
                           category_id, custom, sensitive, send_at, send_at_local, local_missed, expires_at,
                           priority, collapse_id, thread_id, interruption_level, relevance_score, sound,
                           quiet_hours, frequency_capped, rate_per_minute, finish_within,
                           holdout_pct, conversion_event, attribution_window,
                           series_id, occurrence, open_until)
    VALUES (s.name || ' #' || p_number, s.kind, 'scheduled', s.segment_id, s.content, s.default_locale,
            s.media_url, s.media_type, s.category_id, s.custom, s.sensitive, v_send_at, v_local,
            s.local_missed,
            CASE WHEN s.on_segment_entry THEN s.expires_at
                 ELSE v_send_at + (s.expires_at - s.send_at) END,
            s.priority, s.collapse_id, s.thread_id, s.interruption_level, s.relevance_score, s.sound,
            s.quiet_hours, s.frequency_capped, s.rate_per_minute, s.finish_within,
            s.holdout_pct, s.conversion_event, s.attribution_window,
            p_series, p_number, CASE WHEN s.on_segment_entry THEN coalesce(p_open_until, 'infinity') END)
    ON CONFLICT (series_id, occurrence) WHERE series_id IS NOT NULL DO NOTHING
    RETURNING id INTO v_id;
    IF v_id IS NULL THEN
        RETURN NULL;
    END IF;
    INSERT INTO campaign_variants (campaign_id, name, share, content, media_url, media_type)
    SELECT v_id, name, share, content, media_url, media_type FROM campaign_variants WHERE campaign_id = p_series;
    -- Written by the series' author, approved as the series is.
    PERFORM herald_open_approval(v_id);
    UPDATE campaigns SET created_by = s.created_by, approved_by = s.approved_by, approved_at = s.approved_at
    WHERE id = v_id;
    PERFORM herald_close_approval(v_id);
    UPDATE campaigns SET status = 'running', started_at = coalesce(started_at, now())
    WHERE id = p_series AND status = 'scheduled';
    RETURN v_id;
END $$;

-- The guard: the approval columns and the author change only under a grant
-- of this transaction; a change to a column the list says withdraws (or to
-- one it does not name) withdraws the approval, recorded with what changed.
CREATE OR REPLACE FUNCTION herald_campaign_approval_guard() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    v_changed text[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.approved_by IS NOT NULL OR NEW.approved_at IS NOT NULL THEN
            RAISE EXCEPTION 'a campaign is approved with SELECT herald_approve(id), by someone other than its author'
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        NEW.created_by := session_user;
        RETURN NEW;
    END IF;
    IF NOT herald_approval_open(OLD.id) THEN
        IF NEW.approved_by IS DISTINCT FROM OLD.approved_by OR NEW.approved_at IS DISTINCT FROM OLD.approved_at THEN
            RAISE EXCEPTION 'a campaign is approved with SELECT herald_approve(%), by someone other than its author', OLD.id
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        IF NEW.created_by IS DISTINCT FROM OLD.created_by THEN
            RAISE EXCEPTION 'a campaign''s author (created_by) cannot be changed'
                USING ERRCODE = 'insufficient_privilege';
        END IF;
    END IF;
    IF OLD.approved_at IS NOT NULL AND NEW.approved_at IS NOT NULL THEN
        SELECT array_agg(DISTINCT coalesce(c.withdraws, n.key) ORDER BY coalesce(c.withdraws, n.key))
        INTO v_changed
        FROM jsonb_each(to_jsonb(NEW)) n
        JOIN jsonb_each(to_jsonb(OLD)) o ON o.key = n.key
        LEFT JOIN campaign_approval_columns c ON c.column_name = n.key
        WHERE n.value IS DISTINCT FROM o.value
          AND (c.column_name IS NULL OR c.withdraws IS NOT NULL);
        IF cardinality(v_changed) > 0 THEN
            NEW.approved_by := NULL;
            NEW.approved_at := NULL;
            INSERT INTO campaign_approvals (campaign_id, action, by_role, reason)
            VALUES (OLD.id, 'withdrawn', session_user, 'changed: ' || array_to_string(v_changed, ', '));
        END IF;
    END IF;
    RETURN NEW;
END $$;

-- What a campaign uses beyond its own row: its segment's rule, and its
-- category's buttons (the category, its actions and their titles). A change
-- there withdraws the approval of every unfinished campaign that uses it.
CREATE FUNCTION herald_withdraw_users_of(p_segment bigint, p_categories text[], p_reason text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    v_id bigint;
BEGIN
    FOR v_id IN
        SELECT id FROM campaigns
        WHERE approved_at IS NOT NULL AND status IN ('draft', 'scheduled', 'running', 'paused')
          AND (segment_id = p_segment OR category_id = ANY (p_categories))
        ORDER BY id
    LOOP
        PERFORM herald_clear_approval(v_id, p_reason);
    END LOOP;
END $$;
REVOKE ALL ON FUNCTION herald_withdraw_users_of(bigint, text[], text) FROM PUBLIC;

CREATE FUNCTION herald_segment_approval_guard() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    IF NEW.rule IS DISTINCT FROM OLD.rule THEN
        PERFORM herald_withdraw_users_of(OLD.id, NULL, 'changed: segment ' || OLD.name);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER segments_approval_guard AFTER UPDATE ON segments
FOR EACH ROW EXECUTE FUNCTION herald_segment_approval_guard();

CREATE FUNCTION herald_category_approval_guard() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    IF TG_TABLE_NAME = 'categories' THEN
        IF to_jsonb(NEW) IS DISTINCT FROM to_jsonb(OLD) THEN
            PERFORM herald_withdraw_users_of(NULL, ARRAY[OLD.id, NEW.id], 'changed: category ' || OLD.id);
        END IF;
    ELSIF TG_TABLE_NAME = 'category_actions' THEN
        PERFORM herald_withdraw_users_of(NULL,
            ARRAY[CASE WHEN TG_OP = 'INSERT' THEN NULL ELSE OLD.category_id END,
                  CASE WHEN TG_OP = 'DELETE' THEN NULL ELSE NEW.category_id END],
            'changed: category ' || CASE WHEN TG_OP = 'DELETE' THEN OLD.category_id ELSE NEW.category_id END);
    ELSE -- actions: its titles, kind and options show on every category that holds it
        IF to_jsonb(NEW) IS DISTINCT FROM to_jsonb(OLD) THEN
            PERFORM herald_withdraw_users_of(NULL,
                ARRAY(SELECT category_id FROM category_actions WHERE action_id IN (OLD.id, NEW.id)),
                'changed: action ' || OLD.id);
        END IF;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER categories_approval_guard AFTER UPDATE ON categories
FOR EACH ROW EXECUTE FUNCTION herald_category_approval_guard();
CREATE TRIGGER category_actions_approval_guard AFTER INSERT OR UPDATE OR DELETE ON category_actions
FOR EACH ROW EXECUTE FUNCTION herald_category_approval_guard();
CREATE TRIGGER actions_approval_guard AFTER UPDATE ON actions
FOR EACH ROW EXECUTE FUNCTION herald_category_approval_guard();

-- Settings: changed only by herald_admin's members and the owner, and each
-- change kept with who, when, and the old and new values.
CREATE TABLE settings_changes (
    id        bigserial PRIMARY KEY,
    at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    by_role   text NOT NULL,
    setting   text NOT NULL,
    old_value text,
    new_value text
);
GRANT SELECT ON settings_changes TO herald_admin;
CREATE TRIGGER settings_changes_owner_only BEFORE INSERT OR UPDATE OR DELETE ON settings_changes
FOR EACH ROW EXECUTE FUNCTION herald_owner_writes_only();

CREATE FUNCTION herald_settings_guard() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    v_owner name := (SELECT tableowner FROM pg_tables WHERE schemaname = 'public' AND tablename = 'settings');
BEGIN
    IF NOT pg_has_role(session_user, 'herald_admin', 'MEMBER') AND NOT pg_has_role(session_user, v_owner, 'MEMBER') THEN
        RAISE EXCEPTION '% may not change settings: only members of herald_admin may', session_user
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'An administrator grants it: GRANT herald_admin TO ' || quote_ident(session_user) || ';';
    END IF;
    INSERT INTO settings_changes (by_role, setting, old_value, new_value)
    SELECT session_user, n.key, o.value #>> '{}', n.value #>> '{}'
    FROM jsonb_each(to_jsonb(NEW)) n
    JOIN jsonb_each(CASE WHEN TG_OP = 'INSERT' THEN '{}'::jsonb ELSE to_jsonb(OLD) END) o ON o.key = n.key
    WHERE n.value IS DISTINCT FROM o.value;
    RETURN NEW;
END $$;
CREATE TRIGGER settings_guard BEFORE UPDATE ON settings
FOR EACH ROW EXECUTE FUNCTION herald_settings_guard();
GRANT SELECT, UPDATE ON settings TO herald_admin;

-- herald_marketer: campaigns (the columns the list gives marketers), their
-- variants, segments and the catalogue; reads what approval and the apps say.
GRANT USAGE ON SCHEMA public TO herald_marketer;
GRANT SELECT ON campaigns, campaign_variants, campaign_approvals, segments, actions, categories, category_actions,
                settings TO herald_marketer;
GRANT SELECT (name, display_name, topic) ON apps TO herald_marketer;
GRANT INSERT, UPDATE, DELETE ON campaign_variants, segments, actions, categories, category_actions TO herald_marketer;
GRANT DELETE ON campaigns TO herald_marketer;
GRANT USAGE, SELECT ON SEQUENCE campaigns_id_seq, segments_id_seq TO herald_marketer;
DO $$
DECLARE
    v_columns text;
BEGIN
    SELECT string_agg(quote_ident(column_name), ', ' ORDER BY column_name) INTO v_columns
    FROM campaign_approval_columns WHERE written_by = 'marketer';
    EXECUTE format('GRANT INSERT (%s), UPDATE (%s) ON campaigns TO herald_marketer', v_columns, v_columns);
END $$;

-- What a marketer's pause, cancel, archive or delete sets off in the ledger
-- (requeued rows cancelled, a history that forbids a delete) is done as the
-- owner: marketers neither read nor write the ledger themselves.
ALTER FUNCTION herald_campaign_archive() SECURITY DEFINER SET search_path = public, pg_temp;
ALTER FUNCTION herald_campaign_cancelled() SECURITY DEFINER SET search_path = public, pg_temp;
ALTER FUNCTION herald_campaign_delete_check() SECURITY DEFINER SET search_path = public, pg_temp;
