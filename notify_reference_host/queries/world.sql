-- Writes of the reference host that follow the world events of formats.md section 2
-- (notify_reference_host.world). Rows that would name an unknown person, channel or device
-- are left out, as the in-memory store ignores them.

-- name: merge_user
-- Create or update a person; absent members keep their value (defaults: human, active, not owner).
INSERT INTO {schema}.users AS u (id, kind, time_zone, active, owner)
VALUES (%(id)s, coalesce(%(kind)s::text, 'human'), %(time_zone)s::text,
        coalesce(%(active)s::boolean, true), coalesce(%(owner)s::boolean, false))
ON CONFLICT (id) DO UPDATE
SET kind = coalesce(%(kind)s::text, u.kind),
    time_zone = CASE WHEN %(clear_time_zone)s THEN NULL
                     ELSE coalesce(%(time_zone)s::text, u.time_zone) END,
    active = coalesce(%(active)s::boolean, u.active),
    owner = coalesce(%(owner)s::boolean, u.owner)

-- name: ensure_space
-- Create a space unless it exists.
INSERT INTO {schema}.spaces (id) VALUES (%(id)s) ON CONFLICT (id) DO NOTHING

-- name: mark_space_archived
-- Archive a space (creating its row when unknown); an archived space stays archived.
INSERT INTO {schema}.spaces AS s (id, archived_at) VALUES (%(id)s, now())
ON CONFLICT (id) DO UPDATE SET archived_at = coalesce(s.archived_at, now())

-- name: put_channel
-- Create or replace a channel's kind, space and default level.
INSERT INTO {schema}.channels AS c (id, space_id, kind, default_notification_level)
VALUES (%(id)s, %(space_id)s, %(kind)s, %(default_level)s)
ON CONFLICT (id) DO UPDATE
SET space_id = EXCLUDED.space_id, kind = EXCLUDED.kind,
    default_notification_level = EXCLUDED.default_notification_level

-- name: put_dm_participant
-- Make a known person a participant of a direct-message channel.
INSERT INTO {schema}.dm_participants (channel_id, user_id)
SELECT %(channel_id)s, u.id FROM {schema}.users u WHERE u.id = %(user_id)s
ON CONFLICT DO NOTHING

-- name: mark_channel_archived
-- Archive a channel; an archived channel stays archived.
UPDATE {schema}.channels SET archived_at = coalesce(archived_at, now()) WHERE id = %(id)s

-- name: put_thread
-- Create a thread of a known channel.
INSERT INTO {schema}.threads (id, channel_id, main)
SELECT %(id)s, c.id, %(main)s FROM {schema}.channels c WHERE c.id = %(channel_id)s
ON CONFLICT (id) DO UPDATE SET channel_id = EXCLUDED.channel_id, main = EXCLUDED.main

-- name: put_grant
-- Give a known person the read right on a space or channel.
INSERT INTO {schema}.grants (user_id, target_kind, target_id)
SELECT u.id, %(target_kind)s, %(target_id)s FROM {schema}.users u WHERE u.id = %(user_id)s
ON CONFLICT DO NOTHING

-- name: put_device
-- Create or replace a device of a known person.
INSERT INTO {schema}.devices (id, user_id, platform, state)
SELECT %(id)s, u.id, %(platform)s, %(state)s FROM {schema}.users u WHERE u.id = %(user_id)s
ON CONFLICT (id) DO UPDATE
SET user_id = EXCLUDED.user_id, platform = EXCLUDED.platform, state = EXCLUDED.state

-- name: set_device_state
-- Approve or revoke a device.
UPDATE {schema}.devices SET state = %(state)s WHERE id = %(id)s

-- name: device_owner
-- The person a device belongs to.
SELECT user_id FROM {schema}.devices WHERE id = %(id)s

-- name: put_presence
-- A known device connected, or changed its focus or idle state.
INSERT INTO {schema}.presence (device_id, focus, idle)
SELECT d.id, %(focus)s::text[], %(idle)s FROM {schema}.devices d WHERE d.id = %(device_id)s
ON CONFLICT (device_id) DO UPDATE SET focus = EXCLUDED.focus, idle = EXCLUDED.idle

-- name: delete_presence
-- A device disconnected.
DELETE FROM {schema}.presence WHERE device_id = %(device_id)s

-- name: put_read_state
-- Set a known person's read position in a thread.
INSERT INTO {schema}.read_states (user_id, thread_id, last_read_seq)
SELECT u.id, %(thread_id)s, %(seq)s FROM {schema}.users u WHERE u.id = %(user_id)s
ON CONFLICT (user_id, thread_id) DO UPDATE SET last_read_seq = EXCLUDED.last_read_seq

-- name: advance_read_state
-- B3: a known person's own message moves their read position in its thread up to it (never back).
INSERT INTO {schema}.read_states (user_id, thread_id, last_read_seq)
SELECT u.id, %(thread_id)s, %(seq)s FROM {schema}.users u WHERE u.id = %(user_id)s
ON CONFLICT (user_id, thread_id) DO UPDATE
SET last_read_seq = GREATEST({schema}.read_states.last_read_seq, EXCLUDED.last_read_seq)

-- name: add_mention
-- Record a mention of a known person at a thread position.
INSERT INTO {schema}.mentions (user_id, thread_id, thread_seq)
SELECT u.id, %(thread_id)s, %(seq)s FROM {schema}.users u WHERE u.id = %(user_id)s
ON CONFLICT DO NOTHING

-- name: advance_thread
-- A new message at thread position seq: the thread's newest message, unless it is older.
UPDATE {schema}.threads SET last_message_seq = %(seq)s, newest_message = %(message)s
WHERE id = %(id)s AND last_message_seq <= %(seq)s
