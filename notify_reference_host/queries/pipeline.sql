-- The reference host's answers to the pipeline ports of notify_pg.ports (reads only).

-- name: users_info
-- Kind, active flag and zone of many people.
SELECT id, kind, active, time_zone FROM {schema}.users WHERE id = ANY(%(ids)s::text[])

-- name: threads_info
-- Channel, main flag and positions of many threads.
SELECT id, channel_id, main, last_message_seq, unread_floor_seq, newest_message
FROM {schema}.threads WHERE id = ANY(%(ids)s::text[])

-- name: channels_info
-- Kind, space, default level, archived flag and DM participants of many channels.
SELECT c.id, c.kind, c.space_id, c.default_notification_level, c.archived_at IS NOT NULL,
       ARRAY(SELECT p.user_id FROM {schema}.dm_participants p
             WHERE p.channel_id = c.id ORDER BY p.user_id)
FROM {schema}.channels c WHERE c.id = ANY(%(ids)s::text[])

-- name: channel_readers
-- Who can read a channel (a superset): DM participants, else the channel's and space's grantees and the owners.
WITH ch AS (SELECT id, kind, space_id FROM {schema}.channels WHERE id = %(channel)s)
SELECT p.user_id FROM ch JOIN {schema}.dm_participants p ON p.channel_id = ch.id
WHERE ch.kind = 'dm'
UNION
SELECT g.user_id FROM ch JOIN {schema}.grants g
    ON (g.target_kind = 'channel' AND g.target_id = ch.id)
    OR (g.target_kind = 'space' AND g.target_id = ch.space_id)
WHERE ch.kind <> 'dm'
UNION
SELECT u.id FROM ch JOIN {schema}.users u ON u.owner
WHERE ch.kind <> 'dm'
ORDER BY 1

-- name: thread_readers
-- The active people among ids who may read a thread now (channel_access: nobody in an archived channel or space).
SELECT a.user_id
FROM {schema}.threads t
JOIN {schema}.channel_access a ON a.channel_id = t.channel_id
WHERE t.id = %(thread)s AND a.user_id = ANY(%(ids)s::text[]) AND a.active

-- name: badge_threads
-- The threads with messages in the channels a person can read (channel_access: archived ones excluded).
SELECT t.id
FROM {schema}.channel_access a
JOIN {schema}.threads t ON t.channel_id = a.channel_id AND t.last_message_seq > 0
WHERE a.user_id = %(user_id)s
ORDER BY t.id

-- name: active_devices
-- The active devices of many people, by person and id.
SELECT user_id, id, platform FROM {schema}.devices
WHERE user_id = ANY(%(ids)s::text[]) AND state = 'active'
ORDER BY user_id, id

-- name: connections
-- The live connections of the active devices of many people, by person and device.
SELECT d.user_id, p.device_id, p.focus, p.idle
FROM {schema}.presence p JOIN {schema}.devices d ON d.id = p.device_id
WHERE d.user_id = ANY(%(ids)s::text[]) AND d.state = 'active'
ORDER BY d.user_id, p.device_id

-- name: read_positions
-- A person's read positions in some threads.
SELECT thread_id, last_read_seq FROM {schema}.read_states
WHERE user_id = %(user_id)s AND thread_id = ANY(%(threads)s::text[])

-- name: unread_mentions
-- Per thread, the mentions of a person after a floor position.
SELECT f.thread, count(m.thread_seq)
FROM unnest(%(threads)s::text[], %(floors)s::bigint[]) AS f(thread, floor)
JOIN {schema}.mentions m
  ON m.user_id = %(user_id)s AND m.thread_id = f.thread AND m.thread_seq > f.floor
GROUP BY f.thread

-- name: badge_threads_of
-- The threads with messages in the channels each of many people can read (channel_access: archived ones excluded).
WITH readable AS MATERIALIZED (
    -- Each person's rights are tested once per channel, not once per thread of it.
    SELECT a.user_id, a.channel_id FROM {schema}.channel_access a
    WHERE a.user_id = ANY(%(user_ids)s::text[])
)
SELECT r.user_id, t.id
FROM readable r
JOIN {schema}.threads t ON t.channel_id = r.channel_id AND t.last_message_seq > 0
ORDER BY r.user_id, t.id

-- name: read_positions_of
-- The read positions of many (person, thread) pairs (two text arrays, built as literals).
SELECT r.user_id, r.thread_id, r.last_read_seq
FROM unnest(%(user_ids)s::text[], %(threads)s::text[]) AS w(user_id, thread_id)
JOIN {schema}.read_states r ON r.user_id = w.user_id AND r.thread_id = w.thread_id

-- name: unread_mentions_of
-- Per (person, thread), the mentions of the person after a floor position (three arrays).
SELECT f.user_id, f.thread, count(m.thread_seq)
FROM unnest(%(user_ids)s::text[], %(threads)s::text[], %(floors)s::bigint[])
  AS f(user_id, thread, floor)
JOIN {schema}.mentions m
  ON m.user_id = f.user_id AND m.thread_id = f.thread AND m.thread_seq > f.floor
GROUP BY f.user_id, f.thread

-- name: thread_readers_of
-- The (person, thread) pairs among many where the person is active and may read the thread now.
SELECT w.user_id, w.thread
FROM unnest(%(user_ids)s::text[], %(threads)s::text[]) AS w(user_id, thread)
JOIN {schema}.threads t ON t.id = w.thread
JOIN {schema}.channel_access a ON a.channel_id = t.channel_id AND a.user_id = w.user_id
WHERE a.active
