-- Idempotency keys of quiet-hour creates (seed 000 note 9d): a create repeated by the same
-- person with the same key answers the rule it stored then and writes nothing. The row keeps
-- that rule as created (version 1), also after the rule was changed or deleted, so a replay
-- answers what the first call answered; a key sent again with another rule is refused.
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
