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

-- from 0004_preference_records.sql
-- Preference records of the Message Preference pattern (seed 002, docs/rules.md#records).
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

-- from 0005_push_registrations.sql
-- Push targets of people (seed 001 note 2). The host writes the rows (registration, removal,
-- the preview token, deactivation on logout or device revocation); notify reads the active
-- rows and writes only the delivery columns last_success_at, failure_count, disabled_at and
-- disabled_reason (rule R1). IDs are text like every ID of the library (G4). No foreign key
-- points into the host's tables (users, devices, auth_sessions): the library owns only its
-- schema, so forget_person removes a person's rows and the host removes a device's rows.
CREATE TABLE {schema}.push_registrations (
    id                 text COLLATE "C" NOT NULL,
    user_id            text COLLATE "C" NOT NULL,
    device_id          text COLLATE "C" NOT NULL,
    auth_session_id    text COLLATE "C" NOT NULL,
    provider           text NOT NULL,
    token              text NOT NULL,
    environment        text NOT NULL DEFAULT 'production',
    app_id             text NOT NULL,
    preview_token_hash bytea,
    created_at         timestamptz NOT NULL DEFAULT now(),
    last_success_at    timestamptz,
    failure_count      integer NOT NULL DEFAULT 0,
    disabled_at        timestamptz,
    disabled_reason    text,
    CONSTRAINT push_registrations_pkey PRIMARY KEY (id),
    CONSTRAINT push_registrations_provider_check
        CHECK (provider IN ('apns', 'fcm', 'unifiedpush', 'webpush', 'wns')),
    CONSTRAINT push_registrations_environment_check
        CHECK (environment IN ('production', 'sandbox')),
    CONSTRAINT push_registrations_disabled_reason_check
        CHECK (disabled_reason IN ('token_invalid', 'device_revoked', 'logout', 'topic_mismatch',
                                   'sender_mismatch', 'repeated_failures')),
    CONSTRAINT push_registrations_disabled_check
        CHECK ((disabled_at IS NULL) = (disabled_reason IS NULL)),
    CONSTRAINT push_registrations_provider_token_key UNIQUE (provider, token)
);

-- The preview endpoint finds a registration by the hash of its preview token.
CREATE UNIQUE INDEX push_registrations_preview_token_hash_idx
    ON {schema}.push_registrations (preview_token_hash) WHERE preview_token_hash IS NOT NULL;

-- The pipeline reads the active registrations of many people.
CREATE INDEX push_registrations_user_active_idx
    ON {schema}.push_registrations (user_id) WHERE disabled_at IS NULL;

-- A host deactivates the registrations of an ended session.
CREATE INDEX push_registrations_auth_session_idx
    ON {schema}.push_registrations (auth_session_id);

-- from 0006_pipeline.sql
-- The pipeline on PostgreSQL (seed 001 requirement 1, notes 9, 11 and 16): the cursors of the
-- event log's consumers and the due work of the pipeline (windows, delayed releases, badge
-- syncs, push sends). Workers claim due rows with FOR UPDATE SKIP LOCKED, so several workers
-- on several machines drain them. IDs are text (G4) compared bytewise (COLLATE "C"), so that
-- the order of due work equals the replay's order (formats.md section 2). No foreign key
-- points into the host's tables.

