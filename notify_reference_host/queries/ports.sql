-- The reference host's answers to notify_pg.ports (reads; the lock variants take FOR SHARE).

-- name: thread_path
-- The whole path of a thread in one read (no locks): channel, space, kind, default, archived.
SELECT c.id, c.space_id, c.kind, c.default_notification_level,
       c.archived_at IS NOT NULL OR COALESCE(s.archived_at IS NOT NULL, false)
FROM {schema}.threads t
JOIN {schema}.channels c ON c.id = t.channel_id
LEFT JOIN {schema}.spaces s ON s.id = c.space_id
WHERE t.id = %(id)s

-- name: lock_thread
-- Lock a thread row FOR SHARE and return its channel (first step of the path lock).
SELECT channel_id FROM {schema}.threads WHERE id = %(id)s FOR SHARE

-- name: get_thread
-- The channel of a thread, without lock.
SELECT channel_id FROM {schema}.threads WHERE id = %(id)s

-- name: lock_channel
-- Lock a channel row FOR SHARE and return space, kind, default and archived (second step).
SELECT space_id, kind, default_notification_level, archived_at IS NOT NULL
FROM {schema}.channels WHERE id = %(id)s FOR SHARE

-- name: get_channel
-- Space, kind, default and archived of a channel, without lock.
SELECT space_id, kind, default_notification_level, archived_at IS NOT NULL
FROM {schema}.channels WHERE id = %(id)s

-- name: lock_space
-- Lock a space row FOR SHARE and return whether it is archived (last step).
SELECT archived_at IS NOT NULL FROM {schema}.spaces WHERE id = %(id)s FOR SHARE

-- name: get_space
-- Whether a space is archived, without lock.
SELECT archived_at IS NOT NULL FROM {schema}.spaces WHERE id = %(id)s

-- name: channel_ids_of_space
-- Every channel of a space, archived ones included, ascending.
SELECT id FROM {schema}.channels WHERE space_id = %(space_id)s ORDER BY id

-- name: thread_ids_of_channels
-- Every thread of the channels, ascending.
SELECT id FROM {schema}.threads WHERE channel_id = ANY(%(channel_ids)s::text[]) ORDER BY id

-- name: readable_targets
-- The targets among (kinds, ids) the person may read: DM channels by participation, others by owner, space grant or channel grant.
WITH wanted AS (
    SELECT w.kind, w.id
    FROM unnest(%(kinds)s::text[], %(ids)s::text[]) AS w(kind, id)
), resolved AS (
    SELECT w.kind, w.id,
           CASE w.kind WHEN 'space' THEN s.id WHEN 'channel' THEN c.space_id ELSE tc.space_id END
               AS space_id,
           CASE w.kind WHEN 'channel' THEN c.id WHEN 'thread' THEN tc.id END AS channel_id,
           CASE w.kind WHEN 'channel' THEN c.kind WHEN 'thread' THEN tc.kind END AS channel_kind,
           CASE w.kind WHEN 'space' THEN s.id WHEN 'channel' THEN c.id ELSE t.id END IS NOT NULL
               AS found
    FROM wanted w
    LEFT JOIN {schema}.spaces s ON w.kind = 'space' AND s.id = w.id
    LEFT JOIN {schema}.channels c ON w.kind = 'channel' AND c.id = w.id
    LEFT JOIN {schema}.threads t ON w.kind = 'thread' AND t.id = w.id
    LEFT JOIN {schema}.channels tc ON tc.id = t.channel_id
)
SELECT r.kind, r.id
FROM resolved r
WHERE r.found AND CASE
    WHEN r.channel_kind = 'dm' THEN EXISTS (
        SELECT 1 FROM {schema}.dm_participants p
        WHERE p.channel_id = r.channel_id AND p.user_id = %(user_id)s)
    ELSE EXISTS (
        SELECT 1 FROM {schema}.users u WHERE u.id = %(user_id)s AND u.owner)
      OR EXISTS (
        SELECT 1 FROM {schema}.grants g
        WHERE g.user_id = %(user_id)s
          AND ((g.target_kind = 'space' AND g.target_id = r.space_id)
            OR (g.target_kind = 'channel' AND g.target_id = r.channel_id)))
    END

-- name: time_zones
-- The stored zones of many people.
SELECT id, time_zone FROM {schema}.users
WHERE id = ANY(%(user_ids)s::text[]) AND time_zone IS NOT NULL

-- name: settings
-- Stored values of some keys for many people.
SELECT user_id, key, value FROM {schema}.user_settings
WHERE user_id = ANY(%(user_ids)s::text[]) AND key = ANY(%(keys)s::text[])
