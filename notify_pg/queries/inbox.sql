-- The inbox (docs/inbox.md): the outbox, the fan-out's writes, reads and the purge.

-- name: inbox_emit
-- One emitted event: one row, the only write of the request that caused it (H4).
SELECT {schema}.inbox_emit(%(type)s, %(origin)s, %(actor)s, %(payload)s, %(occurred_at)s);

-- name: inbox_emit_capturing
-- A deletion: the row and its watchers at this instant, in the same statement (N9).
SELECT {schema}.inbox_emit(
    %(type)s, %(origin)s, %(actor)s, %(payload)s, %(occurred_at)s,
    ARRAY(SELECT DISTINCT w FROM ({recipients}) AS captured (w) ORDER BY w));

-- name: inbox_claim
-- Claim up to limit unprocessed events, oldest first: free ones, this worker's own (a worker
-- that survived a database failure goes on at once), those whose claiming session is gone
-- (its server process no longer in pg_stat_activity: a killed worker, a restart) and those
-- claimed longer ago than the timeout. The claim records this session's process.
UPDATE {schema}.inbox_outbox AS o
SET claimed_at = now(), claimed_by = %(worker)s, claimed_pid = pg_backend_pid()
WHERE o.id IN (
    SELECT id FROM {schema}.inbox_outbox
    WHERE processed_at IS NULL
      AND (claimed_at IS NULL
           OR claimed_by = %(worker)s
           OR claimed_at < now() - %(timeout)s::interval
           OR claimed_pid NOT IN (SELECT a.pid FROM pg_stat_activity AS a WHERE a.pid IS NOT NULL))
    ORDER BY id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
RETURNING o.id, o.type, o.origin, o.actor_id, o.payload, o.recipients, o.occurred_at, o.cursor;

-- name: inbox_release
-- Give claims back (a stop between events): free for any worker at once; the cursor stays.
UPDATE {schema}.inbox_outbox SET claimed_at = NULL, claimed_by = NULL, claimed_pid = NULL
WHERE id = ANY(%(ids)s::bigint[]) AND claimed_by = %(worker)s AND processed_at IS NULL;

-- name: inbox_hold_claim
-- Lock a claimed event for one batch; no row: the claim was taken back by another worker.
SELECT cursor FROM {schema}.inbox_outbox
WHERE id = %(id)s AND claimed_by = %(worker)s AND processed_at IS NULL
FOR UPDATE;

-- name: inbox_set_cursor
-- Record how far a fan-out got (the last candidate done) and renew the claim.
UPDATE {schema}.inbox_outbox SET cursor = %(cursor)s, claimed_at = now()
WHERE id = %(id)s AND claimed_by = %(worker)s;

-- name: inbox_processed
-- Mark a claimed event done.
UPDATE {schema}.inbox_outbox SET processed_at = now()
WHERE id = %(id)s AND claimed_by = %(worker)s AND processed_at IS NULL;

-- name: inbox_opted_in
-- The people who turned a category on by a stored row, in keyset order (partial index).
SELECT DISTINCT user_id FROM {schema}.inbox_preferences
WHERE category = %(category)s AND enabled AND user_id > %(after)s
ORDER BY user_id
LIMIT %(limit)s;

-- name: inbox_prefs_of
-- The stored inbox choices of many people.
SELECT user_id, category, channel, enabled FROM {schema}.inbox_preferences
WHERE user_id = ANY(%(ids)s::text[]);

-- name: inbox_pref_put
-- Store a choice that differs from the category's default.
INSERT INTO {schema}.inbox_preferences AS p (user_id, category, channel, enabled, updated_at)
VALUES (%(user_id)s, %(category)s, %(channel)s, %(enabled)s, now())
ON CONFLICT (user_id, category, channel)
DO UPDATE SET enabled = excluded.enabled, updated_at = excluded.updated_at;

-- name: inbox_pref_delete
-- Remove a choice set back to the category's default.
DELETE FROM {schema}.inbox_preferences
WHERE user_id = %(user_id)s AND category = %(category)s AND channel = %(channel)s;

-- name: inbox_upsert
-- Coalesce up to 500 entry decisions of one event in one statement (N10-N12, E1). What is the
-- same for every row of the event (its page, actor, time) is one value; the arrays carry only
-- what differs by person: the person and the number (from 1) of the kind of row in the short
-- arrays of the kinds (category, group key, in_app, email state, due time), of which an event
-- has a few. Nothing is read back: inbox_upsert_returning extends this statement with
-- the written rows returned.
INSERT INTO {schema}.inbox_entries AS e (
    user_id, site_id, category, variant, group_key, page_id, comment_id, actor_id, title,
    path, locale, excerpt, variants, count, last_event, in_app, email_state, email_after,
    created_at, updated_at, draft, members)
SELECT r.user_id, %(site_id)b::text, (%(category)s::text[])[r.kind], %(variant)b::text,
       (%(group_key)s::text[])[r.kind], %(page_id)b::text, %(comment_id)b::text,
       %(actor_id)b::text, %(title)b::text, %(path)b::text, %(locale)b::text,
       %(excerpt)b::text, ARRAY[%(variant)b::text], 1, %(last_event)b::bigint,
       (%(in_app)s::boolean[])[r.kind], (%(email_state)s::text[])[r.kind],
       (%(email_after)s::timestamptz[])[r.kind], %(at)b::timestamptz, %(at)b::timestamptz,
       %(draft)b::boolean, %(members)b::jsonb
FROM unnest(%(user_id)s::text[], %(kind)s::integer[]) AS r (user_id, kind)
ON CONFLICT (user_id, group_key) WHERE read_at IS NULL
DO UPDATE SET
    count = e.count + 1,
    variant = excluded.variant,
    variants = CASE WHEN excluded.variant = ANY(e.variants) THEN e.variants
                    ELSE e.variants || excluded.variant END,
    actor_id = excluded.actor_id,
    last_event = excluded.last_event,
    in_app = excluded.in_app,
    site_id = excluded.site_id,
    page_id = excluded.page_id,
    comment_id = excluded.comment_id,
    title = excluded.title,
    path = excluded.path,
    locale = excluded.locale,
    excerpt = excluded.excerpt,
    draft = excluded.draft,
    members = excluded.members,
    updated_at = GREATEST(e.updated_at, excluded.updated_at),
    email_state = CASE WHEN e.email_state = 'none' AND excluded.email_state = 'pending'
                       THEN 'pending' ELSE e.email_state END,
    email_after = CASE WHEN e.email_state = 'none' AND excluded.email_state = 'pending'
                       THEN excluded.email_after ELSE e.email_after END,
    read_at = CASE WHEN NOT excluded.in_app
                        AND e.email_state NOT IN ('pending', 'sending')
                        AND NOT (e.email_state = 'none' AND excluded.email_state = 'pending')
                   THEN excluded.updated_at END
WHERE e.last_event IS DISTINCT FROM excluded.last_event;

-- name: inbox_upsert_returning
-- inbox_upsert returning the rows it wrote (new or coalesced), for a listener of the fan-out.
-- extends: inbox_upsert
RETURNING e.id, e.user_id, e.category, e.group_key, e.count, e.in_app, e.email_state,
          e.email_after, e.read_at, (e.xmax = 0) AS inserted;

-- name: inbox_list
-- One page of a person's visible entries, newest first, after a keyset position (H1): those of
-- one site and those with no site (every site when site is NULL), optionally unread only.
SELECT id, site_id, category, variant, group_key, page_id, comment_id, actor_id, title, path,
       locale, excerpt, variants, count, in_app, email_state, read_at, created_at, updated_at,
       draft, members
FROM {schema}.inbox_entries
WHERE user_id = %(user_id)s AND in_app
  AND (site_id IS NULL OR NOT site_id = ANY(%(hidden_sites)s::text[]))
  AND (site_id IS NULL OR %(site)s::text IS NULL OR site_id = %(site)s::text)
  AND (read_at IS NULL OR NOT %(unread_only)s::boolean)
  AND (%(before_at)s::timestamptz IS NULL
       OR (updated_at, id) < (%(before_at)s::timestamptz, %(before_id)s::bigint))
ORDER BY updated_at DESC, id DESC
LIMIT %(limit)s;

-- name: inbox_sites_of
-- The sites of a person's visible entries, each once (the sites of their inboxes when the
-- host does not tell its own).
SELECT DISTINCT site_id FROM {schema}.inbox_entries
WHERE user_id = %(user_id)s AND in_app AND site_id IS NOT NULL
ORDER BY site_id;

