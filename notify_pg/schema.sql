-- The current schema of notify_pg in one file, for reading and review. It must equal what the
-- numbered migrations create (a test compares the catalogs); {schema} is the schema name.
-- The migration runner's own table schema_migrations is not part of it.

-- from 0001_notification_preferences.sql
-- Notification levels a person set per space, channel or thread (rules L1-L3, seed 000 note 2a).
-- IDs are opaque text (G4) compared bytewise (COLLATE "C") so that key order never depends on
-- the database's locale. No foreign key points into host tables: forget_person removes a
-- person's rows, the archive cleanup removes the rows of archived targets.
CREATE TABLE {schema}.notification_preferences (
    user_id     text COLLATE "C" NOT NULL,
    target_kind text COLLATE "C" NOT NULL,
    target_id   text COLLATE "C" NOT NULL,
    level       text NOT NULL,
    muted_until timestamptz,
    version     bigint NOT NULL DEFAULT 1,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT notification_preferences_pkey PRIMARY KEY (user_id, target_kind, target_id),
    CONSTRAINT notification_preferences_target_kind_check
        CHECK (target_kind IN ('space', 'channel', 'thread')),
    CONSTRAINT notification_preferences_level_check CHECK (level IN ('all', 'mentions', 'mute')),
    CONSTRAINT notification_preferences_version_check CHECK (version >= 1)
);

-- The archive cleanup and the batched level facts find rows by target.
CREATE INDEX notification_preferences_target_idx
    ON {schema}.notification_preferences (target_kind, target_id);

-- from 0002_quiet_hours.sql
-- Quiet-hour rules of a person (rules Q1-Q4, seed 000 note 2b). time_zone NULL: the person's
-- zone. start_local = end_local is a whole day from start_local.
CREATE TABLE {schema}.quiet_hours (
    id          text COLLATE "C" NOT NULL,
    user_id     text COLLATE "C" NOT NULL,
    weekdays    smallint NOT NULL,
    start_local time NOT NULL,
    end_local   time NOT NULL,
    time_zone   text,
    enabled     boolean NOT NULL DEFAULT true,
    version     bigint NOT NULL DEFAULT 1,
    CONSTRAINT quiet_hours_pkey PRIMARY KEY (id),
    CONSTRAINT quiet_hours_weekdays_check CHECK (weekdays BETWEEN 1 AND 127),
    CONSTRAINT quiet_hours_version_check CHECK (version >= 1)
);

-- The pipeline reads the enabled rules of many people (quiet_rules).
CREATE INDEX quiet_hours_user_enabled_idx ON {schema}.quiet_hours (user_id) WHERE enabled;

-- Every write reads the person's complete list in id order (the quiet_hours.updated payload).
CREATE INDEX quiet_hours_user_id_idx ON {schema}.quiet_hours (user_id, id);

-- from 0003_event_log.sql
-- The event log in the replay format (formats.md section 2): seq strictly increasing in
-- commit order, absent members stored as NULL and omitted when read.
CREATE TABLE {schema}.event_log (
    seq         bigint GENERATED ALWAYS AS IDENTITY,
    type        text COLLATE "C" NOT NULL,
    occurred_at timestamptz NOT NULL,
    actor       text COLLATE "C",
    audience    text COLLATE "C",
    scope       jsonb,
    payload     jsonb NOT NULL,
    CONSTRAINT event_log_pkey PRIMARY KEY (seq),
    CONSTRAINT event_log_type_check CHECK (type <> ''),
    CONSTRAINT event_log_scope_check CHECK (scope IS NULL OR jsonb_typeof(scope) = 'object'),
    CONSTRAINT event_log_payload_check CHECK (jsonb_typeof(payload) = 'object')
);

-- forget_person removes the personal events of one person.
CREATE INDEX event_log_audience_idx ON {schema}.event_log (audience) WHERE audience IS NOT NULL;

