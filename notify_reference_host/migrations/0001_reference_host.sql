-- The reference host: a minimal host schema (users, spaces, channels, threads, read grants,
-- direct-message participants, personal settings) for tests and the demo. A real host keeps
-- its own tables and implements notify_pg.ports on them; nothing of notify_pg depends on
-- these tables except notify_pg.reference_host.
CREATE TABLE {schema}.users (
    id        text COLLATE "C" PRIMARY KEY,
    kind      text NOT NULL DEFAULT 'human' CHECK (kind IN ('human', 'agent', 'app')),
    time_zone text,
    active    boolean NOT NULL DEFAULT true,
    owner     boolean NOT NULL DEFAULT false
);

CREATE TABLE {schema}.spaces (
    id          text COLLATE "C" PRIMARY KEY,
    archived_at timestamptz
);

CREATE TABLE {schema}.channels (
    id                         text COLLATE "C" PRIMARY KEY,
    space_id                   text COLLATE "C" REFERENCES {schema}.spaces (id),
    kind                       text NOT NULL CHECK (kind IN ('text', 'forum', 'dm')),
    default_notification_level text CHECK (default_notification_level IN ('all', 'mentions', 'mute')),
    archived_at                timestamptz,
    CHECK ((space_id IS NULL) = (kind = 'dm'))
);
CREATE INDEX channels_space_idx ON {schema}.channels (space_id, id);

CREATE TABLE {schema}.threads (
    id         text COLLATE "C" PRIMARY KEY,
    channel_id text COLLATE "C" NOT NULL REFERENCES {schema}.channels (id),
    main       boolean NOT NULL DEFAULT false
);
CREATE INDEX threads_channel_idx ON {schema}.threads (channel_id, id);

CREATE TABLE {schema}.grants (
    user_id     text COLLATE "C" NOT NULL REFERENCES {schema}.users (id) ON DELETE CASCADE,
    target_kind text COLLATE "C" NOT NULL CHECK (target_kind IN ('space', 'channel')),
    target_id   text COLLATE "C" NOT NULL,
    PRIMARY KEY (user_id, target_kind, target_id)
);

CREATE TABLE {schema}.dm_participants (
    channel_id text COLLATE "C" NOT NULL REFERENCES {schema}.channels (id),
    user_id    text COLLATE "C" NOT NULL REFERENCES {schema}.users (id) ON DELETE CASCADE,
    PRIMARY KEY (channel_id, user_id)
);

CREATE TABLE {schema}.user_settings (
    user_id text COLLATE "C" NOT NULL REFERENCES {schema}.users (id) ON DELETE CASCADE,
    key     text COLLATE "C" NOT NULL,
    value   jsonb NOT NULL,
    PRIMARY KEY (user_id, key)
);
