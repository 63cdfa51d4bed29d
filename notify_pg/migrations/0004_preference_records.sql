-- Preference records of the Message Preference pattern (seed 002, behaviour.md section 8).
-- One row per record ever made; nothing in the library deletes a row (Invariant 9). The host
-- supplies preference_id, set_at / suspended_at / deleted_at (its clock) and the declared
-- channel set. seq is the recording order. The opaque values are json, not jsonb, so that they
-- come back as the caller stored them, member order included (Operation 10-11).
CREATE TABLE {schema}.preference_records (
    preference_id       text COLLATE "C" NOT NULL,
    principal_ref       text COLLATE "C" NOT NULL,
    seq                 bigint GENERATED ALWAYS AS IDENTITY,
    declared_channels   text[] COLLATE "C" NOT NULL,
    set_at              timestamptz NOT NULL,
    status              text NOT NULL DEFAULT 'active',
    channel_preferences json,
    frequency_limit     json,
    quiet_hours         json,
    "format"            json,
    metadata            json,
    suspended_at        timestamptz,
    deleted_at          timestamptz,
    CONSTRAINT preference_records_pkey PRIMARY KEY (preference_id),
    CONSTRAINT preference_records_preference_id_check CHECK (preference_id <> ''),
    CONSTRAINT preference_records_principal_ref_check CHECK (principal_ref <> ''),
    CONSTRAINT preference_records_status_check
        CHECK (status IN ('active', 'suspended', 'deleted')),
    -- State 6-8 and 13: deleted_at exactly when deleted; suspended_at when suspended, never
    -- on a record that is still active (a deleted record keeps the one it had).
    CONSTRAINT preference_records_stamps_check CHECK (
        (deleted_at IS NOT NULL) = (status = 'deleted')
        AND (status <> 'suspended' OR suspended_at IS NOT NULL)
        AND (status <> 'active' OR suspended_at IS NULL)
    ),
    -- Operation 5: at least one preference field; metadata does not count (Operation 12).
    CONSTRAINT preference_records_field_check
        CHECK (num_nonnulls(channel_preferences, frequency_limit, quiet_hours, "format") >= 1),
    -- Invariant 10.1-10.2 and Instance 11: a non-degenerate set (repeats: the trigger below).
    CONSTRAINT preference_records_declared_channels_check CHECK (
        cardinality(declared_channels) >= 1
        AND array_ndims(declared_channels) = 1
        AND array_position(declared_channels, NULL) IS NULL
        AND '' <> ALL (declared_channels)
    ),
    CONSTRAINT preference_records_channel_preferences_check
        CHECK (channel_preferences IS NULL OR json_typeof(channel_preferences) = 'object')
);

-- Invariant 3: at most one record in effect (active or suspended) per principal; also the
-- index of current_for.
CREATE UNIQUE INDEX preference_records_in_effect_idx
    ON {schema}.preference_records (principal_ref) WHERE status <> 'deleted';

-- A principal's history in recording order (set, the audit, in_effect_at).
CREATE INDEX preference_records_principal_seq_idx
    ON {schema}.preference_records (principal_ref, seq);

-- Invariant 1, 2 and 5 in the database, whoever writes: an insert must carry a declared set
-- without repeats, a non-empty channel map and only declared channel keys; an update may
-- change status, suspended_at and deleted_at alone, along active -> suspended -> deleted or
-- active -> deleted, and a stamp once set never changes.
CREATE FUNCTION {schema}.preference_records_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    channels json;
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF cardinality(NEW.declared_channels)
            <> (SELECT count(DISTINCT c) FROM unnest(NEW.declared_channels) AS c) THEN
            RAISE EXCEPTION 'preference_records: the declared channel set repeats a name'
                USING ERRCODE = 'check_violation';
        END IF;
        IF NEW.channel_preferences IS NOT NULL THEN
            -- json_object_keys cannot turn the escape \u0000 (NUL, in a key or a value) into
            -- text, so for reading the keys an unescaped \u0000 is escaped once more: a key
            -- holding NUL reads as the text backslash-u0000 (a declared name cannot hold NUL).
            channels := regexp_replace(
                NEW.channel_preferences::text, '(?<!\\)((?:\\\\)*)\\u0000', '\1\\\\u0000', 'g'
            )::json;
            IF NOT EXISTS (SELECT FROM json_object_keys(channels)) THEN
                RAISE EXCEPTION 'preference_records: an empty channel map is stored as absent'
                    USING ERRCODE = 'check_violation';
            END IF;
            IF EXISTS (
                SELECT FROM json_object_keys(channels) AS k
                WHERE NOT k = ANY (NEW.declared_channels)
            ) THEN
                RAISE EXCEPTION 'preference_records: a channel key is not declared on the record'
                    USING ERRCODE = 'check_violation';
            END IF;
        END IF;
        RETURN NEW;
    END IF;
    IF NEW.preference_id IS DISTINCT FROM OLD.preference_id
        OR NEW.principal_ref IS DISTINCT FROM OLD.principal_ref
        OR NEW.seq IS DISTINCT FROM OLD.seq
        OR NEW.declared_channels IS DISTINCT FROM OLD.declared_channels
        OR NEW.set_at IS DISTINCT FROM OLD.set_at
        OR NEW.channel_preferences::text IS DISTINCT FROM OLD.channel_preferences::text
        OR NEW.frequency_limit::text IS DISTINCT FROM OLD.frequency_limit::text
        OR NEW.quiet_hours::text IS DISTINCT FROM OLD.quiet_hours::text
        OR NEW."format"::text IS DISTINCT FROM OLD."format"::text
        OR NEW.metadata::text IS DISTINCT FROM OLD.metadata::text THEN
        RAISE EXCEPTION 'preference_records: only status, suspended_at and deleted_at may change'
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.suspended_at IS DISTINCT FROM OLD.suspended_at
        AND NOT (OLD.status = 'active' AND NEW.status = 'suspended') THEN
        RAISE EXCEPTION 'preference_records: suspended_at is stamped once, by a suspend'
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.deleted_at IS DISTINCT FROM OLD.deleted_at
        AND NOT (OLD.status <> 'deleted' AND NEW.status = 'deleted') THEN
        RAISE EXCEPTION 'preference_records: deleted_at is stamped once, by a delete'
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.status <> OLD.status AND NOT (
        (OLD.status = 'active' AND NEW.status IN ('suspended', 'deleted'))
        OR (OLD.status = 'suspended' AND NEW.status = 'deleted')
    ) THEN
        RAISE EXCEPTION 'preference_records: status may not move from % to %',
            OLD.status, NEW.status
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER preference_records_guard
    BEFORE INSERT OR UPDATE ON {schema}.preference_records
    FOR EACH ROW EXECUTE FUNCTION {schema}.preference_records_guard();
