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