-- One row per partition of a consumer of the event log: every event with seq <= position is
-- handled for the recipients of partition `part` of `parts` (part and parts: 0007).
CREATE TABLE {schema}.consumer_cursors (
    name       text COLLATE "C" NOT NULL,
    position   bigint NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now(),
    part       integer NOT NULL,
    parts      integer NOT NULL,
    CONSTRAINT consumer_cursors_pkey PRIMARY KEY (name, part),
    CONSTRAINT consumer_cursors_position_check CHECK (position >= 0),
    CONSTRAINT consumer_cursors_part_check CHECK (parts >= 1 AND part >= 0 AND part < parts)
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
    -- The record in effect at the hint's decision (M1, M6; migration 0024).
    record          text COLLATE "C",
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

-- from 0007_consumer_partitions.sql
-- Recipient partitions (notify_core.replay.partitions): a consumer of the event log may be split into
-- `parts` partitions, each with its own cursor (consumer_cursors above). Every partition reads
-- every event but decides only for the recipients it owns.

-- The partition of a recipient among `count` partitions, equal to notify_core.replay.partitions.
-- partition_of: the first 28 bits of the MD5 digest of the key's UTF-8 bytes, modulo count (the
-- database's encoding must be UTF-8, as md5 hashes the text's bytes in it). `count` must be at
-- least 1. A plain SQL expression, IMMUTABLE, so the planner inlines it into the due-work reads.
CREATE FUNCTION {schema}.partition_of(key text, count integer) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT ('x' || substr(md5(key), 1, 7))::bit(28)::integer % count
$$;

-- from 0008_quiet_hours_idempotency.sql
-- Idempotency keys of quiet-hour creates (seed 000 note 9d): a create repeated by the same
-- person with the same key answers the rule it stored then and writes nothing.
CREATE TABLE {schema}.quiet_hours_idempotency (
    user_id         text COLLATE "C" NOT NULL,
    idempotency_key text COLLATE "C" NOT NULL,
    rule_id         text COLLATE "C" NOT NULL,
    weekdays        smallint NOT NULL,
    start_local     time NOT NULL,
    end_local       time NOT NULL,
    time_zone       text,
    enabled         boolean NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT quiet_hours_idempotency_pkey PRIMARY KEY (user_id, idempotency_key),
    CONSTRAINT quiet_hours_idempotency_key_check CHECK (idempotency_key <> '')
);

-- from 0009_consumer_failures.sql
-- The last failed round of each consumer (`notify db status`): when, which round, and why as
-- the library's error code, the SQLSTATE and PostgreSQL's message (never a parameter value,
-- so never a person, a token or an address). failures counts the failed rounds so far.
CREATE TABLE {schema}.consumer_failures (
    name      text COLLATE "C" NOT NULL,
    failed_at timestamptz NOT NULL,
    round     text NOT NULL,
    code      text NOT NULL,
    sqlstate  text,
    message   text NOT NULL,
    failures  integer NOT NULL DEFAULT 1,
    CONSTRAINT consumer_failures_pkey PRIMARY KEY (name),
    CONSTRAINT consumer_failures_round_check
        CHECK (round IN ('consumer', 'due', 'push', 'inbox', 'mail')),
    CONSTRAINT consumer_failures_failures_check CHECK (failures >= 1)
);

-- from 0010_own_messages_read.sql
-- B3: a person's own message moves their read position in its thread. While an event is
-- handled, the previous read position comes from the log (read_position_before): the last
-- read_state.updated of the person and thread, then their own later messages in the thread.
-- This index finds a person's messages in a thread by log order.
CREATE INDEX event_log_author_message_idx
    ON {schema}.event_log ((payload->>'thread'), (payload->>'author'), seq)
    WHERE type = 'message.created';

-- from 0011_inbox.sql
-- The inbox (seed 004 sections 5, 6, 8; docs/rules.md N2, N9-N12, H1-H4).
-- The outbox: one row per event a host emits (`notify_pg.inbox.emit`), in one INSERT that never
-- fails the host's transaction. recipients holds a deletion's watchers, captured by the same
-- statement before the page and its watch rows go (N9). A fan-out worker claims rows with
-- FOR UPDATE SKIP LOCKED (claimed_at, claimed_by: a claim older than the timeout is taken
-- again), writes the keyset cursor it reached after each batch (cursor: the last candidate
-- done) and marks the row processed; processed rows are purged after a day (H3).
-- claimed_pid (0018): the server process of the claiming session; a claim whose session is
-- gone is taken again at once (notify_pg.inbox.claims).
CREATE TABLE {schema}.inbox_outbox (
    id           bigint GENERATED ALWAYS AS IDENTITY,
    type         text COLLATE "C" NOT NULL,
    origin       text NOT NULL DEFAULT 'user',
    actor_id     text COLLATE "C",
    payload      jsonb NOT NULL,
    recipients   text[] COLLATE "C",
    occurred_at  timestamptz NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    claimed_at   timestamptz,
    claimed_by   text COLLATE "C",
    cursor       text COLLATE "C",
    processed_at timestamptz,
    claimed_pid  integer,
    CONSTRAINT inbox_outbox_pkey PRIMARY KEY (id),
    CONSTRAINT inbox_outbox_origin_check CHECK (origin IN ('user', 'import', 'bulk')),
    CONSTRAINT inbox_outbox_payload_check CHECK (jsonb_typeof(payload) = 'object')
);

