-- Herald schema: an audience snapshot written in slices that sending starts on.
--
-- A campaign's snapshot was one INSERT … SELECT of its whole audience, and
-- nothing could be sent before it committed: measured with a 1,000,000-device
-- run on a durable PostgreSQL, 5.4 s of statement time during which one of the
-- two cores had nothing to do. A run now writes the audience in slices of
-- device ids, each in a transaction of its own (the first small, each next
-- one three times as large as all before it, so a million devices take four
-- statements), and sends the committed slices while the next one is written.
--
-- `snapshot_at` keeps its meaning, when the audience was first written: the
-- variants are frozen from the first slice on (0009). `snapshot_through` is
-- the last device id written while the snapshot is under way, NULL once it is
-- complete (and for every campaign snapshotted before this migration). A
-- campaign completes only once its snapshot is; a run that stops mid-snapshot
-- leaves the cursor where its last slice committed, and the next run goes on
-- from there.
-- applied-if: SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'public.campaigns'::regclass AND attname = 'snapshot_through' AND NOT attisdropped)

ALTER TABLE campaigns ADD COLUMN snapshot_through bigint;
COMMENT ON COLUMN campaigns.snapshot_through IS
    'the last device id the audience snapshot has written while it is under way; NULL once complete';

GRANT UPDATE (snapshot_through) ON campaigns TO herald_job;
