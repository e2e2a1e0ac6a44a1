-- Herald schema: several apps in one deployment (docs/DESIGN.md, point 15).
--
-- An app is a bundle (its APNs topic) with its own APNs credentials, per
-- environment, and the keys that verify its backend's registration tokens.
-- Devices belong to an app; a campaign goes to the devices of the apps it
-- names (NULL: every app's, each device through its own app). Every existing
-- device belongs to the app `default`, whose topic and credential are the
-- deployment's APNS_* settings unless its row names its own: a deployment
-- that sets only those keeps working unchanged.
--
-- Key material never enters the database: a credential names the files that
-- hold it (read by `herald run` at its start, refused unless only their owner
-- may read them). Registration keys are public keys, kept here.
-- applied-if: SELECT to_regclass('public.apps') IS NOT NULL

-- Whether every element is a PEM public key (a CHECK cannot hold a subquery).
CREATE FUNCTION herald_are_public_keys(keys text[]) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(bool_and(k IS NOT NULL AND k LIKE '-----BEGIN PUBLIC KEY-----%' AND k LIKE '%-----END PUBLIC KEY-----%'), true)
    FROM unnest(keys) k
$$;

CREATE TABLE apps (
    name              text PRIMARY KEY,
    display_name      text NOT NULL,
    -- The bundle id, sent as apns-topic; NULL only for `default` (APNS_TOPIC).
    topic             text UNIQUE,
    -- PEM public keys (P-256 or Ed25519) that verify the app backend's
    -- registration tokens; several while a key is being replaced. Empty for
    -- `default`: HERALD_APP_JWT_PUBLIC_KEY.
    registration_keys text[] NOT NULL DEFAULT '{}',
    created_at        timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT "app name must be a-z then up to 31 of a-z, 0-9, - and _"
        CHECK (name ~ '^[a-z][a-z0-9_-]{0,31}$'),
    CONSTRAINT "app display_name must be 1 to 100 characters"
        CHECK (char_length(display_name) BETWEEN 1 AND 100),
    CONSTRAINT "app topic must be a bundle id such as com.example.shop"
        CHECK (topic IS NULL OR topic ~ '^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$'),
    CONSTRAINT "app topic may be left out only by the app default"
        CHECK (topic IS NOT NULL OR name = 'default'),
    CONSTRAINT "app registration_keys must be PEM public keys"
        CHECK (herald_are_public_keys(registration_keys))
);
COMMENT ON TABLE apps IS 'the apps Herald pushes to: topic, credentials (app_credentials), registration keys';
INSERT INTO apps (name, display_name) VALUES ('default', 'Default app');

-- An APNs credential of an app: token auth (a .p8 key, its key id and the
-- team id) or certificate auth (a .p12 with a password file, or a PEM
-- certificate and key). A run sends each device with the newest credential
-- of its app for the device's environment that is not retired: a new key is
-- added beside the old one, and the old one retired (or deleted) once the
-- new one works.
CREATE TABLE app_credentials (
    app              text NOT NULL REFERENCES apps ON UPDATE CASCADE ON DELETE CASCADE,
    name             text NOT NULL,
    environment      text NOT NULL DEFAULT 'any',
    kind             text NOT NULL,
    key_path         text,
    key_id           text,
    team_id          text,
    certificate_path text,
    password_file    text,
    private_key_path text,
    added_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    retired_at       timestamptz,
    PRIMARY KEY (app, name),
    CONSTRAINT "credential name must be 1 to 64 of a-z, A-Z, 0-9, ., - and _"
        CHECK (name ~ '^[A-Za-z0-9._-]{1,64}$'),
    CONSTRAINT "credential environment must be production, sandbox or any"
        CHECK (environment IN ('production', 'sandbox', 'any')),
    CONSTRAINT "credential kind must be token or certificate"
        CHECK (kind IN ('token', 'certificate')),
    CONSTRAINT "token credential needs key_path, key_id, team_id only"
        CHECK (kind <> 'token' OR (key_path IS NOT NULL AND key_id ~ '^[A-Z0-9]{1,32}$'
                                   AND team_id ~ '^[A-Z0-9]{1,32}$'
                                   AND certificate_path IS NULL AND password_file IS NULL
                                   AND private_key_path IS NULL)),
    CONSTRAINT "certificate credential needs certificate_path, no key"
        CHECK (kind <> 'certificate' OR (certificate_path IS NOT NULL AND key_path IS NULL
                                         AND key_id IS NULL AND team_id IS NULL)),
    CONSTRAINT "credential paths must be absolute"
        CHECK (coalesce(key_path, '/') LIKE '/%' AND coalesce(certificate_path, '/') LIKE '/%'
               AND coalesce(password_file, '/') LIKE '/%' AND coalesce(private_key_path, '/') LIKE '/%')
);
COMMENT ON TABLE app_credentials IS 'APNs credentials of each app (files, never key material); the newest not retired is used';

-- The credential a run uses for an app and environment (NULL: none; for
-- `default` the APNS_* settings are used then).
CREATE VIEW app_current_credentials AS
SELECT DISTINCT ON (a.name, e.environment) a.name AS app, e.environment, c.name AS credential
FROM apps a
CROSS JOIN (VALUES ('production'), ('sandbox')) e (environment)
JOIN app_credentials c ON c.app = a.name AND c.environment IN (e.environment, 'any') AND c.retired_at IS NULL
ORDER BY a.name, e.environment, c.added_at DESC, c.name;

ALTER TABLE devices ADD COLUMN app text NOT NULL DEFAULT 'default' REFERENCES apps ON UPDATE CASCADE;
CREATE INDEX devices_app ON devices (app) WHERE app <> 'default';

-- The apps a campaign goes to; NULL: every app (each device through its own).
ALTER TABLE campaigns ADD COLUMN apps text[];
CREATE FUNCTION herald_check_campaign_apps() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    missing text;
BEGIN
    -- An occurrence of a series (herald_occurrence) goes to the series' apps.
    IF TG_OP = 'INSERT' AND NEW.series_id IS NOT NULL AND NEW.apps IS NULL THEN
        SELECT apps INTO NEW.apps FROM campaigns WHERE id = NEW.series_id;
    END IF;
    IF NEW.apps IS NOT NULL THEN
        IF cardinality(NEW.apps) = 0 THEN
            RAISE EXCEPTION 'campaign apps must name at least one app, or be NULL for every app'
                USING ERRCODE = 'check_violation';
        END IF;
        SELECT string_agg(x, ', ') INTO missing FROM unnest(NEW.apps) x WHERE NOT EXISTS (SELECT 1 FROM apps WHERE name = x);
        IF missing IS NOT NULL THEN
            RAISE EXCEPTION 'campaign apps names no app %: see SELECT name FROM apps', missing
                USING ERRCODE = 'check_violation';
        END IF;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER campaigns_apps_exist BEFORE INSERT OR UPDATE OF apps ON campaigns
    FOR EACH ROW EXECUTE FUNCTION herald_check_campaign_apps();

-- The job reads apps and credentials (paths only); the intake reads the
-- registration keys and writes a device's app when registering it.
GRANT SELECT ON apps, app_credentials, app_current_credentials TO herald_job;
GRANT SELECT (name, topic, registration_keys) ON apps TO herald_intake;
GRANT SELECT (app), INSERT (app) ON devices TO herald_intake;

-- A pruned ledger keeps its figures by app too (herald prune writes them).
ALTER TABLE pruned_delivery_counts ADD COLUMN app text NOT NULL DEFAULT 'default';

-- Figures by app, for analysts: devices, and what the ledger (and the
-- figures of pruned ledgers) says of their campaign deliveries; delivered
-- is a receipt or a reply (the device had it).
CREATE VIEW analyst.apps AS
WITH ledger AS (
    SELECT coalesce(dv.app, 'default') AS app, d.status, count(*) AS n
    FROM deliveries d LEFT JOIN devices dv ON dv.id = d.device_id
    WHERE d.kind = 'campaign'
    GROUP BY 1, 2
    UNION ALL
    SELECT app, status, deliveries FROM pruned_delivery_counts
), figures AS (
    SELECT app, coalesce(sum(n) FILTER (WHERE status = 'sent'), 0)::bigint AS sent,
           coalesce(sum(n) FILTER (WHERE status = 'failed'), 0)::bigint AS failed
    FROM ledger GROUP BY app
), confirmed AS (
    SELECT dv.app, count(DISTINCT x.delivery_id) AS delivered
    FROM (SELECT delivery_id, device_id FROM receipts UNION SELECT delivery_id, device_id FROM replies) x
    JOIN devices dv ON dv.id = x.device_id
    GROUP BY dv.app
), answered AS (
    SELECT dv.app, count(DISTINCT r.delivery_id) AS replied
    FROM replies r JOIN devices dv ON dv.id = r.device_id
    GROUP BY dv.app
)
SELECT a.name AS app, a.display_name, coalesce(a.topic, '(APNS_TOPIC)') AS topic,
       (SELECT count(*) FROM devices dv WHERE dv.app = a.name) AS devices,
       (SELECT count(*) FROM devices dv WHERE dv.app = a.name AND dv.invalidated_at IS NULL) AS active_devices,
       (SELECT count(*) FROM devices dv WHERE dv.app = a.name AND dv.public_key IS NOT NULL) AS keyed_devices,
       coalesce(f.sent, 0) AS sent, coalesce(f.failed, 0) AS failed,
       coalesce(c.delivered, 0) AS delivered, coalesce(r.replied, 0) AS replied
FROM apps a
LEFT JOIN figures f ON f.app = a.name
LEFT JOIN confirmed c ON c.app = a.name
LEFT JOIN answered r ON r.app = a.name;
COMMENT ON VIEW analyst.apps IS 'each app: its devices, and its campaign deliveries sent, failed, delivered (a receipt or a reply) and replied to';
GRANT SELECT ON analyst.apps TO herald_analyst;
