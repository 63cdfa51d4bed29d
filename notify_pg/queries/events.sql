-- The event log (formats.md section 2).

-- name: lock_event_log
-- Serialize appends until commit, so that seq order is commit order and no reader skips a late seq.
SELECT pg_advisory_xact_lock(hashtextextended('notify.event_log:' || %(schema)s, 0))

-- name: append_event
-- Append one event; occurred_at never decreases along seq (taken under the append lock).
INSERT INTO {schema}.event_log (type, occurred_at, actor, audience, scope, payload, origin)
VALUES (
    %(type)s,
    GREATEST(
        COALESCE(%(occurred_at)s::timestamptz, clock_timestamp()),
        COALESCE((SELECT occurred_at FROM {schema}.event_log ORDER BY seq DESC LIMIT 1),
                 '-infinity'::timestamptz)),
    %(actor)s, %(audience)s, %(scope)s, %(payload)s, %(origin)s)
RETURNING seq

-- name: last_event_at
-- The newest event's instant (a loader refuses an event that would go back from it).
SELECT occurred_at FROM {schema}.event_log ORDER BY seq DESC LIMIT 1

-- name: read_events
-- One page of the log after a seq, in seq order.
SELECT seq, type, occurred_at, actor, audience, origin, scope, payload
FROM {schema}.event_log
WHERE seq > %(after_seq)s
ORDER BY seq
LIMIT %(limit)s

-- name: newest_anchor_run
-- S2: the run of the newest run anchor of a thread before a log position, and that run's last state change before it.
SELECT s.payload->>'agent', s.payload->>'state'
FROM (
    SELECT payload->>'run' AS run FROM {schema}.event_log
    WHERE type = 'message.created' AND payload->>'kind' = 'run'
      AND payload->>'thread' = %(thread)s AND seq < %(before)s
    ORDER BY seq DESC LIMIT 1
) a
JOIN LATERAL (
    SELECT payload FROM {schema}.event_log
    WHERE type = 'run.state_changed' AND payload->>'run' = a.run AND seq < %(before)s
    ORDER BY seq DESC LIMIT 1
) s ON true
WHERE a.run IS NOT NULL

-- name: run_facts
-- S3: a run's newest anchor (thread, position) and its agent by its last state change, before a log position.
SELECT
    (SELECT payload->>'thread' FROM {schema}.event_log
     WHERE type = 'message.created' AND payload->>'kind' = 'run'
       AND payload->>'run' = %(run)s AND seq < %(before)s
     ORDER BY seq DESC LIMIT 1),
    (SELECT (payload->>'thread_seq')::bigint FROM {schema}.event_log
     WHERE type = 'message.created' AND payload->>'kind' = 'run'
       AND payload->>'run' = %(run)s AND seq < %(before)s
     ORDER BY seq DESC LIMIT 1),
    (SELECT payload->>'agent' FROM {schema}.event_log
     WHERE type = 'run.state_changed' AND payload->>'run' = %(run)s AND seq < %(before)s
     ORDER BY seq DESC LIMIT 1)

-- name: newest_agent_message
-- S3: an agent's newest message (text, voice or card) in a thread before a log position.
SELECT payload->>'message', (payload->>'thread_seq')::bigint
FROM {schema}.event_log
WHERE type = 'message.created' AND payload->>'origin' = 'agent'
  AND payload->>'thread' = %(thread)s AND payload->>'author' = %(agent)s
  AND payload->>'kind' IN ('text', 'voice', 'card') AND seq < %(before)s
ORDER BY seq DESC LIMIT 1

-- name: read_position_before
-- B2, B3: a person's read position in a thread as of a log position: the last read_state.updated before it, moved up to the person's own later messages (not run anchors or system messages).
WITH r AS (
    SELECT seq, (payload->>'last_read_seq')::bigint AS position
    FROM {schema}.event_log
    WHERE type = 'read_state.updated' AND audience = %(user_id)s
      AND payload->>'thread' = %(thread)s AND seq < %(before)s
    ORDER BY seq DESC LIMIT 1
)
SELECT GREATEST(
    coalesce((SELECT position FROM r), 0),
    coalesce((SELECT max((m.payload->>'thread_seq')::bigint)
              FROM {schema}.event_log m
              WHERE m.type = 'message.created' AND m.payload->>'thread' = %(thread)s
                AND m.payload->>'author' = %(user_id)s
                AND m.payload->>'kind' NOT IN ('run', 'system')
                AND m.seq < %(before)s AND m.seq > coalesce((SELECT seq FROM r), 0)), 0))

-- name: threads_read_after
-- B2, B3: the threads a person read after a log position, by a read or by a message of their own, in log order (repeats included).
SELECT thread FROM (
    SELECT seq, payload->>'thread' AS thread
    FROM {schema}.event_log
    WHERE audience = %(user_id)s AND audience IS NOT NULL AND type = 'read_state.updated'
      AND seq > %(after)s
    UNION ALL
    SELECT seq, payload->>'thread'
    FROM {schema}.event_log
    WHERE type = 'message.created' AND payload->>'author' = %(user_id)s
      AND payload->>'kind' NOT IN ('run', 'system') AND seq > %(after)s
) r
ORDER BY seq

-- name: head_seq
-- The newest seq of the log (0 when empty).
SELECT coalesce(max(seq), 0) FROM {schema}.event_log

-- name: uncounted_between
-- B1a, D8: how many run anchors and system messages of a thread before a log position have a thread position in (after, upto].
SELECT count(*)
FROM {schema}.event_log
WHERE type = 'message.created' AND payload->>'kind' IN ('run', 'system')
  AND payload->>'thread' = %(thread)s
  AND (payload->>'thread_seq')::bigint > %(after)s
  AND (payload->>'thread_seq')::bigint <= %(upto)s
  AND seq < %(before)s

-- name: read_positions_before
-- read_position_before for many (person, thread) pairs at once (B2, B3).
SELECT w.user_id, w.thread, GREATEST(
    coalesce(r.position, 0),
    coalesce((SELECT max((m.payload->>'thread_seq')::bigint)
              FROM {schema}.event_log m
              WHERE m.type = 'message.created' AND m.payload->>'thread' = w.thread
                AND m.payload->>'author' = w.user_id
                AND m.payload->>'kind' NOT IN ('run', 'system')
                AND m.seq < %(before)s AND m.seq > coalesce(r.seq, 0)), 0))
FROM unnest(%(user_ids)s::text[], %(threads)s::text[]) AS w(user_id, thread)
LEFT JOIN LATERAL (
    SELECT seq, (payload->>'last_read_seq')::bigint AS position
    FROM {schema}.event_log
    WHERE type = 'read_state.updated' AND audience = w.user_id
      AND payload->>'thread' = w.thread AND seq < %(before)s
    ORDER BY seq DESC LIMIT 1
) r ON true

-- name: uncounted_between_many
-- uncounted_between for many (thread, after, upto) ranges at once (B1a, D8).
SELECT w.thread, w.after, w.upto, (
    SELECT count(*)
    FROM {schema}.event_log
    WHERE type = 'message.created' AND payload->>'kind' IN ('run', 'system')
      AND payload->>'thread' = w.thread
      AND (payload->>'thread_seq')::bigint > w.after
      AND (payload->>'thread_seq')::bigint <= w.upto
      AND seq < %(before)s)
FROM unnest(%(threads)s::text[], %(afters)s::bigint[], %(uptos)s::bigint[]) AS w(thread, after, upto)
