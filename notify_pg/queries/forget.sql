-- forget_person: erase what the library stores about one person.

-- name: forget_preferences
-- Remove every preference row of the person.
DELETE FROM {schema}.notification_preferences WHERE user_id = %(user_id)s

-- name: forget_quiet_hours
-- Remove every quiet-hour rule of the person.
DELETE FROM {schema}.quiet_hours WHERE user_id = %(user_id)s

-- name: forget_events
-- Remove the personal events whose audience is the person (their payloads are the person's settings).
DELETE FROM {schema}.event_log WHERE audience = %(user_id)s
