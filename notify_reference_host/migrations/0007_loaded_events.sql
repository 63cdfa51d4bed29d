-- What `notify db load` has written: one row per loaded event, keyed by the digest of the
-- event as its log line reads (before --end-now moves it), written in the transaction that
-- writes the event. Loading a log again recognises its events and skips them (decisions.md,
-- 2026-12-01). The loader's bookkeeping, not a host's: a host has its own idempotency keys.
CREATE TABLE {schema}.loaded_events (
    digest    text COLLATE "C" PRIMARY KEY,
    log_seq   bigint NOT NULL,
    event_seq bigint NOT NULL,
    loaded_at timestamptz NOT NULL DEFAULT now()
);
