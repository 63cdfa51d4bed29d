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
        CHECK (provider IN ('apns', 'fcm', 'unifiedpush', 'wns')),
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
