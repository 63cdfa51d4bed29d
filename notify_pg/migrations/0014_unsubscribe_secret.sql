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
