-- The mail drain (docs/rules.md E4-E5): claims under a lease, marks.

-- name: mail_claim
-- Claim every due row of up to a batch of people, earliest due first: pending rows due and
-- sending rows whose lease lapsed become sending, with the lease as email_after (it
-- identifies the claim: a mark applies only while it holds). A person is taken by one worker
-- at a time (an advisory lock until the claim commits), so all the due rows of a person go
-- into one mail. The last column is the due time of the row before the claim (a release puts it
-- back).
WITH due_people AS MATERIALIZED (
    -- Materialized, so that the lock below (volatile) is never pushed under the sort: only
    -- the people taken, in this order, are locked.
    SELECT user_id
    FROM {schema}.inbox_entries
    WHERE email_state IN ('pending', 'sending') AND email_after <= %(now)s
    GROUP BY user_id
    ORDER BY min(email_after), user_id
), people AS (
    SELECT user_id FROM due_people
    WHERE pg_try_advisory_xact_lock(hashtext(%(lock)s), hashtext(user_id))
    LIMIT %(people)s
), due AS (
    SELECT e.id, e.email_after AS due_at FROM {schema}.inbox_entries e
    WHERE e.user_id IN (SELECT user_id FROM people)
      AND e.email_state IN ('pending', 'sending') AND e.email_after <= %(now)s
    FOR UPDATE OF e SKIP LOCKED
)
UPDATE {schema}.inbox_entries e
SET email_state = 'sending', email_after = %(lease_until)s, email_attempts = e.email_attempts + 1
FROM due
WHERE e.id = due.id
RETURNING e.id, e.user_id, e.site_id, e.category, e.variant, e.variants, e.group_key,
          e.page_id, e.comment_id, e.actor_id, e.title, e.path, e.locale, e.excerpt, e.count,
          e.last_event, e.in_app, e.email_attempts, e.read_at, e.created_at, e.updated_at,
          due.due_at, e.draft, e.members

-- name: mail_sent
-- The mail went: sent with emailed_at and the record that governed it (M6); an email-only entry closes with it (N12).
UPDATE {schema}.inbox_entries
SET email_state = 'sent', email_after = NULL, emailed_at = %(at)s, email_record = %(record)s,
    read_at = CASE WHEN read_at IS NULL AND NOT in_app THEN %(at)s ELSE read_at END
WHERE id = ANY(%(ids)s::bigint[]) AND email_state = 'sending'
  AND email_after = %(lease_until)s

-- name: mail_skipped
-- Due rows the drain does not send (site off, person inactive, no access, section off, email
-- now off: E4; a record suspended or turning email off: M2, M3), with the reason, the time
-- for `notify db status` and the record that skipped them (M6).
UPDATE {schema}.inbox_entries
SET email_state = 'skipped', email_after = NULL,
    email_skip = %(reason)s, email_skipped_at = %(at)s, email_record = %(record)s,
    read_at = CASE WHEN read_at IS NULL AND NOT in_app THEN %(at)s ELSE read_at END
WHERE id = ANY(%(ids)s::bigint[]) AND email_state = 'sending'
  AND email_after = %(lease_until)s

-- name: mail_failed
-- The send failed: back to pending at retry_at, or failed once max_attempts claims were made
-- (emailed_at: when it was given up); an entry read meanwhile is skipped (E1). An entry that
-- leaves pending and is email-only closes (N12).
UPDATE {schema}.inbox_entries AS e
SET email_state = n.state,
    email_after = CASE WHEN n.state = 'pending' THEN %(retry_at)s::timestamptz END,
    emailed_at = CASE WHEN n.state = 'failed' THEN %(at)s::timestamptz ELSE e.emailed_at END,
    read_at = CASE WHEN n.state <> 'pending' AND e.read_at IS NULL AND NOT e.in_app
                   THEN %(at)s::timestamptz ELSE e.read_at END
FROM (
    SELECT id,
           CASE WHEN email_attempts >= %(max_attempts)s THEN 'failed'
                WHEN read_at IS NOT NULL THEN 'skipped'
                ELSE 'pending' END AS state
    FROM {schema}.inbox_entries
    WHERE id = ANY(%(ids)s::bigint[])
) AS n
WHERE e.id = n.id AND e.email_state = 'sending' AND e.email_after = %(lease_until)s
RETURNING e.id, e.email_state

-- name: mail_release
-- Claimed rows the round did not try (the SMTP server was unreachable): back to pending at
-- their due time before the claim, the attempt of the claim undone (no send was attempted, E5).
UPDATE {schema}.inbox_entries AS e
SET email_state = 'pending', email_after = r.due_at, email_attempts = e.email_attempts - 1
FROM unnest(%(ids)s::bigint[], %(dues)s::timestamptz[]) AS r (id, due_at)
WHERE e.id = r.id AND e.email_state = 'sending' AND e.email_after = %(lease_until)s

