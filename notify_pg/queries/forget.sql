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

-- name: forget_lock_person
-- Serialize with the person's one-click unsubscribes and preference changes (the same lock as
-- unsubscribe_lock_person): one that waits sees the person forgotten once it goes on.
SELECT pg_advisory_xact_lock(hashtextextended('notify.unsubscribe:' || %(user_id)s, 0))

-- name: forget_inbox_audit
-- Remove the audited changes of the person's preferences (their rows as the subject).
DELETE FROM {schema}.inbox_audit WHERE user_id = %(user_id)s

-- name: forget_remember
-- Keep a keyed digest of the forgotten person, so that an old unsubscribe token of theirs is
-- invalid (U3); nothing while no secret exists (no token was ever signed). user_key is the
-- id's UTF-8 bytes.
INSERT INTO {schema}.forgotten_people (digest)
SELECT sha256(secret || %(user_key)s) FROM {schema}.unsubscribe_secret WHERE id
ON CONFLICT (digest) DO NOTHING

-- name: forgotten_check
-- Whether the person was forgotten (forget_remember).
SELECT EXISTS (
    SELECT 1 FROM {schema}.forgotten_people f, {schema}.unsubscribe_secret s
    WHERE s.id AND f.digest = sha256(s.secret || %(user_key)s))
