-- Herald schema: the reply intake's lookup of deliveries by id, one ledger
-- partition per id and planned once per session.
--
-- The intake and `herald ingest` know a reply's delivery id only. They read
-- the candidate campaigns from delivery_id_ranges (0010) and then the ledger
-- with those campaigns named: with replies to ten campaigns in a batch, every
-- id was probed in all ten partitions, and the statement was planned anew for
-- each batch against every partition. Measured on a durable PostgreSQL with
-- 1,000,000 deliveries in ten campaign partitions: planning 616 µs per intake
-- batch of about 19 replies (more than the statement ran), and 31 ms to run
-- for 5,000 ids.
--
-- herald_reply_targets joins each id to its range and reads the ledger
-- through a LATERAL subquery on (campaign, id), which PostgreSQL prunes at
-- run time to the one partition of that campaign; its plan is made once per
-- session (PL/pgSQL keeps it) and generic, so no batch plans against the
-- partitions again. Measured the same way: 17 ms for 5,000 ids, nothing to
-- plan. Ids in no range (ledger rows written by hand) are looked up in every
-- partition, as before. A session-side plan works through PgBouncer in
-- transaction mode, where named prepared statements do not (before 1.21).
-- applied-if: SELECT to_regprocedure('public.herald_reply_targets(bigint[])') IS NOT NULL

CREATE FUNCTION herald_reply_targets(ids bigint[])
RETURNS TABLE (id bigint, campaign_id bigint, device_id bigint, user_id bigint, category_id text)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $$
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
COMMENT ON FUNCTION herald_reply_targets(bigint[]) IS
    'the deliveries among ids that exist, with their campaign, device, user and category (the reply intake''s lookup)';

REVOKE ALL ON FUNCTION herald_reply_targets(bigint[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald_reply_targets(bigint[]) TO herald_intake;
