-- The deliveries preference records governed (docs/rules.md#records, M6): push sends that
-- ended (push_deliveries), pending push sends, mails (inbox_entries), and hints a record held
-- back (push_holds); read by `notify records audit` and `notify db status`.

-- name: push_delivery
-- The push sends of one hint (its notification id): those that ended, then those still pending.
SELECT notification_id, registration_id, recipient, kind, thread, decided_at, decided_record,
       ended_at, record, outcome, reason
FROM {schema}.push_deliveries WHERE notification_id = %(id)s
UNION ALL
SELECT notification_id, registration_id, recipient, kind, thread, due_at, record,
       NULL, NULL, 'pending', NULL
FROM {schema}.push_sends WHERE notification_id = %(id)s
ORDER BY 2

-- name: mail_delivery
-- One entry's mail (the entry id): its person, the fan-out instant, the drain's instant, state and record.
SELECT id, user_id, site_id, category, updated_at,
       coalesce(emailed_at, email_skipped_at), email_state, email_skip, email_record
FROM {schema}.inbox_entries
WHERE id = %(id)s AND email_state <> 'none'

-- name: push_deliveries_of
-- A person's push sends decided in [start, end): those that ended and those still pending, oldest first.
SELECT notification_id, registration_id, recipient, kind, thread, decided_at, decided_record,
       ended_at, record, outcome, reason
FROM {schema}.push_deliveries
WHERE recipient = %(user_id)s AND decided_at >= %(start)s AND decided_at < %(end)s
UNION ALL
SELECT notification_id, registration_id, recipient, kind, thread, due_at, record,
       NULL, NULL, 'pending', NULL
FROM {schema}.push_sends
WHERE recipient = %(user_id)s AND due_at >= %(start)s AND due_at < %(end)s
ORDER BY 6, 1, 2

-- name: mails_of
-- A person's mails sent, failed or skipped in [start, end), by the drain's instant and entry.
SELECT id, user_id, site_id, category, updated_at,
       coalesce(emailed_at, email_skipped_at), email_state, email_skip, email_record
FROM {schema}.inbox_entries
WHERE user_id = %(user_id)s
  AND ((emailed_at >= %(start)s AND emailed_at < %(end)s)
    OR (email_skipped_at >= %(start)s AND email_skipped_at < %(end)s))
ORDER BY 6, 1

-- name: push_holds_of
-- The hints of a person a record left with no route in [start, end), oldest first.
SELECT at, kind, thread, reason, record
FROM {schema}.push_holds
WHERE recipient = %(user_id)s AND at >= %(start)s AND at < %(end)s
ORDER BY at, id

-- name: pushes_decided_between
-- How many hints with a push send of a person were decided in [start, end) (M4, the audit's cap).
SELECT count(DISTINCT notification_id) FROM (
    SELECT notification_id FROM {schema}.push_deliveries
    WHERE recipient = %(user_id)s AND decided_at >= %(start)s AND decided_at < %(end)s
    UNION ALL
    SELECT notification_id FROM {schema}.push_sends
    WHERE recipient = %(user_id)s AND due_at >= %(start)s AND due_at < %(end)s
) AS p

-- name: mails_sent_between
-- How many mails a person was sent in [start, end) (M4, the audit's cap): one per drain instant and site.
SELECT count(*) FROM (
    SELECT DISTINCT emailed_at, site_id FROM {schema}.inbox_entries
    WHERE user_id = %(user_id)s AND email_state = 'sent'
      AND emailed_at >= %(start)s AND emailed_at < %(end)s
) AS m

-- name: status_push_holds
-- The hints records held back over the last 24 hours by reason (M2-M4), at the clock of the database.
SELECT reason, count(*) FROM {schema}.push_holds
WHERE at > now() - make_interval(hours => 24)
GROUP BY reason
ORDER BY reason

-- name: purge_push_deliveries
-- Delete up to a batch of ended push sends, holds and day counts older than the retention limit (H3).
WITH deliveries AS (
    DELETE FROM {schema}.push_deliveries
    WHERE id IN (SELECT id FROM {schema}.push_deliveries WHERE ended_at < %(before)s
                 LIMIT %(batch)s)
    RETURNING 1
), holds AS (
    DELETE FROM {schema}.push_holds
    WHERE id IN (SELECT id FROM {schema}.push_holds WHERE at < %(before)s LIMIT %(batch)s)
    RETURNING 1
), days AS (
    DELETE FROM {schema}.push_day_counts
    WHERE (recipient, day) IN (SELECT recipient, day FROM {schema}.push_day_counts
                               WHERE day < %(before)s::date LIMIT %(batch)s)
    RETURNING 1
)
SELECT (SELECT count(*) FROM deliveries), (SELECT count(*) FROM holds),
       (SELECT count(*) FROM days)

-- name: add_push_day_counts
-- Add the push deliveries a transaction counted per person and local day (M4), one statement for all.
INSERT INTO {schema}.push_day_counts AS d (recipient, day, count)
SELECT recipient, day, count
FROM unnest(%(recipients)s::text[], %(days)s::date[], %(counts)s::integer[])
  AS n(recipient, day, count)
ON CONFLICT (recipient, day) DO UPDATE SET count = d.count + excluded.count

-- name: insert_push_holds
-- The hints records left with no route (M2-M4), one statement for all of a transaction's.
INSERT INTO {schema}.push_holds (recipient, at, kind, thread, reason, record)
SELECT * FROM unnest(%(recipient)s::text[], %(at)s::timestamptz[], %(kind)s::smallint[],
                     %(thread)s::text[], %(reason)s::text[], %(record)s::text[])
