-- The inbox (seed 004 sections 5, 6, 8; docs/rules.md N2, N9-N12, H1-H4).
-- The outbox: one row per event a host emits (`notify_pg.inbox.emit`), in one INSERT that never
-- fails the host's transaction. recipients holds a deletion's watchers, captured by the same
-- statement before the page and its watch rows go (N9). A fan-out worker claims rows with
-- FOR UPDATE SKIP LOCKED (claimed_at, claimed_by: a claim older than the timeout is taken
-- again), writes the keyset cursor it reached after each batch (cursor: the last candidate
-- done) and marks the row processed; processed rows are purged after a day (H3).
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
    CONSTRAINT inbox_entries_pkey PRIMARY KEY (id),
    CONSTRAINT inbox_entries_count_check CHECK (count >= 1),
    CONSTRAINT inbox_entries_email_state_check
        CHECK (email_state IN ('none', 'pending', 'sending', 'sent', 'failed', 'skipped')),
    CONSTRAINT inbox_entries_email_after_check
        CHECK ((email_after IS NOT NULL) = (email_state IN ('pending', 'sending')))
);

-- Coalescing and idempotency (N10): one unread entry per person and key.
CREATE UNIQUE INDEX inbox_entries_unread_key
    ON {schema}.inbox_entries (user_id, group_key) WHERE read_at IS NULL;
-- The inbox list, keyset on (updated_at, id) descending (H1).
CREATE INDEX inbox_entries_list_idx ON {schema}.inbox_entries (user_id, updated_at DESC, id DESC);
-- The badge: unread entries in the inbox (H1).
CREATE INDEX inbox_entries_badge_idx
    ON {schema}.inbox_entries (user_id) WHERE read_at IS NULL AND in_app;
-- The mail queue (E4, E5).
CREATE INDEX inbox_entries_mail_idx
    ON {schema}.inbox_entries (email_after) WHERE email_state IN ('pending', 'sending');
-- The purge (H3).
CREATE INDEX inbox_entries_updated_idx ON {schema}.inbox_entries (updated_at);

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

-- `notify worker` runs the inbox's round too: its failures are recorded as round 'inbox'.
ALTER TABLE {schema}.consumer_failures DROP CONSTRAINT consumer_failures_round_check;
ALTER TABLE {schema}.consumer_failures ADD CONSTRAINT consumer_failures_round_check
    CHECK (round IN ('consumer', 'due', 'push', 'inbox'));
