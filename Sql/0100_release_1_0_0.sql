-- Herald's schema as release 1.0.0 has it, in one file: the baseline.
--
-- It makes on an empty database exactly what the migrations 0001 to 0052
-- (kept for reading in Sql/history/) made one after another: the schemas,
-- the tables with their comments, sequences, defaults, keys and indexes (the
-- ledger `deliveries` with its two partitions), the foreign keys, the rows
-- the migrations inserted, the functions and procedures, the views (the
-- `analyst` schema), the triggers, the roles and their grants.
-- Tests/StoreTests/BaselineTests.swift holds it to that: a database made by
-- the history and one made by this file give the same Sql/schema.sql, the
-- same grants and the same rows.
--
-- A database made by the history (every file to 0052, by `herald migrate`
-- or by hand with psql) already has all of it: `herald migrate` adopts this
-- file there (records it without running it), by the line below, which asks
-- for a comment that 0052, the last file of the history, wrote.
-- applied-if: SELECT obj_description(to_regclass('public.campaigns'), 'pg_class') IS NOT NULL
--
-- Generated from a database migrated with the history (pg_dump --schema-only
-- --no-owner, with privileges) and regrouped to read from the top; see
-- Sql/README.md ("The 1.0.0 baseline"). Like every migration it is never
-- edited once released: a change is a new file numbered after 0100.

-- The functions below are made by name, and a body may call one made further
-- down or read a view made after it: as pg_dump does, PostgreSQL is asked to
-- check bodies when they run rather than when they are made. SET LOCAL lasts
-- until this file's transaction ends (herald migrate runs the file in one,
-- as `psql -1 -f` does), so the connection keeps its own setting.
SET LOCAL check_function_bodies = false;


-- ==========================================================================
-- Roles. They belong to the whole server, not to this database: each is
-- created only when it does not exist yet, tolerating another database's
-- migration creating it at the same moment. The role that migrates needs
-- CREATEROLE, or an administrator runs once per server:
--   CREATE ROLE herald_job NOLOGIN; (and so for each name below)
-- herald_job: the batch run; herald_intake: replies in, devices and the
-- notification config; herald_analyst: the analyst views only;
-- herald_approver: approves campaigns; herald_marketer: campaigns, segments
-- and the catalogue; herald_admin: the settings. People and processes log in
-- as roles of their own that are members of these (docs/operators.md,
-- "Database roles").
-- ==========================================================================

DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['herald_job', 'herald_intake', 'herald_analyst', 'herald_approver', 'herald_marketer', 'herald_admin'] LOOP
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


