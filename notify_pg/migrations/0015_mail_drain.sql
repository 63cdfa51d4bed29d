-- The mail drain (E4-E5, notify_pg.mail_drain). emailed_at is when an entry's email ended:
-- sent, or given up (failed) after its last attempt; `notify db status` counts both over the
-- last 24 hours with this index. The worker's mail round records its failures as round 'mail'.
CREATE INDEX inbox_entries_emailed_idx
    ON {schema}.inbox_entries (emailed_at) WHERE emailed_at IS NOT NULL;
ALTER TABLE {schema}.consumer_failures DROP CONSTRAINT consumer_failures_round_check;
ALTER TABLE {schema}.consumer_failures ADD CONSTRAINT consumer_failures_round_check
    CHECK (round IN ('consumer', 'due', 'push', 'inbox', 'mail'));
