-- Devices and their users as the app server registers them (users, devices).
-- Statements of this file are run by Sources/Store/DeviceStore.swift.

-- name: register-user
-- Writes the registering user (users, by external_id): locale and time zone when given,
-- attributes merged into those held, and marketing consent (false opts the user out, true
-- back in, none leaves it). Answers the user's id.
INSERT INTO users (external_id, locale, time_zone, attributes, opted_out_at)
VALUES (:user, coalesce(:locale::text, 'en'), coalesce(:time_zone::text, 'UTC'),
        coalesce(:attributes::jsonb, '{}'), CASE WHEN :marketing::bool = false THEN now() END)
ON CONFLICT (external_id) DO UPDATE SET
    time_zone = coalesce(:time_zone::text, users.time_zone),
    attributes = users.attributes || coalesce(:attributes::jsonb, '{}'),
    opted_out_at = CASE WHEN :marketing::bool IS NULL THEN users.opted_out_at
                        WHEN :marketing::bool THEN NULL
                        ELSE coalesce(users.opted_out_at, now()) END
RETURNING id

-- name: register-device
-- Writes the registering device (devices, by token), valid again from now: a token
-- invalidated before is registered again only after it was (the caller checks when). The
-- key columns are written from the parameters, never read back (the app server's role may
-- not read keys; reading EXCLUDED.public_key would need that right).
-- Filled in by code: the fragment key_set (the key columns' assignment, when a key comes
-- with the registration).
INSERT INTO devices (user_id, token, environment, public_key, key_id, app_version, locale,
                     config_etag, config_reported_at, last_seen_at, registered_at, app)
VALUES (:user_id, :token, :environment, :public_key, :key_id, :app_version, :locale, :config_etag,
        CASE WHEN :config_etag::text IS NOT NULL THEN now() END, now(), least(to_timestamp(:issued), now()), :app)
ON CONFLICT (token) DO UPDATE SET
    user_id = EXCLUDED.user_id,
    environment = EXCLUDED.environment,
    {{key_set}}
    app_version = coalesce(EXCLUDED.app_version, devices.app_version),
    locale = coalesce(EXCLUDED.locale, devices.locale),
    config_etag = coalesce(EXCLUDED.config_etag, devices.config_etag),
    config_reported_at = coalesce(EXCLUDED.config_reported_at, devices.config_reported_at),
    last_seen_at = now(),
    registered_at = EXCLUDED.registered_at,
    invalidated_at = NULL,
    invalid_reason = NULL
RETURNING id

-- name: unregister
-- Logout: the device of :app with :token is no longer targeted (its ledger and replies
-- stay) until it registers again, when it is :user's. Answers whether it was theirs; no
-- row when no device has the token.
WITH dv AS (
    SELECT dv.id, u.external_id FROM devices dv JOIN users u ON u.id = dv.user_id
    WHERE dv.token = :token AND dv.app = :app
), upd AS (
    UPDATE devices SET invalidated_at = coalesce(devices.invalidated_at, now()),
                       invalid_reason = coalesce(devices.invalid_reason, 'unregistered by the app')
    FROM dv WHERE devices.id = dv.id AND dv.external_id = :user
    RETURNING devices.id
)
SELECT dv.external_id = :user FROM dv