-- ==========================================================================
-- Schemas: public (PostgreSQL's) holds Herald's tables and functions;
-- analyst holds the read-only views for people who analyse campaigns.
-- ==========================================================================

CREATE SCHEMA analyst;


-- ==========================================================================
-- The functions that the tables' CHECK constraints call, first.
-- ==========================================================================

CREATE FUNCTION public.herald_are_public_keys(keys text[]) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT coalesce(bool_and(k IS NOT NULL AND k LIKE '-----BEGIN PUBLIC KEY-----%' AND k LIKE '%-----END PUBLIC KEY-----%'), true)
    FROM unnest(keys) k
$$;

CREATE FUNCTION public.herald_is_locale(tag text) RETURNS boolean
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $_$
    SELECT tag ~ '^[A-Za-z]{2,3}([-_][A-Za-z0-9]{1,8})*$'
$_$;

CREATE FUNCTION public.herald_is_time_zone(tz text) RETURNS boolean
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    PERFORM now() AT TIME ZONE tz;
    RETURN true;
EXCEPTION WHEN invalid_parameter_value THEN
    RETURN false;
END $$;


-- ==========================================================================
-- Tables, in the order the history created them, each with its comment,
-- sequences, defaults, keys and indexes.
-- ==========================================================================

-- settings

CREATE TABLE public.settings (
    id boolean DEFAULT true NOT NULL,
    frequency_cap integer DEFAULT 3 NOT NULL,
    frequency_window interval DEFAULT '24:00:00'::interval NOT NULL,
    quiet_hours_start time without time zone DEFAULT '22:00:00'::time without time zone NOT NULL,
    quiet_hours_end time without time zone DEFAULT '08:00:00'::time without time zone NOT NULL,
    require_approval boolean DEFAULT false NOT NULL,
    control_group_pct numeric(3,1) DEFAULT 0 NOT NULL,
    control_group_salt text DEFAULT 'control-1'::text NOT NULL,
    best_hour_days integer DEFAULT 60 NOT NULL,
    best_hour_min_events integer DEFAULT 3 NOT NULL,
    CONSTRAINT "best_hour_days must be from 7 to 365" CHECK (((best_hour_days >= 7) AND (best_hour_days <= 365))),
    CONSTRAINT "best_hour_min_events must be from 1 to 100" CHECK (((best_hour_min_events >= 1) AND (best_hour_min_events <= 100))),
    CONSTRAINT "control_group_pct must be from 0 to 20 (percent of users)" CHECK (((control_group_pct >= (0)::numeric) AND (control_group_pct <= (20)::numeric))),
    CONSTRAINT settings_frequency_cap_check CHECK ((frequency_cap > 0)),
    CONSTRAINT settings_id_check CHECK (id)
);

COMMENT ON TABLE public.settings IS 'The deployment''s settings, in one row: the frequency cap and its window, quiet hours, whether campaigns need approval, the global control group and the best-hour window. Every run reads it; only members of herald_admin and the owner change it, and settings_guard records each change in settings_changes.';

ALTER TABLE ONLY public.settings
    ADD CONSTRAINT settings_pkey PRIMARY KEY (id);

-- users

CREATE TABLE public.users (
    id bigint NOT NULL,
    external_id text NOT NULL,
    locale text DEFAULT 'en'::text NOT NULL,
    time_zone text DEFAULT 'UTC'::text NOT NULL,
    attributes jsonb DEFAULT '{}'::jsonb NOT NULL,
    opted_out_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT "user attributes must be a JSON object" CHECK ((jsonb_typeof(attributes) = 'object'::text)),
    CONSTRAINT "user time_zone must be a known zone name, e.g. Europe/Paris" CHECK (public.herald_is_time_zone(time_zone))
);

COMMENT ON TABLE public.users IS 'The audience: one row per person, by the external id the marketer''s own systems know them by, with their locale, time zone, attributes (what segment rules read) and opt-out. Deleting a user erases their devices, deliveries and replies.';

CREATE SEQUENCE public.users_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.users_id_seq OWNED BY public.users.id;

ALTER TABLE ONLY public.users ALTER COLUMN id SET DEFAULT nextval('public.users_id_seq'::regclass);

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_external_id_key UNIQUE (external_id);

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_pkey PRIMARY KEY (id);

-- devices

CREATE TABLE public.devices (
    id bigint NOT NULL,
    user_id bigint NOT NULL,
    token text NOT NULL,
    environment text DEFAULT 'production'::text NOT NULL,
    public_key text,
    key_id text,
    app_version text,
    last_seen_at timestamp with time zone,
    invalidated_at timestamp with time zone,
    invalid_reason text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    locale text,
    config_etag text,
    config_reported_at timestamp with time zone,
    registered_at timestamp with time zone,
    app text DEFAULT 'default'::text NOT NULL,
    CONSTRAINT "device config_etag must be 1 to 128 bytes" CHECK (((config_etag IS NULL) OR ((octet_length(config_etag) >= 1) AND (octet_length(config_etag) <= 128)))),
    CONSTRAINT "device environment must be production or sandbox" CHECK ((environment = ANY (ARRAY['production'::text, 'sandbox'::text]))),
    CONSTRAINT "device key_id must be 1 to 64 bytes" CHECK (((key_id IS NULL) OR ((octet_length(key_id) >= 1) AND (octet_length(key_id) <= 64)))),
    CONSTRAINT "device locale must be a BCP 47 tag such as en, fr or zh-Hans" CHECK (((locale IS NULL) OR public.herald_is_locale(locale))),
    CONSTRAINT "device public_key and key_id go together" CHECK (((public_key IS NULL) = (key_id IS NULL))),
    CONSTRAINT "device public_key must be base64 of a 32-byte X25519 key" CHECK (((public_key IS NULL) OR (public_key ~ '^[A-Za-z0-9+/]{43}=$'::text))),
    CONSTRAINT "device token must be lowercase hex, 64 to 200 characters" CHECK ((token ~ '^[0-9a-f]{64,200}$'::text))
);

COMMENT ON TABLE public.devices IS 'Each user''s devices as their app registered them: APNs token and environment, app, locale, app version, the notification-config ETag it reported, and the public key that seals sensitive fields. A device APNs called invalid keeps its row with invalidated_at set and is sent nothing more.';

CREATE SEQUENCE public.devices_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.devices_id_seq OWNED BY public.devices.id;

ALTER TABLE ONLY public.devices ALTER COLUMN id SET DEFAULT nextval('public.devices_id_seq'::regclass);

ALTER TABLE ONLY public.devices
    ADD CONSTRAINT devices_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.devices
    ADD CONSTRAINT devices_token_key UNIQUE (token);

CREATE INDEX devices_app ON public.devices USING btree (app) WHERE (app <> 'default'::text);

CREATE INDEX devices_user ON public.devices USING btree (user_id);

-- segments

CREATE TABLE public.segments (
    id bigint NOT NULL,
    name text NOT NULL,
    rule jsonb DEFAULT '{}'::jsonb NOT NULL,
    description text,
    CONSTRAINT "segment rule must be a JSON object" CHECK ((jsonb_typeof(rule) = 'object'::text))
);

COMMENT ON TABLE public.segments IS 'A marketer''s named rule over users and their devices (README, "Segments"); a campaign reaches the users its segment matches. A change to a rule withdraws the approval of the unfinished campaigns that use it.';

CREATE SEQUENCE public.segments_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.segments_id_seq OWNED BY public.segments.id;

ALTER TABLE ONLY public.segments ALTER COLUMN id SET DEFAULT nextval('public.segments_id_seq'::regclass);

ALTER TABLE ONLY public.segments
    ADD CONSTRAINT segments_name_key UNIQUE (name);

ALTER TABLE ONLY public.segments
    ADD CONSTRAINT segments_pkey PRIMARY KEY (id);

-- actions

CREATE TABLE public.actions (
    id text NOT NULL,
    title text NOT NULL,
    kind text DEFAULT 'button'::text NOT NULL,
    options integer DEFAULT 0 NOT NULL,
    text_button_title text,
    text_placeholder text,
    default_locale text DEFAULT 'en'::text NOT NULL,
    localized jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT "a text_input action needs text_button_title" CHECK (((kind <> 'text_input'::text) OR (text_button_title IS NOT NULL))),
    CONSTRAINT "action default_locale must be a BCP 47 tag such as en" CHECK (public.herald_is_locale(default_locale)),
    CONSTRAINT "action id must not be empty" CHECK ((id <> ''::text)),
    CONSTRAINT "action kind must be button or text_input" CHECK ((kind = ANY (ARRAY['button'::text, 'text_input'::text]))),
    CONSTRAINT "action options: 1 authRequired, 2 destructive, 4 foreground" CHECK (((options >= 0) AND ((options & (~ 7)) = 0))),
    CONSTRAINT "only text_input actions have text_button_title/placeholder" CHECK (((kind = 'text_input'::text) OR ((text_button_title IS NULL) AND (text_placeholder IS NULL))))
);

COMMENT ON TABLE public.actions IS 'The catalogue of notification actions (UNNotificationAction): a button or a text input, with its title (and text-input labels) in each locale. Categories list them; a reply names the action the user took.';

ALTER TABLE ONLY public.actions
    ADD CONSTRAINT actions_pkey PRIMARY KEY (id);

-- categories

CREATE TABLE public.categories (
    id text NOT NULL,
    options integer DEFAULT 0 NOT NULL,
    apps text[],
    CONSTRAINT "category id must not be empty" CHECK ((id <> ''::text)),
    CONSTRAINT "category options are bit 1 (customDismissAction)" CHECK ((options = ANY (ARRAY[0, 1])))
);

COMMENT ON TABLE public.categories IS 'The catalogue of notification categories (UNNotificationCategory) that the apps'' notification-config documents declare. A campaign''s category decides which buttons its notification shows and which actions a reply to it may name; a category is shared by every app (apps NULL) or belongs to the apps it names.';

ALTER TABLE ONLY public.categories
    ADD CONSTRAINT categories_pkey PRIMARY KEY (id);

-- category_actions

CREATE TABLE public.category_actions (
    category_id text NOT NULL,
    action_id text NOT NULL,
    "position" integer NOT NULL
);

COMMENT ON TABLE public.category_actions IS 'Which actions each category shows, in order, at most four (as iOS shows). A reply is accepted only for an action of its campaign''s category.';

ALTER TABLE ONLY public.category_actions
    ADD CONSTRAINT category_actions_category_id_position_key UNIQUE (category_id, "position");

ALTER TABLE ONLY public.category_actions
    ADD CONSTRAINT category_actions_pkey PRIMARY KEY (category_id, action_id);

-- campaigns

CREATE TABLE public.campaigns (
    id bigint NOT NULL,
    name text NOT NULL,
    kind text NOT NULL,
    status text DEFAULT 'draft'::text NOT NULL,
    segment_id bigint,
    content jsonb NOT NULL,
    default_locale text DEFAULT 'en'::text NOT NULL,
    media_url text,
    media_type text,
    category_id text,
    custom jsonb DEFAULT '{}'::jsonb NOT NULL,
    sensitive jsonb,
    send_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone,
    priority integer DEFAULT 10 NOT NULL,
    collapse_id text,
    thread_id text,
    interruption_level text,
    relevance_score double precision,
    sound text DEFAULT 'default'::text,
    quiet_hours boolean DEFAULT true NOT NULL,
    frequency_capped boolean DEFAULT true NOT NULL,
    failure_reason text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    started_at timestamp with time zone,
    completed_at timestamp with time zone,
    snapshot_at timestamp with time zone,
    snapshot_through bigint,
    rate_per_minute integer,
    finish_within interval,
    created_by text DEFAULT SESSION_USER NOT NULL,
    approved_by text,
    approved_at timestamp with time zone,
    send_at_local timestamp without time zone,
    local_missed text DEFAULT 'send'::text NOT NULL,
    repeat_unit text,
    repeat_every integer DEFAULT 1 NOT NULL,
    repeat_on text[],
    repeat_day integer,
    repeat_until timestamp with time zone,
    repeat_count integer,
    on_segment_entry boolean DEFAULT false NOT NULL,
    resend_after interval,
    series_id bigint,
    occurrence integer,
    open_until timestamp with time zone,
    resumed_at timestamp with time zone,
    holdout_pct numeric(3,1) DEFAULT 0 NOT NULL,
    conversion_event text,
    attribution_window interval DEFAULT '7 days'::interval NOT NULL,
    apps text[],
    audience text DEFAULT 'segment'::text NOT NULL,
    code_pool text,
    best_hour boolean DEFAULT false NOT NULL,
    live_activity jsonb,
    sale_id bigint,
    sale_step integer,
    widgets_push boolean DEFAULT false NOT NULL,
    widgets_of bigint,
    CONSTRAINT "a sale's step names its sale and its number (1 or more)" CHECK ((((sale_id IS NULL) = (sale_step IS NULL)) AND ((sale_step IS NULL) OR (sale_step >= 1)))),
    CONSTRAINT "an occurrence (series_id) neither repeats nor is on entry" CHECK (((series_id IS NULL) OR ((repeat_unit IS NULL) AND (NOT on_segment_entry) AND (occurrence >= 1)))),
    CONSTRAINT "campaign attribution_window must be from 1 hour to 90 days" CHECK (((attribution_window >= '01:00:00'::interval) AND (attribution_window <= '90 days'::interval))),
    CONSTRAINT "campaign audience must be segment or recipients" CHECK ((audience = ANY (ARRAY['segment'::text, 'recipients'::text]))),
    CONSTRAINT "campaign collapse_id must be at most 64 bytes" CHECK (((collapse_id IS NULL) OR ((octet_length(collapse_id) >= 1) AND (octet_length(collapse_id) <= 64)))),
    CONSTRAINT "campaign conversion_event: 1 to 100 characters, no spaces" CHECK (((conversion_event IS NULL) OR (conversion_event ~ '^[A-Za-z0-9_.:-]{1,100}$'::text))),
    CONSTRAINT "campaign custom must be a JSON object" CHECK ((jsonb_typeof(custom) = 'object'::text)),
    CONSTRAINT "campaign expires_at must be after send_at" CHECK (((expires_at IS NULL) OR (expires_at > send_at))),
    CONSTRAINT "campaign finish_within must be from 1 minute to 7 days" CHECK (((finish_within IS NULL) OR ((finish_within >= '00:01:00'::interval) AND (finish_within <= '7 days'::interval)))),
    CONSTRAINT "campaign holdout_pct must be from 0 to 50 (percent of users)" CHECK (((holdout_pct >= (0)::numeric) AND (holdout_pct <= (50)::numeric))),
    CONSTRAINT "campaign kind must be poster, flash_sale or feedback" CHECK ((kind = ANY (ARRAY['poster'::text, 'flash_sale'::text, 'feedback'::text]))),
    CONSTRAINT "campaign live_activity must be a JSON object" CHECK (((live_activity IS NULL) OR (jsonb_typeof(live_activity) = 'object'::text))),
    CONSTRAINT "campaign local_missed must be send or skip" CHECK ((local_missed = ANY (ARRAY['send'::text, 'skip'::text]))),
    CONSTRAINT "campaign media_type must be image, gif, audio or video" CHECK (((media_type IS NULL) OR (media_type = ANY (ARRAY['image'::text, 'gif'::text, 'audio'::text, 'video'::text])))),
    CONSTRAINT "campaign on_segment_entry is at send_at, not send_at_local" CHECK (((NOT on_segment_entry) OR (send_at_local IS NULL))),
    CONSTRAINT "campaign open_until is for occurrences of on-entry campaigns" CHECK (((open_until IS NULL) OR (series_id IS NOT NULL))),
    CONSTRAINT "campaign priority must be 10 (immediate) or 5 (low urgency)" CHECK ((priority = ANY (ARRAY[5, 10]))),
    CONSTRAINT "campaign rate_per_minute must be from 1 to 1000000 a minute" CHECK (((rate_per_minute IS NULL) OR ((rate_per_minute >= 1) AND (rate_per_minute <= 1000000)))),
    CONSTRAINT "campaign relevance_score must be between 0 and 1" CHECK (((relevance_score IS NULL) OR ((relevance_score >= (0)::double precision) AND (relevance_score <= (1)::double precision)))),
    CONSTRAINT "campaign repeat_count must be at least 1, with repeat_unit" CHECK (((repeat_count IS NULL) OR ((repeat_unit IS NOT NULL) AND (repeat_count >= 1)))),
    CONSTRAINT "campaign repeat_day is for repeat_unit month, from 1 to 31" CHECK (((repeat_day IS NULL) OR ((repeat_unit = 'month'::text) AND ((repeat_day >= 1) AND (repeat_day <= 31))))),
    CONSTRAINT "campaign repeat_every must be from 1 to 1000" CHECK (((repeat_every >= 1) AND (repeat_every <= 1000))),
    CONSTRAINT "campaign repeat_on is for repeat_unit week: mon, tue … sun" CHECK (((repeat_on IS NULL) OR ((repeat_unit = 'week'::text) AND (cardinality(repeat_on) >= 1) AND (repeat_on <@ ARRAY['mon'::text, 'tue'::text, 'wed'::text, 'thu'::text, 'fri'::text, 'sat'::text, 'sun'::text])))),
    CONSTRAINT "campaign repeat_unit must be minute, hour, day, week or month" CHECK (((repeat_unit IS NULL) OR (repeat_unit = ANY (ARRAY['minute'::text, 'hour'::text, 'day'::text, 'week'::text, 'month'::text])))),
    CONSTRAINT "campaign repeat_until must be after send_at, with repeat_unit" CHECK (((repeat_until IS NULL) OR ((repeat_unit IS NOT NULL) AND (repeat_until > send_at)))),
    CONSTRAINT "campaign repeats (repeat_unit) or is on_segment_entry, not both" CHECK (((repeat_unit IS NULL) OR (NOT on_segment_entry))),
    CONSTRAINT "campaign resend_after needs on_segment_entry, at least 1 minute" CHECK (((resend_after IS NULL) OR (on_segment_entry AND (resend_after >= '00:01:00'::interval)))),
    CONSTRAINT "campaign sensitive must be a JSON object" CHECK (((sensitive IS NULL) OR (jsonb_typeof(sensitive) = 'object'::text))),
    CONSTRAINT "campaign sets rate_per_minute or finish_within, not both" CHECK (((rate_per_minute IS NULL) OR (finish_within IS NULL))),
    CONSTRAINT "campaign status must be draft, scheduled, running, paused, …" CHECK ((status = ANY (ARRAY['draft'::text, 'scheduled'::text, 'running'::text, 'paused'::text, 'completed'::text, 'cancelled'::text, 'failed'::text, 'archived'::text]))),
    CONSTRAINT "interruption_level: passive/active/time-sensitive/critical" CHECK (((interruption_level IS NULL) OR (interruption_level = ANY (ARRAY['passive'::text, 'active'::text, 'time-sensitive'::text, 'critical'::text])))),
    CONSTRAINT "only a one-off campaign may reach a recipients list" CHECK (((audience = 'segment'::text) OR ((repeat_unit IS NULL) AND (NOT on_segment_entry)))),
    CONSTRAINT "only a one-off campaign sends a widget push" CHECK (((NOT widgets_push) OR ((repeat_unit IS NULL) AND (NOT on_segment_entry) AND (widgets_of IS NULL) AND (sale_id IS NULL)))),
    CONSTRAINT "only a one-off flash sale with an end runs as a Live Activity" CHECK (((live_activity IS NULL) OR ((kind = 'flash_sale'::text) AND (repeat_unit IS NULL) AND (NOT on_segment_entry) AND (expires_at IS NOT NULL))))
);

COMMENT ON TABLE public.campaigns IS 'Every campaign: what a marketer wrote (content, audience, schedule, pace, apps, approval) and the status runs move it through. Herald writes rows of its own here too, each sent as a campaign: the occurrences of a series, the steps of a Live Activity sale and widget pushes. A campaign with a history is archived, never deleted.';

COMMENT ON COLUMN public.campaigns.snapshot_through IS 'the last device id the audience snapshot has written while it is under way; NULL once complete';

COMMENT ON COLUMN public.campaigns.series_id IS 'the recurring or on-entry campaign this row is an occurrence of';

COMMENT ON COLUMN public.campaigns.open_until IS 'an on-entry occurrence takes new entrants at each run until then';

COMMENT ON COLUMN public.campaigns.resumed_at IS 'a series: when it was last resumed (moments before are skipped)';

COMMENT ON COLUMN public.campaigns.live_activity IS 'the sale as a Live Activity: title, state, updates, stock, relevance, dismiss_after (docs/marketers.md)';

COMMENT ON COLUMN public.campaigns.sale_id IS 'the Live Activity sale this row is a step of (an update or the end)';

COMMENT ON COLUMN public.campaigns.widgets_push IS 'when it starts, the audience''s widgets reload (a widgets push to each device with a widget token)';

COMMENT ON COLUMN public.campaigns.widgets_of IS 'the campaign whose widget push this row is';

CREATE SEQUENCE public.campaigns_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.campaigns_id_seq OWNED BY public.campaigns.id;

ALTER TABLE ONLY public.campaigns ALTER COLUMN id SET DEFAULT nextval('public.campaigns_id_seq'::regclass);

ALTER TABLE ONLY public.campaigns
    ADD CONSTRAINT campaigns_pkey PRIMARY KEY (id);

CREATE INDEX campaigns_due ON public.campaigns USING btree (send_at) WHERE (status = ANY (ARRAY['scheduled'::text, 'running'::text]));

CREATE UNIQUE INDEX campaigns_occurrence_once ON public.campaigns USING btree (series_id, occurrence) WHERE (series_id IS NOT NULL);

CREATE UNIQUE INDEX campaigns_sale_step_once ON public.campaigns USING btree (sale_id, sale_step) WHERE (sale_id IS NOT NULL);

CREATE INDEX campaigns_series ON public.campaigns USING btree (id) WHERE (((repeat_unit IS NOT NULL) OR on_segment_entry) AND (status = ANY (ARRAY['scheduled'::text, 'running'::text])));

CREATE UNIQUE INDEX campaigns_widgets_once ON public.campaigns USING btree (widgets_of) WHERE (widgets_of IS NOT NULL);

-- runs

CREATE TABLE public.runs (
    id bigint NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    host text NOT NULL,
    pid integer NOT NULL,
    dry_run boolean DEFAULT false NOT NULL,
    status text DEFAULT 'running'::text NOT NULL,
    error text,
    campaigns integer DEFAULT 0 NOT NULL,
    targeted bigint DEFAULT 0 NOT NULL,
    sent bigint DEFAULT 0 NOT NULL,
    invalid bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    retried bigint DEFAULT 0 NOT NULL,
    skipped bigint DEFAULT 0 NOT NULL,
    expired bigint DEFAULT 0 NOT NULL,
    heartbeat_at timestamp with time zone,
    requeued bigint DEFAULT 0 NOT NULL,
    lease_expires_at timestamp with time zone,
    claimed_campaigns bigint[] DEFAULT '{}'::bigint[] NOT NULL,
    claimed_refreshes boolean DEFAULT false NOT NULL,
    session_server timestamp with time zone,
    session_at timestamp with time zone,
    CONSTRAINT "run status must be running, succeeded, stopped or failed" CHECK ((status = ANY (ARRAY['running'::text, 'succeeded'::text, 'stopped'::text, 'failed'::text])))
);

COMMENT ON TABLE public.runs IS 'One row per herald run: where it runs, its status, its lease (lease_expires_at) and session lock, the campaigns it claimed from, and its figures. A run holds what it claimed only while it is running and its lease has not lapsed.';

CREATE SEQUENCE public.runs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.runs_id_seq OWNED BY public.runs.id;

ALTER TABLE ONLY public.runs ALTER COLUMN id SET DEFAULT nextval('public.runs_id_seq'::regclass);

ALTER TABLE ONLY public.runs
    ADD CONSTRAINT runs_pkey PRIMARY KEY (id);

-- replies

CREATE TABLE public.replies (
    id bigint NOT NULL,
    reply_id uuid NOT NULL,
    delivery_id bigint NOT NULL,
    campaign_id bigint NOT NULL,
    device_id bigint NOT NULL,
    user_id bigint NOT NULL,
    action text NOT NULL,
    text text,
    occurred_at timestamp with time zone NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    source text DEFAULT 'api'::text NOT NULL,
    delivery_kind text DEFAULT 'campaign'::text NOT NULL,
    CONSTRAINT "reply delivery_kind must be campaign or test" CHECK ((delivery_kind = ANY (ARRAY['campaign'::text, 'test'::text]))),
    CONSTRAINT "reply source must be api or ingest" CHECK ((source = ANY (ARRAY['api'::text, 'ingest'::text]))),
    CONSTRAINT "reply text is at most 2000 characters" CHECK (((text IS NULL) OR (char_length(text) <= 2000)))
);

COMMENT ON TABLE public.replies IS 'What users answered: one row per tap, button or typed answer, keyed by its delivery and the app''s reply_id so that a retried reply is stored once. Roles other than the owner store replies only through herald_store_checked_replies (which herald_commit_replies calls), which checks each against its delivery and its campaign''s category; replies outlive a prune of their ledger.';

CREATE SEQUENCE public.replies_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.replies_id_seq OWNED BY public.replies.id;

ALTER TABLE ONLY public.replies ALTER COLUMN id SET DEFAULT nextval('public.replies_id_seq'::regclass);

ALTER TABLE ONLY public.replies
    ADD CONSTRAINT replies_delivery_reply_id_key UNIQUE (delivery_id, reply_id);

ALTER TABLE ONLY public.replies
    ADD CONSTRAINT replies_pkey PRIMARY KEY (id);

CREATE INDEX replies_campaign ON public.replies USING btree (campaign_id, action);

-- campaign_status_changes

CREATE TABLE public.campaign_status_changes (
    id bigint NOT NULL,
    campaign_id bigint NOT NULL,
    from_status text,
    to_status text NOT NULL,
    changed_by text NOT NULL,
    changed_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    reason text
);

COMMENT ON TABLE public.campaign_status_changes IS 'The audit of every status a campaign took: from, to, which role (and application) changed it, when and why. Written only by the trigger campaigns_status_audit.';

CREATE SEQUENCE public.campaign_status_changes_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.campaign_status_changes_id_seq OWNED BY public.campaign_status_changes.id;

ALTER TABLE ONLY public.campaign_status_changes ALTER COLUMN id SET DEFAULT nextval('public.campaign_status_changes_id_seq'::regclass);

ALTER TABLE ONLY public.campaign_status_changes
    ADD CONSTRAINT campaign_status_changes_pkey PRIMARY KEY (id);

CREATE INDEX campaign_status_changes_campaign ON public.campaign_status_changes USING btree (campaign_id, id);

-- config_documents

CREATE TABLE public.config_documents (
    etag text NOT NULL,
    locale text NOT NULL,
    categories jsonb NOT NULL,
    first_seen_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT "config_documents categories must be a JSON object" CHECK ((jsonb_typeof(categories) = 'object'::text))
);

COMMENT ON TABLE public.config_documents IS 'Every notification-config document Herald has served or announced, by ETag, with the definition hash of each category in it. A device whose reported ETag holds the current definition of a campaign''s category needs no config refresh push before that campaign.';

ALTER TABLE ONLY public.config_documents
    ADD CONSTRAINT config_documents_pkey PRIMARY KEY (etag);

-- campaign_variants

CREATE TABLE public.campaign_variants (
    campaign_id bigint NOT NULL,
    name text NOT NULL,
    share integer NOT NULL,
    content jsonb NOT NULL,
    media_url text,
    media_type text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    best_hour boolean,
    CONSTRAINT "variant media_type goes with its media_url" CHECK (((media_type IS NULL) OR (media_url IS NOT NULL))),
    CONSTRAINT "variant media_type must be image, gif, audio or video" CHECK (((media_type IS NULL) OR (media_type = ANY (ARRAY['image'::text, 'gif'::text, 'audio'::text, 'video'::text])))),
    -- BETWEEN, as 0009 wrote it: the two comparisons pg_dump prints for it would
    -- be stored as one flat AND with the rest, an expression of another shape.
    CONSTRAINT "variant name is 1 to 40 characters, no control characters" CHECK (((char_length(name) BETWEEN 1 AND 40) AND (name !~ '[[:cntrl:]]'::text) AND (name = btrim(name)))),
    CONSTRAINT "variant share is a whole percent from 1 to 99" CHECK (((share >= 1) AND (share <= 99)))
);

COMMENT ON TABLE public.campaign_variants IS 'A campaign''s A/B variants (2 to 4), each with a whole-percent share of the audience: a variant replaces the campaign''s text in the locales it gives, and may replace its media or ask for best_hour. Each device is assigned one at the snapshot (herald_variant_bucket), and from then on the set cannot change.';

ALTER TABLE ONLY public.campaign_variants
    ADD CONSTRAINT campaign_variants_pkey PRIMARY KEY (campaign_id, name);

-- deliveries

CREATE TABLE public.deliveries (
    id bigint NOT NULL,
    campaign_id bigint,
    device_id bigint NOT NULL,
    user_id bigint NOT NULL,
    status text DEFAULT 'queued'::text NOT NULL,
    not_before timestamp with time zone DEFAULT now() NOT NULL,
    apns_id uuid,
    attempts integer DEFAULT 0 NOT NULL,
    last_error text,
    claimed_by bigint,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    sent_at timestamp with time zone,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    lease_expires_at timestamp with time zone,
    kind text DEFAULT 'campaign'::text NOT NULL,
    config_etag text,
    prompted_by bigint,
    variant text,
    refresh_open boolean,
    CONSTRAINT "campaign and test deliveries name a campaign, refreshes an ETag" CHECK ((((kind = ANY (ARRAY['campaign'::text, 'test'::text])) AND (campaign_id IS NOT NULL) AND (config_etag IS NULL)) OR ((kind = 'config_refresh'::text) AND (campaign_id IS NULL) AND (config_etag IS NOT NULL)))),
    CONSTRAINT "delivery kind must be campaign, config_refresh or test" CHECK ((kind = ANY (ARRAY['campaign'::text, 'config_refresh'::text, 'test'::text]))),
    CONSTRAINT "delivery status must be a known delivery status" CHECK ((status = ANY (ARRAY['queued'::text, 'in_flight'::text, 'sent'::text, 'invalid'::text, 'failed'::text, 'expired'::text, 'skipped'::text, 'cancelled'::text, 'held_out'::text, 'batch'::text])))
)
PARTITION BY LIST (campaign_id);

COMMENT ON TABLE public.deliveries IS 'The delivery ledger: one row per campaign and device, plus test sends and config refresh pushes, each with its status, attempts and APNs answer, so that each device gets each campaign once through kills and outages. Partitioned by campaign, so that herald prune drops a finished campaign''s rows whole; readers read it through delivery_status, which applies the spans of rows sent by ranges.';

CREATE SEQUENCE public.deliveries_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.deliveries_id_seq OWNED BY public.deliveries.id;

ALTER TABLE ONLY public.deliveries ALTER COLUMN id SET DEFAULT nextval('public.deliveries_id_seq'::regclass);

CREATE TABLE public.deliveries_default (
    id bigint DEFAULT nextval('public.deliveries_id_seq'::regclass) NOT NULL,
    campaign_id bigint,
    device_id bigint NOT NULL,
    user_id bigint NOT NULL,
    status text DEFAULT 'queued'::text NOT NULL,
    not_before timestamp with time zone DEFAULT now() NOT NULL,
    apns_id uuid,
    attempts integer DEFAULT 0 NOT NULL,
    last_error text,
    claimed_by bigint,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    sent_at timestamp with time zone,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    lease_expires_at timestamp with time zone,
    kind text DEFAULT 'campaign'::text NOT NULL,
    config_etag text,
    prompted_by bigint,
    variant text,
    refresh_open boolean,
    CONSTRAINT "campaign and test deliveries name a campaign, refreshes an ETag" CHECK ((((kind = ANY (ARRAY['campaign'::text, 'test'::text])) AND (campaign_id IS NOT NULL) AND (config_etag IS NULL)) OR ((kind = 'config_refresh'::text) AND (campaign_id IS NULL) AND (config_etag IS NOT NULL)))),
    CONSTRAINT "delivery kind must be campaign, config_refresh or test" CHECK ((kind = ANY (ARRAY['campaign'::text, 'config_refresh'::text, 'test'::text]))),
    CONSTRAINT "delivery status must be a known delivery status" CHECK ((status = ANY (ARRAY['queued'::text, 'in_flight'::text, 'sent'::text, 'invalid'::text, 'failed'::text, 'expired'::text, 'skipped'::text, 'cancelled'::text, 'held_out'::text, 'batch'::text])))
)
WITH (fillfactor='40');

COMMENT ON TABLE public.deliveries_default IS 'The ledger partition for campaign rows written before their campaign had a partition of its own; herald_delivery_partition moves them out when it makes one. A campaign''s partition copies its storage parameters unless its rows are written once.';

CREATE TABLE public.deliveries_refresh (
    id bigint DEFAULT nextval('public.deliveries_id_seq'::regclass) NOT NULL,
    campaign_id bigint,
    device_id bigint NOT NULL,
    user_id bigint NOT NULL,
    status text DEFAULT 'queued'::text NOT NULL,
    not_before timestamp with time zone DEFAULT now() NOT NULL,
    apns_id uuid,
    attempts integer DEFAULT 0 NOT NULL,
    last_error text,
    claimed_by bigint,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    sent_at timestamp with time zone,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    lease_expires_at timestamp with time zone,
    kind text DEFAULT 'campaign'::text NOT NULL,
    config_etag text,
    prompted_by bigint,
    variant text,
    refresh_open boolean,
    CONSTRAINT "campaign and test deliveries name a campaign, refreshes an ETag" CHECK ((((kind = ANY (ARRAY['campaign'::text, 'test'::text])) AND (campaign_id IS NOT NULL) AND (config_etag IS NULL)) OR ((kind = 'config_refresh'::text) AND (campaign_id IS NULL) AND (config_etag IS NOT NULL)))),
    CONSTRAINT "delivery kind must be campaign, config_refresh or test" CHECK ((kind = ANY (ARRAY['campaign'::text, 'config_refresh'::text, 'test'::text]))),
    CONSTRAINT "delivery status must be a known delivery status" CHECK ((status = ANY (ARRAY['queued'::text, 'in_flight'::text, 'sent'::text, 'invalid'::text, 'failed'::text, 'expired'::text, 'skipped'::text, 'cancelled'::text, 'held_out'::text, 'batch'::text])))
)
WITH (fillfactor='40');

COMMENT ON TABLE public.deliveries_refresh IS 'The ledger partition of the config refresh pushes, the rows of no campaign (campaign_id NULL); never pruned.';

ALTER TABLE ONLY public.deliveries ATTACH PARTITION public.deliveries_default DEFAULT;

ALTER TABLE ONLY public.deliveries ATTACH PARTITION public.deliveries_refresh FOR VALUES IN (NULL);

CREATE UNIQUE INDEX deliveries_config_refresh_once ON ONLY public.deliveries USING btree (campaign_id, device_id, config_etag) NULLS NOT DISTINCT WHERE (kind = 'config_refresh'::text);

CREATE INDEX deliveries_default_campaign ON public.deliveries_default USING btree (campaign_id, id);

CREATE UNIQUE INDEX deliveries_default_campaign_id_device_id_config_etag_idx ON public.deliveries_default USING btree (campaign_id, device_id, config_etag) NULLS NOT DISTINCT WHERE (kind = 'config_refresh'::text);

CREATE UNIQUE INDEX deliveries_device_campaign_once ON ONLY public.deliveries USING btree (device_id, campaign_id) WHERE (kind = 'campaign'::text);

CREATE UNIQUE INDEX deliveries_default_device_id_campaign_id_idx ON public.deliveries_default USING btree (device_id, campaign_id) WHERE (kind = 'campaign'::text);

CREATE INDEX deliveries_device_other ON ONLY public.deliveries USING btree (device_id) WHERE (kind <> 'campaign'::text);

CREATE INDEX deliveries_default_device_id_idx1 ON public.deliveries_default USING btree (device_id) WHERE (kind <> 'campaign'::text);

CREATE INDEX deliveries_refresh_open ON ONLY public.deliveries USING btree (id) WHERE refresh_open;

CREATE INDEX deliveries_default_id_idx ON public.deliveries_default USING btree (id) WHERE refresh_open;

CREATE INDEX deliveries_id ON ONLY public.deliveries USING btree (id);

CREATE INDEX deliveries_default_id_idx1 ON public.deliveries_default USING btree (id);

CREATE UNIQUE INDEX deliveries_refresh_campaign_id_device_id_config_etag_idx ON public.deliveries_refresh USING btree (campaign_id, device_id, config_etag) NULLS NOT DISTINCT WHERE (kind = 'config_refresh'::text);

CREATE UNIQUE INDEX deliveries_refresh_device_id_campaign_id_idx ON public.deliveries_refresh USING btree (device_id, campaign_id) WHERE (kind = 'campaign'::text);

CREATE INDEX deliveries_refresh_device_id_idx1 ON public.deliveries_refresh USING btree (device_id) WHERE (kind <> 'campaign'::text);

CREATE INDEX deliveries_refresh_id_idx ON public.deliveries_refresh USING btree (id) WHERE refresh_open;

CREATE INDEX deliveries_refresh_id_idx1 ON public.deliveries_refresh USING btree (id);

ALTER INDEX public.deliveries_config_refresh_once ATTACH PARTITION public.deliveries_default_campaign_id_device_id_config_etag_idx;

ALTER INDEX public.deliveries_device_campaign_once ATTACH PARTITION public.deliveries_default_device_id_campaign_id_idx;

ALTER INDEX public.deliveries_device_other ATTACH PARTITION public.deliveries_default_device_id_idx1;

ALTER INDEX public.deliveries_refresh_open ATTACH PARTITION public.deliveries_default_id_idx;

ALTER INDEX public.deliveries_id ATTACH PARTITION public.deliveries_default_id_idx1;

ALTER INDEX public.deliveries_config_refresh_once ATTACH PARTITION public.deliveries_refresh_campaign_id_device_id_config_etag_idx;

ALTER INDEX public.deliveries_device_campaign_once ATTACH PARTITION public.deliveries_refresh_device_id_campaign_id_idx;

ALTER INDEX public.deliveries_device_other ATTACH PARTITION public.deliveries_refresh_device_id_idx1;

ALTER INDEX public.deliveries_refresh_open ATTACH PARTITION public.deliveries_refresh_id_idx;

ALTER INDEX public.deliveries_id ATTACH PARTITION public.deliveries_refresh_id_idx1;

-- delivery_id_ranges

CREATE TABLE public.delivery_id_ranges (
    campaign_id bigint NOT NULL,
    ids int8range NOT NULL
);

COMMENT ON TABLE public.delivery_id_ranges IS 'Which campaign each range of delivery ids belongs to, recorded by every statement that writes ledger rows. The reply intake knows only a delivery''s id: with these ranges it reads that campaign''s partition instead of every partition (herald_reply_targets, herald_store_checked_replies). Kept after a prune.';

CREATE INDEX delivery_id_ranges_campaign ON public.delivery_id_ranges USING btree (campaign_id);

CREATE INDEX delivery_id_ranges_ids ON public.delivery_id_ranges USING gist (ids);

-- pruned_campaigns

CREATE TABLE public.pruned_campaigns (
    campaign_id bigint NOT NULL,
    pruned_at timestamp with time zone DEFAULT now() NOT NULL,
    deliveries bigint NOT NULL,
    exported_to text
);

COMMENT ON TABLE public.pruned_campaigns IS 'The campaigns whose ledger partition herald prune dropped: when, how many deliveries, and where they were exported. herald_delivery_partition refuses new deliveries for them.';

ALTER TABLE ONLY public.pruned_campaigns
    ADD CONSTRAINT pruned_campaigns_pkey PRIMARY KEY (campaign_id);

-- pruned_delivery_counts

CREATE TABLE public.pruned_delivery_counts (
    campaign_id bigint NOT NULL,
    status text NOT NULL,
    reason text,
    deliveries bigint NOT NULL,
    app text DEFAULT 'default'::text NOT NULL,
    variant text
);

COMMENT ON TABLE public.pruned_delivery_counts IS 'Of a pruned campaign, its campaign deliveries counted by app, variant, status and reason, so that the analyst views keep its figures.';

CREATE UNIQUE INDEX pruned_delivery_counts_once ON public.pruned_delivery_counts USING btree (campaign_id, app, variant, status, reason) NULLS NOT DISTINCT;

-- pruned_test_deliveries

CREATE TABLE public.pruned_test_deliveries (
    id bigint NOT NULL,
    campaign_id bigint,
    device_id bigint NOT NULL,
    user_id bigint NOT NULL,
    status text NOT NULL,
    not_before timestamp with time zone NOT NULL,
    apns_id uuid,
    attempts integer NOT NULL,
    last_error text,
    claimed_by bigint,
    created_at timestamp with time zone NOT NULL,
    sent_at timestamp with time zone,
    updated_at timestamp with time zone NOT NULL,
    lease_expires_at timestamp with time zone,
    kind text NOT NULL,
    config_etag text,
    prompted_by bigint,
    variant text
);

COMMENT ON TABLE public.pruned_test_deliveries IS 'Of a pruned campaign, its test sends kept whole (they are few), for analyst.test_sends.';

CREATE INDEX pruned_test_deliveries_campaign ON public.pruned_test_deliveries USING btree (campaign_id);

-- campaign_pace

CREATE TABLE public.campaign_pace (
    campaign_id bigint NOT NULL,
    next_slot timestamp with time zone NOT NULL,
    started_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    rate double precision DEFAULT 0 NOT NULL,
    rate_at timestamp with time zone DEFAULT '-infinity'::timestamp with time zone NOT NULL
);

COMMENT ON TABLE public.campaign_pace IS 'The pace of each paced campaign: its next free send slot and the rate in force. Every worker takes its send slots from this one row (herald_pace_reserve), so that together they never send faster than rate_per_minute or finish_within allows.';

ALTER TABLE ONLY public.campaign_pace
    ADD CONSTRAINT campaign_pace_pkey PRIMARY KEY (campaign_id);

-- campaign_approvals

CREATE TABLE public.campaign_approvals (
    id bigint NOT NULL,
    campaign_id bigint NOT NULL,
    action text NOT NULL,
    by_role text NOT NULL,
    at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    reason text,
    CONSTRAINT campaign_approvals_action_check CHECK ((action = ANY (ARRAY['approved'::text, 'withdrawn'::text])))
);

COMMENT ON TABLE public.campaign_approvals IS 'The history of approval: every approval and withdrawal of a campaign, by which role, when and why. Written only by Herald''s approval functions; campaign_approvals_owner_only refuses anyone else.';

CREATE SEQUENCE public.campaign_approvals_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.campaign_approvals_id_seq OWNED BY public.campaign_approvals.id;

ALTER TABLE ONLY public.campaign_approvals ALTER COLUMN id SET DEFAULT nextval('public.campaign_approvals_id_seq'::regclass);

ALTER TABLE ONLY public.campaign_approvals
    ADD CONSTRAINT campaign_approvals_pkey PRIMARY KEY (id);

CREATE INDEX campaign_approvals_campaign ON public.campaign_approvals USING btree (campaign_id, id);

-- receipts

CREATE TABLE public.receipts (
    delivery_id bigint NOT NULL,
    campaign_id bigint NOT NULL,
    device_id bigint NOT NULL,
    arrived_at timestamp with time zone NOT NULL,
    sealed_opened boolean,
    media_attached boolean,
    received_at timestamp with time zone DEFAULT now() NOT NULL
);

COMMENT ON TABLE public.receipts IS 'a notification arrived on its device, as the service extension said (contract 8)';

ALTER TABLE ONLY public.receipts
    ADD CONSTRAINT receipts_pkey PRIMARY KEY (delivery_id);

CREATE INDEX receipts_campaign ON public.receipts USING btree (campaign_id);

-- conversions

CREATE TABLE public.conversions (
    id bigint NOT NULL,
    user_id bigint NOT NULL,
    event text NOT NULL,
    occurred_at timestamp with time zone NOT NULL,
    amount numeric(14,2),
    currency text,
    idempotency_key text NOT NULL,
    source text DEFAULT 'sql'::text NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    code text,
    CONSTRAINT "conversion currency: ISO 4217 such as EUR, with an amount" CHECK ((((currency IS NULL) OR (currency ~ '^[A-Z]{3}$'::text)) AND ((currency IS NULL) OR (amount IS NOT NULL)))),
    CONSTRAINT "conversion event: 1 to 100 characters, no spaces" CHECK ((event ~ '^[A-Za-z0-9_.:-]{1,100}$'::text)),
    CONSTRAINT "conversion idempotency_key: 1 to 200 characters" CHECK (((length(idempotency_key) >= 1) AND (length(idempotency_key) <= 200)))
);

COMMENT ON TABLE public.conversions IS 'What users did that campaigns want to move (a purchase, a sign-up): posted by an app''s backend, inserted, or loaded by herald ingest-conversions, each stored once by its idempotency_key. analyst.lift compares the treated users'' conversions with the held-out users''; best hours count them too.';

CREATE SEQUENCE public.conversions_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.conversions_id_seq OWNED BY public.conversions.id;

ALTER TABLE ONLY public.conversions ALTER COLUMN id SET DEFAULT nextval('public.conversions_id_seq'::regclass);

ALTER TABLE ONLY public.conversions
    ADD CONSTRAINT conversions_once UNIQUE (idempotency_key);

ALTER TABLE ONLY public.conversions
    ADD CONSTRAINT conversions_pkey PRIMARY KEY (id);

CREATE INDEX conversions_user_event ON public.conversions USING btree (user_id, event, occurred_at);

-- apps

CREATE TABLE public.apps (
    name text NOT NULL,
    display_name text NOT NULL,
    topic text,
    registration_keys text[] DEFAULT '{}'::text[] NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT "app display_name must be 1 to 100 characters" CHECK (((char_length(display_name) >= 1) AND (char_length(display_name) <= 100))),
    CONSTRAINT "app name must be a-z then up to 31 of a-z, 0-9, - and _" CHECK ((name ~ '^[a-z][a-z0-9_-]{0,31}$'::text)),
    CONSTRAINT "app registration_keys must be PEM public keys" CHECK (public.herald_are_public_keys(registration_keys)),
    CONSTRAINT "app topic may be left out only by the app default" CHECK (((topic IS NOT NULL) OR (name = 'default'::text))),
    CONSTRAINT "app topic must be a bundle id such as com.example.shop" CHECK (((topic IS NULL) OR (topic ~ '^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$'::text)))
);

COMMENT ON TABLE public.apps IS 'the apps Herald pushes to: topic, credentials (app_credentials), registration keys';

ALTER TABLE ONLY public.apps
    ADD CONSTRAINT apps_pkey PRIMARY KEY (name);

ALTER TABLE ONLY public.apps
    ADD CONSTRAINT apps_topic_key UNIQUE (topic);

-- app_credentials

CREATE TABLE public.app_credentials (
    app text NOT NULL,
    name text NOT NULL,
    environment text DEFAULT 'any'::text NOT NULL,
    kind text NOT NULL,
    key_path text,
    key_id text,
    team_id text,
    certificate_path text,
    password_file text,
    private_key_path text,
    added_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    retired_at timestamp with time zone,
    CONSTRAINT "certificate credential needs certificate_path, no key" CHECK (((kind <> 'certificate'::text) OR ((certificate_path IS NOT NULL) AND (key_path IS NULL) AND (key_id IS NULL) AND (team_id IS NULL)))),
    CONSTRAINT "credential environment must be production, sandbox or any" CHECK ((environment = ANY (ARRAY['production'::text, 'sandbox'::text, 'any'::text]))),
    CONSTRAINT "credential kind must be token or certificate" CHECK ((kind = ANY (ARRAY['token'::text, 'certificate'::text]))),
    CONSTRAINT "credential name must be 1 to 64 of a-z, A-Z, 0-9, ., - and _" CHECK ((name ~ '^[A-Za-z0-9._-]{1,64}$'::text)),
    CONSTRAINT "credential paths must be absolute" CHECK (((COALESCE(key_path, '/'::text) ~~ '/%'::text) AND (COALESCE(certificate_path, '/'::text) ~~ '/%'::text) AND (COALESCE(password_file, '/'::text) ~~ '/%'::text) AND (COALESCE(private_key_path, '/'::text) ~~ '/%'::text))),
    CONSTRAINT "token credential needs key_path, key_id, team_id only" CHECK (((kind <> 'token'::text) OR ((key_path IS NOT NULL) AND (key_id ~ '^[A-Z0-9]{1,32}$'::text) AND (team_id ~ '^[A-Z0-9]{1,32}$'::text) AND (certificate_path IS NULL) AND (password_file IS NULL) AND (private_key_path IS NULL))))
);

COMMENT ON TABLE public.app_credentials IS 'APNs credentials of each app (files, never key material); the newest not retired is used';

ALTER TABLE ONLY public.app_credentials
    ADD CONSTRAINT app_credentials_pkey PRIMARY KEY (app, name);

-- snapshot_caps

CREATE TABLE public.snapshot_caps (
    campaign_id bigint NOT NULL,
    users bigint[] NOT NULL,
    found_at timestamp with time zone DEFAULT now() NOT NULL
);

COMMENT ON TABLE public.snapshot_caps IS 'a campaign''s frequency-capped users, found by the first slice of its audience snapshot and read by the next ones; deleted with the last slice';

ALTER TABLE ONLY public.snapshot_caps
    ADD CONSTRAINT snapshot_caps_pkey PRIMARY KEY (campaign_id);

-- approval_grants

CREATE TABLE public.approval_grants (
    xact xid8 NOT NULL,
    campaign_id bigint NOT NULL
);

COMMENT ON TABLE public.approval_grants IS 'The grants that open herald_campaign_approval_guard for one campaign within one transaction. Written and deleted only by the functions that own approval (herald_open_approval, herald_close_approval), so that no client role can approve a campaign by writing its columns.';

ALTER TABLE ONLY public.approval_grants
    ADD CONSTRAINT approval_grants_pkey PRIMARY KEY (xact, campaign_id);

-- campaign_approval_columns

CREATE TABLE public.campaign_approval_columns (
    column_name text NOT NULL,
    written_by text NOT NULL,
    withdraws text,
    why text NOT NULL,
    CONSTRAINT campaign_approval_columns_written_by_check CHECK ((written_by = ANY (ARRAY['marketer'::text, 'herald'::text])))
);

COMMENT ON TABLE public.campaign_approval_columns IS 'For every column of campaigns: who writes it (a marketer, or Herald itself) and what a change to it withdraws the approval as (NULL: nothing). herald_campaign_approval_guard and herald_marketer''s column grants follow it; a change to a column missing from it withdraws the approval.';

ALTER TABLE ONLY public.campaign_approval_columns
    ADD CONSTRAINT campaign_approval_columns_pkey PRIMARY KEY (column_name);

-- settings_changes

CREATE TABLE public.settings_changes (
    id bigint NOT NULL,
    at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    by_role text NOT NULL,
    setting text NOT NULL,
    old_value text,
    new_value text
);

COMMENT ON TABLE public.settings_changes IS 'Every change to settings: which setting, its old and new value, which role and when. Written only by the trigger settings_guard.';

CREATE SEQUENCE public.settings_changes_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.settings_changes_id_seq OWNED BY public.settings_changes.id;

ALTER TABLE ONLY public.settings_changes ALTER COLUMN id SET DEFAULT nextval('public.settings_changes_id_seq'::regclass);

ALTER TABLE ONLY public.settings_changes
    ADD CONSTRAINT settings_changes_pkey PRIMARY KEY (id);

-- pruned_answered_deliveries

CREATE TABLE public.pruned_answered_deliveries (
    id bigint NOT NULL,
    campaign_id bigint NOT NULL,
    variant text,
    sent_at timestamp with time zone
);

COMMENT ON TABLE public.pruned_answered_deliveries IS 'of a pruned campaign, each campaign delivery a receipt or a reply refers to';

ALTER TABLE ONLY public.pruned_answered_deliveries
    ADD CONSTRAINT pruned_answered_deliveries_pkey PRIMARY KEY (id);

CREATE INDEX pruned_answered_deliveries_campaign ON public.pruned_answered_deliveries USING btree (campaign_id);

-- pruned_sent_minutes

CREATE TABLE public.pruned_sent_minutes (
    campaign_id bigint NOT NULL,
    minute timestamp with time zone,
    sent bigint NOT NULL,
    first_sent timestamp with time zone,
    last_sent timestamp with time zone
);

COMMENT ON TABLE public.pruned_sent_minutes IS 'of a pruned campaign, its sent deliveries per minute of sent_at';

CREATE UNIQUE INDEX pruned_sent_minutes_once ON public.pruned_sent_minutes USING btree (campaign_id, minute) NULLS NOT DISTINCT;

-- pruned_lift_assignments

CREATE TABLE public.pruned_lift_assignments (
    campaign_id bigint NOT NULL,
    user_id bigint NOT NULL,
    treated boolean NOT NULL,
    variant text,
    assigned_at timestamp with time zone NOT NULL
);

COMMENT ON TABLE public.pruned_lift_assignments IS 'of a pruned campaign that held users out, each user''s arm as analyst.lift reads it';

ALTER TABLE ONLY public.pruned_lift_assignments
    ADD CONSTRAINT pruned_lift_assignments_pkey PRIMARY KEY (campaign_id, user_id);

CREATE INDEX pruned_lift_assignments_user ON public.pruned_lift_assignments USING btree (user_id);

-- campaign_recipients

CREATE TABLE public.campaign_recipients (
    campaign_id bigint NOT NULL,
    external_id text NOT NULL,
    data jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT "recipient data must be a JSON object" CHECK ((jsonb_typeof(data) = 'object'::text))
);

COMMENT ON TABLE public.campaign_recipients IS 'A campaign''s own list of recipients, by the users'' external ids, each with a JSON object of data its templates read as recipient.<key>; used when campaigns.audience is ''recipients''. A change to the list withdraws the campaign''s approval.';

ALTER TABLE ONLY public.campaign_recipients
    ADD CONSTRAINT campaign_recipients_pkey PRIMARY KEY (campaign_id, external_id);

-- code_pools

CREATE TABLE public.code_pools (
    name text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT "code pool name: 1 to 100 characters, no spaces" CHECK ((name ~ '^[A-Za-z0-9_.:-]{1,100}$'::text))
);

COMMENT ON TABLE public.code_pools IS 'Named pools of codes handed out once (coupons, vouchers); a campaign that names one in campaigns.code_pool gives each user it reaches one code.';

ALTER TABLE ONLY public.code_pools
    ADD CONSTRAINT code_pools_pkey PRIMARY KEY (name);

-- pool_codes

CREATE TABLE public.pool_codes (
    pool text NOT NULL,
    code text NOT NULL,
    campaign_id bigint,
    user_id bigint,
    drawn_at timestamp with time zone,
    CONSTRAINT "a code is 1 to 200 characters" CHECK (((length(code) >= 1) AND (length(code) <= 200))),
    CONSTRAINT "a drawn code names its campaign, user and time" CHECK ((((campaign_id IS NULL) = (user_id IS NULL)) AND ((campaign_id IS NULL) = (drawn_at IS NULL))))
);

COMMENT ON TABLE public.pool_codes IS 'The codes of each pool, and who drew each: the run writes the campaign, user and time when it gives a code, so that a code goes to one user only and a user gets the same code on each device. A change to a pool''s codes withdraws the approval of the campaigns that draw from it.';

ALTER TABLE ONLY public.pool_codes
    ADD CONSTRAINT pool_codes_pkey PRIMARY KEY (pool, code);

CREATE INDEX pool_codes_free ON public.pool_codes USING btree (pool, code) WHERE (campaign_id IS NULL);

CREATE UNIQUE INDEX pool_codes_one_per_user ON public.pool_codes USING btree (campaign_id, user_id);

-- push_to_start_tokens

CREATE TABLE public.push_to_start_tokens (
    device_id bigint NOT NULL,
    attributes_type text NOT NULL,
    token text NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT "push-to-start attributes_type must be HeraldSaleAttributes" CHECK ((attributes_type = 'HeraldSaleAttributes'::text)),
    CONSTRAINT "push-to-start token must be hex, 64 to 200 characters" CHECK ((token ~ '^[0-9a-f]{64,200}$'::text))
);

COMMENT ON TABLE public.push_to_start_tokens IS 'Each device''s push-to-start token for Live Activity sales, as its app registered it; a sale''s start reaches the device through it.';

ALTER TABLE ONLY public.push_to_start_tokens
    ADD CONSTRAINT push_to_start_tokens_pkey PRIMARY KEY (device_id, attributes_type);

-- live_activities

CREATE TABLE public.live_activities (
    campaign_id bigint NOT NULL,
    device_id bigint NOT NULL,
    update_token text,
    channel_id text,
    started_by text NOT NULL,
    confirmed_step integer,
    confirmed_at timestamp with time zone,
    registered_at timestamp with time zone DEFAULT now() NOT NULL,
    ended_at timestamp with time zone,
    CONSTRAINT "activity channel_id must be base64" CHECK ((channel_id ~ '^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{4}|[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)$'::text)),
    CONSTRAINT "activity confirmed_step must be 0 or more" CHECK ((confirmed_step >= 0)),
    CONSTRAINT "activity started_by must be push or app" CHECK ((started_by = ANY (ARRAY['push'::text, 'app'::text]))),
    CONSTRAINT "activity update_token must be hex, 64 to 200 characters" CHECK ((update_token ~ '^[0-9a-f]{64,200}$'::text)),
    CONSTRAINT "an activity has an update token or a channel, not both" CHECK (((update_token IS NULL) <> (channel_id IS NULL)))
);

COMMENT ON TABLE public.live_activities IS 'Each Live Activity of a sale running on a device: its update token or broadcast channel, how it started, and the step the device last confirmed showing. Runs send a sale''s steps to them; analysts count what devices confirmed.';

COMMENT ON COLUMN public.live_activities.channel_id IS 'the broadcast channel the activity listens on, base64 of any size as APNs made it';

ALTER TABLE ONLY public.live_activities
    ADD CONSTRAINT live_activities_pkey PRIMARY KEY (campaign_id, device_id);

-- sale_stock

CREATE TABLE public.sale_stock (
    campaign_id bigint NOT NULL,
    stock_left integer NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT "sale stock_left must be 0 or more" CHECK ((stock_left >= 0))
);

COMMENT ON TABLE public.sale_stock IS 'The marketer''s own system''s count of what is left of a Live Activity sale, which the sale''s pushes show as stockLeft when its live_activity takes the stock from this table.';

ALTER TABLE ONLY public.sale_stock
    ADD CONSTRAINT sale_stock_pkey PRIMARY KEY (campaign_id);

-- activity_channels

CREATE TABLE public.activity_channels (
    campaign_id bigint NOT NULL,
    app text NOT NULL,
    environment text NOT NULL,
    channel_id text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    deleted_at timestamp with time zone,
    CONSTRAINT "channel environment must be production or sandbox" CHECK ((environment = ANY (ARRAY['production'::text, 'sandbox'::text]))),
    CONSTRAINT "channel_id must not be empty" CHECK ((channel_id <> ''::text))
);

COMMENT ON TABLE public.activity_channels IS 'the broadcast channels Herald made for a Live Activity sale (one per app and environment)';

COMMENT ON COLUMN public.activity_channels.channel_id IS 'the id APNs answered (apns-channel-id), recorded as it came so the channel is always deleted';

ALTER TABLE ONLY public.activity_channels
    ADD CONSTRAINT activity_channels_pkey PRIMARY KEY (campaign_id, app, environment);

-- channel_pushes

CREATE TABLE public.channel_pushes (
    campaign_id bigint NOT NULL,
    app text NOT NULL,
    environment text NOT NULL,
    channel_id text NOT NULL,
    status text DEFAULT 'queued'::text NOT NULL,
    claimed_by bigint,
    attempts integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone DEFAULT now() NOT NULL,
    apns_request_id uuid,
    sent_at timestamp with time zone,
    last_error text,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT "channel push status: queued, in_flight, sent, failed or expired" CHECK ((status = ANY (ARRAY['queued'::text, 'in_flight'::text, 'sent'::text, 'failed'::text, 'expired'::text])))
);

COMMENT ON TABLE public.channel_pushes IS 'a sale''s update or end sent once to each of its channels (the step''s campaign row)';

ALTER TABLE ONLY public.channel_pushes
    ADD CONSTRAINT channel_pushes_pkey PRIMARY KEY (campaign_id, app, environment);

-- widget_tokens

CREATE TABLE public.widget_tokens (
    device_id bigint NOT NULL,
    token text NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT "widget token must be hex, 64 to 200 characters" CHECK ((token ~ '^[0-9a-f]{64,200}$'::text))
);

COMMENT ON TABLE public.widget_tokens IS 'Each device''s widget push token, as its app registered it. A campaign with widgets_push sends one widgets push to each device of its audience that has one.';

ALTER TABLE ONLY public.widget_tokens
    ADD CONSTRAINT widget_tokens_pkey PRIMARY KEY (device_id);

-- apns_id_prefix

CREATE TABLE public.apns_id_prefix (
    id boolean DEFAULT true NOT NULL,
    prefix text NOT NULL,
    CONSTRAINT "apns-id prefix must be 12 hex digits" CHECK ((prefix ~ '^[0-9a-f]{12}$'::text)),
    CONSTRAINT "apns_id_prefix has one row" CHECK (id)
);

COMMENT ON TABLE public.apns_id_prefix IS 'The deployment''s 48 random bits, chosen once (one row), that begin every apns-id herald_apns_id derives from a delivery id, so that every send of a delivery carries the same apns-id.';

ALTER TABLE ONLY public.apns_id_prefix
    ADD CONSTRAINT apns_id_prefix_pkey PRIMARY KEY (id);

-- delivery_spans

CREATE TABLE public.delivery_spans (
    campaign_id bigint NOT NULL,
    after bigint NOT NULL,
    through bigint NOT NULL,
    settled bigint NOT NULL,
    run_id bigint,
    marks bigint[] DEFAULT '{}'::bigint[] NOT NULL,
    marked_at timestamp with time zone[] DEFAULT '{}'::timestamp with time zone[] NOT NULL,
    marked_by bigint[] DEFAULT '{}'::bigint[] NOT NULL,
    CONSTRAINT "a span's marks, their times and runs pair up" CHECK (((cardinality(marks) = cardinality(marked_at)) AND (cardinality(marks) = cardinality(marked_by)))),
    CONSTRAINT "a span's watermark lies within it" CHECK (((after < through) AND ((settled >= after) AND (settled <= through))))
);

COMMENT ON TABLE public.delivery_spans IS 'The ledger by ranges: each span is a range (after, through] of a campaign''s delivery ids leased by one run (run_id), with its watermark `settled` (how far APNs accepted them) and the marks of each settlement. A batch row reads as its span says (delivery_status) until a settlement writes it.';

ALTER TABLE ONLY public.delivery_spans
    ADD CONSTRAINT delivery_spans_pkey PRIMARY KEY (campaign_id, through);

CREATE INDEX delivery_spans_open ON public.delivery_spans USING btree (campaign_id, through) WHERE (settled < through);

CREATE INDEX delivery_spans_run ON public.delivery_spans USING btree (run_id) WHERE (run_id IS NOT NULL);

-- sale_step_gates

CREATE TABLE public.sale_step_gates (
    campaign_id bigint NOT NULL,
    opened_at timestamp with time zone DEFAULT now() NOT NULL
);

COMMENT ON TABLE public.sale_step_gates IS 'a sale''s step whose gate is open: no earlier step of its sale was in flight, and none is claimed again';

ALTER TABLE ONLY public.sale_step_gates
    ADD CONSTRAINT sale_step_gates_pkey PRIMARY KEY (campaign_id);


-- ==========================================================================
-- Foreign keys.
-- ==========================================================================

ALTER TABLE ONLY public.activity_channels
    ADD CONSTRAINT activity_channels_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES public.campaigns(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.app_credentials
    ADD CONSTRAINT app_credentials_app_fkey FOREIGN KEY (app) REFERENCES public.apps(name) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.campaign_approvals
    ADD CONSTRAINT campaign_approvals_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES public.campaigns(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.campaign_pace
    ADD CONSTRAINT campaign_pace_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES public.campaigns(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.campaign_recipients
    ADD CONSTRAINT campaign_recipients_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES public.campaigns(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.campaign_status_changes
    ADD CONSTRAINT campaign_status_changes_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES public.campaigns(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.campaign_variants
    ADD CONSTRAINT campaign_variants_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES public.campaigns(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.campaigns
    ADD CONSTRAINT campaigns_category_id_fkey FOREIGN KEY (category_id) REFERENCES public.categories(id);

ALTER TABLE ONLY public.campaigns
    ADD CONSTRAINT campaigns_code_pool_fkey FOREIGN KEY (code_pool) REFERENCES public.code_pools(name);

ALTER TABLE ONLY public.campaigns
    ADD CONSTRAINT campaigns_sale_id_fkey FOREIGN KEY (sale_id) REFERENCES public.campaigns(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.campaigns
    ADD CONSTRAINT campaigns_segment_id_fkey FOREIGN KEY (segment_id) REFERENCES public.segments(id);

ALTER TABLE ONLY public.campaigns
    ADD CONSTRAINT campaigns_series_id_fkey FOREIGN KEY (series_id) REFERENCES public.campaigns(id);

ALTER TABLE ONLY public.campaigns
    ADD CONSTRAINT campaigns_widgets_of_fkey FOREIGN KEY (widgets_of) REFERENCES public.campaigns(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.category_actions
    ADD CONSTRAINT category_actions_action_id_fkey FOREIGN KEY (action_id) REFERENCES public.actions(id);

ALTER TABLE ONLY public.category_actions
    ADD CONSTRAINT category_actions_category_id_fkey FOREIGN KEY (category_id) REFERENCES public.categories(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.channel_pushes
    ADD CONSTRAINT channel_pushes_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES public.campaigns(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.channel_pushes
    ADD CONSTRAINT channel_pushes_claimed_by_fkey FOREIGN KEY (claimed_by) REFERENCES public.runs(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.conversions
    ADD CONSTRAINT conversions_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;

ALTER TABLE public.deliveries
    ADD CONSTRAINT deliveries_prompted_by_fkey FOREIGN KEY (prompted_by) REFERENCES public.campaigns(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.delivery_spans
    ADD CONSTRAINT delivery_spans_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES public.campaigns(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.devices
    ADD CONSTRAINT devices_app_fkey FOREIGN KEY (app) REFERENCES public.apps(name) ON UPDATE CASCADE;

ALTER TABLE ONLY public.devices
    ADD CONSTRAINT devices_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.live_activities
    ADD CONSTRAINT live_activities_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES public.campaigns(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.live_activities
    ADD CONSTRAINT live_activities_device_id_fkey FOREIGN KEY (device_id) REFERENCES public.devices(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.pool_codes
    ADD CONSTRAINT pool_codes_pool_fkey FOREIGN KEY (pool) REFERENCES public.code_pools(name) ON DELETE CASCADE;

ALTER TABLE ONLY public.pruned_answered_deliveries
    ADD CONSTRAINT pruned_answered_deliveries_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES public.pruned_campaigns(campaign_id);

ALTER TABLE ONLY public.pruned_campaigns
    ADD CONSTRAINT pruned_campaigns_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES public.campaigns(id);

ALTER TABLE ONLY public.pruned_delivery_counts
    ADD CONSTRAINT pruned_delivery_counts_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES public.pruned_campaigns(campaign_id);

ALTER TABLE ONLY public.pruned_lift_assignments
    ADD CONSTRAINT pruned_lift_assignments_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES public.pruned_campaigns(campaign_id);

ALTER TABLE ONLY public.pruned_lift_assignments
    ADD CONSTRAINT pruned_lift_assignments_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.pruned_sent_minutes
    ADD CONSTRAINT pruned_sent_minutes_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES public.pruned_campaigns(campaign_id);

ALTER TABLE ONLY public.pruned_test_deliveries
    ADD CONSTRAINT pruned_test_deliveries_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES public.campaigns(id);

ALTER TABLE ONLY public.pruned_test_deliveries
    ADD CONSTRAINT pruned_test_deliveries_device_id_fkey FOREIGN KEY (device_id) REFERENCES public.devices(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.pruned_test_deliveries
    ADD CONSTRAINT pruned_test_deliveries_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.push_to_start_tokens
    ADD CONSTRAINT push_to_start_tokens_device_id_fkey FOREIGN KEY (device_id) REFERENCES public.devices(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.sale_step_gates
    ADD CONSTRAINT sale_step_gates_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES public.campaigns(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.sale_stock
    ADD CONSTRAINT sale_stock_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES public.campaigns(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.snapshot_caps
    ADD CONSTRAINT snapshot_caps_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES public.campaigns(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.widget_tokens
    ADD CONSTRAINT widget_tokens_device_id_fkey FOREIGN KEY (device_id) REFERENCES public.devices(id) ON DELETE CASCADE;


-- ==========================================================================
-- Rows the schema starts with.
-- ==========================================================================

-- The one settings row, with every setting at its default.
INSERT INTO public.settings DEFAULT VALUES;

-- The app `default`: devices that name no app belong to it, and its topic and
-- credential are the deployment's APNS_* settings unless its row names its own.
INSERT INTO public.apps (name, display_name) VALUES ('default', 'Default app');

-- This deployment's apns-id prefix: 48 random bits, chosen once.
INSERT INTO public.apns_id_prefix (prefix) VALUES (encode(substring(uuid_send(gen_random_uuid()) FROM 1 FOR 6), 'hex'));

-- Every column of campaigns: who writes it, and which approval a change to it
-- withdraws (Tests/StoreTests/ApprovalAuthorityTests.swift wants a row for each).
INSERT INTO public.campaign_approval_columns (column_name, written_by, withdraws, why) VALUES
	('id', 'herald', 'identity', 'the campaign''s key, never changed'),
	('name', 'marketer', NULL, 'a label for people; no device sees it'),
	('kind', 'marketer', 'content', 'shapes the payload'),
	('status', 'marketer', NULL, 'a pause, a resume, a cancel or an archive keeps the approval'),
	('segment_id', 'marketer', 'segment', 'who receives it'),
	('content', 'marketer', 'content', 'the text devices show'),
	('default_locale', 'marketer', 'content', 'which text a device without its language shows'),
	('media_url', 'marketer', 'media', 'what devices show'),
	('media_type', 'marketer', 'media', 'what devices show'),
	('category_id', 'marketer', 'category', 'the buttons devices show'),
	('custom', 'marketer', 'fields', 'data the app reads'),
	('sensitive', 'marketer', 'fields', 'sealed data the app shows'),
	('send_at', 'marketer', 'schedule', 'when it goes out'),
	('expires_at', 'marketer', 'schedule', 'until when it goes out'),
	('priority', 'marketer', 'delivery', 'how APNs delivers it'),
	('collapse_id', 'marketer', 'delivery', 'which notification it replaces on the device'),
	('thread_id', 'marketer', 'delivery', 'how devices group it'),
	('interruption_level', 'marketer', 'delivery', 'whether it breaks through Focus'),
	('relevance_score', 'marketer', 'delivery', 'how devices rank it'),
	('sound', 'marketer', 'delivery', 'what devices play'),
	('quiet_hours', 'marketer', 'audience', 'whether users are reached at night'),
	('frequency_capped', 'marketer', 'audience', 'whether capped users are reached'),
	('failure_reason', 'herald', NULL, 'written by the run'),
	('created_at', 'herald', NULL, 'bookkeeping'),
	('started_at', 'herald', NULL, 'written by the run'),
	('completed_at', 'herald', NULL, 'written by the run'),
	('snapshot_at', 'herald', NULL, 'written by the run'),
	('snapshot_through', 'herald', NULL, 'written by the run'),
	('rate_per_minute', 'marketer', 'pace', 'how fast it goes out'),
	('finish_within', 'marketer', 'pace', 'how fast it goes out'),
	('created_by', 'herald', NULL, 'the author, set by the guard and never changed'),
	('approved_by', 'herald', NULL, 'the approval itself (herald_approve)'),
	('approved_at', 'herald', NULL, 'the approval itself (herald_approve)'),
	('send_at_local', 'marketer', 'schedule', 'when it goes out'),
	('local_missed', 'marketer', 'schedule', 'whether a missed local time still goes out'),
	('repeat_unit', 'marketer', 'schedule', 'when it goes out again'),
	('repeat_every', 'marketer', 'schedule', 'when it goes out again'),
	('repeat_on', 'marketer', 'schedule', 'when it goes out again'),
	('repeat_day', 'marketer', 'schedule', 'when it goes out again'),
	('repeat_until', 'marketer', 'schedule', 'when it goes out again'),
	('repeat_count', 'marketer', 'schedule', 'when it goes out again'),
	('on_segment_entry', 'marketer', 'schedule', 'when it goes out'),
	('resend_after', 'marketer', 'schedule', 'when it goes out again'),
	('series_id', 'herald', 'series', 'set when an occurrence is made'),
	('occurrence', 'herald', 'series', 'set when an occurrence is made'),
	('open_until', 'herald', 'schedule', 'set when an occurrence is made'),
	('resumed_at', 'herald', NULL, 'written when a series resumes'),
	('holdout_pct', 'marketer', 'audience', 'who is held out'),
	('conversion_event', 'marketer', NULL, 'what analysts count; no device sees it'),
	('attribution_window', 'marketer', NULL, 'what analysts count; no device sees it'),
	('apps', 'marketer', 'apps', 'which apps'' devices receive it'),
	('audience', 'marketer', 'segment', 'who receives it'),
	('code_pool', 'marketer', 'fields', 'the codes devices get'),
	('best_hour', 'marketer', 'schedule', 'when it goes out'),
	('live_activity', 'marketer', 'content', 'what the lock screen and the Dynamic Island show'),
	('sale_id', 'herald', 'series', 'set when a sale''s steps are made'),
	('sale_step', 'herald', 'series', 'set when a sale''s steps are made'),
	('widgets_push', 'marketer', 'content', 'whether the app''s widgets reload when the campaign starts'),
	('widgets_of', 'herald', 'series', 'set when a campaign''s widget push is made');


-- ==========================================================================
-- Functions and procedures, each with its comment, by name. A body may call
-- a function further down: PostgreSQL checks the bodies when they run, not
-- now (check_function_bodies is off for this transaction, as at the top).
-- ==========================================================================

CREATE FUNCTION public.herald_action_check() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    loc text;
    entry jsonb;
    field text;
BEGIN
    IF jsonb_typeof(NEW.localized) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'action "%": localized must be a JSON object of locale → {"title": …}', NEW.id
            USING ERRCODE = 'check_violation';
    END IF;
    FOR loc, entry IN SELECT key, value FROM jsonb_each(NEW.localized) LOOP
        IF NOT herald_is_locale(loc) THEN
            RAISE EXCEPTION 'action "%": localized key "%" is not a locale tag such as fr or zh-Hans', NEW.id, loc
                USING ERRCODE = 'check_violation';
        END IF;
        IF jsonb_typeof(entry) IS DISTINCT FROM 'object' OR jsonb_typeof(entry -> 'title') IS DISTINCT FROM 'string' THEN
            RAISE EXCEPTION 'action "%": localized entry "%" needs a text "title"', NEW.id, loc
                USING ERRCODE = 'check_violation';
        END IF;
        FOR field IN SELECT jsonb_object_keys(entry) LOOP
            IF field NOT IN ('title', 'text_button_title', 'text_placeholder') THEN
                RAISE EXCEPTION 'action "%": localized entry "%" has "%"; use title, text_button_title or text_placeholder', NEW.id, loc, field
                    USING ERRCODE = 'check_violation';
            END IF;
            IF jsonb_typeof(entry -> field) <> 'string' THEN
                RAISE EXCEPTION 'action "%": localized entry "%": "%" must be text', NEW.id, loc, field
                    USING ERRCODE = 'check_violation';
            END IF;
        END LOOP;
        IF NEW.kind <> 'text_input' AND (entry ? 'text_button_title' OR entry ? 'text_placeholder') THEN
            RAISE EXCEPTION 'action "%": localized entry "%": only text_input actions have text_button_title/text_placeholder', NEW.id, loc
                USING ERRCODE = 'check_violation';
        END IF;
    END LOOP;
    RETURN NEW;
END $$;

COMMENT ON FUNCTION public.herald_action_check() IS 'Checks an action''s localized titles: each key a locale tag, each entry a title and only the fields its kind has. Fired by actions_check.';

CREATE FUNCTION public.herald_apns_id(id bigint, prefix text) RETURNS uuid
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (((prefix || '8001'::text) || to_hex((id | ('-9223372036854775807'::bigint - 1)))))::uuid;

COMMENT ON FUNCTION public.herald_apns_id(id bigint, prefix text) IS 'The apns-id of a delivery from its id and a prefix: a UUIDv8 of the prefix and the id, so that every send of a delivery carries the same apns-id. Immutable, so that a claim reads the prefix once.';

CREATE FUNCTION public.herald_apns_id(id bigint) RETURNS uuid
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    RETURN public.herald_apns_id(id, (SELECT p.prefix FROM public.apns_id_prefix p));

COMMENT ON FUNCTION public.herald_apns_id(id bigint) IS 'The apns-id of a delivery with this deployment''s prefix (apns_id_prefix), for readers.';

CREATE FUNCTION public.herald_approval_open(p_campaign bigint) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
    SELECT EXISTS (SELECT 1 FROM approval_grants WHERE xact = pg_current_xact_id() AND campaign_id = p_campaign)
$$;

COMMENT ON FUNCTION public.herald_approval_open(p_campaign bigint) IS 'Whether this transaction holds an approval grant for the campaign: what lets herald_campaign_approval_guard accept a change to the approval columns.';

CREATE FUNCTION public.herald_approve(p_campaign bigint, p_reason text DEFAULT NULL::text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
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

COMMENT ON FUNCTION public.herald_approve(p_campaign bigint, p_reason text) IS 'Approves a campaign as the calling role, which must be a member of herald_approver and not its author, and records it in campaign_approvals. The only way a campaign becomes approved.';

CREATE FUNCTION public.herald_approved(p_campaign bigint) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
    SELECT NOT coalesce((SELECT require_approval FROM settings), false)
        OR EXISTS (SELECT 1 FROM campaigns c
                   WHERE c.id = coalesce((SELECT coalesce(sale_id, widgets_of) FROM campaigns WHERE id = p_campaign), p_campaign)
                     AND c.approved_at IS NOT NULL)
$$;

COMMENT ON FUNCTION public.herald_approved(p_campaign bigint) IS 'Whether a campaign may go out as far as approval goes: approval is not required, or the campaign (for a sale''s step or a widget push, the campaign it belongs to) is approved. The one rule, read by the due campaigns'' query and by every claim.';

CREATE FUNCTION public.herald_apps_problem(p_apps text[]) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT CASE
        WHEN p_apps IS NULL THEN NULL
        WHEN cardinality(p_apps) = 0 THEN 'apps must name at least one app, or be NULL for every app'
        ELSE (SELECT 'apps names no app ' || string_agg(x, ', ') || ': see SELECT name FROM apps'
              FROM unnest(p_apps) x WHERE NOT EXISTS (SELECT 1 FROM apps WHERE name = x))
    END
$$;

COMMENT ON FUNCTION public.herald_apps_problem(p_apps text[]) IS 'What is wrong with a list of apps (empty, or naming an app that does not exist), or NULL: the one check of campaigns.apps and categories.apps.';

COMMENT ON FUNCTION public.herald_are_public_keys(keys text[]) IS 'Whether every element is a PEM public key: the check of apps.registration_keys.';

CREATE FUNCTION public.herald_run_holds(p_run bigint) RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN ((p_run IS NOT NULL) AND (EXISTS (SELECT 1 FROM public.runs r WHERE ((r.id = herald_run_holds.p_run) AND (r.status = 'running'::text) AND (r.lease_expires_at >= now())))));

COMMENT ON FUNCTION public.herald_run_holds(p_run bigint) IS 'Whether a run holds what it claimed: it is running and its lease has not lapsed. The rule of every claim and takeover.';

CREATE FUNCTION public.herald_batch_left(p_campaign bigint, p_held_too boolean) RETURNS boolean
    LANGUAGE sql STABLE
    RETURN ((EXISTS (SELECT 1 FROM public.delivery_spans s WHERE ((s.campaign_id = herald_batch_left.p_campaign) AND (s.settled < s.through) AND (herald_batch_left.p_held_too OR (NOT public.herald_run_holds(s.run_id))) AND (EXISTS (SELECT 1 FROM public.deliveries d WHERE ((d.campaign_id = herald_batch_left.p_campaign) AND (d.status = 'batch'::text) AND (d.id > s.settled) AND (d.id <= s.through))))))) OR (EXISTS (SELECT 1 FROM public.deliveries d WHERE ((d.campaign_id = herald_batch_left.p_campaign) AND (d.status = 'batch'::text) AND (d.id > COALESCE((SELECT max(s.through) AS max FROM public.delivery_spans s WHERE (s.campaign_id = herald_batch_left.p_campaign)), (0)::bigint))))));

COMMENT ON FUNCTION public.herald_batch_left(p_campaign bigint, p_held_too boolean) IS 'Whether a campaign has a batch row still to send: above the watermark of a span (one no live run holds, unless p_held_too), or past every span.';

CREATE FUNCTION public.herald_batch_done(p_campaign bigint) RETURNS boolean
    LANGUAGE sql STABLE
    RETURN (NOT public.herald_batch_left(p_campaign, true));

COMMENT ON FUNCTION public.herald_batch_done(p_campaign bigint) IS 'Whether every batch row of a campaign is settled or written; asked before a campaign completes.';

CREATE FUNCTION public.herald_best_hours() RETURNS TABLE(user_id bigint, hour integer, events bigint)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
    WITH st AS (SELECT best_hour_days, best_hour_min_events FROM settings),
    ev AS (
        SELECT r.user_id, r.occurred_at AS at FROM replies r, st
        WHERE r.occurred_at > now() - make_interval(days => st.best_hour_days)
        UNION ALL
        SELECT c.user_id, c.occurred_at FROM conversions c, st
        WHERE c.occurred_at > now() - make_interval(days => st.best_hour_days)
    )
    -- The most frequent hour; a tie goes to the earlier hour.
    SELECT ev.user_id, mode() WITHIN GROUP (ORDER BY extract(hour FROM ev.at AT TIME ZONE u.time_zone)::integer),
           count(*)
    FROM ev JOIN users u ON u.id = ev.user_id
    GROUP BY ev.user_id
    HAVING count(*) >= (SELECT best_hour_min_events FROM st)
$$;

COMMENT ON FUNCTION public.herald_best_hours() IS 'Each user''s best hour (0-23 on their own clock): the hour of most of their replies and conversions over settings.best_hour_days, for users with at least settings.best_hour_min_events of them; a tie goes to the earlier hour. Runs as the owner, so that analysts read the hours and not the replies.';

CREATE FUNCTION public.herald_bucket10k(t text) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
    SELECT (((('x' || left(md5(t), 8))::bit(32)::bigint) * 10000) >> 32)::integer
$$;

COMMENT ON FUNCTION public.herald_bucket10k(t text) IS 'The documented hash of holdouts and the control group: 0 to 9999 from the first 32 bits of md5(text), stable per user on every PostgreSQL version.';

CREATE FUNCTION public.herald_campaign_approval_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
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

COMMENT ON FUNCTION public.herald_campaign_approval_guard() IS 'Keeps approval in the hands of its functions: the approval columns and the author change only under a grant of this transaction, and a change to a column that campaign_approval_columns says withdraws (or does not list) withdraws the approval, recorded with what changed. Fired by campaigns_approval_guard.';

CREATE FUNCTION public.herald_campaign_archive() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    IF OLD.status = 'archived' AND NEW.status <> 'archived' THEN
        RAISE EXCEPTION 'campaign "%" is archived; an archived campaign is never sent again', OLD.name
            USING ERRCODE = 'check_violation',
                  HINT = 'Insert a new campaign with the same content instead.';
    END IF;
    IF NEW.status = 'archived' AND OLD.status <> 'archived' THEN
        UPDATE deliveries SET status = 'cancelled', last_error = 'campaign archived', updated_at = now()
        WHERE campaign_id = NEW.id AND status = 'queued';
        NEW.completed_at := coalesce(NEW.completed_at, now());
    END IF;
    RETURN NEW;
END $$;

COMMENT ON FUNCTION public.herald_campaign_archive() IS 'Makes archiving final: an archived campaign never takes another status, and archiving cancels its queued deliveries and sets completed_at. Fired by campaigns_archive.';

CREATE FUNCTION public.herald_campaign_cancelled() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    UPDATE deliveries SET status = 'cancelled', last_error = 'campaign cancelled', updated_at = now()
    WHERE campaign_id = NEW.id AND status = 'queued';
    RETURN NULL;
END $$;

COMMENT ON FUNCTION public.herald_campaign_cancelled() IS 'Cancels a cancelled campaign''s queued deliveries at once, whether or not a run is on it. Fired by campaigns_cancelled.';

CREATE FUNCTION public.herald_campaign_check() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    loc text;
    entry jsonb;
    problem text;
BEGIN
    IF NEW.kind NOT IN ('poster', 'flash_sale', 'feedback') THEN
        RAISE EXCEPTION 'campaign "%": unknown kind "%"; use poster, flash_sale or feedback', NEW.name, NEW.kind
            USING ERRCODE = 'check_violation';
    END IF;
    IF jsonb_typeof(NEW.content) IS DISTINCT FROM 'object' OR NOT NEW.content ? NEW.default_locale THEN
        RAISE EXCEPTION 'campaign "%": content needs an entry for its default locale "%"', NEW.name, NEW.default_locale
            USING ERRCODE = 'check_violation',
                  HINT = 'content is {"en": {"title": "…", "body": "…"}, …}; default_locale names the fallback.';
    END IF;
    FOR loc, entry IN SELECT key, value FROM jsonb_each(NEW.content) LOOP
        problem := herald_campaign_content_problem(entry);
        IF problem IS NOT NULL THEN
            RAISE EXCEPTION 'campaign "%": content for locale "%" %', NEW.name, loc, problem
                USING ERRCODE = 'check_violation',
                      HINT = 'An entry is {"title": "…", "subtitle": "…", "body": "…"}, or keys of the app''s strings: {"title-loc-key": "SALE_TITLE", "loc-key": "SALE_BODY", "loc-args": ["2"]}.';
        END IF;
    END LOOP;
    IF NEW.kind = 'poster' AND NEW.media_url IS NULL THEN
        RAISE EXCEPTION 'campaign "%": a poster needs media_url (the image or GIF the service extension attaches)', NEW.name
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.media_url IS NOT NULL AND NEW.media_url !~ '^https://' THEN
        RAISE EXCEPTION 'campaign "%": media_url must be an https:// URL', NEW.name
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.kind = 'flash_sale' AND NEW.expires_at IS NULL THEN
        RAISE EXCEPTION 'campaign "%": a flash_sale needs expires_at (the end of the sale)', NEW.name
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.kind IN ('flash_sale', 'feedback') AND NEW.category_id IS NULL THEN
        RAISE EXCEPTION 'campaign "%": a % needs category_id (the category whose actions the user taps)', NEW.name, NEW.kind
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.kind = 'feedback' AND NOT EXISTS (
        SELECT 1 FROM category_actions ca JOIN actions a ON a.id = ca.action_id
        WHERE ca.category_id = NEW.category_id AND a.kind = 'text_input') THEN
        RAISE EXCEPTION 'campaign "%": a feedback campaign needs a category with a text_input action; category "%" has none', NEW.name, NEW.category_id
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;

COMMENT ON FUNCTION public.herald_campaign_check() IS 'The rules of a campaign row a marketer can break, with messages that say what to change: content for the default locale and well-formed text in each, media over https, a poster''s media, a flash sale''s end, a category where the kind needs one, a text input for feedback. Fired by campaigns_check.';

CREATE FUNCTION public.herald_campaign_closed_batch() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    PERFORM herald_close_batch(NEW.id, 'cancelled', TG_ARGV[0]);
    RETURN NULL;
END $$;

COMMENT ON FUNCTION public.herald_campaign_closed_batch() IS 'Closes a cancelled or archived campaign''s batch rows that no run holds, as queued rows are cancelled; the trigger''s argument is the reason written. Fired by campaigns_cancelled_batch and campaigns_archived_batch.';

CREATE FUNCTION public.herald_campaign_content_problem(entry jsonb) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    AS $$
DECLARE
    field text;
    part text;
    parts text[] := ARRAY['title', 'subtitle', 'body'];
    keys text[] := ARRAY['title-loc-key', 'subtitle-loc-key', 'loc-key'];
    args text[] := ARRAY['title-loc-args', 'subtitle-loc-args', 'loc-args'];
    i integer;
BEGIN
    IF jsonb_typeof(entry) IS DISTINCT FROM 'object' THEN
        RETURN 'must be an object with "title" and "body" (or "title-loc-key" and "loc-key")';
    END IF;
    FOR field IN SELECT jsonb_object_keys(entry) LOOP
        IF NOT field = ANY (parts || keys || args) THEN
            RETURN format('has "%s"; use title, subtitle, body, title-loc-key, subtitle-loc-key, loc-key, title-loc-args, subtitle-loc-args or loc-args', field);
        END IF;
    END LOOP;
    FOR i IN 1..3 LOOP
        part := parts[i];
        IF entry ? part AND jsonb_typeof(entry -> part) <> 'string' THEN
            RETURN format('"%s" must be text', part);
        END IF;
        IF entry ? keys[i] AND (jsonb_typeof(entry -> keys[i]) <> 'string' OR entry ->> keys[i] = '') THEN
            RETURN format('"%s" must be a non-empty text (a key of the app''s Localizable.strings)', keys[i]);
        END IF;
        IF entry ? part AND entry ? keys[i] THEN
            RETURN format('give "%s" or "%s", not both', part, keys[i]);
        END IF;
        IF entry ? args[i] THEN
            IF NOT entry ? keys[i] THEN
                RETURN format('"%s" needs "%s"', args[i], keys[i]);
            END IF;
            IF jsonb_typeof(entry -> args[i]) <> 'array'
               OR EXISTS (SELECT 1 FROM jsonb_array_elements(entry -> args[i]) a WHERE jsonb_typeof(a) <> 'string') THEN
                RETURN format('"%s" must be a list of texts', args[i]);
            END IF;
        END IF;
    END LOOP;
    IF NOT (entry ? 'title' OR entry ? 'title-loc-key') OR NOT (entry ? 'body' OR entry ? 'loc-key') THEN
        RETURN 'needs a text "title" and "body" (or "title-loc-key" and "loc-key")';
    END IF;
    RETURN NULL;
END $$;

COMMENT ON FUNCTION public.herald_campaign_content_problem(entry jsonb) IS 'What is wrong with one locale''s entry of campaign or variant content (literal title, subtitle and body, or keys of the app''s Localizable.strings with their arguments), or NULL. The one content rule, asked by herald_campaign_check and herald_campaign_variant_check.';

CREATE FUNCTION public.herald_campaign_delete_check() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM deliveries WHERE campaign_id = OLD.id)
       OR EXISTS (SELECT 1 FROM replies WHERE campaign_id = OLD.id) THEN
        RAISE EXCEPTION 'campaign "%" has deliveries or replies and cannot be deleted; archive it instead', OLD.name
            USING ERRCODE = 'restrict_violation',
                  HINT = format('UPDATE campaigns SET status = ''archived'' WHERE id = %s;', OLD.id);
    END IF;
    RETURN OLD;
END $$;

COMMENT ON FUNCTION public.herald_campaign_delete_check() IS 'Refuses to delete a campaign that has deliveries or replies, with the hint to archive it instead; one without history (a draft) may go. Fired by campaigns_keep_history.';

CREATE FUNCTION public.herald_campaign_local_send_at() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF NEW.send_at_local IS NOT NULL THEN
        NEW.send_at := NEW.send_at_local AT TIME ZONE 'Etc/GMT-14';
    END IF;
    RETURN NEW;
END $$;

COMMENT ON FUNCTION public.herald_campaign_local_send_at() IS 'Keeps send_at at the first moment any time zone reaches send_at_local (UTC+14), so that a campaign sent at local time is due then. Fired by campaigns_a_local_send_at.';

CREATE FUNCTION public.herald_campaign_status_audit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
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

COMMENT ON FUNCTION public.herald_campaign_status_audit() IS 'Writes each status a campaign takes to campaign_status_changes, with the role, application name and reason (the herald.reason setting, else the failure reason). Runs as the owner, so that no role needs the right to write the audit.';

CREATE FUNCTION public.herald_campaign_variant_check() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    c record;
    loc text;
    entry jsonb;
    problem text;
    others integer;
BEGIN
    SELECT id, name, snapshot_at INTO c FROM campaigns WHERE id = NEW.campaign_id;
    IF c.snapshot_at IS NOT NULL AND (TG_OP = 'INSERT' OR NEW.name IS DISTINCT FROM OLD.name
                                      OR NEW.share IS DISTINCT FROM OLD.share
                                      OR NEW.campaign_id IS DISTINCT FROM OLD.campaign_id) THEN
        RAISE EXCEPTION 'campaign "%": its audience was assigned to its variants at %; variants cannot be added, renamed or reshared now', c.name, c.snapshot_at
            USING ERRCODE = 'check_violation',
                  HINT = 'A variant''s text and media may still change. To try other variants, insert a new campaign.';
    END IF;
    IF jsonb_typeof(NEW.content) IS DISTINCT FROM 'object' OR NEW.content = '{}' THEN
        RAISE EXCEPTION 'campaign "%": variant "%": content must be a JSON object of locale → text, like the campaign''s', c.name, NEW.name
            USING ERRCODE = 'check_violation',
                  HINT = 'content is {"en": {"title": "…", "body": "…"}, …}; locales it leaves out keep the campaign''s text.';
    END IF;
    FOR loc, entry IN SELECT key, value FROM jsonb_each(NEW.content) LOOP
        IF NOT herald_is_locale(loc) THEN
            RAISE EXCEPTION 'campaign "%": variant "%": content key "%" is not a locale tag such as en or zh-Hans', c.name, NEW.name, loc
                USING ERRCODE = 'check_violation';
        END IF;
        problem := herald_campaign_content_problem(entry);
        IF problem IS NOT NULL THEN
            RAISE EXCEPTION 'campaign "%": variant "%": content for locale "%" %', c.name, NEW.name, loc, problem
                USING ERRCODE = 'check_violation',
                      HINT = 'An entry is {"title": "…", "subtitle": "…", "body": "…"}, or keys of the app''s strings: {"title-loc-key": "SALE_TITLE", "loc-key": "SALE_BODY"}.';
        END IF;
    END LOOP;
    IF NEW.media_url IS NOT NULL AND NEW.media_url !~ '^https://' THEN
        RAISE EXCEPTION 'campaign "%": variant "%": media_url must be an https:// URL', c.name, NEW.name
            USING ERRCODE = 'check_violation';
    END IF;
    SELECT count(*) INTO others FROM campaign_variants
    WHERE campaign_id = NEW.campaign_id AND (TG_OP = 'INSERT' OR name <> OLD.name);
    IF others >= 4 THEN
        RAISE EXCEPTION 'campaign "%": variant "%" would be its 5th; a campaign has at most 4 variants', c.name, NEW.name
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;

COMMENT ON FUNCTION public.herald_campaign_variant_check() IS 'The rules one variant row can break: content shaped like a campaign''s, media over https, at most four per campaign, and no variant added, renamed or reshared once the audience was assigned. The rules of the whole set (shares adding up to 100) are checked by the run. Fired by campaign_variants_check.';

CREATE FUNCTION public.herald_campaign_variant_keep() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    c record;
BEGIN
    SELECT name, snapshot_at INTO c FROM campaigns WHERE id = OLD.campaign_id;
    IF c.snapshot_at IS NOT NULL THEN
        RAISE EXCEPTION 'campaign "%": its audience was assigned to its variants at %; variant "%" cannot be deleted now', c.name, c.snapshot_at, OLD.name
            USING ERRCODE = 'restrict_violation',
                  HINT = 'Pause or cancel the campaign instead (UPDATE campaigns SET status = ''paused'' …).';
    END IF;
    RETURN OLD;
END $$;

COMMENT ON FUNCTION public.herald_campaign_variant_keep() IS 'Refuses to delete a variant once the campaign''s audience was assigned to its variants. Fired by campaign_variants_keep.';

CREATE FUNCTION public.herald_category_actions_check() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    n integer;
BEGIN
    SELECT count(*) INTO n FROM category_actions WHERE category_id = NEW.category_id;
    IF n > 4 THEN
        RAISE EXCEPTION 'category "%" would have % actions; iOS shows at most 4', NEW.category_id, n
            USING ERRCODE = 'check_violation',
                  HINT = 'Remove an action from the category before adding another.';
    END IF;
    RETURN NULL;
END $$;

COMMENT ON FUNCTION public.herald_category_actions_check() IS 'Refuses a category with more than four actions, as iOS shows at most four. Fired by category_actions_at_most_4.';

CREATE FUNCTION public.herald_category_approval_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
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

COMMENT ON FUNCTION public.herald_category_approval_guard() IS 'Withdraws the approval of the unfinished campaigns whose buttons changed: their category, its list of actions, or an action''s titles, kind or options. Fired by categories_approval_guard, category_actions_approval_guard and actions_approval_guard.';

CREATE FUNCTION public.herald_category_apps_problem(category text, category_apps text[], campaign_apps text[]) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT CASE
        WHEN category_apps IS NULL THEN NULL
        WHEN campaign_apps IS NULL THEN
            format('category "%s" belongs to the apps %s only, and the campaign goes to every app (apps NULL): set its apps to some of those',
                   category, array_to_string(category_apps, ', '))
        WHEN NOT campaign_apps <@ category_apps THEN
            format('category "%s" belongs to the apps %s only, and the campaign also goes to %s: those apps'' devices do not know it',
                   category, array_to_string(category_apps, ', '),
                   array_to_string(ARRAY(SELECT x FROM unnest(campaign_apps) x WHERE x <> ALL (category_apps) ORDER BY x), ', '))
    END
$$;

COMMENT ON FUNCTION public.herald_category_apps_problem(category text, category_apps text[], campaign_apps text[]) IS 'Why a campaign to some apps (NULL: every app) may not use a category of other apps, or NULL when it may. The one rule, asked by the campaign and the category triggers.';

CREATE FUNCTION public.herald_check_campaign_apps() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    problem text;
BEGIN
    -- An occurrence of a series (herald_occurrence) goes to the series' apps.
    IF TG_OP = 'INSERT' AND NEW.series_id IS NOT NULL AND NEW.apps IS NULL THEN
        SELECT apps INTO NEW.apps FROM campaigns WHERE id = NEW.series_id;
    END IF;
    problem := herald_apps_problem(NEW.apps);
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'campaign %', problem USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;

COMMENT ON FUNCTION public.herald_check_campaign_apps() IS 'Checks a campaign''s apps (herald_apps_problem), and gives an occurrence the apps of its series. Fired by campaigns_apps_exist.';

CREATE FUNCTION public.herald_check_campaign_category_apps() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    problem text;
BEGIN
    IF NEW.category_id IS NOT NULL THEN
        SELECT herald_category_apps_problem(k.id, k.apps, NEW.apps) INTO problem FROM categories k WHERE k.id = NEW.category_id;
        IF problem IS NOT NULL THEN
            RAISE EXCEPTION 'campaign "%": %', NEW.name, problem
                USING ERRCODE = 'check_violation';
        END IF;
    END IF;
    RETURN NEW;
END $$;

COMMENT ON FUNCTION public.herald_check_campaign_category_apps() IS 'Refuses a campaign whose category does not belong to every app it goes to (herald_category_apps_problem). Fired by campaigns_category_apps.';

CREATE FUNCTION public.herald_check_category_apps() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    problem text := herald_apps_problem(NEW.apps);
    c record;
BEGIN
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'category "%": %', NEW.id, problem USING ERRCODE = 'check_violation';
    END IF;
    -- A campaign that may still send keeps its category usable.
    IF TG_OP = 'UPDATE' THEN
        FOR c IN SELECT id, name, apps FROM campaigns
                 WHERE category_id = NEW.id AND status IN ('draft', 'scheduled', 'running', 'paused') ORDER BY id LOOP
            problem := herald_category_apps_problem(NEW.id, NEW.apps, c.apps);
            IF problem IS NOT NULL THEN
                RAISE EXCEPTION 'campaign % "%" uses it: %', c.id, c.name, problem
                    USING ERRCODE = 'check_violation',
                          HINT = 'Change the campaign''s apps (or finish it) first.';
            END IF;
        END LOOP;
    END IF;
    RETURN NEW;
END $$;

COMMENT ON FUNCTION public.herald_check_category_apps() IS 'Checks a category''s apps (herald_apps_problem), and refuses apps that leave out an app of an unfinished campaign that uses the category. Fired by categories_apps_check.';

CREATE FUNCTION public.herald_claim_span(p_campaign bigint, p_run bigint, p_n integer, p_lease double precision) RETURNS TABLE(live boolean, after bigint, through bigint, taken_over boolean)
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_custom_plan'
    AS $$
#variable_conflict use_column
DECLARE
    v_after bigint;
    v_through bigint;
BEGIN
    PERFORM herald_lock_spans(p_campaign);
    UPDATE runs r SET lease_expires_at = greatest(r.lease_expires_at, now() + make_interval(secs => p_lease)),
        claimed_campaigns = CASE WHEN p_campaign = ANY (r.claimed_campaigns) THEN r.claimed_campaigns
                                 ELSE r.claimed_campaigns || p_campaign END
    WHERE r.id = p_run AND r.status = 'running'
      AND EXISTS (SELECT 1 FROM campaigns c WHERE c.id = p_campaign AND c.status IN ('scheduled', 'running')
                  AND herald_approved(c.id));
    IF NOT FOUND THEN
        RETURN QUERY SELECT false, NULL::bigint, NULL::bigint, false;
        RETURN;
    END IF;
    -- Take over: the span keeps its rows up to its watermark; its remainder is this run's.
    UPDATE delivery_spans s SET run_id = p_run
    WHERE s.campaign_id = p_campaign AND s.through = (
        SELECT x.through FROM delivery_spans x
        WHERE x.campaign_id = p_campaign AND x.settled < x.through
          AND (x.run_id IS NULL OR (x.run_id <> p_run AND NOT herald_run_holds(x.run_id)))
        ORDER BY x.through LIMIT 1)
    RETURNING s.settled, s.through INTO v_after, v_through;
    IF FOUND THEN
        RETURN QUERY SELECT true, v_after, v_through, true;
        RETURN;
    END IF;
    -- Advance: the next p_n batch rows. The snapshot writes a campaign's
    -- slices one after another, so every batch row committed later has a
    -- higher id than these.
    SELECT coalesce(max(x.through), 0) INTO v_after FROM delivery_spans x WHERE x.campaign_id = p_campaign;
    SELECT max(w.id) INTO v_through FROM (
        SELECT d.id FROM deliveries d
        WHERE d.campaign_id = p_campaign AND d.kind = 'campaign' AND d.status = 'batch' AND d.id > v_after
        ORDER BY d.id LIMIT p_n) w;
    IF v_through IS NULL THEN
        RETURN QUERY SELECT true, NULL::bigint, NULL::bigint, false;
        RETURN;
    END IF;
    INSERT INTO delivery_spans (campaign_id, after, through, settled, run_id)
    VALUES (p_campaign, v_after, v_through, v_after, p_run);
    RETURN QUERY SELECT true, v_after, v_through, false;
END $$;

COMMENT ON FUNCTION public.herald_claim_span(p_campaign bigint, p_run bigint, p_n integer, p_lease double precision) IS 'Claims a span of a campaign''s batch rows for a run: under the campaign''s lock and the live check (run running, campaign running and approved; the run''s lease renewed), takes over the lowest span no live run holds at its watermark, or makes the next p_n batch rows a new span. Returns the range the run now holds.';

CREATE FUNCTION public.herald_clear_approval(p_campaign bigint, p_reason text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
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

COMMENT ON FUNCTION public.herald_clear_approval(p_campaign bigint, p_reason text) IS 'Withdraws a campaign''s approval and records why; false when it had none. What every withdrawal goes through; granted to no role.';

CREATE FUNCTION public.herald_close_approval(p_campaign bigint) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
    DELETE FROM approval_grants WHERE xact = pg_current_xact_id() AND campaign_id = p_campaign
$$;

COMMENT ON FUNCTION public.herald_close_approval(p_campaign bigint) IS 'Deletes this transaction''s approval grant for the campaign; called only by the functions that own approval.';

CREATE FUNCTION public.herald_close_batch(p_campaign bigint, p_status text, p_reason text) RETURNS bigint
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_custom_plan'
    AS $$
DECLARE
    v_last bigint;
    n bigint;
BEGIN
    IF p_status NOT IN ('cancelled', 'expired') THEN
        RAISE EXCEPTION 'herald_close_batch writes cancelled or expired, not %', p_status;
    END IF;
    PERFORM herald_lock_spans(p_campaign);
    SELECT coalesce(max(s.through), 0) INTO v_last FROM delivery_spans s WHERE s.campaign_id = p_campaign;
    WITH free AS (
        SELECT s.settled AS after, s.through FROM delivery_spans s
        WHERE s.campaign_id = p_campaign AND s.settled < s.through AND NOT herald_run_holds(s.run_id)
        UNION ALL SELECT v_last, 9223372036854775807
    ), w AS (
        UPDATE deliveries d SET status = p_status, last_error = p_reason, updated_at = now()
        FROM free f
        WHERE d.campaign_id = p_campaign AND d.status = 'batch' AND d.id > f.after AND d.id <= f.through
        RETURNING 1
    )
    SELECT count(*) INTO n FROM w;
    RETURN n;
END $$;

COMMENT ON FUNCTION public.herald_close_batch(p_campaign bigint, p_status text, p_reason text) IS 'Writes cancelled or expired to a campaign''s batch rows that no live run holds (past every span, or above the watermark of a span that is open or whose run is gone), under the claims'' lock; returns how many rows.';

CREATE PROCEDURE public.herald_commit_replies(IN p_reply_ids uuid[], IN p_delivery_ids bigint[], IN p_actions text[], IN p_has_text boolean[], IN p_texts text[], IN p_occurred double precision[], IN p_checked boolean[], IN p_source text, INOUT stored integer DEFAULT NULL::integer, INOUT refused integer[] DEFAULT NULL::integer[], INOUT duplicates integer[] DEFAULT NULL::integer[])
    LANGUAGE plpgsql
    AS $$
BEGIN
    SELECT s.stored, s.refused, s.duplicates INTO stored, refused, duplicates
    FROM herald_store_checked_replies(p_reply_ids, p_delivery_ids, p_actions, p_has_text, p_texts,
                                      p_occurred, p_checked, p_source) AS s;
    COMMIT;
END $$;

COMMENT ON PROCEDURE public.herald_commit_replies(IN p_reply_ids uuid[], IN p_delivery_ids bigint[], IN p_actions text[], IN p_has_text boolean[], IN p_texts text[], IN p_occurred double precision[], IN p_checked boolean[], IN p_source text, INOUT stored integer, INOUT refused integer[], INOUT duplicates integer[]) IS 'stores a batch of replies through herald_store_checked_replies and commits before answering (the reply intake, herald ingest)';

CREATE PROCEDURE public.herald_commit_replies(IN p_reply_ids uuid[], IN p_delivery_ids bigint[], IN p_actions text[], IN p_has_text boolean[], IN p_texts text[], IN p_occurred double precision[], IN p_checked boolean[], IN p_source text, INOUT stored integer, INOUT refused integer[], INOUT duplicates integer[], INOUT reasons text[], INOUT categories text[])
    LANGUAGE plpgsql
    AS $$
BEGIN
    SELECT s.stored, s.refused, s.duplicates INTO stored, refused, duplicates
    FROM herald_store_checked_replies(p_reply_ids, p_delivery_ids, p_actions, p_has_text, p_texts,
                                      p_occurred, p_checked, p_source) AS s;
    reasons := '{}';
    categories := '{}';
    IF cardinality(refused) > 0 THEN
        SELECT e.reasons, e.categories INTO reasons, categories
        FROM herald_refusal_reasons(refused, p_delivery_ids, p_actions, p_has_text, p_checked) AS e;
    END IF;
    COMMIT;
END $$;

COMMENT ON PROCEDURE public.herald_commit_replies(IN p_reply_ids uuid[], IN p_delivery_ids bigint[], IN p_actions text[], IN p_has_text boolean[], IN p_texts text[], IN p_occurred double precision[], IN p_checked boolean[], IN p_source text, INOUT stored integer, INOUT refused integer[], INOUT duplicates integer[], INOUT reasons text[], INOUT categories text[]) IS 'stores a batch of replies, says why each refused one was refused, and commits before answering (the reply intake, herald ingest)';

CREATE FUNCTION public.herald_delivery_keeps_replies() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM replies r WHERE r.delivery_id = OLD.id AND r.campaign_id = OLD.campaign_id)
       AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.id = OLD.id AND d.campaign_id = OLD.campaign_id) THEN
        RAISE EXCEPTION 'delivery % has replies and cannot be deleted', OLD.id
            USING ERRCODE = 'foreign_key_violation',
                  HINT = 'Archive its campaign instead; herald prune retires old ledgers and keeps their replies.';
    END IF;
    RETURN NULL;
END $$;

COMMENT ON FUNCTION public.herald_delivery_keeps_replies() IS 'Refuses to delete a ledger row that has replies, as a foreign key would; checked when the statement ends, so that an erasure and a move between partitions go through. Fired by deliveries_keep_replies.';

CREATE FUNCTION public.herald_delivery_partition(campaign bigint, written_once boolean DEFAULT false) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    SET lock_timeout TO '5s'
    AS $$
DECLARE
    part text := 'deliveries_c' || campaign;
    opts text := CASE WHEN written_once THEN 'fillfactor = 100'
                      ELSE (SELECT array_to_string(reloptions, ', ') FROM pg_class WHERE oid = 'public.deliveries_default'::regclass) END;
BEGIN
    IF campaign IS NULL THEN
        RETURN false;
    END IF;
    IF EXISTS (SELECT 1 FROM pruned_campaigns WHERE campaign_id = campaign) THEN
        RAISE EXCEPTION 'campaign % was pruned (herald prune): its ledger is gone and takes no new deliveries', campaign
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF EXISTS (SELECT 1 FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid
               WHERE i.inhparent = 'public.deliveries'::regclass AND p.relname = part) THEN
        RETURN true;
    END IF;
    BEGIN
        -- One partition made at a time (two runs starting the same campaign).
        PERFORM pg_advisory_xact_lock(4845524100010);
        IF EXISTS (SELECT 1 FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid
                   WHERE i.inhparent = 'public.deliveries'::regclass AND p.relname = part) THEN
            RETURN true;
        END IF;
        EXECUTE format('CREATE TABLE %I (LIKE deliveries INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED INCLUDING STORAGE)', part);
        IF opts IS NOT NULL THEN
            EXECUTE format('ALTER TABLE %I SET (%s)', part, opts);
        END IF;
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (campaign_id IS NOT NULL AND campaign_id = %s)',
                       part, part || '_campaign', campaign);
        -- The rows move (their replies with them: the trigger that keeps a
        -- row with replies from being deleted is off for this transaction).
        ALTER TABLE deliveries_default DISABLE TRIGGER deliveries_keep_replies;
        EXECUTE format('WITH moved AS (DELETE FROM deliveries_default WHERE campaign_id = %s RETURNING *) INSERT INTO %I SELECT * FROM moved',
                       campaign, part);
        ALTER TABLE deliveries_default ENABLE TRIGGER deliveries_keep_replies;
        EXECUTE format('ALTER TABLE deliveries ATTACH PARTITION %I FOR VALUES IN (%s)', part, campaign);
        RETURN true;
    EXCEPTION WHEN lock_not_available THEN
        RAISE WARNING 'campaign %: its ledger partition was not made (a lock was busy for 5 s); its deliveries go to deliveries_default', campaign;
        RETURN false;
    END;
END $$;

COMMENT ON FUNCTION public.herald_delivery_partition(campaign bigint, written_once boolean) IS 'Makes a campaign''s own ledger partition (deliveries_c<id>) when its first run snapshots it, moving its rows out of deliveries_default; written_once gives fillfactor 100 to rows sent by ranges. Waits at most 5 s for its locks, else leaves the rows in deliveries_default; refuses a pruned campaign; runs as the owner.';

CREATE FUNCTION public.herald_delivery_status(p_status text, p_id bigint, p_settled bigint, p_held boolean) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN (p_status IS DISTINCT FROM 'batch'::text) THEN p_status WHEN (p_id <= p_settled) THEN 'sent'::text WHEN p_held THEN 'in_flight'::text ELSE 'queued'::text END;

COMMENT ON FUNCTION public.herald_delivery_status(p_status text, p_id bigint, p_settled bigint, p_held boolean) IS 'The effective status of a ledger row, the one rule: a batch row at or below its span''s watermark is sent, above it in flight while the span''s run holds it, else queued; any other row is what it says. delivery_status reads the ledger through it.';

CREATE FUNCTION public.herald_device_deleted() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    LOCK TABLE replies IN SHARE ROW EXCLUSIVE MODE;
    DELETE FROM replies WHERE device_id IN (SELECT id FROM gone);
    DELETE FROM deliveries WHERE kind = 'campaign' AND device_id IN (SELECT id FROM gone);
    DELETE FROM deliveries WHERE kind <> 'campaign' AND device_id IN (SELECT id FROM gone);
    RETURN NULL;
END $$;

COMMENT ON FUNCTION public.herald_device_deleted() IS 'Deletes the replies, then the ledger rows, of deleted devices, once per statement: the ledger and replies have no foreign keys to devices. Fired by devices_deleted_deliveries.';

CREATE FUNCTION public.herald_held_out(p_campaign bigint, p_user bigint, p_holdout_pct numeric, p_control_pct numeric, p_control_salt text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE
        WHEN p_control_pct > 0 AND herald_bucket10k('control:' || p_control_salt || ':' || p_user) < p_control_pct * 100
            THEN 'global control group'
        WHEN p_holdout_pct > 0 AND herald_bucket10k('holdout:' || p_campaign || ':' || p_user) < p_holdout_pct * 100
            THEN 'held out to measure the campaign''s effect'
    END
$$;

COMMENT ON FUNCTION public.herald_held_out(p_campaign bigint, p_user bigint, p_holdout_pct numeric, p_control_pct numeric, p_control_salt text) IS 'Why a user is held out of a campaign (the global control group first, then the campaign''s own holdout), or NULL. The snapshot writes such users'' rows as held_out and never sends them.';

CREATE FUNCTION public.herald_hold_run(p_run bigint) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_held boolean;
BEGIN
    IF EXISTS (SELECT 1 FROM pg_locks
               WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
                 AND classid = 1213352004 AND objid = herald_run_lock_key(p_run) AND objsubid = 2) THEN
        v_held := true;
    ELSE
        v_held := pg_try_advisory_lock(1213352004, herald_run_lock_key(p_run));
    END IF;
    IF v_held THEN
        UPDATE runs SET session_server = pg_postmaster_start_time(), session_at = now()
        WHERE id = p_run AND status = 'running';
    END IF;
    RETURN v_held;
END $$;

COMMENT ON FUNCTION public.herald_hold_run(p_run bigint) IS 'Takes (or confirms) a run''s advisory lock on the calling session and records the server incarnation and time on the run; false when another session holds it. A run is alive while its own session holds this lock.';

COMMENT ON FUNCTION public.herald_is_locale(tag text) IS 'Whether a tag is a locale as apps report it (BCP 47: en, fr-CA, zh-Hans): the check of device, action and content locales.';

COMMENT ON FUNCTION public.herald_is_time_zone(tz text) IS 'Whether PostgreSQL knows a time zone name such as Europe/Paris: the check of users.time_zone.';

CREATE FUNCTION public.herald_ledger_analyze(campaign bigint) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    part regclass := to_regclass('public.deliveries_c' || campaign);
BEGIN
    IF part IS NOT NULL THEN
        EXECUTE format('ANALYZE %s', part);
    ELSE
        ANALYZE deliveries;
    END IF;
END $$;

COMMENT ON FUNCTION public.herald_ledger_analyze(campaign bigint) IS 'Refreshes the planner''s statistics of a campaign''s ledger partition (or of the whole ledger) after a large snapshot, for runs, which may not ANALYZE themselves; runs as the owner.';

CREATE FUNCTION public.herald_lock_spans(p_campaign bigint) RETURNS void
    LANGUAGE sql
    RETURN pg_advisory_xact_lock(1213352005, ((p_campaign % (2147483647)::bigint))::integer);

COMMENT ON FUNCTION public.herald_lock_spans(p_campaign bigint) IS 'Takes the campaign''s transaction-scoped advisory lock, so that one claim or close of its spans runs at a time (it works through a transaction pooler).';

CREATE FUNCTION public.herald_next_local(zone text, after timestamp with time zone, hour integer, minute integer) RETURNS timestamp with time zone
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN t >= after THEN t
                ELSE (((after AT TIME ZONE zone)::date + 1) + make_time(hour, minute, 0)) AT TIME ZONE zone END
    FROM (SELECT (((after AT TIME ZONE zone)::date) + make_time(hour, minute, 0)) AT TIME ZONE zone AS t) x
$$;

COMMENT ON FUNCTION public.herald_next_local(zone text, after timestamp with time zone, hour integer, minute integer) IS 'The first moment at or after a given one when a time zone''s clock shows hour:minute: where a best hour lands.';

CREATE FUNCTION public.herald_occurrence(p_series bigint, p_number integer, p_at timestamp with time zone, p_open_until timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
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

COMMENT ON FUNCTION public.herald_occurrence(p_series bigint, p_number integer, p_at timestamp with time zone, p_open_until timestamp with time zone) IS 'Makes occurrence p_number of a recurring or on-entry series: a campaign row copied from the series as it is now (content, media, segment, fields, variants, pace, holdout, conversions, expiry window), written by its author and approved as it is. Made once: NULL when another run made it.';

CREATE FUNCTION public.herald_open_approval(p_campaign bigint) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
    INSERT INTO approval_grants (xact, campaign_id) VALUES (pg_current_xact_id(), p_campaign)
    ON CONFLICT DO NOTHING
$$;

COMMENT ON FUNCTION public.herald_open_approval(p_campaign bigint) IS 'Writes an approval grant for this transaction and campaign into approval_grants; called only by the functions that own approval.';

CREATE FUNCTION public.herald_owner_writes_only() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    IF NOT pg_has_role(current_user, (SELECT relowner FROM pg_class WHERE oid = TG_RELID), 'MEMBER') THEN
        RAISE EXCEPTION '% is written by Herald''s own functions only, not by %', TG_TABLE_NAME, current_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END $$;

COMMENT ON FUNCTION public.herald_owner_writes_only() IS 'Refuses a write by any role but the table''s owner, so that the tables only Herald''s own functions write (approval_grants, campaign_approvals, settings_changes) stay so whatever an operator grants.';

CREATE FUNCTION public.herald_pace_reserve(p_campaign bigint, p_count integer, OUT first_in double precision, OUT spacing double precision) RETURNS record
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_per_minute integer;
    v_within     interval;
    v_pace       campaign_pace%ROWTYPE;
    v_rate       double precision;
    v_left       double precision;
    v_queued     bigint;
    v_now        timestamptz := clock_timestamp();
    v_start      timestamptz;
BEGIN
    SELECT rate_per_minute, finish_within INTO v_per_minute, v_within FROM campaigns WHERE id = p_campaign;
    IF v_per_minute IS NULL AND v_within IS NULL THEN
        RETURN;
    END IF;
    INSERT INTO campaign_pace (campaign_id, next_slot, started_at) VALUES (p_campaign, v_now, v_now)
    ON CONFLICT (campaign_id) DO NOTHING;
    SELECT * INTO v_pace FROM campaign_pace WHERE campaign_id = p_campaign FOR UPDATE;
    IF v_per_minute IS NOT NULL THEN
        v_rate := v_per_minute;
    ELSIF v_pace.rate > 0 AND v_pace.rate_at > v_now - interval '30 seconds' THEN
        v_rate := v_pace.rate;
    ELSE
        SELECT count(*) INTO v_queued FROM deliveries WHERE campaign_id = p_campaign AND status = 'queued';
        v_left := greatest(extract(epoch FROM v_pace.started_at + v_within - v_now) / 60, 1.0 / 60);
        v_rate := least(greatest(1, ceil(v_queued / v_left)), 1000000);
        UPDATE campaign_pace SET rate = v_rate, rate_at = v_now WHERE campaign_id = p_campaign;
    END IF;
    spacing := 60.0 / v_rate;
    v_start := greatest(v_pace.next_slot, v_now);
    UPDATE campaign_pace SET next_slot = v_start + make_interval(secs => spacing * p_count)
    WHERE campaign_id = p_campaign;
    first_in := extract(epoch FROM v_start - v_now);
END $$;

COMMENT ON FUNCTION public.herald_pace_reserve(p_campaign bigint, p_count integer, OUT first_in double precision, OUT spacing double precision) IS 'Takes a paced campaign''s next p_count send slots from its campaign_pace row: the seconds until the first and between two (NULL when it has no pace). Where the pace holds across every worker.';

CREATE FUNCTION public.herald_pool_approval_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_pools text[];
    v_id bigint;
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(DISTINCT pool) INTO v_pools FROM new_rows;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(DISTINCT pool) INTO v_pools FROM old_rows;
    END IF;
    FOR v_id IN
        SELECT c.id FROM campaigns c
        WHERE c.approved_at IS NOT NULL AND c.status IN ('draft', 'scheduled', 'running', 'paused')
          AND c.code_pool IS NOT NULL
          AND CASE WHEN TG_OP = 'TRUNCATE' THEN true ELSE c.code_pool = ANY (v_pools) END
        ORDER BY c.id
    LOOP
        PERFORM herald_clear_approval(v_id, 'changed: code pool ' || (SELECT code_pool FROM campaigns WHERE id = v_id));
    END LOOP;
    RETURN NULL;
END $$;

COMMENT ON FUNCTION public.herald_pool_approval_guard() IS 'Withdraws the approval of the approved, unfinished campaigns that draw from a pool whose codes were added, deleted or truncated. Fired by pool_codes_inserted, pool_codes_deleted and pool_codes_truncated.';

CREATE FUNCTION public.herald_pool_code_changed() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_id bigint;
BEGIN
    FOR v_id IN
        SELECT c.id FROM campaigns c
        WHERE c.approved_at IS NOT NULL AND c.status IN ('draft', 'scheduled', 'running', 'paused')
          AND c.code_pool = NEW.pool
        ORDER BY c.id
    LOOP
        PERFORM herald_clear_approval(v_id, 'changed: code pool ' || NEW.pool);
    END LOOP;
    RETURN NULL;
END $$;

COMMENT ON FUNCTION public.herald_pool_code_changed() IS 'Withdraws the approval of the approved, unfinished campaigns that draw from a pool when the text of one of its codes changes (a draw writes other columns and withdraws nothing). Fired by pool_codes_code_changed.';

CREATE FUNCTION public.herald_quiet_until(tz text, at timestamp with time zone, q_start time without time zone, q_end time without time zone) RETURNS timestamp with time zone
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    WITH l AS (SELECT (at AT TIME ZONE tz) AS local_ts)
    SELECT CASE
        WHEN q_start = q_end THEN at
        WHEN q_start < q_end AND local_ts::time >= q_start AND local_ts::time < q_end
            THEN (local_ts::date + q_end) AT TIME ZONE tz
        WHEN q_start > q_end AND local_ts::time >= q_start
            THEN (local_ts::date + 1 + q_end) AT TIME ZONE tz
        WHEN q_start > q_end AND local_ts::time < q_end
            THEN (local_ts::date + q_end) AT TIME ZONE tz
        ELSE at
    END
    FROM l
$$;

COMMENT ON FUNCTION public.herald_quiet_until(tz text, at timestamp with time zone, q_start time without time zone, q_end time without time zone) IS 'When a device may be notified given quiet hours: the moment itself outside them, else their end on the user''s own clock. The audience snapshot gives each row its not_before with it.';

CREATE FUNCTION public.herald_recipients_approval_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
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

COMMENT ON FUNCTION public.herald_recipients_approval_guard() IS 'Withdraws the approval of the approved, unfinished campaigns whose recipients (or their data) changed, once per statement and campaign. Fired by the campaign_recipients_* triggers.';

CREATE FUNCTION public.herald_refusal_reasons(p_positions integer[], p_delivery_ids bigint[], p_actions text[], p_has_text boolean[], p_checked boolean[], OUT reasons text[], OUT categories text[]) RETURNS record
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
    WITH r AS (
        SELECT u.o, u.at, p_delivery_ids[u.at] AS delivery_id, p_actions[u.at] AS action,
               p_has_text[u.at] AS has_text, p_checked[u.at] AS checked
        FROM unnest(p_positions) WITH ORDINALITY AS u(at, o)
    ), found AS (
        SELECT t.id, t.category_id FROM herald_reply_targets(ARRAY(SELECT DISTINCT r.delivery_id FROM r)) AS t
    ), judged AS (
        SELECT r.o,
               CASE WHEN f.id IS NULL THEN 'unknown_delivery'
                    ELSE coalesce(herald_reply_refusal(r.action, r.has_text, r.checked, k.allowed, k.with_text),
                                  'action_not_allowed') END AS reason,
               f.category_id
        FROM r
        LEFT JOIN found f ON f.id = r.delivery_id
        LEFT JOIN LATERAL (
            SELECT coalesce(array_agg(ca.action_id), '{}') AS allowed,
                   coalesce(array_agg(ca.action_id) FILTER (WHERE a.kind = 'text_input'), '{}') AS with_text
            FROM category_actions ca JOIN actions a ON a.id = ca.action_id
            WHERE ca.category_id = f.category_id) k ON true
    )
    SELECT coalesce(array_agg(reason ORDER BY o), '{}'), coalesce(array_agg(coalesce(category_id, '') ORDER BY o), '{}')
    FROM judged
$$;

COMMENT ON FUNCTION public.herald_refusal_reasons(p_positions integer[], p_delivery_ids bigint[], p_actions text[], p_has_text boolean[], p_checked boolean[], OUT reasons text[], OUT categories text[]) IS 'why each refused reply of a batch was refused (unknown_delivery, action_not_allowed, text_not_allowed, text_refused), with its category';

CREATE FUNCTION public.herald_release_run(p_run bigint) RETURNS boolean
    LANGUAGE sql
    AS $$ SELECT pg_advisory_unlock(1213352004, herald_run_lock_key(p_run)) $$;

COMMENT ON FUNCTION public.herald_release_run(p_run bigint) IS 'Gives a run''s advisory lock back on the calling session, before its connection goes back to a pool.';

CREATE FUNCTION public.herald_release_spans(p_run bigint) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
    c record;
    n bigint := 0;
BEGIN
    FOR c IN SELECT DISTINCT s.campaign_id, k.status, k.expires_at FROM delivery_spans s
             JOIN campaigns k ON k.id = s.campaign_id WHERE s.run_id = p_run ORDER BY s.campaign_id LOOP
        PERFORM herald_lock_spans(c.campaign_id);
        UPDATE delivery_spans s SET run_id = NULL WHERE s.run_id = p_run AND s.campaign_id = c.campaign_id;
        IF c.status = 'cancelled' THEN
            n := n + herald_close_batch(c.campaign_id, 'cancelled', 'campaign cancelled');
        ELSIF c.status = 'completed' AND c.expires_at <= now() THEN
            n := n + herald_close_batch(c.campaign_id, 'expired', 'campaign expired before delivery');
        END IF;
    END LOOP;
    RETURN n;
END $$;

COMMENT ON FUNCTION public.herald_release_spans(p_run bigint) IS 'Opens a run''s spans at their watermarks (its session ended, it stopped or was declared gone), so that any run may take over what is left of them.';

CREATE FUNCTION public.herald_reopen_entries(p_series bigint) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_rows integer;
BEGIN
    UPDATE campaigns SET snapshot_at = now(), snapshot_through = 0
    WHERE series_id = p_series AND status IN ('scheduled', 'running') AND open_until > now()
      AND snapshot_at IS NOT NULL AND snapshot_through IS NULL;
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    RETURN v_rows;
END $$;

COMMENT ON FUNCTION public.herald_reopen_entries(p_series bigint) IS 'At each run, restarts the snapshot of an on-entry series'' open occurrences, so that the users who entered its segment since are added; returns how many.';

CREATE FUNCTION public.herald_replies_delivery() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    SET jit TO 'off'
    AS $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT a.id, a.reply_id, a.delivery_id, a.campaign_id, d.kind
        FROM added a LEFT JOIN deliveries d ON d.id = a.delivery_id AND d.campaign_id = a.campaign_id
        WHERE d.kind IS DISTINCT FROM a.delivery_kind
    LOOP
        IF r.kind IS NULL THEN
            RAISE EXCEPTION 'reply % answers delivery %, which campaign % does not have', r.reply_id, r.delivery_id, r.campaign_id
                USING ERRCODE = 'foreign_key_violation';
        END IF;
        UPDATE replies SET delivery_kind = r.kind WHERE id = r.id;
    END LOOP;
    RETURN NULL;
END $$;

COMMENT ON FUNCTION public.herald_replies_delivery() IS 'Checks, once per INSERT statement, that every new reply answers a delivery its campaign has, failing the statement otherwise, and records a test send''s kind on its replies. Fired by replies_added_delivery.';

CREATE FUNCTION public.herald_reply_allowed(p_action text, p_has_text boolean, p_allowed text[], p_with_text text[]) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT herald_reply_refusal(p_action, p_has_text, true, p_allowed, p_with_text) IS NULL
$$;

COMMENT ON FUNCTION public.herald_reply_allowed(p_action text, p_has_text boolean, p_allowed text[], p_with_text text[]) IS 'whether a reply''s action (and its text) is allowed, given its category''s actions and those that take text';

CREATE FUNCTION public.herald_reply_delivery() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    k text;
BEGIN
    SELECT d.kind INTO k FROM deliveries d
    WHERE d.id = NEW.delivery_id AND d.campaign_id = NEW.campaign_id;
    IF k IS NULL THEN
        RAISE EXCEPTION 'reply % answers delivery %, which campaign % does not have', NEW.reply_id, NEW.delivery_id, NEW.campaign_id
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    NEW.delivery_kind := k;
    RETURN NEW;
END $$;

COMMENT ON FUNCTION public.herald_reply_delivery() IS 'Refuses an update that points a reply at a delivery its campaign does not have, and records the delivery''s kind on the reply. Fired by replies_delivery; new replies are checked per statement instead.';

CREATE FUNCTION public.herald_reply_refusal(p_action text, p_has_text boolean, p_checked boolean, p_allowed text[], p_with_text text[]) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN p_action IN ('com.apple.UNNotificationDefaultActionIdentifier',
                                  'com.apple.UNNotificationDismissActionIdentifier')
                THEN CASE WHEN p_has_text THEN 'text_not_allowed' WHEN NOT p_checked THEN 'text_refused' END
                WHEN NOT coalesce(p_action = ANY (p_allowed), false) THEN 'action_not_allowed'
                WHEN p_has_text AND NOT coalesce(p_action = ANY (p_with_text), false) THEN 'text_not_allowed'
                WHEN NOT p_checked THEN 'text_refused' END
$$;

COMMENT ON FUNCTION public.herald_reply_refusal(p_action text, p_has_text boolean, p_checked boolean, p_allowed text[], p_with_text text[]) IS 'why a reply''s action (and its text) is refused, given its category''s actions and those that take text; NULL: it passes';

CREATE FUNCTION public.herald_reply_targets(ids bigint[]) RETURNS TABLE(id bigint, campaign_id bigint, device_id bigint, user_id bigint, category_id text)
    LANGUAGE plpgsql STABLE
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
    unranged bigint[];
BEGIN
    RETURN QUERY
        SELECT i.id, d.campaign_id, d.device_id, d.user_id, c.category_id
        FROM unnest(ids) AS i(id)
        JOIN delivery_id_ranges r ON r.ids @> i.id
        -- OFFSET 0 keeps the subquery a subquery: its campaign stays a
        -- parameter of the partition scan, which prunes by it per id.
        CROSS JOIN LATERAL (
            SELECT dl.campaign_id, dl.device_id, dl.user_id FROM deliveries dl
            WHERE dl.campaign_id = r.campaign_id AND dl.id = i.id OFFSET 0) d
        JOIN campaigns c ON c.id = d.campaign_id;
    SELECT array_agg(i.id) INTO unranged
    FROM unnest(ids) AS i(id)
    WHERE NOT EXISTS (SELECT 1 FROM delivery_id_ranges r WHERE r.ids @> i.id);
    IF unranged IS NOT NULL THEN
        RETURN QUERY
            SELECT dl.id, dl.campaign_id, dl.device_id, dl.user_id, c.category_id
            FROM deliveries dl JOIN campaigns c ON c.id = dl.campaign_id
            WHERE dl.id = ANY(unranged);
    END IF;
END $$;

COMMENT ON FUNCTION public.herald_reply_targets(ids bigint[]) IS 'the deliveries among ids that exist, with their campaign, device, user and category (the reply intake''s lookup)';

CREATE FUNCTION public.herald_run_gone(p_run bigint, p_grace interval DEFAULT '00:00:15'::interval) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
    SELECT r.session_server IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM pg_locks l
                       WHERE l.locktype = 'advisory' AND l.granted
                         AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                         AND l.classid = 1213352004 AND l.objid = herald_run_lock_key(r.id) AND l.objsubid = 2)
       AND (r.session_server = pg_postmaster_start_time() OR r.session_at < now() - p_grace)
    FROM runs r WHERE r.id = p_run
$$;

COMMENT ON FUNCTION public.herald_run_gone(p_run bigint, p_grace interval) IS 'Whether a run is gone: nobody holds its lock, and it held it on this server incarnation or has not confirmed it within p_grace (a restart or failover). What another run may then take over.';

CREATE FUNCTION public.herald_run_lock_key(p_run bigint) RETURNS integer
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT (p_run % 2147483647)::integer $$;

COMMENT ON FUNCTION public.herald_run_lock_key(p_run bigint) IS 'The second key of a run''s session advisory lock (the first, 1213352004, is Herald''s own).';

CREATE FUNCTION public.herald_sale_status_follows() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    IF NEW.status IN ('paused', 'cancelled') THEN
        UPDATE campaigns SET status = NEW.status
        WHERE sale_id = NEW.id AND status IN ('scheduled', 'running', 'paused') AND status <> NEW.status;
    ELSIF OLD.status = 'paused' AND NEW.status IN ('scheduled', 'running', 'completed') THEN
        UPDATE campaigns SET status = 'scheduled' WHERE sale_id = NEW.id AND status = 'paused';
    END IF;
    RETURN NULL;
END $$;

COMMENT ON FUNCTION public.herald_sale_status_follows() IS 'Passes a Live Activity sale''s pause, resume and cancel on to its steps not finished. Fired by campaigns_sale_status_follows.';

CREATE FUNCTION public.herald_sale_steps(p_sale bigint, p_at timestamp with time zone[], p_until timestamp with time zone[]) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    s campaigns%ROWTYPE;
    v_made integer := 0;
    v_id bigint;
BEGIN
    SELECT * INTO s FROM campaigns WHERE id = p_sale;
    IF NOT FOUND OR s.live_activity IS NULL THEN
        RAISE EXCEPTION 'campaign % is not a Live Activity sale', p_sale;
    END IF;
    IF cardinality(p_at) <> cardinality(p_until) OR cardinality(p_at) < 1 THEN
        RAISE EXCEPTION 'a sale''s steps need a time and an end each';
    END IF;
    FOR i IN 1 .. cardinality(p_at) LOOP
        INSERT INTO campaigns (name, kind, status, segment_id, content, default_locale, category_id, send_at, expires_at,
                               priority, collapse_id, quiet_hours, frequency_capped, sale_id, sale_step, created_by)
        VALUES (s.name || ' step ' || i, s.kind,
                CASE WHEN s.status IN ('paused', 'cancelled') THEN s.status ELSE 'scheduled' END,
                s.segment_id, s.content, s.default_locale, s.category_id, p_at[i], p_until[i],
                10, s.collapse_id, false, false, p_sale, i, s.created_by)
        ON CONFLICT (sale_id, sale_step) WHERE sale_id IS NOT NULL DO NOTHING
        RETURNING id INTO v_id;
        IF v_id IS NOT NULL THEN v_made := v_made + 1; END IF;
    END LOOP;
    RETURN v_made;
END $$;

COMMENT ON FUNCTION public.herald_sale_steps(p_sale bigint, p_at timestamp with time zone[], p_until timestamp with time zone[]) IS 'Makes the steps of a Live Activity sale (its updates and its end) as campaign rows of their own, at the times Herald read from its live_activity, when the sale starts. Made once: a second call makes nothing.';

CREATE FUNCTION public.herald_segment_approval_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    IF NEW.rule IS DISTINCT FROM OLD.rule THEN
        PERFORM herald_withdraw_users_of(OLD.id, NULL, 'changed: segment ' || OLD.name);
    END IF;
    RETURN NULL;
END $$;

COMMENT ON FUNCTION public.herald_segment_approval_guard() IS 'Withdraws the approval of the unfinished campaigns that use a segment whose rule changed. Fired by segments_approval_guard.';

CREATE FUNCTION public.herald_series_status() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    IF NEW.repeat_unit IS NULL AND NOT NEW.on_segment_entry THEN
        RETURN NEW;
    END IF;
    IF NEW.status = 'paused' AND OLD.status IN ('scheduled', 'running') THEN
        UPDATE campaigns SET status = 'paused' WHERE series_id = NEW.id AND status IN ('scheduled', 'running');
    ELSIF OLD.status = 'paused' AND NEW.status IN ('scheduled', 'running') THEN
        NEW.resumed_at := now();
        UPDATE campaigns SET status = CASE WHEN started_at IS NULL THEN 'scheduled' ELSE 'running' END
        WHERE series_id = NEW.id AND status = 'paused';
    ELSIF NEW.status IN ('cancelled', 'archived') AND OLD.status NOT IN ('cancelled', 'archived', 'completed', 'failed') THEN
        UPDATE campaigns SET status = 'cancelled' WHERE series_id = NEW.id AND status IN ('scheduled', 'running', 'paused');
    END IF;
    RETURN NEW;
END $$;

COMMENT ON FUNCTION public.herald_series_status() IS 'Passes a series'' pause, resume and cancel on to its occurrences under way (moments that passed while it was paused are skipped). Fired by campaigns_series_status.';

CREATE FUNCTION public.herald_settings_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
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

COMMENT ON FUNCTION public.herald_settings_guard() IS 'Lets only members of herald_admin (and the owner) change settings, and records each setting changed, with its old and new value, in settings_changes. Fired by settings_guard.';

CREATE FUNCTION public.herald_settle(p_run bigint, s_campaign bigint[], s_through bigint[], s_settled bigint[], e_campaign bigint[], e_id bigint[], e_device bigint[], e_status text[], e_error text[], e_attempts integer[], e_delay double precision[], e_invalid_since double precision[]) RETURNS TABLE(campaign_id bigint, through bigint, held boolean, exceptions integer)
    LANGUAGE sql
    SET plan_cache_mode TO 'force_custom_plan'
    AS $$
    WITH held AS MATERIALIZED (
        -- The spans the run still holds, locked in one order (a takeover
        -- waits for this commit, and one that committed first is seen).
        SELECT s.campaign_id, s.after, s.through FROM delivery_spans s
        WHERE s.campaign_id = ANY (s_campaign)
          AND (s.campaign_id, s.through) IN (SELECT * FROM unnest(s_campaign, s_through))
          AND s.run_id = p_run
        ORDER BY s.campaign_id, s.through
        FOR UPDATE OF s
    ), marked AS (
        UPDATE delivery_spans s SET settled = x.settled, marks = s.marks || x.settled, marked_at = s.marked_at || now(),
            marked_by = s.marked_by || p_run
        FROM unnest(s_campaign, s_through, s_settled) AS x(campaign, through, settled)
        JOIN held h ON h.campaign_id = x.campaign AND h.through = x.through
        WHERE s.campaign_id = x.campaign AND s.through = x.through AND x.settled > s.settled AND x.settled <= s.through
    ), e AS (
        SELECT * FROM unnest(e_campaign, e_id, e_device, e_status, e_error, e_attempts, e_delay, e_invalid_since)
            AS e(campaign, id, device, status, error, attempts, delay, invalid_since)
    ), w AS (
        UPDATE deliveries d SET
            status = CASE WHEN e.status NOT IN ('queued', 'retry') THEN e.status
                          WHEN c.status = 'cancelled' THEN 'cancelled'
                          ELSE 'queued' END,
            last_error = CASE WHEN e.status IN ('queued', 'retry') AND c.status = 'cancelled' THEN 'campaign cancelled'
                              ELSE nullif(e.error, '') END,
            attempts = d.attempts + e.attempts,
            not_before = CASE WHEN e.status IN ('queued', 'retry')
                              THEN greatest(d.not_before, now() + make_interval(secs => e.delay))
                              ELSE d.not_before END,
            apns_id = herald_apns_id(d.id, (SELECT p.prefix FROM apns_id_prefix p)),
            claimed_by = CASE WHEN e.status = 'in_flight' THEN p_run END,
            lease_expires_at = CASE WHEN e.status = 'in_flight'
                                    THEN (SELECT r.lease_expires_at FROM runs r WHERE r.id = p_run) END,
            updated_at = now()
        FROM e JOIN held h ON h.campaign_id = e.campaign AND e.id > h.after AND e.id <= h.through
        JOIN campaigns c ON c.id = e.campaign
        WHERE d.campaign_id = ANY (e_campaign) AND d.campaign_id = e.campaign AND d.id = e.id AND d.status = 'batch'
        RETURNING d.campaign_id, d.id
    ), invalidated AS (
        UPDATE devices dv SET invalidated_at = to_timestamp(e.invalid_since), invalid_reason = nullif(e.error, '')
        FROM e JOIN w ON w.campaign_id = e.campaign AND w.id = e.id
        WHERE e.status = 'invalid' AND dv.id = e.device AND dv.invalidated_at IS NULL
          AND (dv.registered_at IS NULL OR dv.registered_at <= to_timestamp(e.invalid_since))
    )
    SELECT x.campaign, x.through, h.through IS NOT NULL,
           (SELECT count(*) FROM w WHERE h.through IS NOT NULL AND w.campaign_id = h.campaign_id
                                     AND w.id > h.after AND w.id <= h.through)::integer
    FROM unnest(s_campaign, s_through) AS x(campaign, through)
    LEFT JOIN held h ON h.campaign_id = x.campaign AND h.through = x.through
$$;

COMMENT ON FUNCTION public.herald_settle(p_run bigint, s_campaign bigint[], s_through bigint[], s_settled bigint[], e_campaign bigint[], e_id bigint[], e_device bigint[], e_status text[], e_error text[], e_attempts integer[], e_delay double precision[], e_invalid_since double precision[]) IS 'Settles a run''s spans in one transaction: each span it still holds moves to its new watermark with a mark, the batch rows whose outcome differs are written, and devices APNs called invalid are invalidated. Fenced: a span taken over meanwhile takes neither watermark nor row.';

CREATE FUNCTION public.herald_snapshot_caps_done() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    DELETE FROM snapshot_caps WHERE campaign_id = NEW.id;
    RETURN NULL;
END $$;

COMMENT ON FUNCTION public.herald_snapshot_caps_done() IS 'Deletes a campaign''s snapshot_caps row when it ends before its snapshot''s last slice. Fired by campaigns_snapshot_caps_done.';

CREATE FUNCTION public.herald_spans_due(p_campaign bigint) RETURNS boolean
    LANGUAGE sql STABLE
    RETURN public.herald_batch_left(p_campaign, false);

COMMENT ON FUNCTION public.herald_spans_due(p_campaign bigint) IS 'Whether a claim of a campaign''s spans would find rows now; a run asks before it ends the campaign''s sending, so that rows committed after its last claim are not left to the next run.';

CREATE FUNCTION public.herald_step_state(p_campaign bigint) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_sale bigint;
    v_step integer;
    v_is_sale boolean;
    v_key integer;
    v_earlier bigint[];
BEGIN
    SELECT c.sale_id, c.sale_step, c.live_activity IS NOT NULL INTO v_sale, v_step, v_is_sale
    FROM campaigns c WHERE c.id = p_campaign;
    IF v_sale IS NULL THEN
        -- Not a step. A sale's start holds the sale's shared lock, as its steps do.
        IF v_is_sale THEN PERFORM pg_advisory_xact_lock_shared(4931, (p_campaign % 2147483647)::integer); END IF;
        RETURN 'clear';
    END IF;
    v_key := (v_sale % 2147483647)::integer;
    IF EXISTS (SELECT 1 FROM sale_step_gates WHERE campaign_id = p_campaign) THEN
        PERFORM pg_advisory_xact_lock_shared(4931, v_key);
    ELSE
        -- The gate may open: under the exclusive lock, so that a claim of an earlier step
        -- under way has committed (its rows read in flight) or has not begun (and will find
        -- this gate open). Taken at once, never raised from the shared one.
        PERFORM pg_advisory_xact_lock(4931, v_key);
    END IF;
    -- Each query of a volatile function sees what committed before it, the locks' holders too.
    IF EXISTS (SELECT 1 FROM sale_step_gates g JOIN campaigns st ON st.id = g.campaign_id
               WHERE st.sale_id = v_sale AND st.sale_step > v_step) THEN
        RETURN 'superseded';
    END IF;
    IF EXISTS (SELECT 1 FROM sale_step_gates WHERE campaign_id = p_campaign) THEN
        RETURN 'clear';
    END IF;
    v_earlier := ARRAY(SELECT v_sale UNION ALL SELECT id FROM campaigns WHERE sale_id = v_sale AND sale_step < v_step);
    -- A run names each campaign it claimed deliveries of (runs.claimed_campaigns): only the
    -- live runs that claimed an earlier step have their rows looked at.
    IF EXISTS (
        SELECT 1 FROM runs r
        WHERE r.status = 'running' AND r.lease_expires_at >= now() AND r.claimed_campaigns && v_earlier
          AND EXISTS (SELECT 1 FROM delivery_status d
                      WHERE d.campaign_id = ANY (v_earlier) AND d.status = 'in_flight' AND d.claimed_by = r.id))
    OR EXISTS (
        SELECT 1 FROM channel_pushes cp JOIN runs r ON r.id = cp.claimed_by
        WHERE cp.campaign_id = ANY (v_earlier) AND cp.status = 'in_flight'
          AND r.status = 'running' AND r.lease_expires_at >= now())
    THEN
        RETURN 'waits';
    END IF;
    INSERT INTO sale_step_gates (campaign_id) VALUES (p_campaign) ON CONFLICT DO NOTHING;
    RETURN 'clear';
END;
$$;

COMMENT ON FUNCTION public.herald_step_state(p_campaign bigint) IS 'whether a sale''s step may be claimed now: clear, waits (an earlier step is in flight under a live lease) or superseded (a later step''s gate is open); opens the gate when clear';

CREATE FUNCTION public.herald_store_checked_replies(p_reply_ids uuid[], p_delivery_ids bigint[], p_actions text[], p_has_text boolean[], p_texts text[], p_occurred double precision[], p_checked boolean[], p_source text, OUT stored integer, OUT refused integer[], OUT duplicates integer[]) RETURNS record
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    SET jit TO 'off'
    AS $$
DECLARE
    total integer := coalesce(cardinality(p_delivery_ids), 0);
    r record;
    first_at integer;
    last_at integer;
    n integer;
    category text;
    allowed text[];
    with_text text[];
    candidates integer[];
    -- The keys the fast path stored.
    inserted_deliveries bigint[] := '{}';
    inserted_replies uuid[] := '{}';
    outside text;
BEGIN
    stored := 0;
    refused := '{}';
    duplicates := '{}';
    IF coalesce(cardinality(p_reply_ids), 0) <> total OR coalesce(cardinality(p_actions), 0) <> total
       OR coalesce(cardinality(p_has_text), 0) <> total OR coalesce(cardinality(p_texts), 0) <> total
       OR coalesce(cardinality(p_occurred), 0) <> total OR coalesce(cardinality(p_checked), 0) <> total THEN
        RAISE EXCEPTION 'herald_store_checked_replies: the arrays differ in length' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF total = 0 THEN
        RETURN;
    END IF;
    -- For this call only (a SET clause would do it, but only a superuser
    -- may store one for a parameter PostgreSQL does not know).
    outside := current_setting('herald.replies_checked', true);
    PERFORM set_config('herald.replies_checked', 'on', true);

    BEGIN
      IF total <= 500 THEN
        -- A small batch (the intake's, at most ReplyBatching.maxBatch):
        -- one INSERT over all its campaigns' ranges, each delivery found in
        -- its range's partition (pruned per row). A statement's fixed cost
        -- is most of a small batch's, and the intake's batches span many
        -- campaigns; a large one (ingest's 5,000) is cheaper by range, below.
        WITH ranges AS MATERIALIZED (
            SELECT g.campaign_id, g.ids, c.category_id
            FROM delivery_id_ranges g JOIN campaigns c ON c.id = g.campaign_id
            WHERE g.ids && int8range(least(p_delivery_ids[1], p_delivery_ids[total]),
                                     least(greatest(p_delivery_ids[1], p_delivery_ids[total]), 9223372036854775806) + 1)
        ), categories AS MATERIALIZED (
            -- Each category's actions, and those that take text, read once.
            SELECT k.category_id,
                   coalesce(array_agg(ca.action_id) FILTER (WHERE ca.action_id IS NOT NULL), '{}') AS allowed,
                   coalesce(array_agg(ca.action_id) FILTER (WHERE a.kind = 'text_input'), '{}') AS with_text
            FROM (SELECT DISTINCT ranges.category_id FROM ranges) k
            LEFT JOIN category_actions ca ON ca.category_id = k.category_id
            LEFT JOIN actions a ON a.id = ca.action_id
            GROUP BY k.category_id
        ), ins AS (
            INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, text,
                                 occurred_at, source, delivery_kind)
            SELECT p_reply_ids[u.at], u.id, d.campaign_id, d.device_id, d.user_id, p_actions[u.at],
                   CASE WHEN p_has_text[u.at] THEN p_texts[u.at] END, to_timestamp(p_occurred[u.at]), p_source, d.kind
            FROM unnest(p_delivery_ids) WITH ORDINALITY AS u(id, at)
            JOIN ranges g ON g.ids @> u.id
            JOIN categories k ON k.category_id IS NOT DISTINCT FROM g.category_id
            -- OFFSET 0 keeps the campaign a parameter of the partition scan.
            CROSS JOIN LATERAL (SELECT dl.campaign_id, dl.device_id, dl.user_id, dl.kind FROM deliveries dl
                                WHERE dl.campaign_id = g.campaign_id AND dl.id = u.id OFFSET 0) d
            WHERE p_checked[u.at] AND herald_reply_allowed(p_actions[u.at], p_has_text[u.at], k.allowed, k.with_text)
            RETURNING delivery_id, reply_id)
        SELECT count(*)::integer, coalesce(array_agg(ins.delivery_id), '{}'), coalesce(array_agg(ins.reply_id), '{}')
        INTO stored, inserted_deliveries, inserted_replies FROM ins;
      ELSE
        FOR r IN
            SELECT g.campaign_id, lower(g.ids) AS first_id, upper(g.ids) AS end_id, c.category_id
            FROM delivery_id_ranges g JOIN campaigns c ON c.id = g.campaign_id
            -- [first, last + 1): no range of real ids holds the largest bigint,
            -- whose successor does not exist.
            WHERE g.ids && int8range(least(p_delivery_ids[1], p_delivery_ids[total]),
                                     least(greatest(p_delivery_ids[1], p_delivery_ids[total]), 9223372036854775806) + 1)
            ORDER BY c.category_id
        LOOP
            -- The slice of the sorted ids in [first_id, end_id).
            first_at := width_bucket(r.first_id - 1, p_delivery_ids) + 1;
            last_at := width_bucket(r.end_id - 1, p_delivery_ids);
            CONTINUE WHEN first_at > last_at;
            -- The category's actions, read once for its ranges (in a row).
            IF allowed IS NULL OR r.category_id IS DISTINCT FROM category THEN
                SELECT coalesce(array_agg(ca.action_id), '{}'),
                       coalesce(array_agg(ca.action_id) FILTER (WHERE a.kind = 'text_input'), '{}')
                INTO allowed, with_text
                FROM category_actions ca JOIN actions a ON a.id = ca.action_id
                WHERE ca.category_id = r.category_id;
                category := r.category_id;
            END IF;
            WITH ins AS (
                INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, text,
                                     occurred_at, source, delivery_kind)
                SELECT p_reply_ids[u.at], u.id, d.campaign_id, d.device_id, d.user_id, p_actions[u.at],
                       CASE WHEN p_has_text[u.at] THEN p_texts[u.at] END, to_timestamp(p_occurred[u.at]), p_source, d.kind
                FROM (SELECT s.id, first_at - 1 + s.o::integer AS at
                      FROM unnest(p_delivery_ids[first_at:last_at]) WITH ORDINALITY AS s(id, o)) u
                JOIN deliveries d ON d.campaign_id = r.campaign_id AND d.id = u.id
                WHERE p_checked[u.at] AND herald_reply_allowed(p_actions[u.at], p_has_text[u.at], allowed, with_text)
                RETURNING delivery_id, reply_id)
            SELECT count(*)::integer, inserted_deliveries || coalesce(array_agg(ins.delivery_id), '{}'),
                   inserted_replies || coalesce(array_agg(ins.reply_id), '{}')
            INTO n, inserted_deliveries, inserted_replies FROM ins;
            stored := stored + n;
        END LOOP;
      END IF;
        IF stored = total THEN
            PERFORM set_config('herald.replies_checked', coalesce(outside, ''), true);
            RETURN;
        END IF;
        -- The rest (refused, or outside the ranges) takes the general path
        -- below. With a key twice in the batch, which of its replies was
        -- stored here is not known by key: the whole batch goes that way.
        PERFORM set_config('enable_hashjoin', 'on', true);
        IF EXISTS (SELECT FROM unnest(p_delivery_ids, p_reply_ids) AS u(id, reply_id)
                   GROUP BY u.id, u.reply_id HAVING count(*) > 1) THEN
            RAISE EXCEPTION USING ERRCODE = 'HR001';
        END IF;
        SELECT coalesce(array_agg(u.at ORDER BY u.at), '{}') INTO candidates
        FROM unnest(p_delivery_ids, p_reply_ids) WITH ORDINALITY AS u(id, reply_id, at)
        WHERE NOT EXISTS (SELECT FROM unnest(inserted_deliveries, inserted_replies) AS k(id, reply_id)
                          WHERE k.id = u.id AND k.reply_id = u.reply_id);
    EXCEPTION WHEN unique_violation OR SQLSTATE 'HR001' THEN
        -- A key stored before or twice in the batch: the fast path's rows
        -- are gone with its subtransaction; the whole batch goes the general way.
        PERFORM set_config('enable_hashjoin', 'on', true);
        stored := 0;
        SELECT array_agg(at) INTO candidates FROM generate_series(1, total) AS at;
    END;

    -- The general path, for the replies at `candidates`: checked and stored
    -- in their order, the first of one key stored, the others duplicates.
    -- The statement trigger checks the rows again and records a test send's kind.
    PERFORM set_config('herald.replies_checked', 'off', true);
    WITH c AS MATERIALIZED (
        SELECT u.at, p_reply_ids[u.at] AS reply_id, p_delivery_ids[u.at] AS delivery_id, p_actions[u.at] AS action,
               p_has_text[u.at] AS has_text, p_checked[u.at] AS checked
        FROM unnest(candidates) AS u(at)
    ), found AS MATERIALIZED (
        SELECT t.id, t.campaign_id, t.device_id, t.user_id, t.category_id
        FROM herald_reply_targets(ARRAY(SELECT DISTINCT c.delivery_id FROM c)) AS t
    ), passing AS MATERIALIZED (
        SELECT c.at, c.reply_id, c.delivery_id, f.campaign_id, f.device_id, f.user_id, c.action, c.has_text
        FROM c JOIN found f ON f.id = c.delivery_id
        CROSS JOIN LATERAL (
            SELECT coalesce(array_agg(ca.action_id), '{}') AS allowed,
                   coalesce(array_agg(ca.action_id) FILTER (WHERE a.kind = 'text_input'), '{}') AS with_text
            FROM category_actions ca JOIN actions a ON a.id = ca.action_id
            WHERE ca.category_id = f.category_id) k
        WHERE c.checked AND herald_reply_allowed(c.action, c.has_text, k.allowed, k.with_text)
    ), ins AS (
        INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, text, occurred_at, source)
        SELECT p.reply_id, p.delivery_id, p.campaign_id, p.device_id, p.user_id, p.action,
               CASE WHEN p.has_text THEN p_texts[p.at] END, to_timestamp(p_occurred[p.at]), p_source
        FROM passing p
        ORDER BY p.at
        ON CONFLICT (delivery_id, reply_id) DO NOTHING
        RETURNING delivery_id, reply_id
    ), firsts AS (
        -- The position stored for each key stored now: its first passing one.
        SELECT min(p.at) AS at FROM passing p JOIN ins i ON i.delivery_id = p.delivery_id AND i.reply_id = p.reply_id
        GROUP BY p.delivery_id, p.reply_id
    )
    SELECT stored + (SELECT count(*) FROM firsts)::integer,
           coalesce((SELECT array_agg(c.at ORDER BY c.at) FROM c WHERE c.at NOT IN (SELECT p.at FROM passing p)), '{}'),
           coalesce((SELECT array_agg(p.at ORDER BY p.at) FROM passing p WHERE p.at NOT IN (SELECT f.at FROM firsts f)), '{}')
    INTO stored, refused, duplicates;
    PERFORM set_config('herald.replies_checked', coalesce(outside, ''), true);
END $$;

COMMENT ON FUNCTION public.herald_store_checked_replies(p_reply_ids uuid[], p_delivery_ids bigint[], p_actions text[], p_has_text boolean[], p_texts text[], p_occurred double precision[], p_checked boolean[], p_source text, OUT stored integer, OUT refused integer[], OUT duplicates integer[]) IS 'looks up, checks and stores a batch of replies (the only way roles other than the owner store replies)';

CREATE FUNCTION public.herald_store_receipts(p_ids bigint[], p_arrived timestamp with time zone[], p_sealed smallint[], p_media smallint[], OUT stored integer, OUT unknown bigint[]) RETURNS record
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    WITH t AS MATERIALIZED (
        SELECT t.id, t.campaign_id, t.device_id FROM herald_reply_targets(p_ids) t
    ), input AS (
        SELECT DISTINCT ON (x.id) x.id, x.arrived,
               CASE x.sealed WHEN 1 THEN true WHEN 0 THEN false END AS sealed,
               CASE x.media WHEN 1 THEN true WHEN 0 THEN false END AS media
        FROM unnest(p_ids, p_arrived, p_sealed, p_media) WITH ORDINALITY AS x(id, arrived, sealed, media, n)
        ORDER BY x.id, x.n
    ), ins AS (
        INSERT INTO receipts (delivery_id, campaign_id, device_id, arrived_at, sealed_opened, media_attached)
        SELECT i.id, t.campaign_id, t.device_id, i.arrived, i.sealed, i.media
        FROM input i JOIN t ON t.id = i.id
        ON CONFLICT (delivery_id) DO NOTHING
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM ins)::integer,
           coalesce((SELECT array_agg(DISTINCT i.id) FROM input i WHERE NOT EXISTS (SELECT 1 FROM t WHERE t.id = i.id)),
                    '{}')
    INTO stored, unknown;
END $$;

COMMENT ON FUNCTION public.herald_store_receipts(p_ids bigint[], p_arrived timestamp with time zone[], p_sealed smallint[], p_media smallint[], OUT stored integer, OUT unknown bigint[]) IS 'Stores a batch of delivery receipts, one per delivery (the first is kept): returns how many are new and the ids that are no delivery. How the intake writes receipts.';

CREATE FUNCTION public.herald_two_sided_p(z double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
    SELECT CASE WHEN abs(z) > 37 THEN 0.0::float8
           ELSE least(1.0, t * (0.254829592 + t * (-0.284496736 + t * (1.421413741
                    + t * (-1.453152027 + t * 1.061405429)))) * exp(-x * x)) END
    FROM (SELECT abs(z) / sqrt(2.0) AS x) AS a,
         LATERAL (SELECT 1.0 / (1.0 + 0.3275911 * a.x) AS t) AS b
$$;

COMMENT ON FUNCTION public.herald_two_sided_p(z double precision) IS 'The two-sided p-value of a standard normal z (Abramowitz and Stegun''s approximation of erfc), for analyst.variant_comparison and analyst.lift.';

CREATE FUNCTION public.herald_user_deleted() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    LOCK TABLE replies IN SHARE ROW EXCLUSIVE MODE;
    DELETE FROM replies WHERE user_id IN (SELECT id FROM gone);
    RETURN NULL;
END $$;

COMMENT ON FUNCTION public.herald_user_deleted() IS 'Deletes the replies of deleted users, once per statement: replies have no foreign key to users. Fired by users_deleted_replies.';

CREATE FUNCTION public.herald_variant_approval_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    PERFORM herald_clear_approval(CASE WHEN TG_OP = 'DELETE' THEN OLD.campaign_id ELSE NEW.campaign_id END,
                                  'changed: variants');
    RETURN NULL;
END $$;

COMMENT ON FUNCTION public.herald_variant_approval_guard() IS 'Withdraws a campaign''s approval when its variants change. Fired by campaign_variants_approval_guard.';

CREATE FUNCTION public.herald_variant_bucket(campaign_id bigint, device_id bigint) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
    SELECT (((('x' || left(md5(campaign_id::text || ':' || device_id::text), 8))::bit(32)::bigint) * 100) >> 32)::integer
$$;

COMMENT ON FUNCTION public.herald_variant_bucket(campaign_id bigint, device_id bigint) IS 'The documented hash that assigns a device to a campaign''s variant: a bucket from 0 to 99 from md5(''<campaign>:<device>''), the same on every PostgreSQL version and in any language, so that a device gets the same variant on every run.';

CREATE FUNCTION public.herald_version(v text) RETURNS integer[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
    SELECT coalesce(array_agg(coalesce(nullif(substring(part FROM '^[0-9]+'), '')::integer, 0) ORDER BY n), '{}')
    FROM unnest(string_to_array(v, '.')) WITH ORDINALITY AS t(part, n)
$$;

COMMENT ON FUNCTION public.herald_version(v text) IS 'An app version as integers (''2.10.3'' is {2,10,3}; a part that is not a number counts as 0), so that segment rules compare versions numerically. NULL stays NULL and matches no version rule.';

CREATE FUNCTION public.herald_widget_push(p_campaign bigint) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
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

COMMENT ON FUNCTION public.herald_widget_push(p_campaign bigint) IS 'Makes a campaign''s widget push (a campaign row of its own, widgets_of, due now) when the campaign starts. Made once: returns its id only when this call made it.';

CREATE FUNCTION public.herald_widgets_status_follows() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    IF NEW.status IN ('paused', 'cancelled') THEN
        UPDATE campaigns SET status = NEW.status
        WHERE widgets_of = NEW.id AND status IN ('scheduled', 'running', 'paused') AND status <> NEW.status;
    ELSIF OLD.status = 'paused' AND NEW.status IN ('scheduled', 'running', 'completed') THEN
        UPDATE campaigns SET status = 'scheduled' WHERE widgets_of = NEW.id AND status = 'paused';
    END IF;
    RETURN NULL;
END $$;

COMMENT ON FUNCTION public.herald_widgets_status_follows() IS 'Passes a campaign''s pause, resume and cancel on to its widget push not finished. Fired by campaigns_widgets_status_follows.';

CREATE FUNCTION public.herald_withdraw_approval(p_campaign bigint, p_reason text DEFAULT NULL::text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    IF NOT pg_has_role(session_user, 'herald_approver', 'MEMBER')
       AND NOT EXISTS (SELECT 1 FROM campaigns WHERE id = p_campaign AND created_by = session_user) THEN
        RAISE EXCEPTION '% may not withdraw the approval of campaign %: only its author or a member of herald_approver may',
            session_user, p_campaign;
    END IF;
    PERFORM herald_clear_approval(p_campaign, coalesce(p_reason, 'withdrawn by hand'));
END $$;

COMMENT ON FUNCTION public.herald_withdraw_approval(p_campaign bigint, p_reason text) IS 'Withdraws a campaign''s approval by hand, for its author or a member of herald_approver.';

CREATE FUNCTION public.herald_withdraw_users_of(p_segment bigint, p_categories text[], p_reason text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
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

COMMENT ON FUNCTION public.herald_withdraw_users_of(p_segment bigint, p_categories text[], p_reason text) IS 'Withdraws the approval of every approved, unfinished campaign that uses a segment or one of some categories, when what they show or whom they reach changed.';


-- ==========================================================================
-- Views, each with its comment.
-- ==========================================================================

CREATE VIEW analyst.action_breakdown AS
 SELECT r.campaign_id,
    c.name AS campaign,
    r.action,
        CASE r.action
            WHEN 'com.apple.UNNotificationDefaultActionIdentifier'::text THEN '(opened)'::text
            WHEN 'com.apple.UNNotificationDismissActionIdentifier'::text THEN '(dismissed)'::text
            ELSE a.title
        END AS action_title,
    count(*) AS replies,
    round(((100.0 * (count(*))::numeric) / sum(count(*)) OVER (PARTITION BY r.campaign_id)), 1) AS share_pct
   FROM ((public.replies r
     JOIN public.campaigns c ON ((c.id = r.campaign_id)))
     LEFT JOIN public.actions a ON ((a.id = r.action)))
  WHERE (r.delivery_kind = 'campaign'::text)
  GROUP BY r.campaign_id, c.name, r.action, a.title;

COMMENT ON VIEW analyst.action_breakdown IS 'Per campaign and action: how many replies took each button (or opened or dismissed the notification), and its share of the campaign''s replies. Replies to campaign deliveries only, not to test sends.';

CREATE VIEW public.delivery_status AS
 SELECT d.id,
    d.campaign_id,
    d.device_id,
    d.user_id,
    d.status,
    d.not_before,
    d.apns_id,
    d.attempts,
    d.last_error,
    d.claimed_by,
    d.created_at,
    d.sent_at,
    d.updated_at,
    d.lease_expires_at,
    d.kind,
    d.config_etag,
    d.prompted_by,
    d.variant,
    d.refresh_open
   FROM public.deliveries d
  WHERE (d.status <> 'batch'::text)
UNION ALL
 SELECT d.id,
    sp.campaign_id,
    d.device_id,
    d.user_id,
    public.herald_delivery_status(d.status, d.id, sp.settled, NULL::boolean) AS status,
    d.not_before,
    public.herald_apns_id(d.id) AS apns_id,
    1 AS attempts,
    d.last_error,
    m.marked_by AS claimed_by,
    d.created_at,
    m.marked_at AS sent_at,
    d.updated_at,
    NULL::timestamp with time zone AS lease_expires_at,
    d.kind,
    d.config_etag,
    d.prompted_by,
    d.variant,
    d.refresh_open
   FROM ((public.delivery_spans sp
     CROSS JOIN LATERAL ( SELECT x.mark,
            x.marked_at,
            x.marked_by,
            COALESCE(lag(x.mark) OVER (ORDER BY x.i), sp.after) AS low
           FROM UNNEST(sp.marks, sp.marked_at, sp.marked_by) WITH ORDINALITY x(mark, marked_at, marked_by, i)) m)
     CROSS JOIN LATERAL ( SELECT b.id,
            b.campaign_id,
            b.device_id,
            b.user_id,
            b.status,
            b.not_before,
            b.apns_id,
            b.attempts,
            b.last_error,
            b.claimed_by,
            b.created_at,
            b.sent_at,
            b.updated_at,
            b.lease_expires_at,
            b.kind,
            b.config_etag,
            b.prompted_by,
            b.variant,
            b.refresh_open
           FROM public.deliveries b
          WHERE ((b.campaign_id = sp.campaign_id) AND (b.id > m.low) AND (b.id <= m.mark) AND (b.status = 'batch'::text))
         OFFSET 0) d)
UNION ALL
 SELECT d.id,
    sp.campaign_id,
    d.device_id,
    d.user_id,
    public.herald_delivery_status(d.status, d.id, sp.settled, h.held) AS status,
    d.not_before,
    d.apns_id,
    d.attempts,
    d.last_error,
        CASE
            WHEN h.held THEN sp.run_id
            ELSE NULL::bigint
        END AS claimed_by,
    d.created_at,
    d.sent_at,
    d.updated_at,
        CASE
            WHEN h.held THEN r.lease_expires_at
            ELSE NULL::timestamp with time zone
        END AS lease_expires_at,
    d.kind,
    d.config_etag,
    d.prompted_by,
    d.variant,
    d.refresh_open
   FROM (((public.delivery_spans sp
     LEFT JOIN public.runs r ON ((r.id = sp.run_id)))
     CROSS JOIN LATERAL ( SELECT public.herald_run_holds(sp.run_id) AS held) h)
     CROSS JOIN LATERAL ( SELECT b.id,
            b.campaign_id,
            b.device_id,
            b.user_id,
            b.status,
            b.not_before,
            b.apns_id,
            b.attempts,
            b.last_error,
            b.claimed_by,
            b.created_at,
            b.sent_at,
            b.updated_at,
            b.lease_expires_at,
            b.kind,
            b.config_etag,
            b.prompted_by,
            b.variant,
            b.refresh_open
           FROM public.deliveries b
          WHERE ((b.campaign_id = sp.campaign_id) AND (b.id > sp.settled) AND (b.id <= sp.through) AND (b.status = 'batch'::text))
         OFFSET 0) d)
  WHERE (sp.settled < sp.through)
UNION ALL
 SELECT d.id,
    e.campaign_id,
    d.device_id,
    d.user_id,
    public.herald_delivery_status(d.status, d.id, NULL::bigint, false) AS status,
    d.not_before,
    d.apns_id,
    d.attempts,
    d.last_error,
    NULL::bigint AS claimed_by,
    d.created_at,
    d.sent_at,
    d.updated_at,
    NULL::timestamp with time zone AS lease_expires_at,
    d.kind,
    d.config_etag,
    d.prompted_by,
    d.variant,
    d.refresh_open
   FROM (( SELECT c.id AS campaign_id,
            ( SELECT COALESCE(max(x.through), (0)::bigint) AS "coalesce"
                   FROM public.delivery_spans x
                  WHERE (x.campaign_id = c.id)) AS last
           FROM public.campaigns c) e
     CROSS JOIN LATERAL ( SELECT b.id,
            b.campaign_id,
            b.device_id,
            b.user_id,
            b.status,
            b.not_before,
            b.apns_id,
            b.attempts,
            b.last_error,
            b.claimed_by,
            b.created_at,
            b.sent_at,
            b.updated_at,
            b.lease_expires_at,
            b.kind,
            b.config_etag,
            b.prompted_by,
            b.variant,
            b.refresh_open
           FROM public.deliveries b
          WHERE ((b.campaign_id = e.campaign_id) AND (b.id > e.last) AND (b.status = 'batch'::text))
         OFFSET 0) d);

COMMENT ON VIEW public.delivery_status IS 'The ledger as readers know it: every delivery with its effective status (herald_delivery_status). A batch row reads as its span says (sent at its mark''s time with the derived apns-id, in flight under its run, or queued), every other row as it is; analyst views and every reader of statuses read the ledger through it.';

CREATE VIEW analyst.apps AS
 WITH ledger AS (
         SELECT COALESCE(dv.app, 'default'::text) AS app,
            d.status,
            count(*) AS n
           FROM (public.delivery_status d
             LEFT JOIN public.devices dv ON ((dv.id = d.device_id)))
          WHERE (d.kind = 'campaign'::text)
          GROUP BY COALESCE(dv.app, 'default'::text), d.status
        UNION ALL
         SELECT pruned_delivery_counts.app,
            pruned_delivery_counts.status,
            pruned_delivery_counts.deliveries
           FROM public.pruned_delivery_counts
        ), figures AS (
         SELECT ledger.app,
            (COALESCE(sum(ledger.n) FILTER (WHERE (ledger.status = 'sent'::text)), (0)::numeric))::bigint AS sent,
            (COALESCE(sum(ledger.n) FILTER (WHERE (ledger.status = 'failed'::text)), (0)::numeric))::bigint AS failed
           FROM ledger
          GROUP BY ledger.app
        ), confirmed AS (
         SELECT dv.app,
            count(DISTINCT x.delivery_id) AS delivered
           FROM (( SELECT receipts.delivery_id,
                    receipts.device_id
                   FROM public.receipts
                UNION
                 SELECT replies.delivery_id,
                    replies.device_id
                   FROM public.replies
                UNION
                 SELECT d.id,
                    d.device_id
                   FROM ((public.delivery_status d
                     JOIN public.campaigns st ON ((st.id = d.campaign_id)))
                     JOIN public.live_activities la ON (((la.campaign_id = COALESCE(st.sale_id, st.id)) AND (la.device_id = d.device_id))))
                  WHERE ((d.kind = 'campaign'::text) AND (d.status = 'sent'::text) AND ((st.live_activity IS NOT NULL) OR (st.sale_id IS NOT NULL)) AND ((st.sale_id IS NULL) OR (la.confirmed_step >= st.sale_step)))) x
             JOIN public.devices dv ON ((dv.id = x.device_id)))
          GROUP BY dv.app
        ), answered AS (
         SELECT dv.app,
            count(DISTINCT r_1.delivery_id) AS replied
           FROM (public.replies r_1
             JOIN public.devices dv ON ((dv.id = r_1.device_id)))
          GROUP BY dv.app
        )
 SELECT a.name AS app,
    a.display_name,
    COALESCE(a.topic, '(APNS_TOPIC)'::text) AS topic,
    ( SELECT count(*) AS count
           FROM public.devices dv
          WHERE (dv.app = a.name)) AS devices,
    ( SELECT count(*) AS count
           FROM public.devices dv
          WHERE ((dv.app = a.name) AND (dv.invalidated_at IS NULL))) AS active_devices,
    ( SELECT count(*) AS count
           FROM public.devices dv
          WHERE ((dv.app = a.name) AND (dv.public_key IS NOT NULL))) AS keyed_devices,
    COALESCE(f.sent, (0)::bigint) AS sent,
    COALESCE(f.failed, (0)::bigint) AS failed,
    COALESCE(c.delivered, (0)::bigint) AS delivered,
    COALESCE(r.replied, (0)::bigint) AS replied
   FROM (((public.apps a
     LEFT JOIN figures f ON ((f.app = a.name)))
     LEFT JOIN confirmed c ON ((c.app = a.name)))
     LEFT JOIN answered r ON ((r.app = a.name)));

COMMENT ON VIEW analyst.apps IS 'Each app: its devices, and its campaign deliveries sent, failed, delivered (a receipt, a reply, or for a Live Activity push the device''s confirmation) and replied to.';

CREATE VIEW analyst.best_hours AS
 SELECT u.external_id AS user_external_id,
    u.time_zone,
    b.hour AS best_hour,
    b.events
   FROM (public.herald_best_hours() b(user_id, hour, events)
     JOIN public.users u ON ((u.id = b.user_id)));

COMMENT ON VIEW analyst.best_hours IS 'Each user''s best hour (0-23 on their own clock) and the replies and conversions it rests on, for the users with enough of them (herald_best_hours).';

CREATE VIEW analyst.campaign_funnel AS
 WITH counts AS (
         SELECT deliveries.campaign_id,
            deliveries.status,
            count(*) AS n
           FROM public.delivery_status deliveries
          WHERE (deliveries.kind = 'campaign'::text)
          GROUP BY deliveries.campaign_id, deliveries.status
        UNION ALL
         SELECT pruned_delivery_counts.campaign_id,
            pruned_delivery_counts.status,
            pruned_delivery_counts.deliveries
           FROM public.pruned_delivery_counts
        ), d AS (
         SELECT counts.campaign_id,
            (sum(counts.n))::bigint AS targeted,
            (COALESCE(sum(counts.n) FILTER (WHERE (counts.status = 'queued'::text)), (0)::numeric))::bigint AS queued,
            (COALESCE(sum(counts.n) FILTER (WHERE (counts.status = 'in_flight'::text)), (0)::numeric))::bigint AS in_flight,
            (COALESCE(sum(counts.n) FILTER (WHERE (counts.status = 'sent'::text)), (0)::numeric))::bigint AS sent,
            (COALESCE(sum(counts.n) FILTER (WHERE (counts.status = 'invalid'::text)), (0)::numeric))::bigint AS invalid,
            (COALESCE(sum(counts.n) FILTER (WHERE (counts.status = 'failed'::text)), (0)::numeric))::bigint AS failed,
            (COALESCE(sum(counts.n) FILTER (WHERE (counts.status = 'expired'::text)), (0)::numeric))::bigint AS expired,
            (COALESCE(sum(counts.n) FILTER (WHERE (counts.status = 'skipped'::text)), (0)::numeric))::bigint AS skipped,
            (COALESCE(sum(counts.n) FILTER (WHERE (counts.status = 'cancelled'::text)), (0)::numeric))::bigint AS cancelled
           FROM counts
          GROUP BY counts.campaign_id
        ), r AS (
         SELECT r_1.campaign_id,
            count(*) AS replies,
            count(DISTINCT r_1.delivery_id) AS responding_devices,
            count(*) FILTER (WHERE (r_1.action = 'com.apple.UNNotificationDefaultActionIdentifier'::text)) AS opened,
            count(*) FILTER (WHERE (r_1.action = 'com.apple.UNNotificationDismissActionIdentifier'::text)) AS dismissed,
            count(*) FILTER (WHERE (r_1.text IS NOT NULL)) AS typed_answers
           FROM public.replies r_1
          WHERE (r_1.delivery_kind = 'campaign'::text)
          GROUP BY r_1.campaign_id
        )
 SELECT c.id AS campaign_id,
    c.name,
    c.kind,
    c.status,
    c.failure_reason,
    c.send_at,
    c.expires_at,
    c.started_at,
    c.completed_at,
    COALESCE(d.targeted, (0)::bigint) AS targeted,
    COALESCE(d.queued, (0)::bigint) AS queued,
    COALESCE(d.in_flight, (0)::bigint) AS in_flight,
    COALESCE(d.sent, (0)::bigint) AS sent,
    COALESCE(d.invalid, (0)::bigint) AS invalid,
    COALESCE(d.failed, (0)::bigint) AS failed,
    COALESCE(d.expired, (0)::bigint) AS expired,
    COALESCE(d.skipped, (0)::bigint) AS skipped,
    COALESCE(d.cancelled, (0)::bigint) AS cancelled,
    COALESCE(r.replies, (0)::bigint) AS replies,
    COALESCE(r.responding_devices, (0)::bigint) AS responding_devices,
    COALESCE(r.opened, (0)::bigint) AS opened,
    COALESCE(r.dismissed, (0)::bigint) AS dismissed,
    COALESCE(r.typed_answers, (0)::bigint) AS typed_answers,
    round(((100.0 * (COALESCE(r.responding_devices, (0)::bigint))::numeric) / (NULLIF(d.sent, 0))::numeric), 1) AS response_rate_pct
   FROM ((public.campaigns c
     LEFT JOIN d ON ((d.campaign_id = c.id)))
     LEFT JOIN r ON ((r.campaign_id = c.id)))
  WHERE (c.sale_id IS NULL);

COMMENT ON VIEW analyst.campaign_funnel IS 'Per campaign (a Live Activity sale''s steps are under analyst.live_activity_steps): how many devices were targeted and what became of them, and how users answered (replies, opens, dismissals, typed answers, response rate). Campaign deliveries only, live or kept by a prune.';

CREATE VIEW analyst.campaign_status_changes AS
 SELECT h.campaign_id,
    c.name AS campaign,
    h.from_status,
    h.to_status,
    h.changed_by,
    h.changed_at,
    h.reason
   FROM (public.campaign_status_changes h
     JOIN public.campaigns c ON ((c.id = h.campaign_id)));

COMMENT ON VIEW analyst.campaign_status_changes IS 'Who paused, resumed, cancelled or failed which campaign, when and why (campaign_status_changes with the campaign''s name).';

CREATE VIEW analyst.code_pools AS
 SELECT p.name AS pool,
    count(pc.code) AS codes,
    count(pc.campaign_id) AS drawn,
    (count(pc.code) - count(pc.campaign_id)) AS remaining
   FROM (public.code_pools p
     LEFT JOIN public.pool_codes pc ON ((pc.pool = p.name)))
  GROUP BY p.name;

COMMENT ON VIEW analyst.code_pools IS 'How much of each code pool is left: its codes, those drawn and those remaining.';

CREATE VIEW analyst.codes_given AS
 SELECT pc.campaign_id,
    c.name AS campaign,
    pc.pool,
    pc.code,
    u.external_id AS user_external_id,
    pc.drawn_at,
    ( SELECT count(*) AS count
           FROM public.conversions v
          WHERE ((v.user_id = pc.user_id) AND (v.code = pc.code))) AS conversions,
    ( SELECT sum(v.amount) AS sum
           FROM public.conversions v
          WHERE ((v.user_id = pc.user_id) AND (v.code = pc.code))) AS amount
   FROM ((public.pool_codes pc
     JOIN public.campaigns c ON ((c.id = pc.campaign_id)))
     JOIN public.users u ON ((u.id = pc.user_id)))
  WHERE (pc.campaign_id IS NOT NULL);

COMMENT ON VIEW analyst.codes_given IS 'Who got which code of a pool, from which campaign and when, with the conversions that name that code and their amount.';

CREATE VIEW analyst.config_refreshes AS
 SELECT d.prompted_by AS campaign_id,
    d.config_etag,
    d.status,
    count(*) AS devices,
    min(d.sent_at) AS first_sent_at,
    max(d.sent_at) AS last_sent_at
   FROM public.deliveries d
  WHERE (d.kind = 'config_refresh'::text)
  GROUP BY d.prompted_by, d.config_etag, d.status;

COMMENT ON VIEW analyst.config_refreshes IS 'The config refresh pushes (which make a device fetch the notification config before a campaign uses a category it lacks), by the campaign that prompted them, ETag and status.';

CREATE VIEW analyst.delivery_confirmation AS
 WITH confirmed AS (
         SELECT r.campaign_id,
            r.delivery_id
           FROM (public.receipts r
             JOIN ( SELECT deliveries.campaign_id,
                    deliveries.id
                   FROM public.delivery_status deliveries
                  WHERE (deliveries.kind = 'campaign'::text)
                UNION ALL
                 SELECT pruned_answered_deliveries.campaign_id,
                    pruned_answered_deliveries.id
                   FROM public.pruned_answered_deliveries) d ON (((d.campaign_id = r.campaign_id) AND (d.id = r.delivery_id))))
        UNION
         SELECT rp.campaign_id,
            rp.delivery_id
           FROM public.replies rp
          WHERE (rp.delivery_kind = 'campaign'::text)
        ), by_campaign AS (
         SELECT confirmed.campaign_id,
            count(*) AS delivered
           FROM confirmed
          GROUP BY confirmed.campaign_id
        ), arrival AS (
         SELECT r.campaign_id,
            count(*) AS receipts,
            percentile_cont((0.5)::double precision) WITHIN GROUP (ORDER BY ((EXTRACT(epoch FROM (r.arrived_at - d.sent_at)))::double precision)) AS median_s,
            percentile_cont((0.9)::double precision) WITHIN GROUP (ORDER BY ((EXTRACT(epoch FROM (r.arrived_at - d.sent_at)))::double precision)) AS p90_s,
            count(*) FILTER (WHERE r.sealed_opened) AS sealed_opened,
            count(*) FILTER (WHERE (NOT r.sealed_opened)) AS sealed_failed,
            count(*) FILTER (WHERE r.media_attached) AS media_attached,
            count(*) FILTER (WHERE (NOT r.media_attached)) AS media_failed
           FROM (public.receipts r
             JOIN ( SELECT deliveries.campaign_id,
                    deliveries.id,
                    deliveries.sent_at
                   FROM public.delivery_status deliveries
                  WHERE (deliveries.kind = 'campaign'::text)
                UNION ALL
                 SELECT pruned_answered_deliveries.campaign_id,
                    pruned_answered_deliveries.id,
                    pruned_answered_deliveries.sent_at
                   FROM public.pruned_answered_deliveries) d ON (((d.campaign_id = r.campaign_id) AND (d.id = r.delivery_id))))
          GROUP BY r.campaign_id
        )
 SELECT f.campaign_id,
    f.name,
    f.sent,
    COALESCE(b.delivered, (0)::bigint) AS delivered,
    round(((100.0 * (COALESCE(b.delivered, (0)::bigint))::numeric) / (NULLIF(f.sent, 0))::numeric), 1) AS delivered_pct,
    COALESCE(a.receipts, (0)::bigint) AS receipts,
    round((a.median_s)::numeric, 1) AS arrival_median_s,
    round((a.p90_s)::numeric, 1) AS arrival_p90_s,
    COALESCE(a.sealed_opened, (0)::bigint) AS sealed_opened,
    COALESCE(a.sealed_failed, (0)::bigint) AS sealed_failed,
    COALESCE(a.media_attached, (0)::bigint) AS media_attached,
    COALESCE(a.media_failed, (0)::bigint) AS media_failed
   FROM ((analyst.campaign_funnel f
     LEFT JOIN by_campaign b ON ((b.campaign_id = f.campaign_id)))
     LEFT JOIN arrival a ON ((a.campaign_id = f.campaign_id)));

COMMENT ON VIEW analyst.delivery_confirmation IS 'Delivered beside sent, per campaign: the campaign deliveries a receipt or a reply confirmed, and the time from sent to arrival (median and 90th percentile), live or kept by a prune.';

CREATE VIEW analyst.delivery_problems AS
 SELECT p.campaign_id,
    p.status,
    p.reason,
    (sum(p.deliveries))::bigint AS deliveries
   FROM ( SELECT deliveries.campaign_id,
            deliveries.status,
            deliveries.last_error AS reason,
            count(*) AS deliveries
           FROM public.deliveries
          WHERE ((deliveries.kind = 'campaign'::text) AND (deliveries.status = ANY (ARRAY['invalid'::text, 'failed'::text, 'expired'::text, 'skipped'::text, 'cancelled'::text])))
          GROUP BY deliveries.campaign_id, deliveries.status, deliveries.last_error
        UNION ALL
         SELECT pruned_delivery_counts.campaign_id,
            pruned_delivery_counts.status,
            pruned_delivery_counts.reason,
            pruned_delivery_counts.deliveries
           FROM public.pruned_delivery_counts
          WHERE (pruned_delivery_counts.status = ANY (ARRAY['invalid'::text, 'failed'::text, 'expired'::text, 'skipped'::text, 'cancelled'::text]))) p
  GROUP BY p.campaign_id, p.status, p.reason;

COMMENT ON VIEW analyst.delivery_problems IS 'Why deliveries did not go out: per campaign, the invalid, failed, expired, skipped and cancelled campaign deliveries counted by reason, live or kept by a prune.';

CREATE VIEW analyst.feedback_text AS
 SELECT r.campaign_id,
    c.name AS campaign,
    r.action,
    r.text,
    u.locale,
    r.occurred_at,
    r.received_at
   FROM ((public.replies r
     JOIN public.campaigns c ON ((c.id = r.campaign_id)))
     JOIN public.users u ON ((u.id = r.user_id)))
  WHERE ((r.text IS NOT NULL) AND (r.delivery_kind = 'campaign'::text));

COMMENT ON VIEW analyst.feedback_text IS 'What users typed into feedback prompts, verbatim, with their locale and when; replies to campaign deliveries only.';

CREATE VIEW analyst.lift AS
 WITH assigned AS (
         SELECT d.campaign_id,
            d.user_id,
            bool_or((d.status <> 'held_out'::text)) AS treated,
            min(d.variant) FILTER (WHERE (d.status <> 'held_out'::text)) AS variant,
            min(d.created_at) AS assigned_at
           FROM (public.deliveries d
             JOIN public.campaigns c_1 ON (((c_1.id = d.campaign_id) AND (c_1.conversion_event IS NOT NULL))))
          WHERE (d.kind = 'campaign'::text)
          GROUP BY d.campaign_id, d.user_id
        UNION ALL
         SELECT p.campaign_id,
            p.user_id,
            p.treated,
            p.variant,
            p.assigned_at
           FROM (public.pruned_lift_assignments p
             JOIN public.campaigns c_1 ON (((c_1.id = p.campaign_id) AND (c_1.conversion_event IS NOT NULL))))
        ), outcome AS (
         SELECT a.campaign_id,
            a.treated,
            a.variant,
            ((a.assigned_at + c_1.attribution_window) <= now()) AS window_closed,
            (EXISTS ( SELECT 1
                   FROM public.conversions v
                  WHERE ((v.user_id = a.user_id) AND (v.event = c_1.conversion_event) AND (v.occurred_at >= a.assigned_at) AND (v.occurred_at < (a.assigned_at + c_1.attribution_window))))) AS converted,
            ( SELECT sum(v.amount) AS sum
                   FROM public.conversions v
                  WHERE ((v.user_id = a.user_id) AND (v.event = c_1.conversion_event) AND (v.occurred_at >= a.assigned_at) AND (v.occurred_at < (a.assigned_at + c_1.attribution_window)))) AS revenue,
            ( SELECT min(v.currency) AS min
                   FROM public.conversions v
                  WHERE ((v.user_id = a.user_id) AND (v.event = c_1.conversion_event) AND (v.currency IS NOT NULL))) AS currency
           FROM (assigned a
             JOIN public.campaigns c_1 ON ((c_1.id = a.campaign_id)))
        ), groups AS (
         SELECT DISTINCT outcome.campaign_id,
            NULL::text AS variant
           FROM outcome
        UNION ALL
         SELECT DISTINCT outcome.campaign_id,
            outcome.variant
           FROM outcome
          WHERE (outcome.variant IS NOT NULL)
        ), arms AS (
         SELECT g.campaign_id,
            g.variant,
            count(*) FILTER (WHERE (o.treated AND ((g.variant IS NULL) OR (o.variant = g.variant)))) AS n1,
            count(*) FILTER (WHERE (o.treated AND ((g.variant IS NULL) OR (o.variant = g.variant)) AND o.converted)) AS x1,
            count(*) FILTER (WHERE (NOT o.treated)) AS n0,
            count(*) FILTER (WHERE ((NOT o.treated) AND o.converted)) AS x0,
            sum(o.revenue) FILTER (WHERE (o.treated AND ((g.variant IS NULL) OR (o.variant = g.variant)))) AS revenue1,
            sum(o.revenue) FILTER (WHERE (NOT o.treated)) AS revenue0,
                CASE
                    WHEN (count(DISTINCT o.currency) = 1) THEN min(o.currency)
                    ELSE NULL::text
                END AS currency,
            bool_and(o.window_closed) AS window_closed
           FROM (groups g
             JOIN outcome o ON ((o.campaign_id = g.campaign_id)))
          GROUP BY g.campaign_id, g.variant
        ), rates AS (
         SELECT a.campaign_id,
            a.variant,
            a.n1,
            a.x1,
            a.n0,
            a.x0,
            a.revenue1,
            a.revenue0,
            a.currency,
            a.window_closed,
            ((a.x1)::double precision / (NULLIF(a.n1, 0))::double precision) AS p1,
            ((a.x0)::double precision / (NULLIF(a.n0, 0))::double precision) AS p0,
            (((a.x1 + a.x0))::double precision / (NULLIF((a.n1 + a.n0), 0))::double precision) AS pp
           FROM arms a
        ), stats AS (
         SELECT r.campaign_id,
            r.variant,
            r.n1,
            r.x1,
            r.n0,
            r.x0,
            r.revenue1,
            r.revenue0,
            r.currency,
            r.window_closed,
            r.p1,
            r.p0,
            r.pp,
            (r.p1 - r.p0) AS diff,
            sqrt((((r.p1 * ((1)::double precision - r.p1)) / (r.n1)::double precision) + ((r.p0 * ((1)::double precision - r.p0)) / (r.n0)::double precision))) AS se,
            sqrt(((r.pp * ((1)::double precision - r.pp)) * (((1.0 / (r.n1)::numeric) + (1.0 / (r.n0)::numeric)))::double precision)) AS se_pooled
           FROM rates r
          WHERE ((r.n1 > 0) AND (r.n0 > 0))
        )
 SELECT s.campaign_id,
    c.name,
    s.variant,
    c.conversion_event,
    c.attribution_window,
    s.n1 AS treated,
    s.x1 AS treated_converted,
    round((((100)::double precision * s.p1))::numeric, 2) AS treated_rate_pct,
    s.n0 AS held_out,
    s.x0 AS held_out_converted,
    round((((100)::double precision * s.p0))::numeric, 2) AS held_out_rate_pct,
    round((((100)::double precision * s.diff))::numeric, 2) AS lift_pts,
    round((((100)::double precision * (s.diff - ((1.96)::double precision * s.se))))::numeric, 2) AS lift_low_pts,
    round((((100)::double precision * (s.diff + ((1.96)::double precision * s.se))))::numeric, 2) AS lift_high_pts,
    round(((((100)::double precision * s.diff) / NULLIF(s.p0, (0)::double precision)))::numeric, 1) AS relative_lift_pct,
        CASE
            WHEN (s.se_pooled > (0)::double precision) THEN (s.diff / s.se_pooled)
            ELSE NULL::double precision
        END AS z,
        CASE
            WHEN (s.se_pooled > (0)::double precision) THEN public.herald_two_sided_p((s.diff / s.se_pooled))
            ELSE NULL::double precision
        END AS p_value,
    round((((((100)::numeric * 2.8))::double precision * s.se_pooled))::numeric, 2) AS min_detectable_pts,
    round((s.revenue1 / (s.n1)::numeric), 2) AS revenue_per_treated_user,
    round((s.revenue0 / (s.n0)::numeric), 2) AS revenue_per_held_out_user,
    s.currency,
    s.window_closed,
    (
        CASE
            WHEN ((s.se_pooled IS NULL) OR (s.se_pooled = (0)::double precision)) THEN 'no measurable effect yet: no conversions on either side'::text
            WHEN (public.herald_two_sided_p((s.diff / s.se_pooled)) < (0.05)::double precision) THEN format('%s of %s points (95%% CI %s to %s) against the held out, p = %s'::text,
            CASE
                WHEN (s.diff > (0)::double precision) THEN 'a lift'::text
                ELSE 'a drop'::text
            END, round((((100)::double precision * abs(s.diff)))::numeric, 2), round((((100)::double precision * (s.diff - ((1.96)::double precision * s.se))))::numeric, 2), round((((100)::double precision * (s.diff + ((1.96)::double precision * s.se))))::numeric, 2), round((public.herald_two_sided_p((s.diff / s.se_pooled)))::numeric, 4))
            ELSE format('no measurable effect yet: %s treated and %s held out can show a lift of %s points or more'::text, s.n1, s.n0, round((((((100)::numeric * 2.8))::double precision * s.se_pooled))::numeric, 2))
        END ||
        CASE
            WHEN s.window_closed THEN ''::text
            ELSE ' (attribution windows still open)'::text
        END) AS verdict
   FROM (stats s
     JOIN public.campaigns c ON ((c.id = s.campaign_id)));

COMMENT ON VIEW analyst.lift IS 'Did it work: per campaign with a conversion_event and a holdout (its own or the global control group), and per variant, the conversion rate of treated users against held-out users within the attribution window, by intention to treat. Gives the absolute lift with a 95% interval, the relative lift, z, p-value and the smallest lift a test of this size could detect.';

CREATE VIEW analyst.live_activity_steps AS
 WITH counts AS (
         SELECT d.campaign_id,
            d.status,
            count(*) AS n
           FROM public.delivery_status d
          WHERE (d.kind = 'campaign'::text)
          GROUP BY d.campaign_id, d.status
        UNION ALL
         SELECT p.campaign_id,
            p.status,
            p.deliveries
           FROM public.pruned_delivery_counts p
        )
 SELECT st.sale_id AS campaign_id,
    st.sale_step AS step,
    st.send_at AS due_at,
    st.expires_at AS superseded_at,
    st.status,
    (COALESCE(sum(c.n), (0)::numeric))::bigint AS targeted,
    (COALESCE(sum(c.n) FILTER (WHERE (c.status = 'sent'::text)), (0)::numeric))::bigint AS sent,
    (COALESCE(sum(c.n) FILTER (WHERE (c.status = 'expired'::text)), (0)::numeric))::bigint AS expired,
    (COALESCE(sum(c.n) FILTER (WHERE (c.status = 'skipped'::text)), (0)::numeric))::bigint AS skipped,
    ( SELECT count(*) AS count
           FROM public.live_activities la
          WHERE ((la.campaign_id = st.sale_id) AND (la.confirmed_step >= st.sale_step))) AS confirmed,
    ( SELECT count(*) AS count
           FROM public.channel_pushes cp
          WHERE ((cp.campaign_id = st.id) AND (cp.status = 'sent'::text))) AS broadcasts_sent,
    ( SELECT count(*) AS count
           FROM public.channel_pushes cp
          WHERE ((cp.campaign_id = st.id) AND (cp.status = ANY (ARRAY['failed'::text, 'expired'::text])))) AS broadcasts_not_sent,
    st.id AS step_campaign_id
   FROM (public.campaigns st
     LEFT JOIN counts c ON ((c.campaign_id = st.id)))
  WHERE (st.sale_id IS NOT NULL)
  GROUP BY st.id, st.sale_id, st.sale_step, st.send_at, st.expires_at, st.status;

COMMENT ON VIEW analyst.live_activity_steps IS 'Per Live Activity sale and step: when it was due and superseded, its status, its pushes by status (live or kept by a prune), its broadcasts per channel, and the step''s own campaign row (step_campaign_id).';

CREATE VIEW analyst.live_activities AS
 SELECT s.id AS campaign_id,
    s.name,
    count(la.device_id) FILTER (WHERE (la.started_by = 'push'::text)) AS started_by_push,
    count(la.device_id) FILTER (WHERE (la.started_by = 'app'::text)) AS started_by_app,
    count(la.device_id) FILTER (WHERE (la.channel_id IS NOT NULL)) AS on_channel,
    count(la.device_id) FILTER (WHERE (la.confirmed_step >= 1)) AS confirmed_an_update,
    count(la.device_id) FILTER (WHERE (la.ended_at IS NOT NULL)) AS ended_on_device,
    ( SELECT count(*) AS count
           FROM public.campaigns st
          WHERE (st.sale_id = s.id)) AS steps_after_start,
    ( SELECT (COALESCE(sum(x.sent), (0)::numeric))::bigint AS "coalesce"
           FROM analyst.live_activity_steps x
          WHERE (x.campaign_id = s.id)) AS step_pushes_sent,
    ( SELECT count(*) AS count
           FROM public.activity_channels ac
          WHERE (ac.campaign_id = s.id)) AS channels,
    ( SELECT (COALESCE(sum(x.broadcasts_sent), (0)::numeric))::bigint AS "coalesce"
           FROM analyst.live_activity_steps x
          WHERE (x.campaign_id = s.id)) AS broadcasts_sent
   FROM (public.campaigns s
     LEFT JOIN public.live_activities la ON ((la.campaign_id = s.id)))
  WHERE (s.live_activity IS NOT NULL)
  GROUP BY s.id, s.name;

COMMENT ON VIEW analyst.live_activities IS 'Per Live Activity sale: the activities started (by push-to-start and by the app), those that confirmed an update and those ended on the device, its broadcast channels and what they carried, beside its steps'' pushes.';

CREATE VIEW analyst.live_activity_devices AS
 SELECT la.campaign_id,
    la.device_id,
    dv.user_id,
    la.started_by,
    (la.channel_id IS NOT NULL) AS on_channel,
    la.registered_at,
    la.confirmed_step,
    la.confirmed_at,
    la.ended_at
   FROM (public.live_activities la
     JOIN public.devices dv ON ((dv.id = la.device_id)));

COMMENT ON VIEW analyst.live_activity_devices IS 'Per device and Live Activity sale: how its activity started, whether it listens on a channel, the step it last confirmed showing, and when it ended.';

CREATE VIEW analyst.occurrences AS
 SELECT o.series_id,
    s.name AS series,
    o.occurrence,
    o.id AS campaign_id,
    o.status,
    o.send_at,
    o.send_at_local,
    o.open_until,
    o.started_at,
    o.completed_at,
    f.targeted,
    f.sent,
    f.skipped,
    f.expired,
    f.failed,
    f.replies,
    f.responding_devices,
    f.response_rate_pct
   FROM ((public.campaigns o
     JOIN public.campaigns s ON ((s.id = o.series_id)))
     JOIN analyst.campaign_funnel f ON ((f.campaign_id = o.id)));

COMMENT ON VIEW analyst.occurrences IS 'Each occurrence of a recurring or on-entry series, with its figures from analyst.campaign_funnel.';

CREATE VIEW analyst.pace AS
 WITH minutes AS (
         SELECT d.campaign_id,
            count(*) AS n,
            min(d.sent_at) AS first_sent,
            max(d.sent_at) AS last_sent
           FROM public.delivery_status d
          WHERE ((d.kind = 'campaign'::text) AND (d.status = 'sent'::text) AND (d.campaign_id IN ( SELECT campaigns.id
                   FROM public.campaigns
                  WHERE ((campaigns.rate_per_minute IS NOT NULL) OR (campaigns.finish_within IS NOT NULL)))))
          GROUP BY d.campaign_id, (date_trunc('minute'::text, d.sent_at))
        UNION ALL
         SELECT m.campaign_id,
            m.sent,
            m.first_sent,
            m.last_sent
           FROM public.pruned_sent_minutes m
          WHERE (m.campaign_id IN ( SELECT campaigns.id
                   FROM public.campaigns
                  WHERE ((campaigns.rate_per_minute IS NOT NULL) OR (campaigns.finish_within IS NOT NULL))))
        ), sent AS (
         SELECT minutes.campaign_id,
            (sum(minutes.n))::bigint AS sent,
            min(minutes.first_sent) AS first_sent,
            max(minutes.last_sent) AS last_sent,
            max(minutes.n) AS busiest_minute
           FROM minutes
          GROUP BY minutes.campaign_id
        )
 SELECT c.id AS campaign_id,
    c.name,
    c.rate_per_minute,
    c.finish_within,
    COALESCE((c.rate_per_minute)::numeric, round(((f.targeted)::numeric / GREATEST((EXTRACT(epoch FROM c.finish_within) / (60)::numeric), (1)::numeric)), 1)) AS set_per_minute,
    s.sent,
    s.first_sent,
    s.last_sent,
    round((((s.sent - 1))::numeric / NULLIF((EXTRACT(epoch FROM (s.last_sent - s.first_sent)) / (60)::numeric), (0)::numeric)), 1) AS achieved_per_minute,
    s.busiest_minute
   FROM ((public.campaigns c
     JOIN sent s ON ((s.campaign_id = c.id)))
     JOIN analyst.campaign_funnel f ON ((f.campaign_id = c.id)));

COMMENT ON VIEW analyst.pace IS 'A paced campaign''s pace as set (rate_per_minute or finish_within) and as achieved: the rate over its sending span and its busiest minute, live or kept by a prune.';

CREATE VIEW analyst.replies_over_time AS
 SELECT r.campaign_id,
    date_trunc('minute'::text, (r.occurred_at AT TIME ZONE 'UTC'::text)) AS minute_utc,
    r.action,
    count(*) AS replies
   FROM public.replies r
  WHERE (r.delivery_kind = 'campaign'::text)
  GROUP BY r.campaign_id, (date_trunc('minute'::text, (r.occurred_at AT TIME ZONE 'UTC'::text))), r.action;

COMMENT ON VIEW analyst.replies_over_time IS 'Replies per campaign, UTC minute (of when the user answered) and action, as herald report --html charts them.';

CREATE VIEW analyst.runs AS
 SELECT runs.id AS run_id,
    runs.started_at,
    runs.finished_at,
    (runs.finished_at - runs.started_at) AS duration,
    runs.host,
    runs.dry_run,
    runs.status,
    runs.error,
    runs.campaigns,
    runs.targeted,
    runs.sent,
    runs.invalid,
    runs.failed,
    runs.retried,
    runs.skipped,
    runs.expired,
    runs.requeued
   FROM public.runs;

COMMENT ON VIEW analyst.runs IS 'Each batch run with its duration, status, error and figures (targeted, sent, invalid, failed, retried, skipped, expired, requeued).';

CREATE VIEW analyst.series AS
 SELECT s.id AS series_id,
    s.name,
    s.kind,
    s.status,
        CASE
            WHEN s.on_segment_entry THEN 'on segment entry'::text
            ELSE 'recurring'::text
        END AS series_kind,
    s.repeat_unit,
    s.repeat_every,
    s.repeat_on,
    s.repeat_day,
    s.repeat_until,
    s.repeat_count,
    s.resend_after,
    s.send_at,
    s.send_at_local,
    count(o.campaign_id) AS occurrences,
    max(o.send_at) AS last_occurrence_at,
    (COALESCE(sum(o.targeted), (0)::numeric))::bigint AS targeted,
    (COALESCE(sum(o.sent), (0)::numeric))::bigint AS sent_total,
    (COALESCE(sum(o.replies), (0)::numeric))::bigint AS replies,
    round(((100.0 * COALESCE(sum(o.responding_devices), (0)::numeric)) / NULLIF(sum(o.sent), (0)::numeric)), 1) AS response_rate_pct
   FROM (public.campaigns s
     LEFT JOIN analyst.occurrences o ON ((o.series_id = s.id)))
  WHERE ((s.repeat_unit IS NOT NULL) OR s.on_segment_entry)
  GROUP BY s.id;

COMMENT ON VIEW analyst.series IS 'Each recurring or on-entry series: its schedule, how many occurrences it made, and their figures summed.';

CREATE VIEW analyst.test_sends AS
 SELECT d.id AS delivery_id,
    d.campaign_id,
    c.name AS campaign,
    u.external_id AS user_external_id,
    d.status,
    d.last_error AS reason,
    d.apns_id,
    d.created_at,
    d.sent_at
   FROM ((( SELECT deliveries.id,
            deliveries.campaign_id,
            deliveries.user_id,
            deliveries.status,
            deliveries.last_error,
            deliveries.apns_id,
            deliveries.created_at,
            deliveries.sent_at
           FROM public.deliveries
          WHERE (deliveries.kind = 'test'::text)
        UNION ALL
         SELECT pruned_test_deliveries.id,
            pruned_test_deliveries.campaign_id,
            pruned_test_deliveries.user_id,
            pruned_test_deliveries.status,
            pruned_test_deliveries.last_error,
            pruned_test_deliveries.apns_id,
            pruned_test_deliveries.created_at,
            pruned_test_deliveries.sent_at
           FROM public.pruned_test_deliveries) d
     JOIN public.campaigns c ON ((c.id = d.campaign_id)))
     JOIN public.users u ON ((u.id = d.user_id)));

COMMENT ON VIEW analyst.test_sends IS 'The test sends (herald send-test) one by one, with what APNs answered, live or kept by a prune. Test sends never count in a campaign''s figures.';

CREATE VIEW analyst.variant_actions AS
 SELECT r.campaign_id,
    c.name AS campaign,
    dl.variant,
    r.action,
        CASE r.action
            WHEN 'com.apple.UNNotificationDefaultActionIdentifier'::text THEN '(opened)'::text
            WHEN 'com.apple.UNNotificationDismissActionIdentifier'::text THEN '(dismissed)'::text
            ELSE a.title
        END AS action_title,
    count(*) AS replies,
    round(((100.0 * (count(*))::numeric) / sum(count(*)) OVER (PARTITION BY r.campaign_id, dl.variant)), 1) AS share_pct
   FROM (((public.replies r
     JOIN ( SELECT deliveries.id,
            deliveries.campaign_id,
            deliveries.variant
           FROM public.deliveries
          WHERE ((deliveries.kind = 'campaign'::text) AND (deliveries.variant IS NOT NULL))
        UNION ALL
         SELECT pruned_answered_deliveries.id,
            pruned_answered_deliveries.campaign_id,
            pruned_answered_deliveries.variant
           FROM public.pruned_answered_deliveries
          WHERE (pruned_answered_deliveries.variant IS NOT NULL)) dl ON ((dl.id = r.delivery_id)))
     JOIN public.campaigns c ON ((c.id = r.campaign_id)))
     LEFT JOIN public.actions a ON ((a.id = r.action)))
  GROUP BY r.campaign_id, c.name, dl.variant, r.action, a.title;

COMMENT ON VIEW analyst.variant_actions IS 'Per campaign, variant and action: which buttons the users of each variant pressed, and their share of that variant''s replies.';

CREATE VIEW analyst.variant_comparison AS
 WITH v AS (
         SELECT cv.campaign_id,
            cv.name AS variant,
            cv.share,
            cv.media_url,
            row_number() OVER (PARTITION BY cv.campaign_id ORDER BY (cv.name COLLATE "C")) AS "position",
            count(*) OVER (PARTITION BY cv.campaign_id) AS variants
           FROM public.campaign_variants cv
        ), d AS (
         SELECT x.campaign_id,
            x.variant,
            (sum(x.n))::bigint AS targeted,
            (COALESCE(sum(x.n) FILTER (WHERE (x.status = 'sent'::text)), (0)::numeric))::bigint AS sent
           FROM ( SELECT deliveries.campaign_id,
                    deliveries.variant,
                    deliveries.status,
                    count(*) AS n
                   FROM public.delivery_status deliveries
                  WHERE ((deliveries.kind = 'campaign'::text) AND (deliveries.variant IS NOT NULL))
                  GROUP BY deliveries.campaign_id, deliveries.variant, deliveries.status
                UNION ALL
                 SELECT pruned_delivery_counts.campaign_id,
                    pruned_delivery_counts.variant,
                    pruned_delivery_counts.status,
                    pruned_delivery_counts.deliveries
                   FROM public.pruned_delivery_counts
                  WHERE (pruned_delivery_counts.variant IS NOT NULL)) x
          GROUP BY x.campaign_id, x.variant
        ), r AS (
         SELECT dl.campaign_id,
            dl.variant,
            count(*) AS replies,
            count(DISTINCT r.delivery_id) AS responding_devices,
            count(*) FILTER (WHERE (r.action = 'com.apple.UNNotificationDefaultActionIdentifier'::text)) AS opened,
            count(*) FILTER (WHERE (r.action = 'com.apple.UNNotificationDismissActionIdentifier'::text)) AS dismissed,
            count(*) FILTER (WHERE (r.text IS NOT NULL)) AS typed_answers
           FROM (public.replies r
             JOIN ( SELECT deliveries.id,
                    deliveries.campaign_id,
                    deliveries.variant
                   FROM public.delivery_status deliveries
                  WHERE ((deliveries.kind = 'campaign'::text) AND (deliveries.variant IS NOT NULL))
                UNION ALL
                 SELECT pruned_answered_deliveries.id,
                    pruned_answered_deliveries.campaign_id,
                    pruned_answered_deliveries.variant
                   FROM public.pruned_answered_deliveries
                  WHERE (pruned_answered_deliveries.variant IS NOT NULL)) dl ON ((dl.id = r.delivery_id)))
          GROUP BY dl.campaign_id, dl.variant
        ), f AS (
         SELECT v.campaign_id,
            c.name AS campaign,
            v.variant,
            v."position",
            v.variants,
            v.share,
            COALESCE(d.targeted, (0)::bigint) AS targeted,
            COALESCE(d.sent, (0)::bigint) AS sent,
            COALESCE(r.replies, (0)::bigint) AS replies,
            COALESCE(r.responding_devices, (0)::bigint) AS responding_devices,
            COALESCE(r.opened, (0)::bigint) AS opened,
            COALESCE(r.dismissed, (0)::bigint) AS dismissed,
            COALESCE(r.typed_answers, (0)::bigint) AS typed_answers
           FROM (((v
             JOIN public.campaigns c ON ((c.id = v.campaign_id)))
             LEFT JOIN d ON (((d.campaign_id = v.campaign_id) AND (d.variant = v.variant))))
             LEFT JOIN r ON (((r.campaign_id = v.campaign_id) AND (r.variant = v.variant))))
        ), cmp AS (
         SELECT f.campaign_id,
            f.campaign,
            f.variant,
            f."position",
            f.variants,
            f.share,
            f.targeted,
            f.sent,
            f.replies,
            f.responding_devices,
            f.opened,
            f.dismissed,
            f.typed_answers,
            b.variant AS baseline,
                CASE
                    WHEN ((f."position" > 1) AND (f.sent > 0) AND (b.sent > 0) AND ((f.responding_devices + b.responding_devices) > 0) AND ((f.responding_devices + b.responding_devices) < (f.sent + b.sent))) THEN ((((f.responding_devices)::double precision / (f.sent)::double precision) - ((b.responding_devices)::double precision / (b.sent)::double precision)) / sqrt((((((f.responding_devices + b.responding_devices))::double precision / ((f.sent + b.sent))::double precision) * ((1)::double precision - (((f.responding_devices + b.responding_devices))::double precision / ((f.sent + b.sent))::double precision))) * (((1.0 / (f.sent)::numeric) + (1.0 / (b.sent)::numeric)))::double precision)))
                    ELSE NULL::double precision
                END AS z
           FROM (f
             JOIN f b ON (((b.campaign_id = f.campaign_id) AND (b."position" = 1))))
        )
 SELECT cmp.campaign_id,
    cmp.campaign,
    cmp.variant,
    cmp."position",
    cmp.variants,
    cmp.share AS share_pct,
    cmp.targeted,
    round(((100.0 * (cmp.targeted)::numeric) / NULLIF(sum(cmp.targeted) OVER (PARTITION BY cmp.campaign_id), (0)::numeric)), 1) AS targeted_pct,
    cmp.sent,
    cmp.replies,
    cmp.responding_devices,
    cmp.opened,
    cmp.dismissed,
    cmp.typed_answers,
    round(((100.0 * (cmp.responding_devices)::numeric) / (NULLIF(cmp.sent, 0))::numeric), 1) AS response_rate_pct,
    cmp.baseline,
    cmp.z,
    public.herald_two_sided_p(cmp.z) AS p_value
   FROM cmp;

COMMENT ON VIEW analyst.variant_comparison IS 'Per campaign and A/B variant: targeted, sent and how users answered, and each variant''s response rate against the baseline (the first variant by name) as a pooled two-proportion z and its two-sided p-value. Live and pruned figures alike.';

CREATE VIEW public.app_current_credentials AS
 SELECT DISTINCT ON (a.name, e.environment) a.name AS app,
    e.environment,
    c.name AS credential
   FROM ((public.apps a
     CROSS JOIN ( VALUES ('production'::text), ('sandbox'::text)) e(environment))
     JOIN public.app_credentials c ON (((c.app = a.name) AND ((c.environment = e.environment) OR (c.environment = 'any'::text)) AND (c.retired_at IS NULL))))
  ORDER BY a.name, e.environment, c.added_at DESC, c.name;

COMMENT ON VIEW public.app_current_credentials IS 'The APNs credential a run uses for each app and environment: the newest that is not retired (NULL: none; the app default then uses the APNS_* settings).';


-- ==========================================================================
-- Triggers, each with its comment.
-- ==========================================================================

CREATE TRIGGER actions_approval_guard AFTER UPDATE ON public.actions FOR EACH ROW EXECUTE FUNCTION public.herald_category_approval_guard();

COMMENT ON TRIGGER actions_approval_guard ON public.actions IS 'A change to an action withdraws the approval of the unfinished campaigns whose category shows it (herald_category_approval_guard).';

CREATE TRIGGER actions_check BEFORE INSERT OR UPDATE ON public.actions FOR EACH ROW EXECUTE FUNCTION public.herald_action_check();

COMMENT ON TRIGGER actions_check ON public.actions IS 'An action''s localized titles are checked when it is written (herald_action_check).';

CREATE TRIGGER approval_grants_owner_only BEFORE INSERT OR DELETE OR UPDATE ON public.approval_grants FOR EACH ROW EXECUTE FUNCTION public.herald_owner_writes_only();

COMMENT ON TRIGGER approval_grants_owner_only ON public.approval_grants IS 'Only Herald''s approval functions write approval_grants (herald_owner_writes_only).';

CREATE TRIGGER campaign_approvals_owner_only BEFORE INSERT OR DELETE OR UPDATE ON public.campaign_approvals FOR EACH ROW EXECUTE FUNCTION public.herald_owner_writes_only();

COMMENT ON TRIGGER campaign_approvals_owner_only ON public.campaign_approvals IS 'Only Herald''s approval functions write campaign_approvals (herald_owner_writes_only).';

CREATE TRIGGER campaign_recipients_deleted AFTER DELETE ON public.campaign_recipients REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.herald_recipients_approval_guard();

COMMENT ON TRIGGER campaign_recipients_deleted ON public.campaign_recipients IS 'Recipients deleted withdraw the approval of their campaign (herald_recipients_approval_guard).';

CREATE TRIGGER campaign_recipients_inserted AFTER INSERT ON public.campaign_recipients REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.herald_recipients_approval_guard();

COMMENT ON TRIGGER campaign_recipients_inserted ON public.campaign_recipients IS 'Recipients added withdraw the approval of their campaign (herald_recipients_approval_guard).';

CREATE TRIGGER campaign_recipients_truncated AFTER TRUNCATE ON public.campaign_recipients FOR EACH STATEMENT EXECUTE FUNCTION public.herald_recipients_approval_guard();

COMMENT ON TRIGGER campaign_recipients_truncated ON public.campaign_recipients IS 'Emptying campaign_recipients withdraws the approval of every campaign that reaches a recipients list (herald_recipients_approval_guard).';

CREATE TRIGGER campaign_recipients_updated AFTER UPDATE ON public.campaign_recipients REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.herald_recipients_approval_guard();

COMMENT ON TRIGGER campaign_recipients_updated ON public.campaign_recipients IS 'Recipients changed withdraw the approval of their campaign (herald_recipients_approval_guard).';

CREATE TRIGGER campaign_variants_approval_guard AFTER INSERT OR DELETE OR UPDATE ON public.campaign_variants FOR EACH ROW EXECUTE FUNCTION public.herald_variant_approval_guard();

COMMENT ON TRIGGER campaign_variants_approval_guard ON public.campaign_variants IS 'A change to a campaign''s variants withdraws its approval (herald_variant_approval_guard).';

CREATE TRIGGER campaign_variants_check BEFORE INSERT OR UPDATE ON public.campaign_variants FOR EACH ROW EXECUTE FUNCTION public.herald_campaign_variant_check();

COMMENT ON TRIGGER campaign_variants_check ON public.campaign_variants IS 'The rules of one variant are checked when it is written (herald_campaign_variant_check).';

CREATE TRIGGER campaign_variants_keep BEFORE DELETE ON public.campaign_variants FOR EACH ROW EXECUTE FUNCTION public.herald_campaign_variant_keep();

COMMENT ON TRIGGER campaign_variants_keep ON public.campaign_variants IS 'A variant stays once the audience was assigned to the variants (herald_campaign_variant_keep).';

CREATE TRIGGER campaigns_a_local_send_at BEFORE INSERT OR UPDATE ON public.campaigns FOR EACH ROW EXECUTE FUNCTION public.herald_campaign_local_send_at();

COMMENT ON TRIGGER campaigns_a_local_send_at ON public.campaigns IS 'send_at follows send_at_local (herald_campaign_local_send_at); named to fire before campaigns_approval_guard (triggers fire in name order), so that moving send_at_local changes the schedule the approval covers.';

CREATE TRIGGER campaigns_approval_guard BEFORE INSERT OR UPDATE ON public.campaigns FOR EACH ROW EXECUTE FUNCTION public.herald_campaign_approval_guard();

COMMENT ON TRIGGER campaigns_approval_guard ON public.campaigns IS 'Approval changes only through Herald''s approval functions, and a change to what or when a campaign sends withdraws it (herald_campaign_approval_guard).';

CREATE TRIGGER campaigns_apps_exist BEFORE INSERT OR UPDATE OF apps ON public.campaigns FOR EACH ROW EXECUTE FUNCTION public.herald_check_campaign_apps();

COMMENT ON TRIGGER campaigns_apps_exist ON public.campaigns IS 'A campaign''s apps must exist; an occurrence takes its series'' apps (herald_check_campaign_apps).';

CREATE TRIGGER campaigns_archive BEFORE UPDATE OF status ON public.campaigns FOR EACH ROW EXECUTE FUNCTION public.herald_campaign_archive();

COMMENT ON TRIGGER campaigns_archive ON public.campaigns IS 'Archiving is final and cancels what is queued (herald_campaign_archive).';

CREATE TRIGGER campaigns_archived_batch AFTER UPDATE OF status ON public.campaigns FOR EACH ROW WHEN (((new.status = 'archived'::text) AND (old.status IS DISTINCT FROM 'archived'::text))) EXECUTE FUNCTION public.herald_campaign_closed_batch('campaign archived');

COMMENT ON TRIGGER campaigns_archived_batch ON public.campaigns IS 'Archiving a campaign closes its batch rows that no run holds (herald_campaign_closed_batch).';

CREATE TRIGGER campaigns_cancelled AFTER UPDATE OF status ON public.campaigns FOR EACH ROW WHEN (((new.status = 'cancelled'::text) AND (old.status IS DISTINCT FROM 'cancelled'::text))) EXECUTE FUNCTION public.herald_campaign_cancelled();

COMMENT ON TRIGGER campaigns_cancelled ON public.campaigns IS 'Cancelling a campaign cancels its queued deliveries at once (herald_campaign_cancelled).';

CREATE TRIGGER campaigns_cancelled_batch AFTER UPDATE OF status ON public.campaigns FOR EACH ROW WHEN (((new.status = 'cancelled'::text) AND (old.status IS DISTINCT FROM 'cancelled'::text))) EXECUTE FUNCTION public.herald_campaign_closed_batch('campaign cancelled');

COMMENT ON TRIGGER campaigns_cancelled_batch ON public.campaigns IS 'Cancelling a campaign closes its batch rows that no run holds (herald_campaign_closed_batch).';

CREATE TRIGGER campaigns_category_apps BEFORE INSERT OR UPDATE OF category_id, apps ON public.campaigns FOR EACH ROW EXECUTE FUNCTION public.herald_check_campaign_category_apps();

COMMENT ON TRIGGER campaigns_category_apps ON public.campaigns IS 'A campaign''s category must belong to every app it goes to (herald_check_campaign_category_apps); fires after campaigns_apps_exist, so that an occurrence is checked with its series'' apps.';

CREATE TRIGGER campaigns_check BEFORE INSERT OR UPDATE OF kind, content, default_locale, media_url, expires_at, category_id ON public.campaigns FOR EACH ROW EXECUTE FUNCTION public.herald_campaign_check();

COMMENT ON TRIGGER campaigns_check ON public.campaigns IS 'The rules of a campaign a marketer can break are checked when it is written (herald_campaign_check).';

CREATE TRIGGER campaigns_keep_history BEFORE DELETE ON public.campaigns FOR EACH ROW EXECUTE FUNCTION public.herald_campaign_delete_check();

COMMENT ON TRIGGER campaigns_keep_history ON public.campaigns IS 'A campaign with deliveries or replies is archived, not deleted (herald_campaign_delete_check).';

CREATE TRIGGER campaigns_sale_status_follows AFTER UPDATE OF status ON public.campaigns FOR EACH ROW WHEN (((new.live_activity IS NOT NULL) AND (old.status IS DISTINCT FROM new.status))) EXECUTE FUNCTION public.herald_sale_status_follows();

COMMENT ON TRIGGER campaigns_sale_status_follows ON public.campaigns IS 'A Live Activity sale''s pause, resume and cancel reach its steps (herald_sale_status_follows).';

CREATE TRIGGER campaigns_series_status BEFORE UPDATE OF status ON public.campaigns FOR EACH ROW WHEN ((new.status IS DISTINCT FROM old.status)) EXECUTE FUNCTION public.herald_series_status();

COMMENT ON TRIGGER campaigns_series_status ON public.campaigns IS 'A series'' pause, resume and cancel reach its occurrences (herald_series_status).';

CREATE TRIGGER campaigns_snapshot_caps_done AFTER UPDATE OF status ON public.campaigns FOR EACH ROW WHEN ((new.status = ANY (ARRAY['completed'::text, 'cancelled'::text, 'failed'::text, 'archived'::text]))) EXECUTE FUNCTION public.herald_snapshot_caps_done();

COMMENT ON TRIGGER campaigns_snapshot_caps_done ON public.campaigns IS 'A campaign that ends drops its snapshot_caps row (herald_snapshot_caps_done).';

CREATE TRIGGER campaigns_status_audit AFTER INSERT OR UPDATE OF status ON public.campaigns FOR EACH ROW EXECUTE FUNCTION public.herald_campaign_status_audit();

COMMENT ON TRIGGER campaigns_status_audit ON public.campaigns IS 'Every status a campaign takes is recorded in campaign_status_changes (herald_campaign_status_audit).';

CREATE TRIGGER campaigns_widgets_status_follows AFTER UPDATE OF status ON public.campaigns FOR EACH ROW WHEN ((new.widgets_push AND (old.status IS DISTINCT FROM new.status))) EXECUTE FUNCTION public.herald_widgets_status_follows();

COMMENT ON TRIGGER campaigns_widgets_status_follows ON public.campaigns IS 'A campaign''s pause, resume and cancel reach its widget push (herald_widgets_status_follows).';

CREATE TRIGGER categories_approval_guard AFTER UPDATE ON public.categories FOR EACH ROW EXECUTE FUNCTION public.herald_category_approval_guard();

COMMENT ON TRIGGER categories_approval_guard ON public.categories IS 'A change to a category withdraws the approval of the unfinished campaigns that use it (herald_category_approval_guard).';

CREATE TRIGGER categories_apps_check BEFORE INSERT OR UPDATE OF apps ON public.categories FOR EACH ROW EXECUTE FUNCTION public.herald_check_category_apps();

COMMENT ON TRIGGER categories_apps_check ON public.categories IS 'A category''s apps are checked when they are written (herald_check_category_apps).';

CREATE TRIGGER category_actions_approval_guard AFTER INSERT OR DELETE OR UPDATE ON public.category_actions FOR EACH ROW EXECUTE FUNCTION public.herald_category_approval_guard();

COMMENT ON TRIGGER category_actions_approval_guard ON public.category_actions IS 'A change to a category''s actions withdraws the approval of the unfinished campaigns that use it (herald_category_approval_guard).';

CREATE CONSTRAINT TRIGGER category_actions_at_most_4 AFTER INSERT OR UPDATE ON public.category_actions NOT DEFERRABLE INITIALLY IMMEDIATE FOR EACH ROW EXECUTE FUNCTION public.herald_category_actions_check();

COMMENT ON TRIGGER category_actions_at_most_4 ON public.category_actions IS 'A category has at most four actions (herald_category_actions_check).';

CREATE TRIGGER deliveries_keep_replies AFTER DELETE ON public.deliveries FOR EACH ROW EXECUTE FUNCTION public.herald_delivery_keeps_replies();

COMMENT ON TRIGGER deliveries_keep_replies ON public.deliveries IS 'A ledger row with replies is not deleted (herald_delivery_keeps_replies); each partition has a clone of this trigger.';

CREATE TRIGGER devices_deleted_deliveries AFTER DELETE ON public.devices REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION public.herald_device_deleted();

COMMENT ON TRIGGER devices_deleted_deliveries ON public.devices IS 'Deleting devices deletes their replies and ledger rows (herald_device_deleted).';

CREATE TRIGGER pool_codes_code_changed AFTER UPDATE OF code ON public.pool_codes FOR EACH ROW WHEN ((old.code IS DISTINCT FROM new.code)) EXECUTE FUNCTION public.herald_pool_code_changed();

COMMENT ON TRIGGER pool_codes_code_changed ON public.pool_codes IS 'A code''s text changed withdraws the approval of the campaigns that draw from its pool (herald_pool_code_changed).';

CREATE TRIGGER pool_codes_deleted AFTER DELETE ON public.pool_codes REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.herald_pool_approval_guard();

COMMENT ON TRIGGER pool_codes_deleted ON public.pool_codes IS 'Codes deleted from a pool withdraw the approval of the campaigns that draw from it (herald_pool_approval_guard).';

CREATE TRIGGER pool_codes_inserted AFTER INSERT ON public.pool_codes REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.herald_pool_approval_guard();

COMMENT ON TRIGGER pool_codes_inserted ON public.pool_codes IS 'Codes added to a pool withdraw the approval of the campaigns that draw from it (herald_pool_approval_guard).';

CREATE TRIGGER pool_codes_truncated AFTER TRUNCATE ON public.pool_codes FOR EACH STATEMENT EXECUTE FUNCTION public.herald_pool_approval_guard();

COMMENT ON TRIGGER pool_codes_truncated ON public.pool_codes IS 'Emptying pool_codes withdraws the approval of every campaign that draws from a pool (herald_pool_approval_guard).';

CREATE TRIGGER replies_added_delivery AFTER INSERT ON public.replies REFERENCING NEW TABLE AS added FOR EACH STATEMENT WHEN ((current_setting('herald.replies_checked'::text, true) IS DISTINCT FROM 'on'::text)) EXECUTE FUNCTION public.herald_replies_delivery();

COMMENT ON TRIGGER replies_added_delivery ON public.replies IS 'New replies must answer a delivery of their campaign, checked once per statement (herald_replies_delivery); skipped for the INSERTs of herald_store_checked_replies, which checked them already.';

CREATE TRIGGER replies_delivery BEFORE UPDATE OF delivery_id, campaign_id ON public.replies FOR EACH ROW EXECUTE FUNCTION public.herald_reply_delivery();

COMMENT ON TRIGGER replies_delivery ON public.replies IS 'A reply moved to another delivery or campaign must answer one that exists (herald_reply_delivery).';

CREATE TRIGGER segments_approval_guard AFTER UPDATE ON public.segments FOR EACH ROW EXECUTE FUNCTION public.herald_segment_approval_guard();

COMMENT ON TRIGGER segments_approval_guard ON public.segments IS 'A change to a segment''s rule withdraws the approval of the unfinished campaigns that use it (herald_segment_approval_guard).';

CREATE TRIGGER settings_changes_owner_only BEFORE INSERT OR DELETE OR UPDATE ON public.settings_changes FOR EACH ROW EXECUTE FUNCTION public.herald_owner_writes_only();

COMMENT ON TRIGGER settings_changes_owner_only ON public.settings_changes IS 'Only Herald''s own functions write settings_changes (herald_owner_writes_only).';

CREATE TRIGGER settings_guard BEFORE UPDATE ON public.settings FOR EACH ROW EXECUTE FUNCTION public.herald_settings_guard();

COMMENT ON TRIGGER settings_guard ON public.settings IS 'Only members of herald_admin and the owner change settings, and each change is recorded in settings_changes (herald_settings_guard).';

CREATE TRIGGER users_deleted_replies AFTER DELETE ON public.users REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION public.herald_user_deleted();

COMMENT ON TRIGGER users_deleted_replies ON public.users IS 'Deleting users deletes their replies (herald_user_deleted).';


-- ==========================================================================
-- Grants: what each role may do. Nobody but owners creates objects in the
-- public schema (the default since PostgreSQL 15; older servers granted it
-- to everyone).
-- ==========================================================================

REVOKE CREATE ON SCHEMA public FROM PUBLIC;

-- No role but the owner touches these directly: approval's grants, and
-- replies with its sequence, which the other roles reach only through the
-- owner's SECURITY DEFINER functions and the analyst views. Revoked
-- explicitly, as the history did, so that their privileges are the same.
REVOKE ALL ON TABLE public.approval_grants FROM PUBLIC;
REVOKE ALL ON TABLE public.replies FROM PUBLIC;
REVOKE ALL ON SEQUENCE public.replies_id_seq FROM PUBLIC;

GRANT USAGE ON SCHEMA analyst TO herald_analyst;

GRANT USAGE ON SCHEMA public TO herald_job;
GRANT USAGE ON SCHEMA public TO herald_intake;
GRANT USAGE ON SCHEMA public TO herald_marketer;

GRANT SELECT ON TABLE public.apns_id_prefix TO herald_job;

REVOKE ALL ON FUNCTION public.herald_approval_open(p_campaign bigint) FROM PUBLIC;

GRANT SELECT,INSERT,UPDATE ON TABLE public.runs TO herald_job;

GRANT UPDATE(session_server) ON TABLE public.runs TO herald_job;

GRANT UPDATE(session_at) ON TABLE public.runs TO herald_job;

GRANT SELECT,INSERT,UPDATE ON TABLE public.deliveries TO herald_job;

GRANT SELECT(id) ON TABLE public.deliveries TO herald_intake;

GRANT SELECT(campaign_id) ON TABLE public.deliveries TO herald_intake;

GRANT SELECT(device_id) ON TABLE public.deliveries TO herald_intake;

GRANT SELECT(user_id) ON TABLE public.deliveries TO herald_intake;

GRANT SELECT,INSERT,UPDATE ON TABLE public.delivery_spans TO herald_job;

REVOKE ALL ON FUNCTION public.herald_best_hours() FROM PUBLIC;
GRANT ALL ON FUNCTION public.herald_best_hours() TO herald_job;
GRANT ALL ON FUNCTION public.herald_best_hours() TO herald_analyst;
GRANT ALL ON FUNCTION public.herald_best_hours() TO herald_marketer;

REVOKE ALL ON FUNCTION public.herald_clear_approval(p_campaign bigint, p_reason text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.herald_close_approval(p_campaign bigint) FROM PUBLIC;

REVOKE ALL ON PROCEDURE public.herald_commit_replies(IN p_reply_ids uuid[], IN p_delivery_ids bigint[], IN p_actions text[], IN p_has_text boolean[], IN p_texts text[], IN p_occurred double precision[], IN p_checked boolean[], IN p_source text, INOUT stored integer, INOUT refused integer[], INOUT duplicates integer[]) FROM PUBLIC;
GRANT ALL ON PROCEDURE public.herald_commit_replies(IN p_reply_ids uuid[], IN p_delivery_ids bigint[], IN p_actions text[], IN p_has_text boolean[], IN p_texts text[], IN p_occurred double precision[], IN p_checked boolean[], IN p_source text, INOUT stored integer, INOUT refused integer[], INOUT duplicates integer[]) TO herald_intake;

REVOKE ALL ON PROCEDURE public.herald_commit_replies(IN p_reply_ids uuid[], IN p_delivery_ids bigint[], IN p_actions text[], IN p_has_text boolean[], IN p_texts text[], IN p_occurred double precision[], IN p_checked boolean[], IN p_source text, INOUT stored integer, INOUT refused integer[], INOUT duplicates integer[], INOUT reasons text[], INOUT categories text[]) FROM PUBLIC;
GRANT ALL ON PROCEDURE public.herald_commit_replies(IN p_reply_ids uuid[], IN p_delivery_ids bigint[], IN p_actions text[], IN p_has_text boolean[], IN p_texts text[], IN p_occurred double precision[], IN p_checked boolean[], IN p_source text, INOUT stored integer, INOUT refused integer[], INOUT duplicates integer[], INOUT reasons text[], INOUT categories text[]) TO herald_intake;

REVOKE ALL ON FUNCTION public.herald_delivery_partition(campaign bigint, written_once boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION public.herald_delivery_partition(campaign bigint, written_once boolean) TO herald_job;

REVOKE ALL ON FUNCTION public.herald_ledger_analyze(campaign bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION public.herald_ledger_analyze(campaign bigint) TO herald_job;

REVOKE ALL ON FUNCTION public.herald_occurrence(p_series bigint, p_number integer, p_at timestamp with time zone, p_open_until timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION public.herald_occurrence(p_series bigint, p_number integer, p_at timestamp with time zone, p_open_until timestamp with time zone) TO herald_job;

REVOKE ALL ON FUNCTION public.herald_open_approval(p_campaign bigint) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.herald_pool_approval_guard() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.herald_pool_code_changed() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.herald_recipients_approval_guard() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.herald_refusal_reasons(p_positions integer[], p_delivery_ids bigint[], p_actions text[], p_has_text boolean[], p_checked boolean[], OUT reasons text[], OUT categories text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION public.herald_refusal_reasons(p_positions integer[], p_delivery_ids bigint[], p_actions text[], p_has_text boolean[], p_checked boolean[], OUT reasons text[], OUT categories text[]) TO herald_intake;

REVOKE ALL ON FUNCTION public.herald_reopen_entries(p_series bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION public.herald_reopen_entries(p_series bigint) TO herald_job;

REVOKE ALL ON FUNCTION public.herald_reply_targets(ids bigint[]) FROM PUBLIC;
GRANT ALL ON FUNCTION public.herald_reply_targets(ids bigint[]) TO herald_intake;

REVOKE ALL ON FUNCTION public.herald_sale_status_follows() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.herald_sale_steps(p_sale bigint, p_at timestamp with time zone[], p_until timestamp with time zone[]) FROM PUBLIC;
GRANT ALL ON FUNCTION public.herald_sale_steps(p_sale bigint, p_at timestamp with time zone[], p_until timestamp with time zone[]) TO herald_job;

REVOKE ALL ON FUNCTION public.herald_step_state(p_campaign bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION public.herald_step_state(p_campaign bigint) TO herald_job;

REVOKE ALL ON FUNCTION public.herald_store_checked_replies(p_reply_ids uuid[], p_delivery_ids bigint[], p_actions text[], p_has_text boolean[], p_texts text[], p_occurred double precision[], p_checked boolean[], p_source text, OUT stored integer, OUT refused integer[], OUT duplicates integer[]) FROM PUBLIC;
GRANT ALL ON FUNCTION public.herald_store_checked_replies(p_reply_ids uuid[], p_delivery_ids bigint[], p_actions text[], p_has_text boolean[], p_texts text[], p_occurred double precision[], p_checked boolean[], p_source text, OUT stored integer, OUT refused integer[], OUT duplicates integer[]) TO herald_intake;

REVOKE ALL ON FUNCTION public.herald_store_receipts(p_ids bigint[], p_arrived timestamp with time zone[], p_sealed smallint[], p_media smallint[], OUT stored integer, OUT unknown bigint[]) FROM PUBLIC;
GRANT ALL ON FUNCTION public.herald_store_receipts(p_ids bigint[], p_arrived timestamp with time zone[], p_sealed smallint[], p_media smallint[], OUT stored integer, OUT unknown bigint[]) TO herald_intake;

REVOKE ALL ON FUNCTION public.herald_widget_push(p_campaign bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION public.herald_widget_push(p_campaign bigint) TO herald_job;

REVOKE ALL ON FUNCTION public.herald_widgets_status_follows() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.herald_withdraw_users_of(p_segment bigint, p_categories text[], p_reason text) FROM PUBLIC;

GRANT SELECT ON TABLE public.actions TO herald_job;
GRANT SELECT ON TABLE public.actions TO herald_intake;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.actions TO herald_marketer;

GRANT SELECT ON TABLE public.campaigns TO herald_job;
GRANT SELECT ON TABLE public.campaigns TO herald_approver;
GRANT SELECT,DELETE ON TABLE public.campaigns TO herald_marketer;

GRANT SELECT(id) ON TABLE public.campaigns TO herald_intake;

GRANT INSERT(name),UPDATE(name) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(kind),UPDATE(kind) ON TABLE public.campaigns TO herald_marketer;

GRANT UPDATE(status) ON TABLE public.campaigns TO herald_job;
GRANT INSERT(status),UPDATE(status) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(segment_id),UPDATE(segment_id) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(content),UPDATE(content) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(default_locale),UPDATE(default_locale) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(media_url),UPDATE(media_url) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(media_type),UPDATE(media_type) ON TABLE public.campaigns TO herald_marketer;

GRANT SELECT(category_id) ON TABLE public.campaigns TO herald_intake;
GRANT INSERT(category_id),UPDATE(category_id) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(custom),UPDATE(custom) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(sensitive),UPDATE(sensitive) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(send_at),UPDATE(send_at) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(expires_at),UPDATE(expires_at) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(priority),UPDATE(priority) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(collapse_id),UPDATE(collapse_id) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(thread_id),UPDATE(thread_id) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(interruption_level),UPDATE(interruption_level) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(relevance_score),UPDATE(relevance_score) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(sound),UPDATE(sound) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(quiet_hours),UPDATE(quiet_hours) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(frequency_capped),UPDATE(frequency_capped) ON TABLE public.campaigns TO herald_marketer;

GRANT UPDATE(failure_reason) ON TABLE public.campaigns TO herald_job;

GRANT UPDATE(started_at) ON TABLE public.campaigns TO herald_job;

GRANT UPDATE(completed_at) ON TABLE public.campaigns TO herald_job;

GRANT UPDATE(snapshot_at) ON TABLE public.campaigns TO herald_job;

GRANT UPDATE(snapshot_through) ON TABLE public.campaigns TO herald_job;

GRANT INSERT(rate_per_minute),UPDATE(rate_per_minute) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(finish_within),UPDATE(finish_within) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(send_at_local),UPDATE(send_at_local) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(local_missed),UPDATE(local_missed) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(repeat_unit),UPDATE(repeat_unit) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(repeat_every),UPDATE(repeat_every) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(repeat_on),UPDATE(repeat_on) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(repeat_day),UPDATE(repeat_day) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(repeat_until),UPDATE(repeat_until) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(repeat_count),UPDATE(repeat_count) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(on_segment_entry),UPDATE(on_segment_entry) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(resend_after),UPDATE(resend_after) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(holdout_pct),UPDATE(holdout_pct) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(conversion_event),UPDATE(conversion_event) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(attribution_window),UPDATE(attribution_window) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(apps),UPDATE(apps) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(audience),UPDATE(audience) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(code_pool),UPDATE(code_pool) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(best_hour),UPDATE(best_hour) ON TABLE public.campaigns TO herald_marketer;

GRANT INSERT(live_activity),UPDATE(live_activity) ON TABLE public.campaigns TO herald_marketer;
GRANT SELECT(live_activity) ON TABLE public.campaigns TO herald_intake;

GRANT INSERT(widgets_push),UPDATE(widgets_push) ON TABLE public.campaigns TO herald_marketer;

GRANT SELECT ON TABLE analyst.action_breakdown TO herald_analyst;

GRANT SELECT ON TABLE public.apps TO herald_job;

GRANT SELECT(name) ON TABLE public.apps TO herald_intake;
GRANT SELECT(name) ON TABLE public.apps TO herald_marketer;

GRANT SELECT(display_name) ON TABLE public.apps TO herald_marketer;

GRANT SELECT(topic) ON TABLE public.apps TO herald_intake;
GRANT SELECT(topic) ON TABLE public.apps TO herald_marketer;

GRANT SELECT(registration_keys) ON TABLE public.apps TO herald_intake;

GRANT SELECT ON TABLE public.delivery_status TO herald_job;

GRANT SELECT ON TABLE public.devices TO herald_job;

GRANT SELECT(id) ON TABLE public.devices TO herald_intake;

GRANT SELECT(user_id),INSERT(user_id),UPDATE(user_id) ON TABLE public.devices TO herald_intake;

GRANT SELECT(token),INSERT(token) ON TABLE public.devices TO herald_intake;

GRANT SELECT(environment),INSERT(environment),UPDATE(environment) ON TABLE public.devices TO herald_intake;

GRANT INSERT(public_key),UPDATE(public_key) ON TABLE public.devices TO herald_intake;

GRANT SELECT(key_id),INSERT(key_id),UPDATE(key_id) ON TABLE public.devices TO herald_intake;

GRANT SELECT(app_version),INSERT(app_version),UPDATE(app_version) ON TABLE public.devices TO herald_intake;

GRANT SELECT(last_seen_at),INSERT(last_seen_at),UPDATE(last_seen_at) ON TABLE public.devices TO herald_intake;

GRANT UPDATE(invalidated_at) ON TABLE public.devices TO herald_job;
GRANT SELECT(invalidated_at),UPDATE(invalidated_at) ON TABLE public.devices TO herald_intake;

GRANT UPDATE(invalid_reason) ON TABLE public.devices TO herald_job;
GRANT SELECT(invalid_reason),UPDATE(invalid_reason) ON TABLE public.devices TO herald_intake;

GRANT SELECT(locale),INSERT(locale),UPDATE(locale) ON TABLE public.devices TO herald_intake;

GRANT SELECT(config_etag),INSERT(config_etag),UPDATE(config_etag) ON TABLE public.devices TO herald_intake;

GRANT SELECT(config_reported_at),INSERT(config_reported_at),UPDATE(config_reported_at) ON TABLE public.devices TO herald_intake;

GRANT SELECT(registered_at),INSERT(registered_at),UPDATE(registered_at) ON TABLE public.devices TO herald_intake;

GRANT SELECT(app),INSERT(app) ON TABLE public.devices TO herald_intake;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.live_activities TO herald_intake;
GRANT SELECT ON TABLE public.live_activities TO herald_job;
GRANT SELECT ON TABLE public.live_activities TO herald_marketer;

GRANT SELECT ON TABLE analyst.apps TO herald_analyst;

GRANT SELECT ON TABLE public.users TO herald_job;

GRANT SELECT(id) ON TABLE public.users TO herald_intake;

GRANT SELECT(external_id),INSERT(external_id) ON TABLE public.users TO herald_intake;

GRANT SELECT(locale),INSERT(locale) ON TABLE public.users TO herald_intake;

GRANT SELECT(time_zone),INSERT(time_zone),UPDATE(time_zone) ON TABLE public.users TO herald_intake;

GRANT SELECT(attributes),INSERT(attributes),UPDATE(attributes) ON TABLE public.users TO herald_intake;

GRANT SELECT(opted_out_at),INSERT(opted_out_at),UPDATE(opted_out_at) ON TABLE public.users TO herald_intake;

GRANT SELECT ON TABLE analyst.best_hours TO herald_analyst;

GRANT SELECT ON TABLE analyst.campaign_funnel TO herald_analyst;

GRANT SELECT ON TABLE analyst.campaign_status_changes TO herald_analyst;

GRANT SELECT,INSERT,DELETE ON TABLE public.code_pools TO herald_marketer;
GRANT SELECT ON TABLE public.code_pools TO herald_job;

GRANT SELECT,INSERT,DELETE,TRUNCATE ON TABLE public.pool_codes TO herald_marketer;
GRANT SELECT ON TABLE public.pool_codes TO herald_job;

GRANT UPDATE(code) ON TABLE public.pool_codes TO herald_marketer;

GRANT UPDATE(campaign_id) ON TABLE public.pool_codes TO herald_job;

GRANT UPDATE(user_id) ON TABLE public.pool_codes TO herald_job;

GRANT UPDATE(drawn_at) ON TABLE public.pool_codes TO herald_job;

GRANT SELECT ON TABLE analyst.code_pools TO herald_analyst;

GRANT SELECT(id) ON TABLE public.conversions TO herald_intake;

GRANT INSERT(user_id) ON TABLE public.conversions TO herald_intake;

GRANT INSERT(event) ON TABLE public.conversions TO herald_intake;

GRANT INSERT(occurred_at) ON TABLE public.conversions TO herald_intake;

GRANT INSERT(amount) ON TABLE public.conversions TO herald_intake;

GRANT INSERT(currency) ON TABLE public.conversions TO herald_intake;

GRANT SELECT(idempotency_key),INSERT(idempotency_key) ON TABLE public.conversions TO herald_intake;

GRANT INSERT(source) ON TABLE public.conversions TO herald_intake;

GRANT INSERT(code) ON TABLE public.conversions TO herald_intake;

GRANT SELECT ON TABLE analyst.codes_given TO herald_analyst;

GRANT SELECT ON TABLE analyst.config_refreshes TO herald_analyst;

GRANT SELECT ON TABLE analyst.delivery_confirmation TO herald_analyst;

GRANT SELECT ON TABLE analyst.delivery_problems TO herald_analyst;

GRANT SELECT ON TABLE analyst.feedback_text TO herald_analyst;

GRANT SELECT ON TABLE analyst.lift TO herald_analyst;

GRANT SELECT,INSERT,UPDATE ON TABLE public.channel_pushes TO herald_job;
GRANT SELECT ON TABLE public.channel_pushes TO herald_marketer;

GRANT SELECT ON TABLE analyst.live_activity_steps TO herald_analyst;

GRANT SELECT,INSERT,UPDATE ON TABLE public.activity_channels TO herald_job;
GRANT SELECT ON TABLE public.activity_channels TO herald_marketer;

GRANT SELECT ON TABLE analyst.live_activities TO herald_analyst;

GRANT SELECT ON TABLE analyst.live_activity_devices TO herald_analyst;

GRANT SELECT ON TABLE analyst.occurrences TO herald_analyst;

GRANT SELECT ON TABLE analyst.pace TO herald_analyst;

GRANT SELECT ON TABLE analyst.replies_over_time TO herald_analyst;

GRANT SELECT ON TABLE analyst.runs TO herald_analyst;

GRANT SELECT ON TABLE analyst.series TO herald_analyst;

GRANT SELECT ON TABLE analyst.test_sends TO herald_analyst;

GRANT SELECT ON TABLE analyst.variant_actions TO herald_analyst;

GRANT SELECT ON TABLE public.campaign_variants TO herald_job;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.campaign_variants TO herald_marketer;

GRANT SELECT ON TABLE analyst.variant_comparison TO herald_analyst;

GRANT SELECT ON TABLE public.app_credentials TO herald_job;

GRANT SELECT ON TABLE public.app_current_credentials TO herald_job;

GRANT SELECT ON TABLE public.campaign_approval_columns TO herald_marketer;
GRANT SELECT ON TABLE public.campaign_approval_columns TO herald_approver;
GRANT SELECT ON TABLE public.campaign_approval_columns TO herald_job;

GRANT SELECT ON TABLE public.campaign_approvals TO herald_job;
GRANT SELECT ON TABLE public.campaign_approvals TO herald_approver;
GRANT SELECT ON TABLE public.campaign_approvals TO herald_marketer;

GRANT SELECT,INSERT,UPDATE ON TABLE public.campaign_pace TO herald_job;

GRANT SELECT,INSERT,DELETE,TRUNCATE,UPDATE ON TABLE public.campaign_recipients TO herald_marketer;
GRANT SELECT ON TABLE public.campaign_recipients TO herald_job;

GRANT SELECT,USAGE ON SEQUENCE public.campaigns_id_seq TO herald_marketer;

GRANT SELECT ON TABLE public.categories TO herald_job;
GRANT SELECT ON TABLE public.categories TO herald_intake;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.categories TO herald_marketer;

GRANT SELECT ON TABLE public.category_actions TO herald_job;
GRANT SELECT ON TABLE public.category_actions TO herald_intake;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.category_actions TO herald_marketer;

GRANT SELECT,INSERT ON TABLE public.config_documents TO herald_job;
GRANT SELECT,INSERT ON TABLE public.config_documents TO herald_intake;

GRANT USAGE ON SEQUENCE public.conversions_id_seq TO herald_intake;

GRANT SELECT,USAGE ON SEQUENCE public.deliveries_id_seq TO herald_job;

GRANT SELECT,INSERT ON TABLE public.delivery_id_ranges TO herald_job;
GRANT SELECT ON TABLE public.delivery_id_ranges TO herald_intake;

GRANT USAGE ON SEQUENCE public.devices_id_seq TO herald_intake;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.push_to_start_tokens TO herald_intake;
GRANT SELECT ON TABLE public.push_to_start_tokens TO herald_job;

GRANT SELECT,USAGE ON SEQUENCE public.runs_id_seq TO herald_job;

GRANT SELECT ON TABLE public.sale_step_gates TO herald_marketer;

GRANT SELECT ON TABLE public.sale_stock TO herald_job;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.sale_stock TO herald_marketer;

GRANT SELECT ON TABLE public.segments TO herald_job;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.segments TO herald_marketer;

GRANT SELECT,USAGE ON SEQUENCE public.segments_id_seq TO herald_marketer;

GRANT SELECT ON TABLE public.settings TO herald_job;
GRANT SELECT,UPDATE ON TABLE public.settings TO herald_admin;
GRANT SELECT ON TABLE public.settings TO herald_marketer;

GRANT SELECT ON TABLE public.settings_changes TO herald_admin;

GRANT SELECT,INSERT,DELETE ON TABLE public.snapshot_caps TO herald_job;

GRANT USAGE ON SEQUENCE public.users_id_seq TO herald_intake;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.widget_tokens TO herald_intake;
GRANT SELECT ON TABLE public.widget_tokens TO herald_job;
