-- Queries on quiet_hours. Every query names the person (user_id): a foreign rule id finds
-- nothing, exactly like an unknown one.

-- name: lock_person_quiet_hours
-- Serialize the quiet-hour writes of one person until commit (each event carries the complete list).
SELECT pg_advisory_xact_lock(
    hashtextextended('notify.quiet_hours:' || %(schema)s || ':' || %(user_id)s, 0))

-- name: list_rules
-- All rules of one person, disabled ones included, in ascending id.
SELECT id, weekdays, start_local, end_local, time_zone, enabled, version
FROM {schema}.quiet_hours
WHERE user_id = %(user_id)s
ORDER BY id

-- name: insert_rule
-- Store a new rule with version 1.
INSERT INTO {schema}.quiet_hours
    (id, user_id, weekdays, start_local, end_local, time_zone, enabled, version)
VALUES (%(id)s, %(user_id)s, %(weekdays)s, %(start_local)s, %(end_local)s, %(time_zone)s,
        %(enabled)s, 1)

-- name: update_rule
-- Replace the whole rule of one person and raise its version.
UPDATE {schema}.quiet_hours
SET weekdays = %(weekdays)s,
    start_local = %(start_local)s,
    end_local = %(end_local)s,
    time_zone = %(time_zone)s,
    enabled = %(enabled)s,
    version = version + 1
WHERE id = %(id)s AND user_id = %(user_id)s
RETURNING version

-- name: delete_rule
-- Remove one rule of one person.
DELETE FROM {schema}.quiet_hours
WHERE id = %(id)s AND user_id = %(user_id)s
RETURNING id

-- name: get_idempotent_create
-- The rule a create of this person stored under this idempotency key.
SELECT rule_id, weekdays, start_local, end_local, time_zone, enabled
FROM {schema}.quiet_hours_idempotency
WHERE user_id = %(user_id)s AND idempotency_key = %(idempotency_key)s

-- name: insert_idempotent_create
-- Remember the rule a create stored under its idempotency key, in the create's transaction.
INSERT INTO {schema}.quiet_hours_idempotency
    (user_id, idempotency_key, rule_id, weekdays, start_local, end_local, time_zone, enabled)
VALUES (%(user_id)s, %(idempotency_key)s, %(id)s, %(weekdays)s, %(start_local)s, %(end_local)s,
        %(time_zone)s, %(enabled)s)
