-- The event log (formats.md section 2).

-- name: lock_event_log
-- Serialize appends until commit, so that seq order is commit order and no reader skips a late seq.
SELECT pg_advisory_xact_lock(hashtextextended('notify.event_log:' || %(schema)s, 0))

-- name: append_event
-- Append one event; occurred_at never decreases along seq (taken under the append lock).
INSERT INTO {schema}.event_log (type, occurred_at, actor, audience, scope, payload)
VALUES (
    %(type)s,
    GREATEST(
        COALESCE(%(occurred_at)s::timestamptz, clock_timestamp()),
        COALESCE((SELECT occurred_at FROM {schema}.event_log ORDER BY seq DESC LIMIT 1),
                 '-infinity'::timestamptz)),
    %(actor)s, %(audience)s, %(scope)s, %(payload)s)
RETURNING seq

-- name: read_events
-- One page of the log after a seq, in seq order.
SELECT seq, type, occurred_at, actor, audience, scope, payload
FROM {schema}.event_log
WHERE seq > %(after_seq)s
ORDER BY seq
LIMIT %(limit)s
