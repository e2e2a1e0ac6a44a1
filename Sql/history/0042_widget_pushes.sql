-- Herald schema: widget pushes (DESIGN, contract 10, "Widget pushes").
--
--   * widget_tokens: the token each device's widgets registered
--     (WidgetPushHandler, iOS 26);
--   * campaigns.widgets_push: when the campaign starts, its audience's
--     devices with a widget token get one `widgets` push, so a deals widget
--     reloads and shows it. The push is a campaign row of its own
--     (widgets_of), made once when the campaign starts, as a sale's steps
--     are: its own ledger partition gives each device the push once, with
--     every guarantee of an alert; it is approved as its campaign is, and
--     follows its pause, resume and cancel.
-- applied-if: SELECT to_regclass('public.widget_tokens') IS NOT NULL

CREATE TABLE widget_tokens (
    device_id  bigint PRIMARY KEY REFERENCES devices (id) ON DELETE CASCADE,
    token      text   NOT NULL
        CONSTRAINT "widget token must be hex, 64 to 200 characters" CHECK (token ~ '^[0-9a-f]{64,200}$'),
    updated_at timestamptz NOT NULL DEFAULT now()
);
GRANT SELECT, INSERT, UPDATE, DELETE ON widget_tokens TO herald_intake;
GRANT SELECT ON widget_tokens TO herald_job;

ALTER TABLE campaigns ADD COLUMN widgets_push boolean NOT NULL DEFAULT false;
ALTER TABLE campaigns ADD COLUMN widgets_of bigint REFERENCES campaigns (id) ON DELETE CASCADE;
ALTER TABLE campaigns ADD CONSTRAINT "only a one-off campaign sends a widget push"
    CHECK (NOT widgets_push OR (repeat_unit IS NULL AND NOT on_segment_entry AND widgets_of IS NULL AND sale_id IS NULL));
CREATE UNIQUE INDEX campaigns_widgets_once ON campaigns (widgets_of) WHERE widgets_of IS NOT NULL;
COMMENT ON COLUMN campaigns.widgets_push IS 'when it starts, the audience''s widgets reload (a widgets push to each device with a widget token)';
COMMENT ON COLUMN campaigns.widgets_of IS 'the campaign whose widget push this row is';

INSERT INTO campaign_approval_columns (column_name, written_by, withdraws, why) VALUES
    ('widgets_push', 'marketer', 'content', 'whether the app''s widgets reload when the campaign starts'),
    ('widgets_of',   'herald',   'series',  'set when a campaign''s widget push is made');
GRANT INSERT (widgets_push), UPDATE (widgets_push) ON campaigns TO herald_marketer;

-- A sale's step and a widget push are approved as their campaign is.
CREATE OR REPLACE FUNCTION herald_approved(p_campaign bigint) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT NOT coalesce((SELECT require_approval FROM settings), false)
        OR EXISTS (SELECT 1 FROM campaigns c
                   WHERE c.id = coalesce((SELECT coalesce(sale_id, widgets_of) FROM campaigns WHERE id = p_campaign), p_campaign)
                     AND c.approved_at IS NOT NULL)
$$;

-- The widget push of campaign p_campaign, due now, made once (a second
-- call makes nothing). Returns its id when this call made it.
CREATE FUNCTION herald_widget_push(p_campaign bigint) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    s campaigns%ROWTYPE;
    v_id bigint;
BEGIN
    SELECT * INTO s FROM campaigns WHERE id = p_campaign;
    IF NOT FOUND OR NOT s.widgets_push THEN
        RAISE EXCEPTION 'campaign % sends no widget push', p_campaign;
    END IF;
    INSERT INTO campaigns (name, kind, status, segment_id, content, default_locale, category_id, media_url, media_type,
                           send_at, expires_at, priority, quiet_hours, frequency_capped, apps, widgets_of, created_by)
    VALUES (s.name || ' widgets', s.kind, CASE WHEN s.status IN ('paused', 'cancelled') THEN s.status ELSE 'scheduled' END,
            s.segment_id, s.content, s.default_locale, s.category_id, s.media_url, s.media_type,
            now(), coalesce(s.expires_at, now() + interval '1 day'), 5, false, false, s.apps, p_campaign, s.created_by)
    ON CONFLICT (widgets_of) WHERE widgets_of IS NOT NULL DO NOTHING
    RETURNING id INTO v_id;
    RETURN v_id;
END $$;
REVOKE ALL ON FUNCTION herald_widget_push(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald_widget_push(bigint) TO herald_job;

-- A campaign's pause, resume and cancel hold for its widget push not finished.
CREATE FUNCTION herald_widgets_status_follows() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    IF NEW.status IN ('paused', 'cancelled') THEN
        UPDATE campaigns SET status = NEW.status
        WHERE widgets_of = NEW.id AND status IN ('scheduled', 'running', 'paused') AND status <> NEW.status;
    ELSIF OLD.status = 'paused' AND NEW.status IN ('scheduled', 'running', 'completed') THEN
        UPDATE campaigns SET status = 'scheduled' WHERE widgets_of = NEW.id AND status = 'paused';
    END IF;
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION herald_widgets_status_follows() FROM PUBLIC;
CREATE TRIGGER campaigns_widgets_status_follows AFTER UPDATE OF status ON campaigns
FOR EACH ROW WHEN (NEW.widgets_push AND OLD.status IS DISTINCT FROM NEW.status)
EXECUTE FUNCTION herald_widgets_status_follows();
