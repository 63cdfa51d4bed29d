-- Loading notify's own rows from a logged world (notify_reference_host.world): the state a
-- logged notification_pref.updated or quiet_hours.updated left, written without a new event.

-- name: load_preference
-- Set a person's row for a target as a logged event carries it (version included).
INSERT INTO {schema}.notification_preferences AS p
    (user_id, target_kind, target_id, level, muted_until, version)
VALUES (%(user_id)s, %(target_kind)s, %(target_id)s, %(level)s, %(muted_until)s, %(version)s)
ON CONFLICT (user_id, target_kind, target_id) DO UPDATE
SET level = EXCLUDED.level, muted_until = EXCLUDED.muted_until, version = EXCLUDED.version,
    updated_at = now()

-- name: unload_preference
-- Remove a person's row for a target (a logged deletion).
DELETE FROM {schema}.notification_preferences
WHERE user_id = %(user_id)s AND target_kind = %(target_kind)s AND target_id = %(target_id)s

-- name: unload_quiet_hours
-- Remove a person's rules before loading the complete list of a logged event.
DELETE FROM {schema}.quiet_hours WHERE user_id = %(user_id)s

-- name: load_quiet_rule
-- Store one rule of a logged complete list.
INSERT INTO {schema}.quiet_hours
    (id, user_id, weekdays, start_local, end_local, time_zone, enabled, version)
VALUES (%(id)s, %(user_id)s, %(weekdays)s, %(start_local)s, %(end_local)s, %(time_zone)s,
        %(enabled)s, %(version)s)
ON CONFLICT (id) DO UPDATE
SET user_id = EXCLUDED.user_id, weekdays = EXCLUDED.weekdays,
    start_local = EXCLUDED.start_local, end_local = EXCLUDED.end_local,
    time_zone = EXCLUDED.time_zone, enabled = EXCLUDED.enabled, version = EXCLUDED.version
