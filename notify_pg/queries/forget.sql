-- forget_person: erase what the library stores about one person.

-- name: forget_preferences
-- Remove every preference row of the person.
DELETE FROM {schema}.notification_preferences WHERE user_id = %(user_id)s

-- name: forget_quiet_hours
-- Remove every quiet-hour rule of the person.
DELETE FROM {schema}.quiet_hours WHERE user_id = %(user_id)s

-- name: forget_quiet_hours_idempotency
-- Remove the idempotency keys of the person's quiet-hour creates (they hold the rules as created).
DELETE FROM {schema}.quiet_hours_idempotency WHERE user_id = %(user_id)s

-- name: forget_events
-- Remove the personal events whose audience is the person (their payloads are the person's settings).
DELETE FROM {schema}.event_log WHERE audience = %(user_id)s

-- name: forget_push_registrations
-- Remove every push registration of the person.
DELETE FROM {schema}.push_registrations WHERE user_id = %(user_id)s

-- name: forget_windows
-- Remove the person's bundling windows.
DELETE FROM {schema}.windows WHERE recipient = %(user_id)s

-- name: forget_releases
-- Remove the person's delayed pushes.
DELETE FROM {schema}.delayed_releases WHERE recipient = %(user_id)s

-- name: forget_badge_syncs
-- Remove the person's badge sync state.
DELETE FROM {schema}.badge_syncs WHERE recipient = %(user_id)s

-- name: forget_push_sends
-- Remove the person's pending push sends.
DELETE FROM {schema}.push_sends WHERE recipient = %(user_id)s

-- name: forget_inbox_entries
-- Remove every inbox entry of the person.
DELETE FROM {schema}.inbox_entries WHERE user_id = %(user_id)s

-- name: forget_inbox_preferences
-- Remove every inbox choice of the person.
DELETE FROM {schema}.inbox_preferences WHERE user_id = %(user_id)s

-- name: forget_unsubscribe_audit
-- Remove the audited one-click unsubscribes of the person.
DELETE FROM {schema}.unsubscribe_audit WHERE user_id = %(user_id)s
