-- Recipient partitions (notify_core.replay.partitions): a consumer of the event log may be split into
-- `parts` partitions, each with its own cursor. Every partition reads every event but decides
-- only for the recipients it owns, so consumer rounds of different partitions run side by side
-- on several workers and together give exactly the hints of one consumer. A cursor of before
-- this migration becomes partition 0 of 1 (it owns everybody), at its position.

ALTER TABLE {schema}.consumer_cursors
    ADD COLUMN part integer NOT NULL DEFAULT 0,
    ADD COLUMN parts integer NOT NULL DEFAULT 1,
    DROP CONSTRAINT consumer_cursors_pkey,
    ADD CONSTRAINT consumer_cursors_pkey PRIMARY KEY (name, part),
    ADD CONSTRAINT consumer_cursors_part_check CHECK (parts >= 1 AND part >= 0 AND part < parts);

-- The worker always names both; the defaults only carried the existing rows over.
ALTER TABLE {schema}.consumer_cursors
    ALTER COLUMN part DROP DEFAULT,
    ALTER COLUMN parts DROP DEFAULT;

-- The partition of a recipient among `count` partitions, equal to notify_core.replay.partitions.
-- partition_of: the first 28 bits of the MD5 digest of the key's UTF-8 bytes, modulo count (the
-- database's encoding must be UTF-8, as md5 hashes the text's bytes in it). `count` must be at
-- least 1. A plain SQL expression, IMMUTABLE, so the planner inlines it into the due-work reads.
CREATE FUNCTION {schema}.partition_of(key text, count integer) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT ('x' || substr(md5(key), 1, 7))::bit(28)::integer % count
$$;
