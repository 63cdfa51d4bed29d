-- The schedule of the pipeline (notify_core.hints.ports.Schedule) and the consumer cursors.

-- name: get_window
-- A person's window on a thread.
SELECT end_at, collected FROM {schema}.windows WHERE recipient = %(recipient)s AND thread = %(thread)s

-- name: windows_of
-- The windows of many people on one thread.
SELECT recipient, end_at, collected FROM {schema}.windows
WHERE thread = %(thread)s AND recipient = ANY(%(recipients)s::text[])

-- name: close_window
-- Forget a window (at its flush).
DELETE FROM {schema}.windows WHERE recipient = %(recipient)s AND thread = %(thread)s

-- name: insert_release
-- Schedule a delayed push of one hint to one device (D5, D9).
INSERT INTO {schema}.delayed_releases
    (due_at, recipient, thread, device, kind, message, message_seq, target, seq)
VALUES (%(due_at)s, %(recipient)s, %(thread)s, %(device)s, %(kind)s, %(message)s,
        %(message_seq)s, %(target)s, %(seq)s)

-- name: due_candidates
-- The first due work at or before until in replay order (due time, recipient, thread, device, what, scheduling order).
SELECT at, recipient, thread, device, what, id FROM (
    (SELECT end_at AS at, recipient, thread, ''::text COLLATE "C" AS device,
            'flush'::text COLLATE "C" AS what, 0::bigint AS id
     FROM {schema}.windows WHERE end_at <= %(until)s
     ORDER BY end_at, recipient, thread LIMIT %(limit)s)
    UNION ALL
    (SELECT due_at, recipient, thread, device, 'release'::text COLLATE "C", id
     FROM {schema}.delayed_releases WHERE due_at <= %(until)s
     ORDER BY due_at, recipient, thread, device, id LIMIT %(limit)s)
    UNION ALL
    (SELECT due_at, recipient, ''::text COLLATE "C", ''::text COLLATE "C",
            'badge_sync'::text COLLATE "C", 0::bigint
     FROM {schema}.badge_syncs WHERE pending AND due_at <= %(until)s
     ORDER BY due_at, recipient LIMIT %(limit)s)
) d
ORDER BY at, recipient, thread, device, what, id
LIMIT %(limit)s

-- name: next_due
-- When the first pending work comes due (NULL when none).
SELECT min(at) FROM (
    SELECT min(end_at) AS at FROM {schema}.windows
    UNION ALL SELECT min(due_at) FROM {schema}.delayed_releases
    UNION ALL SELECT min(due_at) FROM {schema}.badge_syncs WHERE pending
) d

-- name: due_candidates_part
-- The first due work of some recipient partitions at or before until, in replay order (a partition's consumer never runs another partition's work).
SELECT at, recipient, thread, device, what, id FROM (
    (SELECT end_at AS at, recipient, thread, ''::text COLLATE "C" AS device,
            'flush'::text COLLATE "C" AS what, 0::bigint AS id
     FROM {schema}.windows
     WHERE end_at <= %(until)s AND {schema}.partition_of(recipient, %(parts)s) = ANY(%(part_set)s::integer[])
     ORDER BY end_at, recipient, thread LIMIT %(limit)s)
    UNION ALL
    (SELECT due_at, recipient, thread, device, 'release'::text COLLATE "C", id
     FROM {schema}.delayed_releases
     WHERE due_at <= %(until)s AND {schema}.partition_of(recipient, %(parts)s) = ANY(%(part_set)s::integer[])
     ORDER BY due_at, recipient, thread, device, id LIMIT %(limit)s)
    UNION ALL
    (SELECT due_at, recipient, ''::text COLLATE "C", ''::text COLLATE "C",
            'badge_sync'::text COLLATE "C", 0::bigint
     FROM {schema}.badge_syncs
     WHERE pending AND due_at <= %(until)s
       AND {schema}.partition_of(recipient, %(parts)s) = ANY(%(part_set)s::integer[])
     ORDER BY due_at, recipient LIMIT %(limit)s)
) d
ORDER BY at, recipient, thread, device, what, id
LIMIT %(limit)s

-- name: next_due_part
-- When the first pending work of some recipient partitions comes due (NULL when none).
SELECT min(at) FROM (
    SELECT min(end_at) AS at FROM {schema}.windows
    WHERE {schema}.partition_of(recipient, %(parts)s) = ANY(%(part_set)s::integer[])
    UNION ALL SELECT min(due_at) FROM {schema}.delayed_releases
    WHERE {schema}.partition_of(recipient, %(parts)s) = ANY(%(part_set)s::integer[])
    UNION ALL SELECT min(due_at) FROM {schema}.badge_syncs
    WHERE pending AND {schema}.partition_of(recipient, %(parts)s) = ANY(%(part_set)s::integer[])
) d

