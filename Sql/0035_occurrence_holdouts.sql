-- Herald schema: an occurrence of a recurring or on-entry campaign holds
-- out as its series does, and counts the same conversions
-- (docs/marketers.md, "Did it work?": "the same for every occurrence").
--
-- herald_occurrence (0023, 0032) copied neither holdout_pct nor
-- conversion_event and attribution_window into the occurrence, whose
-- snapshot reads them: every occurrence held out no one, and analysts saw
-- no lift for it. The function below copies them; occurrences made before
-- keep what they were made with.
-- applied-if: SELECT prosrc LIKE '%s.holdout_pct%' FROM pg_proc WHERE oid = to_regprocedure('public.herald_occurrence(bigint,integer,timestamptz,timestamptz)')

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
