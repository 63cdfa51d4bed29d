-- Preference records composed into delivery (docs/rules.md#records, M1-M6). Every push send
-- and every mail names the preference record that governed it (M6): its preference id, NULL
-- where no record was in effect. The record itself stays in preference_records (never deleted,
-- Invariant 9): an audit reconstructs its status at any instant from its stamps.

-- The record in effect at the hint's decision (M1), written with the push send.
ALTER TABLE {schema}.push_sends ADD COLUMN record text COLLATE "C";

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

-- The record that governed an entry's mail at the drain (M1, M6): the one in effect when it
-- was sent, or the one that skipped it ('suspended', 'record_channel_off' in email_skip).
ALTER TABLE {schema}.inbox_entries ADD COLUMN email_record text COLLATE "C";

-- A person's mails over a period (notify records audit --principal).
CREATE INDEX inbox_entries_emailed_user_idx
    ON {schema}.inbox_entries (user_id, emailed_at) WHERE emailed_at IS NOT NULL;