-- The claim: unprocessed rows, oldest first.
CREATE INDEX inbox_outbox_pending_idx ON {schema}.inbox_outbox (id) WHERE processed_at IS NULL;
-- The purge of processed rows.
CREATE INDEX inbox_outbox_processed_idx
    ON {schema}.inbox_outbox (processed_at) WHERE processed_at IS NOT NULL;

-- The host's emit: one statement that never fails the host's transaction. The exception block
-- runs the INSERT in a subtransaction on the server (no extra round trip): a failure is a
-- WARNING with its SQLSTATE and a NULL id, and the host's work goes on (seed 004 6.1).
CREATE FUNCTION {schema}.inbox_emit(
    p_type text,
    p_origin text,
    p_actor text,
    p_payload jsonb,
    p_occurred_at timestamptz,
    p_recipients text[] DEFAULT NULL
) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    new_id bigint;
BEGIN
    INSERT INTO {schema}.inbox_outbox (type, origin, actor_id, payload, occurred_at, recipients)
    VALUES (p_type, p_origin, p_actor, p_payload, p_occurred_at, p_recipients)
    RETURNING id INTO new_id;
    RETURN new_id;
EXCEPTION WHEN OTHERS THEN
    RAISE WARNING 'notify: inbox_emit failed (SQLSTATE %)', SQLSTATE;
    RETURN NULL;
END
$$;

-- The entries (the inbox and the email queue in one row, seed 004 section 8.2). A person has
-- at most one unread entry per group key (the partial unique index): the fan-out's
-- INSERT ... ON CONFLICT ... DO UPDATE ... WHERE last_event IS DISTINCT FROM
-- excluded.last_event coalesces on it and makes a replayed event change nothing (N10).
-- title, path, locale, excerpt and variants are the snapshot (N11); last_event is the
-- outbox id of the latest event.
CREATE TABLE {schema}.inbox_entries (
    id             bigint GENERATED ALWAYS AS IDENTITY,
    user_id        text COLLATE "C" NOT NULL,
    site_id        text COLLATE "C",
    category       text COLLATE "C" NOT NULL,
    variant        text NOT NULL,
    group_key      text COLLATE "C" NOT NULL,
    page_id        text COLLATE "C",
    comment_id     text COLLATE "C",
    actor_id       text COLLATE "C",
    title          text NOT NULL DEFAULT '',
    path           text NOT NULL DEFAULT '',
    locale         text NOT NULL DEFAULT '',
    excerpt        text,
    variants       text[] NOT NULL,
    count          integer NOT NULL DEFAULT 1,
    last_event     bigint NOT NULL,
    in_app         boolean NOT NULL,
    email_state    text NOT NULL DEFAULT 'none',
    email_after    timestamptz,
    emailed_at     timestamptz,
    email_attempts integer NOT NULL DEFAULT 0,
    read_at        timestamptz,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    -- Why the drain skipped the email (E4) and when (migration 0021).
    email_skip     text,
    email_skipped_at timestamptz,
    -- draft (0022): a page_created entry's page was created unpublished (E6)
    draft          boolean NOT NULL DEFAULT false,
    -- The record that governed the mail at the drain (M1, M6; migration 0024).
    email_record   text COLLATE "C",
    -- members (0025): a host category's latest event's members, as texts (N13)
    members        jsonb,
    CONSTRAINT inbox_entries_pkey PRIMARY KEY (id),
    CONSTRAINT inbox_entries_count_check CHECK (count >= 1),
    CONSTRAINT inbox_entries_email_state_check
        CHECK (email_state IN ('none', 'pending', 'sending', 'sent', 'failed', 'skipped')),
    CONSTRAINT inbox_entries_email_after_check
        CHECK ((email_after IS NOT NULL) = (email_state IN ('pending', 'sending')))
);

