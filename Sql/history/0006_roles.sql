-- Herald schema, part 6: least-privilege roles, and no silent loss of
-- history by deleting a campaign.
--
-- Three group roles (NOLOGIN); people and processes log in as roles that are
-- members of one of them (README, "Security"):
--   herald_job      what `herald run` needs: read campaigns and the audience,
--                   write the ledger and runs, mark devices invalid
--   herald_intake   what `herald serve` and `herald ingest` need: look up a
--                   delivery's campaign and category, read the action
--                   catalogue, insert replies; never device tokens or keys
--   herald_analyst  the views of the `analyst` schema and nothing else (0002)
-- None of them owns a table, so none can create, alter, drop or truncate one.
--
-- Roles belong to the whole server (cluster), grants to one database: this
-- file creates each role only when it does not exist yet, and tolerates
-- another database's migration creating it at the same moment. A database
-- owner without CREATEROLE can apply it once an administrator has created
-- the three roles (CREATE ROLE herald_job NOLOGIN; … ).
-- (`herald migrate` adopts it when applied by hand with psql, by this test:)
-- applied-if: SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'campaigns_keep_history')

DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['herald_job', 'herald_intake', 'herald_analyst'] LOOP
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

-- Nobody but owners creates objects in the public schema (the default since
-- PostgreSQL 15; older servers granted it to everyone).
REVOKE CREATE ON SCHEMA public FROM PUBLIC;

-- herald_job: the batch run.
GRANT USAGE ON SCHEMA public TO herald_job;
GRANT SELECT ON settings, users, devices, segments, actions, categories, category_actions,
                campaigns, deliveries, runs TO herald_job;
GRANT UPDATE (status, started_at, completed_at, failure_reason) ON campaigns TO herald_job;
GRANT UPDATE (invalidated_at, invalid_reason) ON devices TO herald_job;
GRANT INSERT, UPDATE ON deliveries, runs TO herald_job;
GRANT USAGE, SELECT ON SEQUENCE deliveries_id_seq, runs_id_seq TO herald_job;

-- herald_intake: replies in, the notification config out. Column grants
-- keep device tokens, device keys, users and campaign content out of reach.
GRANT USAGE ON SCHEMA public TO herald_intake;
GRANT SELECT (id, campaign_id, device_id, user_id) ON deliveries TO herald_intake;
GRANT SELECT (id, category_id) ON campaigns TO herald_intake;
GRANT SELECT ON actions, categories, category_actions TO herald_intake;
GRANT INSERT (reply_id, delivery_id, campaign_id, device_id, user_id, action, text, occurred_at, source)
    ON replies TO herald_intake;
GRANT SELECT (reply_id) ON replies TO herald_intake;
GRANT USAGE ON SEQUENCE replies_id_seq TO herald_intake;

-- What 0003 (leases, the status audit) and 0005 (the app's side) added.
-- The job snapshots (snapshot_at) and records the config documents that its
-- refresh pushes announce.
GRANT UPDATE (snapshot_at) ON campaigns TO herald_job;
GRANT SELECT, INSERT ON config_documents TO herald_job;
-- The intake registers devices (contract 6) and serves the notification
-- config. It may write a device's key but never read one, and it reads users
-- and devices only by the columns registration needs.
GRANT SELECT (id, external_id, locale, time_zone, attributes, opted_out_at),
      INSERT (external_id, locale, time_zone, attributes, opted_out_at),
      UPDATE (time_zone, attributes, opted_out_at)
    ON users TO herald_intake;
GRANT USAGE ON SEQUENCE users_id_seq TO herald_intake;
GRANT SELECT (id, user_id, token, environment, key_id, app_version, locale, config_etag, config_reported_at,
              last_seen_at, registered_at, invalidated_at, invalid_reason),
      INSERT (user_id, token, environment, public_key, key_id, app_version, locale, config_etag, config_reported_at,
              last_seen_at, registered_at),
      UPDATE (user_id, environment, public_key, key_id, app_version, locale, config_etag, config_reported_at,
              last_seen_at, registered_at, invalidated_at, invalid_reason)
    ON devices TO herald_intake;
GRANT USAGE ON SEQUENCE devices_id_seq TO herald_intake;
GRANT SELECT, INSERT ON config_documents TO herald_intake;
-- Status changes are audited by a trigger that writes as the table's owner:
-- no role needs (or gets) the right to write the audit itself.
ALTER FUNCTION herald_campaign_status_audit() SECURITY DEFINER SET search_path = public, pg_temp;

-- herald_analyst: the views only (0002 granted them; again for views added since).
GRANT USAGE ON SCHEMA analyst TO herald_analyst;
GRANT SELECT ON ALL TABLES IN SCHEMA analyst TO herald_analyst;

-- Campaigns are archived, not deleted. An archived campaign is never sent
-- (the run only picks scheduled and running ones); archiving cancels what is
-- still queued, and is final.
ALTER TABLE campaigns DROP CONSTRAINT "campaign status must be draft, scheduled, running, paused, …";
ALTER TABLE campaigns ADD CONSTRAINT "campaign status must be draft, scheduled, running, paused, …"
    CHECK (status IN ('draft', 'scheduled', 'running', 'paused', 'completed', 'cancelled', 'failed', 'archived'));

CREATE FUNCTION herald_campaign_archive() RETURNS trigger
LANGUAGE plpgsql AS $$
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
CREATE TRIGGER campaigns_archive BEFORE UPDATE OF status ON campaigns
    FOR EACH ROW EXECUTE FUNCTION herald_campaign_archive();

-- Deleting a campaign with deliveries or replies is refused with a message
-- that says what to do instead; one without history (a draft) may go.
CREATE FUNCTION herald_campaign_delete_check() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM deliveries WHERE campaign_id = OLD.id)
       OR EXISTS (SELECT 1 FROM replies WHERE campaign_id = OLD.id) THEN
        RAISE EXCEPTION 'campaign "%" has deliveries or replies and cannot be deleted; archive it instead', OLD.name
            USING ERRCODE = 'restrict_violation',
                  HINT = format('UPDATE campaigns SET status = ''archived'' WHERE id = %s;', OLD.id);
    END IF;
    RETURN OLD;
END $$;
CREATE TRIGGER campaigns_keep_history BEFORE DELETE ON campaigns
    FOR EACH ROW EXECUTE FUNCTION herald_campaign_delete_check();

-- And no cascade behind the trigger's back: the ledger and replies keep
-- their campaign (deleting a user or a device, an erasure, still removes
-- theirs).
ALTER TABLE deliveries DROP CONSTRAINT deliveries_campaign_id_fkey,
    ADD CONSTRAINT deliveries_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES campaigns (id);
ALTER TABLE replies DROP CONSTRAINT replies_campaign_id_fkey,
    ADD CONSTRAINT replies_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES campaigns (id),
    DROP CONSTRAINT replies_delivery_id_fkey,
    ADD CONSTRAINT replies_delivery_id_fkey FOREIGN KEY (delivery_id) REFERENCES deliveries (id);
