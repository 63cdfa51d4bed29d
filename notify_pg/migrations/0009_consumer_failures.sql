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
    CONSTRAINT consumer_failures_round_check CHECK (round IN ('consumer', 'due', 'push')),
    CONSTRAINT consumer_failures_failures_check CHECK (failures >= 1)
);
