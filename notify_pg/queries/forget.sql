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

-- name: forget_push_deliveries
-- Remove the audit of the person's ended push sends (M6).
DELETE FROM {schema}.push_deliveries WHERE recipient = %(user_id)s

-- name: forget_push_holds
-- Remove the person's hints a record held back (M6).
DELETE FROM {schema}.push_holds WHERE recipient = %(user_id)s

-- name: forget_push_day_counts
-- Remove the person's push deliveries per day (M4).
DELETE FROM {schema}.push_day_counts WHERE recipient = %(user_id)s

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

-- name: forget_secret
-- The unsubscribe secret the mark below is keyed with, stored where missing (the same row
-- notify_pg.mail.secret generates): a person forgotten before any mail went is marked too.
INSERT INTO {schema}.unsubscribe_secret (id, secret) VALUES (true, %(secret)s)
ON CONFLICT (id) DO NOTHING

-- name: forget_remember
-- Keep a keyed digest of the forgotten person, so that an old unsubscribe token of theirs is
-- invalid and they get no entry and no mail until the host creates the id again (U3); a person
-- created since is forgotten once more (generation + 1). user_key is the id's UTF-8 bytes.
INSERT INTO {schema}.forgotten_people AS f (digest)
SELECT sha256(secret || %(user_key)s) FROM {schema}.unsubscribe_secret WHERE id
ON CONFLICT (digest) DO UPDATE SET
    generation = f.generation + CASE WHEN f.forgotten THEN 0 ELSE 1 END,
    forgotten = true,
    at = now()

-- name: forgotten_check
-- Whether the person is forgotten now (forget_remember, not created again since).
SELECT EXISTS (
    SELECT 1 FROM {schema}.forgotten_people f, {schema}.unsubscribe_secret s
    WHERE s.id AND f.digest = sha256(s.secret || %(user_key)s) AND f.forgotten)

-- name: person_recreated
-- The host created a forgotten id again (U3): the new person's generation, from now on the
-- only one whose tokens are valid; no row for an id never forgotten.
UPDATE {schema}.forgotten_people f SET forgotten = false
FROM {schema}.unsubscribe_secret s
WHERE s.id AND f.digest = sha256(s.secret || %(user_key)s)
RETURNING f.generation

-- name: person_generation
-- One person's mark: how often the id was forgotten and whether it is forgotten now.
SELECT f.generation, f.forgotten
FROM {schema}.forgotten_people f, {schema}.unsubscribe_secret s
WHERE s.id AND f.digest = sha256(s.secret || %(user_key)s)

-- name: people_generations
-- The marks of the people among ids ever forgotten (a fan-out's batch, a drain's people):
-- their generation and whether they are forgotten now. keys: each id's UTF-8 bytes, in order.
SELECT u.id, f.generation, f.forgotten
FROM unnest(%(ids)s::text[], %(keys)s::bytea[]) AS u(id, key)
JOIN {schema}.unsubscribe_secret s ON s.id
JOIN {schema}.forgotten_people f ON f.digest = sha256(s.secret || u.key)
