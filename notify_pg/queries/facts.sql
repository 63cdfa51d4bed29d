-- The batched reads of the pipeline (L3, Q5): one query for many people.

-- name: level_rows
-- The own rows of many people for one thread, its channel and its space; a NULL space (direct message) matches nothing.
SELECT user_id, target_kind, level, muted_until
FROM {schema}.notification_preferences
WHERE user_id = ANY(%(user_ids)s::text[])
  AND ((target_kind = 'thread' AND target_id = %(thread)s)
    OR (target_kind = 'channel' AND target_id = %(channel)s)
    OR (target_kind = 'space' AND target_id = %(space)s))

-- name: enabled_rules
-- The enabled quiet-hour rules of many people, by person and ascending id (disabled rules never cover).
SELECT user_id, id, weekdays, start_local, end_local, time_zone
FROM {schema}.quiet_hours
WHERE user_id = ANY(%(user_ids)s::text[]) AND enabled
ORDER BY user_id, id

-- name: enabled_rules_and_records
-- The enabled quiet-hour rules of many people by person and ascending id, then each person's preference records in recording order (M1: a JSON array of the record's columns, and its seq) and the person's push deliveries per local day (M4: a JSON array of day and count, no seq): the pipeline reads all three in one query.
SELECT user_id, id, weekdays, start_local, end_local, time_zone, NULL::json AS record,
       NULL::bigint AS seq
FROM {schema}.quiet_hours
WHERE user_id = ANY(%(user_ids)s::text[]) AND enabled
UNION ALL
SELECT principal_ref, NULL, NULL, NULL, NULL, NULL,
       json_build_array(preference_id, principal_ref, declared_channels, set_at, status,
                        channel_preferences, frequency_limit, quiet_hours, "format", metadata,
                        suspended_at, deleted_at),
       seq
FROM {schema}.preference_records
WHERE principal_ref = ANY(%(user_ids)s::text[])
UNION ALL
SELECT recipient, NULL, NULL, NULL, NULL, NULL, json_build_array(day, count), NULL
FROM {schema}.push_day_counts
WHERE recipient = ANY(%(user_ids)s::text[])
ORDER BY 1, 2, 8

-- name: user_level_rows
-- The own rows of one person for many threads, their channels and their spaces (the badge of B1).
SELECT target_kind, target_id, level, muted_until
FROM {schema}.notification_preferences
WHERE user_id = %(user_id)s
  AND ((target_kind = 'thread' AND target_id = ANY(%(threads)s::text[]))
    OR (target_kind = 'channel' AND target_id = ANY(%(channels)s::text[]))
    OR (target_kind = 'space' AND target_id = ANY(%(spaces)s::text[])))

-- name: people_level_rows
-- The own rows of many people on any of some threads, channels and spaces, in one query (the badges of a push round: every person on most threads); the ids as four text arrays built as literals.
SELECT user_id, target_kind, target_id, level, muted_until
FROM {schema}.notification_preferences
WHERE user_id = ANY(%(user_ids)s::text[])
  AND ((target_kind = 'thread' AND target_id = ANY(%(threads)s::text[]))
    OR (target_kind = 'channel' AND target_id = ANY(%(channels)s::text[]))
    OR (target_kind = 'space' AND target_id = ANY(%(spaces)s::text[])))

-- name: pairs_level_rows
-- The own rows of many people, each for some targets (their threads, channels and spaces), in one query; the targets as three text arrays built as literals (`text_array`: cheaper to pass than JSON or psycopg's lists).
SELECT p.user_id, p.target_kind, p.target_id, p.level, p.muted_until
FROM unnest(%(user_ids)s::text[], %(kinds)s::text[], %(ids)s::text[])
  AS w(user_id, target_kind, target_id)
JOIN {schema}.notification_preferences p
  ON p.user_id = w.user_id AND p.target_kind = w.target_kind AND p.target_id = w.target_id
