-- Herald schema: replies at scale. The replies table's foreign keys to the
-- campaign, the device and the user cost one referential check (and a row
-- lock on the referenced row) per reply and key, and 0010's trigger one
-- PL/pgSQL call and ledger lookup per reply. Measured with EXPLAIN ANALYZE,
-- `herald ingest`'s merge of 50,000 replies over 1M deliveries: 9.6 s, of
-- which the keys 3.9 s and the trigger 2.9 s; 2.4-3.1 s with what follows
-- (durable PostgreSQL on a busy 2-core machine). A reply is written only
-- for a delivery that exists, with the delivery's campaign, device and user
-- (the intake and ingest read them from the ledger, and the check below, 0010's
-- once per statement, refuses a reply whose delivery the campaign does not
-- have), so the keys' checks prove nothing the statements do not. What the keys also did on delete is
-- done here by triggers, once per statement:
--   * deleting a device (an erasure, or its user's) deletes its replies,
--     then its deliveries (0011);
--   * deleting a user deletes their replies (those of their devices go with
--     the devices);
--   * deleting a campaign that has replies is refused (0006 already says so,
--     with the hint to archive it instead).
-- A reply being stored while its device is deleted: the deletion waits for
-- the transactions storing replies (a lock on the table, held until it
-- commits), then deletes what they stored; a reply stored after it finds no
-- delivery and is refused, as the foreign key did. Erasures are rare; the
-- intake waits for one at most for its duration.
-- (`herald migrate` adopts it when applied by hand with psql, by this test:)
-- applied-if: SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'users_deleted_replies')

DO $$
DECLARE
    fk record;
BEGIN
    FOR fk IN
        SELECT conname FROM pg_constraint
        WHERE conrelid = 'replies'::regclass AND contype = 'f'
          AND conkey::int2[] <@ ARRAY(SELECT attnum FROM pg_attribute
                                      WHERE attrelid = 'replies'::regclass
                                        AND attname IN ('campaign_id', 'device_id', 'user_id'))
    LOOP
        EXECUTE format('ALTER TABLE replies DROP CONSTRAINT %I', fk.conname);
    END LOOP;
END $$;

-- The devices' trigger of 0011, with their replies first (a ledger row with
-- replies may not be deleted: 0010's deliveries_keep_replies).
CREATE OR REPLACE FUNCTION herald_device_deleted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    LOCK TABLE replies IN SHARE ROW EXCLUSIVE MODE;
    DELETE FROM replies WHERE device_id IN (SELECT id FROM gone);
    DELETE FROM deliveries WHERE device_id IN (SELECT id FROM gone);
    RETURN NULL;
END $$;

CREATE FUNCTION herald_user_deleted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    LOCK TABLE replies IN SHARE ROW EXCLUSIVE MODE;
    DELETE FROM replies WHERE user_id IN (SELECT id FROM gone);
    RETURN NULL;
END $$;
CREATE TRIGGER users_deleted_replies AFTER DELETE ON users
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION herald_user_deleted();

-- A reply must answer a delivery of its campaign (0010), checked once per
-- statement instead of once per row (measured: the row trigger was about a
-- third of the merge statement): the statement's new rows are looked up in
-- the ledger together, and any whose delivery the campaign does not have
-- fails the statement, with 0010's message and SQLSTATE. The delivery's kind
-- is recorded on the reply as before: replies are written as 'campaign'
-- (the default) and the few answering a test send are corrected here. An
-- UPDATE of a reply's delivery or campaign (nothing in Herald does one)
-- still goes through 0010's row trigger.
DROP TRIGGER replies_delivery ON replies;
CREATE TRIGGER replies_delivery BEFORE UPDATE OF delivery_id, campaign_id ON replies
    FOR EACH ROW EXECUTE FUNCTION herald_reply_delivery();

-- The lookup probes the ledger's index once per new reply, whatever the
-- planner estimates: a hash join reads every ledger row (measured at 1M
-- deliveries for 50,000 replies: 1.4 s against 0.6 s, and a batch of 500 would
-- read them all the same).
CREATE FUNCTION herald_replies_delivery() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
    SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off AS $$
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
CREATE TRIGGER replies_added_delivery AFTER INSERT ON replies
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION herald_replies_delivery();
