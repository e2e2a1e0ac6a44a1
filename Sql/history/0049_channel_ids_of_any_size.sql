-- Herald schema: a broadcast channel's id as APNs makes it, of any size (DESIGN, contract 10).
--
-- Apple says a channel id is a base64-encoded string and asks providers not to
-- assume its size; 0040 and 0041 allowed 64 characters at most, so a longer
-- id APNs handed out broke the sale and left its channel undeleted.
--   * activity_channels.channel_id: any id APNs answered, so that the channel
--     is always recorded, and so always deleted; the run checks that it is
--     base64 before any device is started with it (a channel that is not
--     fails the sale with its reason, and is deleted as a failed sale's are);
--   * live_activities.channel_id: base64 of any size, as an app reports it.
-- applied-if: SELECT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'activity channel_id must be base64')

ALTER TABLE activity_channels DROP CONSTRAINT "channel_id must be base64, at most 64 characters";
ALTER TABLE activity_channels ADD CONSTRAINT "channel_id must not be empty" CHECK (channel_id <> '');
COMMENT ON COLUMN activity_channels.channel_id IS 'the id APNs answered (apns-channel-id), recorded as it came so the channel is always deleted';

ALTER TABLE live_activities DROP CONSTRAINT "activity channel_id must be base64, at most 64 characters";
ALTER TABLE live_activities ADD CONSTRAINT "activity channel_id must be base64"
    CHECK (channel_id ~ '^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{4}|[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)$');
COMMENT ON COLUMN live_activities.channel_id IS 'the broadcast channel the activity listens on, base64 of any size as APNs made it';