-- name: inbox_unread_count
-- The badge: unread visible entries, counted up to the cap (H1).
SELECT count(*) FROM (
    SELECT 1 FROM {schema}.inbox_entries
    WHERE user_id = %(user_id)s AND read_at IS NULL AND in_app
      AND (site_id IS NULL OR NOT site_id = ANY(%(hidden_sites)s::text[]))
      AND (site_id IS NULL OR %(site)s::text IS NULL OR site_id = %(site)s::text)
    LIMIT %(cap)s
) AS capped;

-- name: inbox_latest_at
-- The time of a person's latest visible entry (H1).
SELECT max(updated_at) FROM {schema}.inbox_entries
WHERE user_id = %(user_id)s AND in_app
  AND (site_id IS NULL OR NOT site_id = ANY(%(hidden_sites)s::text[]))
  AND (site_id IS NULL OR %(site)s::text IS NULL OR site_id = %(site)s::text);

-- name: inbox_read
-- Mark a person's unread in-app entries read, all or by filter; a pending email is cancelled.
-- A page view (views) reaches email-only entries too (H2); a site limits the read to the
-- entries of that site and those with no site.
UPDATE {schema}.inbox_entries
SET read_at = %(at)s,
    email_state = CASE WHEN email_state = 'pending' THEN 'skipped' ELSE email_state END,
    email_after = CASE WHEN email_state = 'pending' THEN NULL ELSE email_after END
