-- push_registrations and push_sends (docs/schema.md). Tokens are read only by the
-- send step (registration_for_send); every other read leaves them out.

-- name: register_push
-- Store a new push registration (the host's write; notify only reads and updates delivery columns).
INSERT INTO {schema}.push_registrations
    (id, user_id, device_id, auth_session_id, provider, token, environment, app_id, created_at)
VALUES (%(id)s, %(user_id)s, %(device_id)s, %(auth_session_id)s, %(provider)s, %(token)s,
        %(environment)s, %(app_id)s, coalesce(%(created_at)s::timestamptz, now()))

-- name: remove_push
-- Remove one registration (unregister).
DELETE FROM {schema}.push_registrations WHERE id = %(id)s

-- name: active_registrations
-- The active registrations of many people, without token, by person and id.
SELECT id, user_id, device_id, provider, environment, app_id, created_at, last_success_at,
       failure_count
FROM {schema}.push_registrations
WHERE user_id = ANY(%(user_ids)s::text[]) AND disabled_at IS NULL
ORDER BY user_id, id

-- name: registration_for_send
-- One registration with its token and delivery columns (send step 1).
SELECT id, user_id, device_id, auth_session_id, provider, environment, app_id, token,
       created_at, last_success_at, failure_count, disabled_at, disabled_reason
FROM {schema}.push_registrations WHERE id = %(id)s

-- name: lock_registration
-- One registration's delivery columns, locked until commit (send step 3).
SELECT created_at, last_success_at, failure_count, disabled_at, disabled_reason
FROM {schema}.push_registrations WHERE id = %(id)s FOR UPDATE

-- name: record_delivery
-- Write the delivery columns after a result (R1).
UPDATE {schema}.push_registrations
SET last_success_at = %(last_success_at)s, failure_count = %(failure_count)s,
    disabled_at = %(disabled_at)s, disabled_reason = %(disabled_reason)s
WHERE id = %(id)s

-- name: record_deliveries
-- Write the delivery columns of many registrations after their results (R1), one row per id.
UPDATE {schema}.push_registrations r
SET last_success_at = u.last_success_at, failure_count = u.failure_count,
    disabled_at = u.disabled_at, disabled_reason = u.disabled_reason
FROM unnest(%(ids)s::text[], %(last_success_ats)s::timestamptz[], %(failure_counts)s::integer[],
            %(disabled_ats)s::timestamptz[], %(disabled_reasons)s::text[])
  AS u(id, last_success_at, failure_count, disabled_at, disabled_reason)
WHERE r.id = u.id

-- name: insert_push_sends
-- Many pushes of hints to registrations in one statement, inserted in the order given (their ids ascend with it); a second insert of a pair changes nothing. Each row's cleared threads come as one array literal; record: the record in effect at the decision (M6).
INSERT INTO {schema}.push_sends
    (notification_id, registration_id, recipient, kind, thread, message, target, quiet, count,
     cleared, due_at, next_at, record)
SELECT p.notification_id, p.registration_id, p.recipient, p.kind, p.thread, p.message, p.target,
       p.quiet, p.count, p.cleared::text[], p.due_at, p.due_at, p.record
FROM unnest(%(notification_ids)s::text[], %(registration_ids)s::text[], %(recipients)s::text[],
            %(kinds)s::smallint[], %(threads)s::text[], %(messages)s::text[], %(targets)s::text[],
            %(quiets)s::boolean[], %(counts)s::integer[], %(cleared)s::text[],
            %(due_ats)s::timestamptz[], %(records)s::text[]) WITH ORDINALITY
  AS p(notification_id, registration_id, recipient, kind, thread, message, target, quiet, count,
       cleared, due_at, record, n)
ORDER BY p.n
ON CONFLICT (notification_id, registration_id) DO NOTHING

-- name: claim_push_sends_for_send
-- Claim due sends that no worker holds (a lease keeps them while the provider call runs outside any transaction), with each send's registration (the columns of registrations_for_send; NULL when it is gone) and its recipient's latest record set by now (M1), in claim order: the push round's step 1 in one statement.
WITH claimed AS (
    UPDATE {schema}.push_sends s SET lease_until = %(lease_until)s
    FROM (
        SELECT id FROM {schema}.push_sends
        WHERE next_at <= %(now)s AND (lease_until IS NULL OR lease_until <= %(now)s)
        ORDER BY next_at, id
        LIMIT %(limit)s
        FOR UPDATE SKIP LOCKED
    ) c
    WHERE s.id = c.id
    RETURNING s.id, s.notification_id, s.registration_id, s.recipient, s.kind, s.thread,
              s.message, s.target, s.quiet, s.count, s.cleared, s.due_at, s.attempt, s.next_at
)
SELECT c.id, c.notification_id, c.registration_id, c.recipient, c.kind, c.thread, c.message,
       c.target, c.quiet, c.count, c.cleared, c.due_at, c.attempt,
       r.id, r.user_id, r.device_id, r.auth_session_id, r.provider, r.environment, r.app_id,
       r.token, r.created_at, r.last_success_at, r.failure_count, r.disabled_at,
       r.disabled_reason,
       -- The recipient's latest record set by now (M1: the send-time check reads it in effect).
       (SELECT json_build_array(p.preference_id, p.principal_ref, p.declared_channels, p.set_at,
                                p.status, p.channel_preferences, p.frequency_limit,
                                p.quiet_hours, p."format", p.metadata, p.suspended_at,
                                p.deleted_at)
        FROM {schema}.preference_records p
        WHERE p.principal_ref = c.recipient AND p.set_at <= %(now)s
        ORDER BY p.seq DESC LIMIT 1)
FROM claimed c
LEFT JOIN {schema}.push_registrations r ON r.id = c.registration_id
ORDER BY c.next_at, c.id

-- name: retry_push_send
-- A send is retried later (attempt + 1), released from its lease.
UPDATE {schema}.push_sends
SET attempt = attempt + 1, next_at = %(next_at)s, lease_until = NULL
WHERE id = %(id)s

-- name: registrations_for_send
-- Many registrations with token and delivery columns (send step 1 of a whole batch).
SELECT id, user_id, device_id, auth_session_id, provider, environment, app_id, token,
       created_at, last_success_at, failure_count, disabled_at, disabled_reason
FROM {schema}.push_registrations WHERE id = ANY(%(ids)s::text[])

-- name: lock_registrations
-- Many registrations' delivery columns, locked until commit in id order (send step 3 of a batch).
SELECT id, created_at, last_success_at, failure_count, disabled_at, disabled_reason
FROM {schema}.push_registrations WHERE id = ANY(%(ids)s::text[])
ORDER BY id COLLATE "C" FOR UPDATE

-- name: end_push_sends
-- Many sends ended (sent, failed, dropped, or skipped with a reason), each kept in push_deliveries with the record in effect at its decision and at its end (M6), in one statement.
WITH ended AS (
    DELETE FROM {schema}.push_sends AS s
    USING unnest(%(ids)s::bigint[], %(outcomes)s::text[], %(reasons)s::text[],
                 %(records)s::text[]) AS e(id, outcome, reason, record)
    WHERE s.id = e.id
    RETURNING s.id, s.notification_id, s.registration_id, s.recipient, s.kind, s.thread,
              s.due_at, s.record AS decided_record, e.outcome, e.reason, e.record
)
INSERT INTO {schema}.push_deliveries
    (id, notification_id, registration_id, recipient, kind, thread, decided_at, decided_record,
     ended_at, record, outcome, reason)
SELECT id, notification_id, registration_id, recipient, kind, thread, due_at, decided_record,
       %(at)s, record, outcome, reason
FROM ended
ON CONFLICT (id) DO NOTHING

-- name: retry_push_sends
-- Many sends are retried later (attempt + 1), released from their lease.
UPDATE {schema}.push_sends s
SET attempt = s.attempt + 1, next_at = r.next_at, lease_until = NULL
FROM unnest(%(ids)s::bigint[], %(next_ats)s::timestamptz[]) AS r(id, next_at)
WHERE s.id = r.id
