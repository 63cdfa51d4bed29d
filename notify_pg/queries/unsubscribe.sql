-- The unsubscribe secret (U1) and the audit of one-click unsubscribes (U3).

-- name: unsubscribe_secret_get
-- The instance's unsubscribe secret, if one was generated.
SELECT secret FROM {schema}.unsubscribe_secret WHERE id

-- name: unsubscribe_secret_create
-- Store a new secret unless one exists; returns it only when this insert stored it.
INSERT INTO {schema}.unsubscribe_secret (id, secret) VALUES (true, %(secret)s)
ON CONFLICT (id) DO NOTHING
RETURNING secret

-- name: unsubscribe_audit_insert
-- Record one one-click unsubscribe with the token's person as the actor.
INSERT INTO {schema}.unsubscribe_audit (user_id, scope, token_categories, categories, changed, at)
VALUES (%(user_id)s, %(scope)s, %(token_categories)s, %(categories)s, %(changed)s, %(at)s)

-- name: unsubscribe_audit_of
-- The audited unsubscribes of one person, oldest first.
SELECT scope, token_categories, categories, changed, at FROM {schema}.unsubscribe_audit
WHERE user_id = %(user_id)s ORDER BY at, id

-- name: unsubscribe_lock_person
-- Serialize one person's unsubscribes for the rest of the transaction (so `changed` is exact).
SELECT pg_advisory_xact_lock(hashtextextended('notify.unsubscribe:' || %(user_id)s, 0))