-- Coalescing and idempotency (N10): one unread entry per person and key; also the badge and
-- mark-read, a person's unread rows (H1; its own badge index went in 0016).
CREATE UNIQUE INDEX inbox_entries_unread_key
    ON {schema}.inbox_entries (user_id, group_key) WHERE read_at IS NULL;
-- The inbox list, keyset on (updated_at, id) descending (H1); also the purge (H3), which walks
-- the people and takes the tail of each one's range (its own updated_at index went in 0017).
CREATE INDEX inbox_entries_list_idx ON {schema}.inbox_entries (user_id, updated_at DESC, id DESC);
-- The mail queue (E4, E5).
CREATE INDEX inbox_entries_mail_idx
    ON {schema}.inbox_entries (email_after) WHERE email_state IN ('pending', 'sending');

-- Inbox preferences (N2): one row per person, category and channel, stored only where it
-- differs from the category's default; global across sites. The partial index answers "who
-- turned this category on" (the opt-in categories' candidates) without scanning people.
CREATE TABLE {schema}.inbox_preferences (
    user_id    text COLLATE "C" NOT NULL,
    category   text COLLATE "C" NOT NULL,
    channel    text COLLATE "C" NOT NULL,
    enabled    boolean NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT inbox_preferences_pkey PRIMARY KEY (user_id, category, channel),
    CONSTRAINT inbox_preferences_channel_check CHECK (channel IN ('in_app', 'email'))
);

CREATE INDEX inbox_preferences_opted_in_idx
    ON {schema}.inbox_preferences (category, user_id) WHERE enabled;

-- from 0012_uncounted_messages.sql
-- B1a: run anchors and system messages never count in a flush count (D8). The pipeline
-- counts those of a thread between a read position and the thread's newest message
-- (uncounted_between); this index finds them by thread and position.
CREATE INDEX event_log_uncounted_idx
    ON {schema}.event_log ((payload->>'thread'), ((payload->>'thread_seq')::bigint))
    WHERE type = 'message.created' AND payload->>'kind' IN ('run', 'system');

-- from 0013_event_origin.sql
-- formats.md section 4: a wiki's activity events carry a top-level origin ("user", "import"
-- or "bulk"; absent: user). Only a non-user origin is stored, so chat events and a user's
-- edits keep NULL and read back without the member.
ALTER TABLE {schema}.event_log ADD COLUMN origin text COLLATE "C";
ALTER TABLE {schema}.event_log ADD CONSTRAINT event_log_origin_check
    CHECK (origin IN ('import', 'bulk'));

-- from 0014_unsubscribe_secret.sql
-- U1: the instance's unsubscribe secret, 32 random bytes generated once where missing
-- (notify_pg.mail_secret), apart from any session secret so that invalidating sessions never
-- breaks a link sitting in somebody's mailbox. One row at most; never returned by any listing.
CREATE TABLE {schema}.unsubscribe_secret (
    id         boolean NOT NULL DEFAULT true,
    secret     bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT unsubscribe_secret_pkey PRIMARY KEY (id),
    CONSTRAINT unsubscribe_secret_one_row_check CHECK (id),
    CONSTRAINT unsubscribe_secret_length_check CHECK (octet_length(secret) = 32)
);

