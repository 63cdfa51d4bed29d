-- The facts the pipeline reads from the reference host (seed 001): thread positions, devices,
-- live connections (presence), read positions and mentions. A real host keeps these in its
-- own tables and implements notify_pg.ports.PipelineHostPorts on them.
ALTER TABLE {schema}.threads
    ADD COLUMN last_message_seq bigint NOT NULL DEFAULT 0,
    ADD COLUMN unread_floor_seq bigint NOT NULL DEFAULT 0,
    ADD COLUMN newest_message text COLLATE "C";

CREATE TABLE {schema}.devices (
    id       text COLLATE "C" PRIMARY KEY,
    user_id  text COLLATE "C" NOT NULL REFERENCES {schema}.users (id) ON DELETE CASCADE,
    platform text NOT NULL CHECK (platform IN ('ios', 'android', 'desktop', 'web')),
    state    text NOT NULL CHECK (state IN ('active', 'pending', 'revoked'))
);
CREATE INDEX devices_user_active_idx ON {schema}.devices (user_id, id) WHERE state = 'active';

-- One row per device with a live gateway connection: the threads in focus and idle.
CREATE TABLE {schema}.presence (
    device_id text COLLATE "C" PRIMARY KEY REFERENCES {schema}.devices (id) ON DELETE CASCADE,
    focus     text[] COLLATE "C" NOT NULL DEFAULT ARRAY[]::text[],
    idle      boolean NOT NULL DEFAULT false
);

CREATE TABLE {schema}.read_states (
    user_id       text COLLATE "C" NOT NULL REFERENCES {schema}.users (id) ON DELETE CASCADE,
    thread_id     text COLLATE "C" NOT NULL,
    last_read_seq bigint NOT NULL,
    PRIMARY KEY (user_id, thread_id)
);

CREATE TABLE {schema}.mentions (
    user_id    text COLLATE "C" NOT NULL REFERENCES {schema}.users (id) ON DELETE CASCADE,
    thread_id  text COLLATE "C" NOT NULL,
    thread_seq bigint NOT NULL,
    PRIMARY KEY (user_id, thread_id, thread_seq)
);
