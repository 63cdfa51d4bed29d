-- Audited changes of a person's preferences and of the instance's settings (H2, H2a).

-- name: admin_lock_retention
-- Serialize every change that H2a weighs (retention, and a schedule becoming a digest or not)
-- for the rest of the transaction: two at once can never both pass the check.
SELECT pg_advisory_xact_lock(hashtextextended('notify.retention', 0))

-- name: admin_lock_person
-- Serialize one person's preference changes with their one-click unsubscribes and
-- forget_person (the same key as unsubscribe_lock_person).
SELECT pg_advisory_xact_lock(hashtextextended('notify.unsubscribe:' || %(user_id)s, 0))

-- name: admin_audit_insert
-- One audited change: the person's preferences (user_id) or the instance's settings (NULL).
INSERT INTO {schema}.inbox_audit (at, actor, kind, user_id, before, after)
VALUES (%(at)s, %(actor)s, %(kind)s, %(user_id)s, %(before)s, %(after)s)

-- name: admin_audit_list
-- The newest audited changes (optionally of one person, or of the instance only), newest first.
SELECT id, at, actor, kind, user_id, before, after FROM {schema}.inbox_audit
WHERE (%(user_id)s::text IS NULL OR user_id = %(user_id)s)
  AND (NOT %(instance)s OR user_id IS NULL)
  AND (%(since)s::timestamptz IS NULL OR at >= %(since)s)
ORDER BY id DESC
LIMIT %(limit)s