-- U3: every one-click unsubscribe, audited with the token's person as the actor (no session
-- identifies them: only the token does). scope 'token' turned off the token's categories,
-- 'all' every category; changed names those whose email was on before the request (empty
-- for a repeated request, which changes nothing).
CREATE TABLE {schema}.unsubscribe_audit (
    id         bigint GENERATED ALWAYS AS IDENTITY,
    user_id    text COLLATE "C" NOT NULL,
    scope      text COLLATE "C" NOT NULL,
    token_categories text[] COLLATE "C" NOT NULL,
    categories text[] COLLATE "C" NOT NULL,
    changed    text[] COLLATE "C" NOT NULL,
    at         timestamptz NOT NULL,
    CONSTRAINT unsubscribe_audit_pkey PRIMARY KEY (id),
    CONSTRAINT unsubscribe_audit_scope_check CHECK (scope IN ('token', 'all'))
);

CREATE INDEX unsubscribe_audit_user_idx ON {schema}.unsubscribe_audit (user_id, at);

-- from 0015_mail_drain.sql
-- The mail drain (E4-E5, notify_pg.mail_drain). emailed_at is when an entry's email ended:
-- sent, or given up (failed) after its last attempt; `notify db status` counts both over the
-- last 24 hours with this index. The worker's mail round records its failures as round 'mail'
-- (consumer_failures_round_check above).
CREATE INDEX inbox_entries_emailed_idx
    ON {schema}.inbox_entries (emailed_at) WHERE emailed_at IS NOT NULL;

-- from 0016_inbox_badge_index.sql
-- The badge's own index (user_id) WHERE read_at IS NULL AND in_app went: inbox_entries_unread_key
-- serves the badge and mark-read with the same plan; one index insertion less per entry.

-- from 0017_inbox_purge_walk.sql
-- The purge's own index (updated_at) went: inbox_purge_entries walks the people on
-- inbox_entries_list_idx; one index insertion less per entry written and per entry coalesced.

-- from 0019_inbox_audit.sql
-- H2: each change of a person's inbox preferences or email schedule, and each change of the
-- instance's notification settings, is one row written in the transaction of the change
-- (notify_pg.mail.settings). user_id is the person whose preferences changed, NULL for the
-- instance's settings (listed as 'instance'); actor is who made the change; before and after
-- hold only the members that changed. Reads and dismissals are never audited.
CREATE TABLE {schema}.inbox_audit (
    id      bigint GENERATED ALWAYS AS IDENTITY,
    at      timestamptz NOT NULL,
    actor   text COLLATE "C" NOT NULL,
    kind    text COLLATE "C" NOT NULL,
    user_id text COLLATE "C",
    before  jsonb NOT NULL,
    after   jsonb NOT NULL,
    CONSTRAINT inbox_audit_pkey PRIMARY KEY (id),
    CONSTRAINT inbox_audit_kind_check CHECK (kind IN ('preferences', 'settings')),
    CONSTRAINT inbox_audit_subject_check CHECK ((kind = 'settings') = (user_id IS NULL))
);

CREATE INDEX inbox_audit_user_idx ON {schema}.inbox_audit (user_id, at) WHERE user_id IS NOT NULL;
CREATE INDEX inbox_audit_at_idx ON {schema}.inbox_audit (at);