-- name: claim_window_skip
-- Claim a window that has ended, unless another worker holds it.
SELECT end_at FROM {schema}.windows
WHERE recipient = %(recipient)s AND thread = %(thread)s AND end_at <= %(until)s
FOR UPDATE SKIP LOCKED

-- name: claim_window_wait
-- Claim a window that has ended, waiting for a worker that holds it (the consumer keeps the replay order).
SELECT end_at FROM {schema}.windows
WHERE recipient = %(recipient)s AND thread = %(thread)s AND end_at <= %(until)s
FOR UPDATE

-- name: claim_release_skip
-- Take a due release, unless another worker holds it.
DELETE FROM {schema}.delayed_releases
WHERE id = (SELECT id FROM {schema}.delayed_releases
            WHERE id = %(id)s AND due_at <= %(until)s FOR UPDATE SKIP LOCKED)
RETURNING due_at, recipient, thread, device, kind, message, message_seq, target, seq

-- name: claim_release_wait
-- Take a due release, waiting for a worker that holds it.
DELETE FROM {schema}.delayed_releases
WHERE id = (SELECT id FROM {schema}.delayed_releases
            WHERE id = %(id)s AND due_at <= %(until)s FOR UPDATE)
RETURNING due_at, recipient, thread, device, kind, message, message_seq, target, seq

-- name: claim_badge_sync_skip
-- Claim a due badge sync, unless another worker holds it.
SELECT due_at, after_seq FROM {schema}.badge_syncs
WHERE recipient = %(recipient)s AND pending AND due_at <= %(until)s
FOR UPDATE SKIP LOCKED

-- name: claim_badge_sync_wait
-- Claim a due badge sync, waiting for a worker that holds it.
SELECT due_at, after_seq FROM {schema}.badge_syncs
WHERE recipient = %(recipient)s AND pending AND due_at <= %(until)s
FOR UPDATE

-- name: get_badge_sync
-- A person's last badge sync and whether one is pending.
SELECT last_sync_at, pending FROM {schema}.badge_syncs WHERE recipient = %(recipient)s

-- name: set_badge_sync
-- Record a person's last sync and whether one is pending; a new pending sync remembers the log position before its read.
INSERT INTO {schema}.badge_syncs AS b (recipient, last_sync_at, pending, due_at, after_seq)
VALUES (%(recipient)s, %(last_sync_at)s, %(pending)s, NULL,
        CASE WHEN %(pending)s THEN %(after_seq)s::bigint END)
ON CONFLICT (recipient) DO UPDATE
SET last_sync_at = EXCLUDED.last_sync_at,
    pending = EXCLUDED.pending,
    due_at = CASE WHEN EXCLUDED.pending THEN b.due_at END,
    after_seq = CASE WHEN NOT EXCLUDED.pending THEN NULL
                     WHEN b.pending THEN b.after_seq
                     ELSE EXCLUDED.after_seq END

-- name: schedule_badge_sync
-- Set when a person's pending badge sync is due.
UPDATE {schema}.badge_syncs SET due_at = %(due_at)s
WHERE recipient = %(recipient)s AND pending

-- name: lock_consumer
-- Serialize the creation and the re-partitioning of one consumer's cursors until commit.
SELECT pg_advisory_xact_lock(hashtextextended('notify.consumer:' || %(schema)s || ':' || %(name)s, 0))

-- name: consumer_partitions
-- A consumer's cursors: partition, partition count and position, by partition.
SELECT part, parts, position FROM {schema}.consumer_cursors WHERE name = %(name)s ORDER BY part

-- name: lock_consumer_partitions
-- Take all of a consumer's cursors, waiting for rounds in progress (before they are replaced).
SELECT part, parts, position FROM {schema}.consumer_cursors WHERE name = %(name)s
ORDER BY part FOR UPDATE

-- name: delete_cursors
-- Remove a consumer's cursors (they are replaced by cursors for another partition count).
DELETE FROM {schema}.consumer_cursors WHERE name = %(name)s

-- name: insert_cursors
-- Create the cursors of partitions 0 to parts - 1 of a consumer, all at one position.
INSERT INTO {schema}.consumer_cursors (name, part, parts, position)
SELECT %(name)s, p, %(parts)s, %(position)s FROM generate_series(0, %(parts)s - 1) AS p
ON CONFLICT (name, part) DO NOTHING

