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