WHERE user_id = %(user_id)s AND read_at IS NULL AND (in_app OR %(views)s::boolean)
  AND (site_id IS NULL OR %(site)s::text IS NULL OR site_id = %(site)s::text)
  AND (%(ids)s::bigint[] IS NULL OR id = ANY(%(ids)s::bigint[]))
  AND (%(page_id)s::text IS NULL OR page_id = %(page_id)s)
  AND (%(categories)s::text[] IS NULL OR category = ANY(%(categories)s::text[]))
RETURNING id;

-- name: inbox_dismiss
-- Delete one of a person's entries (H2): only one the inbox shows (an email-only entry is
-- never reached by a dismissal); a site limits it to the entries of that site and of none.
DELETE FROM {schema}.inbox_entries
WHERE id = %(id)s AND user_id = %(user_id)s AND in_app
  AND (site_id IS NULL OR %(site)s::text IS NULL OR site_id = %(site)s::text);

-- name: inbox_purge_entries
-- Delete up to a batch of entries last changed before the retention limit (H3), walking the
-- people from after on (one index descent each: no index on updated_at, migration 0017); a
-- person's old entries are the tail of their range of inbox_entries_list_idx. Returns how many
-- went and the last person whose entries went: the next batch starts again at that person.
WITH RECURSIVE people (user_id) AS (
    (SELECT user_id FROM {schema}.inbox_entries WHERE user_id >= %(after)s
     ORDER BY user_id LIMIT 1)
    UNION ALL
    SELECT (SELECT e.user_id FROM {schema}.inbox_entries AS e WHERE e.user_id > p.user_id
            ORDER BY e.user_id LIMIT 1)
    FROM people AS p
    WHERE p.user_id IS NOT NULL
), old AS (
    SELECT o.id
    FROM people AS p
    CROSS JOIN LATERAL (
        SELECT e.id FROM {schema}.inbox_entries AS e
        WHERE e.user_id = p.user_id AND e.updated_at < %(before)s
    ) AS o
    LIMIT %(batch)s
), gone AS (
    DELETE FROM {schema}.inbox_entries AS e USING old
    WHERE e.id = old.id
    RETURNING e.user_id
)
SELECT count(*), max(user_id) FROM gone;

-- name: inbox_purge_outbox
-- Delete up to a batch of outbox events processed before the limit (H3).
DELETE FROM {schema}.inbox_outbox
WHERE id IN (SELECT id FROM {schema}.inbox_outbox WHERE processed_at < %(before)s
             LIMIT %(batch)s);

-- name: inbox_comment_deleted
-- A comment is gone: its entries keep their snapshot but no longer show its excerpt (N11).
UPDATE {schema}.inbox_entries SET comment_id = NULL WHERE comment_id = %(comment_id)s;

-- name: inbox_categories_all
-- The host's own categories (N13), by key: each declaration as it was written.
SELECT key, declaration FROM {schema}.inbox_categories ORDER BY key;

-- name: inbox_category_put
-- Declare a host category, or replace its declaration (N13).
INSERT INTO {schema}.inbox_categories (key, declaration, declared_at)
VALUES (%(key)s, %(declaration)s, %(at)s)
ON CONFLICT (key) DO UPDATE SET declaration = excluded.declaration,
                                declared_at = excluded.declared_at;