-- name: lock_cursor
-- Take the cursor of one partition of a consumer for one round: the most lagging one that no other worker is running a round of.
SELECT part, position FROM {schema}.consumer_cursors
WHERE name = %(name)s AND parts = %(parts)s
ORDER BY position, part
LIMIT 1
FOR UPDATE SKIP LOCKED

-- name: lock_cursors_at
-- Take the other cursors of a consumer at one position that no other worker is running a round of (a round handles them together), at most limit, lowest first.
SELECT part FROM {schema}.consumer_cursors
WHERE name = %(name)s AND parts = %(parts)s AND position = %(position)s AND part <> %(part)s
ORDER BY part
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED

-- name: move_cursors
-- Move the cursors of the partitions of one round at its end.
UPDATE {schema}.consumer_cursors SET position = %(position)s, updated_at = now()
WHERE name = %(name)s AND part = ANY(%(part_set)s::integer[])

-- name: join_consumer
-- Count this session among a consumer's workers until it ends (a shared advisory lock).
SELECT pg_advisory_lock_shared(hashtextextended('notify.workers:' || %(schema)s || ':' || %(name)s, 0))

-- name: consumer_workers
-- How many sessions count among a consumer's workers (join_consumer) and were seen lately.
-- A session idle for longer than the recent interval (a worker paused, or busy in a long mail
-- round) does not count until its next statement; one whose state this role cannot read counts.
SELECT count(*) FROM pg_locks l
LEFT JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted
  AND l.objsubid = 1
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND ((l.classid::bigint << 32) | l.objid::bigint)
      = hashtextextended('notify.workers:' || %(schema)s || ':' || %(name)s, 0)
  AND (a.state IS DISTINCT FROM 'idle' OR a.state_change > now() - %(recent)s::interval)

-- name: read_events_page
-- Events after a position in seq order, with the raw columns.
SELECT seq, type, occurred_at, actor, audience, scope, payload
FROM {schema}.event_log WHERE seq > %(after)s ORDER BY seq LIMIT %(limit)s

-- name: first_unconsumed_at
-- The time of the first event some partition of a consumer has not handled yet (NULL when all are at the head).
SELECT e.occurred_at FROM {schema}.event_log e
WHERE e.seq > coalesce(
    (SELECT min(position) FROM {schema}.consumer_cursors WHERE name = %(name)s), 0)
ORDER BY e.seq LIMIT 1

-- name: status_consumers
-- Every consumer partition's position and how far it lags behind the head of the log.
SELECT c.name, c.part, c.parts, c.position, h.head - c.position, c.updated_at
FROM {schema}.consumer_cursors c
CROSS JOIN (SELECT coalesce(max(seq), 0) AS head FROM {schema}.event_log) h
ORDER BY c.name, c.part

-- name: status_backlog
-- Due work at the database's clock: open and ended windows, releases, pending badge syncs, push sends (all, due, leased, oldest), and that clock.
SELECT
    (SELECT count(*) FROM {schema}.windows),
    (SELECT count(*) FROM {schema}.windows WHERE end_at <= now()),
    (SELECT count(*) FROM {schema}.delayed_releases),
    (SELECT count(*) FROM {schema}.delayed_releases WHERE due_at <= now()),
    (SELECT count(*) FROM {schema}.badge_syncs WHERE pending),
    (SELECT count(*) FROM {schema}.badge_syncs WHERE pending AND due_at <= now()),
    (SELECT count(*) FROM {schema}.push_sends),
    (SELECT count(*) FROM {schema}.push_sends WHERE next_at <= now()),
    (SELECT count(*) FROM {schema}.push_sends WHERE lease_until > now()),
    (SELECT min(next_at) FROM {schema}.push_sends),
    now()

-- name: collect_windows
-- Count collected message hints of many windows at once (the collects of one event).
UPDATE {schema}.windows w SET collected = w.collected + c.n
FROM unnest(%(recipients)s::text[], %(threads)s::text[], %(counts)s::integer[])
    AS c(recipient, thread, n)
WHERE w.recipient = c.recipient AND w.thread = c.thread

-- name: open_windows
-- Open many windows at once (the sends of one event), replacing any window of each pair.
INSERT INTO {schema}.windows AS w (recipient, thread, end_at, collected)
SELECT o.recipient, o.thread, o.end_at, 0
FROM unnest(%(recipients)s::text[], %(threads)s::text[], %(ends)s::timestamptz[])
    AS o(recipient, thread, end_at)
