-- name: metrics_registrations
-- Active push registrations per provider (the gauge notify.push.registrations.active).
SELECT provider, count(*) FROM {schema}.push_registrations
WHERE disabled_at IS NULL GROUP BY provider ORDER BY provider

-- name: metrics_consumer_lag
-- Per consumer partition: events after its position, and the age in seconds of the first of them (0 at the head).
SELECT c.name, c.part, h.head - c.position,
       coalesce(extract(epoch FROM now() - (
           SELECT e.occurred_at FROM {schema}.event_log e
           WHERE e.seq > c.position ORDER BY e.seq LIMIT 1)), 0)::float8
FROM {schema}.consumer_cursors c
CROSS JOIN (SELECT coalesce(max(seq), 0) AS head FROM {schema}.event_log) h
ORDER BY c.name, c.part

-- name: metrics_backlog
-- Due work waiting now by kind, the outbox backlog and its oldest row's age, and the mails pending now and sent and failed over the last 24 hours.
SELECT
    (SELECT count(*) FROM {schema}.windows WHERE end_at <= now()),
    (SELECT count(*) FROM {schema}.delayed_releases WHERE due_at <= now()),
    (SELECT count(*) FROM {schema}.badge_syncs WHERE pending AND due_at <= now()),
    (SELECT count(*) FROM {schema}.push_sends WHERE next_at <= now()),
    (SELECT count(*) FROM {schema}.inbox_outbox WHERE processed_at IS NULL),
    coalesce((SELECT extract(epoch FROM now() - min(created_at))
              FROM {schema}.inbox_outbox WHERE processed_at IS NULL), 0)::float8,
    (SELECT count(*) FROM {schema}.inbox_entries WHERE email_state IN ('pending', 'sending')),
    (SELECT count(*) FROM {schema}.inbox_entries
     WHERE email_state = 'sent' AND emailed_at > now() - %(mail_window)s::interval),
    (SELECT count(*) FROM {schema}.inbox_entries
     WHERE email_state = 'failed' AND emailed_at > now() - %(mail_window)s::interval)
