-- Writes of the reference host, for tests and the demo.

-- name: add_user
-- Create a person.
INSERT INTO {schema}.users (id, kind, time_zone, active, owner)
VALUES (%(id)s, %(kind)s, %(time_zone)s, %(active)s, %(owner)s)

-- name: set_time_zone
-- Set or clear a person's zone.
UPDATE {schema}.users SET time_zone = %(time_zone)s WHERE id = %(id)s

-- name: delete_user
-- Remove a person (grants, participations and settings go with them).
DELETE FROM {schema}.users WHERE id = %(id)s

-- name: add_space
-- Create a space.
INSERT INTO {schema}.spaces (id) VALUES (%(id)s)

-- name: add_channel
-- Create a channel (no space for a direct-message channel).
INSERT INTO {schema}.channels (id, space_id, kind, default_notification_level)
VALUES (%(id)s, %(space_id)s, %(kind)s, %(default_level)s)

-- name: set_channel_default
-- Set or clear a channel's default level.
UPDATE {schema}.channels SET default_notification_level = %(default_level)s WHERE id = %(id)s

-- name: add_thread
-- Create a thread.
INSERT INTO {schema}.threads (id, channel_id, main) VALUES (%(id)s, %(channel_id)s, %(main)s)

-- name: grant
-- Give a person the read right on a space or channel.
INSERT INTO {schema}.grants (user_id, target_kind, target_id)
VALUES (%(user_id)s, %(target_kind)s, %(target_id)s) ON CONFLICT DO NOTHING

-- name: revoke
-- Take a read right away.
DELETE FROM {schema}.grants
WHERE user_id = %(user_id)s AND target_kind = %(target_kind)s AND target_id = %(target_id)s

-- name: add_dm_participant
-- Make a person a participant of a direct-message channel.
INSERT INTO {schema}.dm_participants (channel_id, user_id) VALUES (%(channel_id)s, %(user_id)s)

-- name: set_setting
-- Store a personal setting.
INSERT INTO {schema}.user_settings (user_id, key, value) VALUES (%(user_id)s, %(key)s, %(value)s)
ON CONFLICT (user_id, key) DO UPDATE SET value = EXCLUDED.value

-- name: delete_setting
-- Remove a personal setting.
DELETE FROM {schema}.user_settings WHERE user_id = %(user_id)s AND key = %(key)s

-- name: archive_channel
-- Archive a channel; locks its row FOR UPDATE until commit.
UPDATE {schema}.channels SET archived_at = now() WHERE id = %(id)s AND archived_at IS NULL RETURNING id

-- name: archive_space
-- Archive a space; locks its row FOR UPDATE until commit.
UPDATE {schema}.spaces SET archived_at = now() WHERE id = %(id)s AND archived_at IS NULL RETURNING id

-- name: add_device
-- Register a device of a person, active or pending (a device id is registered once).
INSERT INTO {schema}.devices (id, user_id, platform, state)
VALUES (%(id)s, %(user_id)s, %(platform)s, %(state)s)