ON CONFLICT (recipient, thread) DO UPDATE SET end_at = EXCLUDED.end_at, collected = 0

-- name: worker_session
-- Bound the worker's session (milliseconds): the longest idle time inside a transaction (then the server ends the session and its locks go) and the longest statement.
SELECT set_config('idle_in_transaction_session_timeout', %(idle)s, false),
       set_config('statement_timeout', %(statement)s, false)

-- name: read_write
-- Let this transaction write although the database's default is read-only (a failure record only).
SET TRANSACTION READ WRITE

-- name: record_consumer_failure
-- Remember a consumer's last failed round and why: no person data, the error code, SQLSTATE and PostgreSQL's message.
INSERT INTO {schema}.consumer_failures AS f
    (name, failed_at, round, code, sqlstate, message, failures)
VALUES (%(name)s, now(), %(round)s, %(code)s, %(sqlstate)s, %(message)s, 1)
ON CONFLICT (name) DO UPDATE
SET failed_at = EXCLUDED.failed_at, round = EXCLUDED.round, code = EXCLUDED.code,
    sqlstate = EXCLUDED.sqlstate, message = EXCLUDED.message, failures = f.failures + 1

-- name: status_failures
-- Every consumer's last failed round.
SELECT name, failed_at, round, code, sqlstate, message, failures
FROM {schema}.consumer_failures ORDER BY name

-- name: claim_windows_skip
-- Claim many windows that have ended (a page of due work), but those another worker holds.
SELECT w.recipient, w.thread, w.end_at, w.collected
FROM unnest(%(recipients)s::text[], %(threads)s::text[]) AS k(recipient, thread)
JOIN {schema}.windows w ON w.recipient = k.recipient AND w.thread = k.thread
WHERE w.end_at <= %(until)s
FOR UPDATE OF w SKIP LOCKED

-- name: claim_windows_wait
-- Claim many windows that have ended, waiting for the workers that hold some (the consumer keeps the replay order).
SELECT w.recipient, w.thread, w.end_at, w.collected
FROM unnest(%(recipients)s::text[], %(threads)s::text[]) AS k(recipient, thread)
JOIN {schema}.windows w ON w.recipient = k.recipient AND w.thread = k.thread
WHERE w.end_at <= %(until)s
FOR UPDATE OF w

-- name: claim_releases_skip
-- Claim many due releases, but those another worker holds (deleted once handed out).
SELECT id, due_at, recipient, thread, device, kind, message, message_seq, target, seq
FROM {schema}.delayed_releases
WHERE id = ANY(%(ids)s::bigint[]) AND due_at <= %(until)s
FOR UPDATE SKIP LOCKED

-- name: claim_releases_wait
-- Claim many due releases, waiting for the workers that hold some.
SELECT id, due_at, recipient, thread, device, kind, message, message_seq, target, seq
FROM {schema}.delayed_releases
WHERE id = ANY(%(ids)s::bigint[]) AND due_at <= %(until)s
FOR UPDATE

-- name: claim_badge_syncs_skip
-- Claim many due badge syncs, but those another worker holds.
SELECT recipient, due_at, after_seq FROM {schema}.badge_syncs
WHERE recipient = ANY(%(recipients)s::text[]) AND pending AND due_at <= %(until)s
FOR UPDATE SKIP LOCKED

-- name: claim_badge_syncs_wait
-- Claim many due badge syncs, waiting for the workers that hold some.
SELECT recipient, due_at, after_seq FROM {schema}.badge_syncs
WHERE recipient = ANY(%(recipients)s::text[]) AND pending AND due_at <= %(until)s
FOR UPDATE

-- name: delete_releases
-- Remove the releases handed out (claimed and run).
DELETE FROM {schema}.delayed_releases WHERE id = ANY(%(ids)s::bigint[])

-- name: close_windows
-- Forget many windows at once (their flushes).
DELETE FROM {schema}.windows w
USING unnest(%(recipients)s::text[], %(threads)s::text[]) AS k(recipient, thread)
WHERE w.recipient = k.recipient AND w.thread = k.thread

-- name: windows_of_pairs
-- The windows of many (person, thread) pairs.
SELECT w.recipient, w.thread, w.end_at, w.collected
FROM unnest(%(recipients)s::text[], %(threads)s::text[]) AS k(recipient, thread)
JOIN {schema}.windows w ON w.recipient = k.recipient AND w.thread = k.thread
