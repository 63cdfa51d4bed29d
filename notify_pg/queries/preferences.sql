-- Queries on notification_preferences. Every query names the person (user_id) or the explicit
-- targets of an archive: no query reads another person's rows by accident.

-- name: upsert_preference
-- Insert a person's row for a target or change it when level or muted_until differ; returns no row when they are equal (L7).
INSERT INTO {schema}.notification_preferences AS p
    (user_id, target_kind, target_id, level, muted_until)
VALUES (%(user_id)s, %(target_kind)s, %(target_id)s, %(level)s, %(muted_until)s)
ON CONFLICT (user_id, target_kind, target_id) DO UPDATE
SET level = EXCLUDED.level,
    muted_until = EXCLUDED.muted_until,
    version = p.version + 1,
    updated_at = now()
WHERE (p.level, p.muted_until) IS DISTINCT FROM (EXCLUDED.level, EXCLUDED.muted_until)
RETURNING p.level, p.muted_until, p.version

-- name: get_preference
-- The row of one person for one target.
SELECT level, muted_until, version
FROM {schema}.notification_preferences
WHERE user_id = %(user_id)s AND target_kind = %(target_kind)s AND target_id = %(target_id)s

-- name: delete_preference
-- Remove the row of one person for one target and return its last values (for the event of the removal).
DELETE FROM {schema}.notification_preferences
WHERE user_id = %(user_id)s AND target_kind = %(target_kind)s AND target_id = %(target_id)s
RETURNING level, muted_until, version

-- name: list_preferences
-- All rows of one person, ordered by target kind, then target id.
SELECT target_kind, target_id, level, muted_until, version
FROM {schema}.notification_preferences
WHERE user_id = %(user_id)s
ORDER BY target_kind, target_id

-- name: delete_preferences_of_targets
-- Remove every row on the given spaces, channels and threads (the archive cleanup).
DELETE FROM {schema}.notification_preferences
WHERE (target_kind = 'space' AND target_id = ANY(%(spaces)s::text[]))
   OR (target_kind = 'channel' AND target_id = ANY(%(channels)s::text[]))
   OR (target_kind = 'thread' AND target_id = ANY(%(threads)s::text[]))
RETURNING user_id, target_kind, target_id, level, muted_until, version

-- name: insert_preference_if_absent
-- Insert a person's row for a target unless one exists (automatic following, S5); returns no row when it existed.
INSERT INTO {schema}.notification_preferences AS p
    (user_id, target_kind, target_id, level, muted_until)
VALUES (%(user_id)s, %(target_kind)s, %(target_id)s, %(level)s, %(muted_until)s)
ON CONFLICT (user_id, target_kind, target_id) DO NOTHING
RETURNING p.level, p.muted_until, p.version
