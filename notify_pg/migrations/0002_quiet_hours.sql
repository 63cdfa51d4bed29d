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
