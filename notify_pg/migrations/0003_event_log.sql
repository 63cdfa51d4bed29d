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
