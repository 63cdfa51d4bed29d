-- The pipeline on PostgreSQL (seed 001 requirement 1, notes 9, 11 and 16): the cursors of the
-- event log's consumers and the due work of the pipeline (windows, delayed releases, badge
-- syncs, push sends). Workers claim due rows with FOR UPDATE SKIP LOCKED, so several workers
-- on several machines drain them. IDs are text (G4) compared bytewise (COLLATE "C"), so that
-- the order of due work equals the replay's order (formats.md section 2). No foreign key
-- points into the host's tables.

-- One row per consumer of the event log: every event with seq <= position is handled.
CREATE TABLE {schema}.consumer_cursors (
    name       text COLLATE "C" NOT NULL,
    position   bigint NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT consumer_cursors_pkey PRIMARY KEY (name),
    CONSTRAINT consumer_cursors_position_check CHECK (position >= 0)
);

-- Bundling windows (D6, D8): at most one open window per (recipient, thread). The row is also
-- the window's flush, due at end_at; collected counts the message hints it took.
CREATE TABLE {schema}.windows (
    recipient text COLLATE "C" NOT NULL,
    thread    text COLLATE "C" NOT NULL,
    end_at    timestamptz NOT NULL,
    collected integer NOT NULL DEFAULT 0,
    CONSTRAINT windows_pkey PRIMARY KEY (recipient, thread),
    CONSTRAINT windows_collected_check CHECK (collected >= 0)
);

-- Workers find the windows that have ended, in due order.
CREATE INDEX windows_due_idx ON {schema}.windows (end_at, recipient, thread);

-- Delayed pushes to mobile devices while a desktop is active (D5, D9), released at due_at.
-- id breaks ties between releases of equal due key in scheduling order.
CREATE TABLE {schema}.delayed_releases (
    id          bigint GENERATED ALWAYS AS IDENTITY,
    due_at      timestamptz NOT NULL,
    recipient   text COLLATE "C" NOT NULL,
    thread      text COLLATE "C" NOT NULL,
    device      text COLLATE "C" NOT NULL,
    kind        text NOT NULL,
    message     text COLLATE "C",
    message_seq bigint NOT NULL DEFAULT 0,
    target      text COLLATE "C",
    seq         bigint,
    CONSTRAINT delayed_releases_pkey PRIMARY KEY (id),
    CONSTRAINT delayed_releases_kind_check
        CHECK (kind IN ('message', 'mention', 'dm', 'run_done', 'run_failed', 'input_needed',
                        'security', 'admin'))
);

-- Workers find the releases that are due, in due order.
CREATE INDEX delayed_releases_due_idx
    ON {schema}.delayed_releases (due_at, recipient, thread, device, id);

-- Badge syncs (B2): one row per person who had one; at most one pending sync per person.
-- after_seq: the log position before the read that asked for the pending sync (the threads
-- read after it are the sync's cleared list).
CREATE TABLE {schema}.badge_syncs (
    recipient    text COLLATE "C" NOT NULL,
    last_sync_at timestamptz,
    pending      boolean NOT NULL DEFAULT false,
    due_at       timestamptz,
    after_seq    bigint,
    CONSTRAINT badge_syncs_pkey PRIMARY KEY (recipient),
    CONSTRAINT badge_syncs_due_check CHECK (due_at IS NULL OR pending)
);

-- Workers find the pending syncs that are due.
CREATE INDEX badge_syncs_due_idx ON {schema}.badge_syncs (due_at, recipient) WHERE pending;

-- Push sends (seed 001 note 11): one row per hint and active registration of a routed device,
-- all rows of one hint to one person sharing notification_id. Only IDs, the kind code (K1),
-- flags and counts (R3): never text. due_at is the hint's t0; next_at the next attempt;
-- lease_until keeps a claimed row from other workers while its provider call runs outside
-- any transaction.
CREATE TABLE {schema}.push_sends (
    id              bigint GENERATED ALWAYS AS IDENTITY,
    notification_id text COLLATE "C" NOT NULL,
    registration_id text COLLATE "C" NOT NULL,
    recipient       text COLLATE "C" NOT NULL,
    kind            smallint NOT NULL,
    thread          text COLLATE "C",
    message         text COLLATE "C",
    target          text COLLATE "C",
    quiet           boolean NOT NULL DEFAULT false,
    count           integer NOT NULL DEFAULT 0,
    cleared         text[] COLLATE "C" NOT NULL DEFAULT ARRAY[]::text[],
    due_at          timestamptz NOT NULL,
    attempt         integer NOT NULL DEFAULT 1,
    next_at         timestamptz NOT NULL,
    lease_until     timestamptz,
    CONSTRAINT push_sends_pkey PRIMARY KEY (id),
    CONSTRAINT push_sends_notification_registration_key
        UNIQUE (notification_id, registration_id),
    CONSTRAINT push_sends_kind_check CHECK (kind BETWEEN 1 AND 9),
    CONSTRAINT push_sends_count_check CHECK (count >= 0),
    CONSTRAINT push_sends_attempt_check CHECK (attempt >= 1)
);

-- Workers claim the sends that are due.
CREATE INDEX push_sends_next_idx ON {schema}.push_sends (next_at, id);

-- forget_person removes a person's due work.
CREATE INDEX push_sends_recipient_idx ON {schema}.push_sends (recipient);

-- The history reads of the pipeline, by log order (S2, S3, B2): the newest run anchor of a
-- thread, the events of a run, an agent's messages in a thread, a person's reads of a thread.
CREATE INDEX event_log_anchor_idx ON {schema}.event_log ((payload->>'thread'), seq)
    WHERE type = 'message.created' AND payload->>'kind' = 'run';
CREATE INDEX event_log_run_idx ON {schema}.event_log ((payload->>'run'), seq)
    WHERE type = 'run.state_changed' OR (type = 'message.created' AND payload->>'kind' = 'run');
CREATE INDEX event_log_agent_message_idx
    ON {schema}.event_log ((payload->>'thread'), (payload->>'author'), seq)
    WHERE type = 'message.created' AND payload->>'origin' = 'agent';
CREATE INDEX event_log_read_state_idx ON {schema}.event_log (audience, (payload->>'thread'), seq)
    WHERE type = 'read_state.updated';