-- U3: the people forget_person erased, as a digest keyed with the unsubscribe secret
-- (SHA-256 of the secret and the id), so that an old unsubscribe token of theirs is invalid
-- and writes nothing, while the id itself is not kept. Written only while a secret exists
-- (without one no token was ever signed).
CREATE TABLE {schema}.forgotten_people (
    digest bytea NOT NULL,
    at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT forgotten_people_pkey PRIMARY KEY (digest),
    CONSTRAINT forgotten_people_digest_check CHECK (octet_length(digest) = 32)
);
-- from 0020_inbox_live.sql
-- Live inbox updates (seed 004 section 9.3; issue 28): every write that changes what a person's
-- summary answers (the fan-out's inserts and coalescings, reads, dismissals, the purge, a
-- forgotten person) sends NOTIFY with the people it touched, from statement-level triggers on
-- inbox_entries. NOTIFY is transactional: the notifications go at the writing transaction's
-- commit, and never for one rolled back. Triggers, not calls in each writer, so that no write
-- path (the host's own SQL included) can forget it.
--
-- The channel is 'notify_inbox_' || md5(schema) (`notify_pg.inbox.live.live_channel`): one
-- per schema, always under PostgreSQL's 63-byte name limit. The payload is a JSON array of
-- person ids, chunked so that each stays under 7,900 bytes (PostgreSQL refuses 8,000); a
-- person id too long for any chunk sends '*', which tells every listener to refresh everyone.
-- The summary counts unread in-app entries and the latest in-app entry's updated_at, so only
-- in-app rows count, and an UPDATE counts only where one of the columns it reads changed (the
-- mail drain's email_state updates send nothing).
CREATE FUNCTION {schema}.inbox_live_send(p_channel text, p_people text[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    person text;
    item text;
    chunk text := '';
BEGIN
    IF p_people IS NULL THEN
        RETURN;
    END IF;
    FOREACH person IN ARRAY p_people LOOP
        item := to_json(person)::text;
        IF octet_length(item) > 7000 THEN
            PERFORM pg_notify(p_channel, '*');
            CONTINUE;
        END IF;
        IF chunk <> '' AND octet_length(chunk) + octet_length(item) + 3 > 7900 THEN
            PERFORM pg_notify(p_channel, '[' || chunk || ']');
            chunk := '';
        END IF;
        chunk := CASE WHEN chunk = '' THEN item ELSE chunk || ',' || item END;
    END LOOP;
    IF chunk <> '' THEN
        PERFORM pg_notify(p_channel, '[' || chunk || ']');
    END IF;
END
$$;

CREATE FUNCTION {schema}.inbox_live_written() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    people text[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(DISTINCT user_id) INTO people FROM new_rows WHERE in_app;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(DISTINCT user_id) INTO people FROM old_rows WHERE in_app;
    ELSE
        SELECT array_agg(DISTINCT p) INTO people
        FROM old_rows o JOIN new_rows n ON n.id = o.id,
             LATERAL (VALUES (o.user_id), (n.user_id)) AS who(p)
        WHERE (o.in_app OR n.in_app)
          AND (o.read_at, o.updated_at, o.in_app, o.site_id, o.user_id)
              IS DISTINCT FROM (n.read_at, n.updated_at, n.in_app, n.site_id, n.user_id);
    END IF;
    PERFORM {schema}.inbox_live_send('notify_inbox_' || md5(TG_TABLE_SCHEMA), people);
    RETURN NULL;
END
$$;

-- One trigger per event: PostgreSQL allows transition tables only on single-event triggers.
CREATE TRIGGER inbox_live_insert AFTER INSERT ON {schema}.inbox_entries
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.inbox_live_written();
CREATE TRIGGER inbox_live_update AFTER UPDATE ON {schema}.inbox_entries
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.inbox_live_written();
CREATE TRIGGER inbox_live_delete AFTER DELETE ON {schema}.inbox_entries
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.inbox_live_written();

-- from 0024_record_deliveries.sql
-- The audit trail of push sends (M6): one row per push send that ended (outcome 'sent',
-- 'failed' after its last attempt, 'dropped' by a provider's answer, or 'skipped' at send
-- time with the reason), keyed by the push send's id. decided_at and decided_record are the
-- hint's decision (t0) and the record in effect then; ended_at and record the send and the
-- record in effect at it. Only IDs, the kind code and reasons: never text (R3). Purged with
-- the inbox entries after retention_days (H3).
CREATE TABLE {schema}.push_deliveries (
    id              bigint NOT NULL,
    notification_id text COLLATE "C" NOT NULL,
    registration_id text COLLATE "C" NOT NULL,
    recipient       text COLLATE "C" NOT NULL,
    kind            smallint NOT NULL,
    thread          text COLLATE "C",
    decided_at      timestamptz NOT NULL,
    decided_record  text COLLATE "C",
    ended_at        timestamptz NOT NULL,
    record          text COLLATE "C",
    outcome         text NOT NULL,
    reason          text,
    CONSTRAINT push_deliveries_pkey PRIMARY KEY (id),
    CONSTRAINT push_deliveries_outcome_check
        CHECK (outcome IN ('sent', 'failed', 'dropped', 'skipped')),
    CONSTRAINT push_deliveries_reason_check CHECK ((outcome = 'skipped') = (reason IS NOT NULL))
);

-- A person's deliveries over a period (notify records audit --principal), an audit by the
-- hint's notification id (--delivery), and the purge (H3).
CREATE INDEX push_deliveries_recipient_idx ON {schema}.push_deliveries (recipient, decided_at);
CREATE INDEX push_deliveries_notification_idx ON {schema}.push_deliveries (notification_id);
CREATE INDEX push_deliveries_ended_idx ON {schema}.push_deliveries (ended_at);

-- Hints a record left with no route at their decision (skips 'suspended', 'record_channel_off',
-- 'frequency_cap': M2-M4), for `notify db status` and the audit of a person's deliveries.
-- Purged after retention_days (H3).
CREATE TABLE {schema}.push_holds (
    id        bigint GENERATED ALWAYS AS IDENTITY,
    recipient text COLLATE "C" NOT NULL,
    at        timestamptz NOT NULL,
    kind      smallint NOT NULL,
    thread    text COLLATE "C",
    reason    text NOT NULL,
    record    text COLLATE "C" NOT NULL,
    CONSTRAINT push_holds_pkey PRIMARY KEY (id),
    CONSTRAINT push_holds_reason_check
        CHECK (reason IN ('suspended', 'record_channel_off', 'frequency_cap'))
);

CREATE INDEX push_holds_recipient_idx ON {schema}.push_holds (recipient, at);
CREATE INDEX push_holds_at_idx ON {schema}.push_holds (at);

-- M4: the push deliveries of a person per local day (the person's zone, else UTC), counted
-- for the people whose record in effect caps pushes. Purged after retention_days (H3).
CREATE TABLE {schema}.push_day_counts (
    recipient text COLLATE "C" NOT NULL,
    day       date NOT NULL,
    count     integer NOT NULL,
    CONSTRAINT push_day_counts_pkey PRIMARY KEY (recipient, day),
    CONSTRAINT push_day_counts_count_check CHECK (count >= 0)
);

CREATE INDEX push_day_counts_day_idx ON {schema}.push_day_counts (day);

-- A person's mails over a period (notify records audit --principal).
CREATE INDEX inbox_entries_emailed_user_idx
    ON {schema}.inbox_entries (user_id, emailed_at) WHERE emailed_at IS NOT NULL;

-- from 0026_forgotten_generations.sql
-- U3 as amended (issue 38): a forgotten id is refused only until the host creates it again.
-- generation: how often the id was forgotten (a person created again after it signs tokens
-- with "g" = generation, U1); forgotten: true from forget_person until the host creates the
-- id again (person_created): meanwhile the person gets no entry and no mail (inactive, N7,
-- E4) and every token of theirs is invalid; afterwards only a token of the current generation
-- is valid. Rows of 0019 were forgotten once and not created since.
ALTER TABLE {schema}.forgotten_people
    ADD COLUMN generation integer NOT NULL DEFAULT 1,
    ADD COLUMN forgotten boolean NOT NULL DEFAULT true,
    ADD CONSTRAINT forgotten_people_generation_check CHECK (generation >= 1);

-- from 0025_host_categories.sql
-- Host categories (N13): one row per key, the declaration as the event carries it (checked
-- by the core's `declare`); declaring a key again replaces its row from that moment on.
CREATE TABLE {schema}.inbox_categories (
    key         text COLLATE "C" NOT NULL,
    declaration jsonb NOT NULL,
    declared_at timestamptz NOT NULL,
    CONSTRAINT inbox_categories_pkey PRIMARY KEY (key),
    CONSTRAINT inbox_categories_declaration_check CHECK (jsonb_typeof(declaration) = 'object')
);
