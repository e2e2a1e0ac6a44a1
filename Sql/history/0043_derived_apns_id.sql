-- Herald schema: a delivery's apns-id derived from its id (DESIGN, "The
-- ledger by ranges", "The apns-id"). Every send of a delivery, the first and
-- any repeat after a kill, carries the same apns-id whether or not a claim
-- stored it: the claims store herald_apns_id(id) where they stored a random
-- UUID, and the ledger by ranges will store none.
--
--   * apns_id_prefix: 48 random bits chosen once per deployment (one row);
--   * herald_apns_id(id, prefix): the UUIDv8 prefix ‖ 0x8001 (version 8,
--     layout 1) ‖ the id as 64 big-endian bits with its top two bits the
--     RFC 9562 variant (10); ids stay below 2^62. Immutable, so a claim
--     reads the prefix once and the call is inlined;
--   * herald_apns_id(id): the same with this deployment's prefix, for readers.
-- applied-if: SELECT to_regclass('public.apns_id_prefix') IS NOT NULL

CREATE TABLE apns_id_prefix (
    id     boolean PRIMARY KEY DEFAULT true CONSTRAINT "apns_id_prefix has one row" CHECK (id),
    prefix text    NOT NULL CONSTRAINT "apns-id prefix must be 12 hex digits" CHECK (prefix ~ '^[0-9a-f]{12}$')
);
INSERT INTO apns_id_prefix (prefix) VALUES (encode(substring(uuid_send(gen_random_uuid()) FROM 1 FOR 6), 'hex'));
GRANT SELECT ON apns_id_prefix TO herald_job;

CREATE FUNCTION herald_apns_id(id bigint, prefix text) RETURNS uuid
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    -- id | 0x8000000000000000 sets the variant's top bit; to_hex of that
    -- negative bigint is its 16 two's-complement digits.
    RETURN (prefix || '8001' || to_hex(id | (-9223372036854775807 - 1)))::uuid;

CREATE FUNCTION herald_apns_id(id bigint) RETURNS uuid
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    RETURN herald_apns_id(id, (SELECT p.prefix FROM apns_id_prefix p));