-- name: mail_next_due
-- When the next email falls due: the due time of a pending row or the end of a lease.
SELECT min(email_after) FROM {schema}.inbox_entries
WHERE email_state IN ('pending', 'sending')

-- name: status_inbox
-- The inbox, counted at the clock of the database: the outbox backlog and its oldest event,
-- emails pending (all, due), being sent, sent and failed over the last 24 hours, that clock.
SELECT
    (SELECT count(*) FROM {schema}.inbox_outbox WHERE processed_at IS NULL),
    (SELECT min(created_at) FROM {schema}.inbox_outbox WHERE processed_at IS NULL),
    (SELECT count(*) FROM {schema}.inbox_entries WHERE email_state = 'pending'),
    (SELECT count(*) FROM {schema}.inbox_entries
     WHERE email_state = 'pending' AND email_after <= now()),
    (SELECT count(*) FROM {schema}.inbox_entries WHERE email_state = 'sending'),
    (SELECT min(email_after) FROM {schema}.inbox_entries
     WHERE email_state IN ('pending', 'sending')),
    (SELECT count(*) FROM {schema}.inbox_entries
     WHERE emailed_at > now() - make_interval(hours => 24) AND email_state = 'sent'),
    (SELECT count(*) FROM {schema}.inbox_entries
     WHERE emailed_at > now() - make_interval(hours => 24) AND email_state = 'failed'),
    now()

-- name: status_mail_skips
-- The drain's skips of the last 24 hours by reason (E4), at the clock of the database.
SELECT email_skip, count(*) FROM {schema}.inbox_entries
WHERE email_skipped_at > now() - make_interval(hours => 24) AND email_skip IS NOT NULL
GROUP BY email_skip
ORDER BY email_skip

-- name: mail_pending_of
-- The pending emails of one person with their sites, locked for a reschedule (E3).
SELECT id, category, email_after, site_id FROM {schema}.inbox_entries
WHERE user_id = %(user_id)s AND email_state = 'pending'
ORDER BY id
FOR UPDATE

-- name: mail_reschedule
-- New due times of pending emails after a schedule change (E3).
UPDATE {schema}.inbox_entries AS e SET email_after = r.email_after
FROM unnest(%(ids)s::bigint[], %(dues)s::timestamptz[]) AS r (id, email_after)
WHERE e.id = r.id AND e.email_state = 'pending'

-- name: mail_prefs_and_records_of
-- The drain's facts of many people in one query: their stored inbox choices (record NULL); the latest preference record each set by now (channel 'record', M1); the mails sent to each since a day before now that named a record (channel 'mail', one row per drain instant and site, M4).
SELECT user_id, category, channel, enabled, NULL::json
FROM {schema}.inbox_preferences
WHERE user_id = ANY(%(ids)s::text[])
UNION ALL
(SELECT DISTINCT ON (principal_ref) principal_ref, NULL, 'record', NULL,
        json_build_array(preference_id, principal_ref, declared_channels, set_at, status,
                         channel_preferences, frequency_limit, quiet_hours, "format", metadata,
                         suspended_at, deleted_at)
 FROM {schema}.preference_records
 WHERE principal_ref = ANY(%(ids)s::text[]) AND set_at <= %(now)s
 ORDER BY principal_ref, seq DESC)
UNION ALL
SELECT user_id, site_id, 'mail', NULL, json_build_array(emailed_at)
FROM (SELECT DISTINCT user_id, site_id, emailed_at
      FROM {schema}.inbox_entries
      WHERE user_id = ANY(%(ids)s::text[]) AND email_state = 'sent'
        AND email_record IS NOT NULL AND emailed_at <= %(now)s
        AND emailed_at > %(now)s::timestamptz - make_interval(days => 2)) AS m

-- name: mail_wait
-- Claimed rows a record's cap holds back (M4): back to pending at the person's next local midnight, the claim's attempt undone (no send was attempted); the hold is kept as the skip reason frequency_cap with its time and record (`notify db status`, the audit), though the mail still goes.
UPDATE {schema}.inbox_entries AS e
SET email_state = 'pending', email_after = %(until)s, email_attempts = e.email_attempts - 1,
    email_skip = 'frequency_cap', email_skipped_at = %(at)s, email_record = %(record)s
WHERE e.id = ANY(%(ids)s::bigint[]) AND e.email_state = 'sending'
  AND e.email_after = %(lease_until)s
