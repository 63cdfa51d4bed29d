-- The reference host's wiki: the inbox's ports and writes for tests and the demo.

-- name: wiki_site
-- One site.
SELECT id, host, https, primary_locale, time_zone, notifications, links, name
FROM {schema}.wiki_sites WHERE id = %(id)s

-- name: wiki_sites_by_id
-- The sites among ids (one read for the sites of a page of the inbox list).
SELECT id, host, https, primary_locale, time_zone, notifications, links, name
FROM {schema}.wiki_sites WHERE id = ANY(%(ids)s::text[])

-- name: wiki_names
-- The display names of the people among ids who have one (E6).
SELECT id, name FROM {schema}.wiki_users
WHERE id = ANY(%(ids)s::text[]) AND name IS NOT NULL AND name <> ''

-- name: wiki_unsubscribe_links
-- The unsubscribe templates the sites set (the one-click route of notify serve follows them).
SELECT DISTINCT links ->> 'unsubscribe' FROM {schema}.wiki_sites
WHERE coalesce(links ->> 'unsubscribe', '') <> '' ORDER BY 1

-- name: wiki_sites_off
-- The sites whose notifications are switched off (their entries are hidden, N5).
SELECT id FROM {schema}.wiki_sites WHERE NOT notifications ORDER BY id

-- name: wiki_page
-- One page (a deleted one as it was).
SELECT id, site_id, path, locale, title, tags, deleted FROM {schema}.wiki_pages WHERE id = %(id)s

-- name: wiki_pages_by_id
-- The pages among ids, a deleted one as it was (one read for a page of the inbox list).
SELECT id, site_id, path, locale, title, tags, deleted FROM {schema}.wiki_pages
WHERE id = ANY(%(ids)s::text[])

-- name: wiki_comment
-- One comment.
SELECT id, page_id, author, parent, mentions, excerpt FROM {schema}.wiki_comments
WHERE id = %(id)s

-- name: wiki_watchers
-- A keyset batch of a page's watchers.
SELECT user_id FROM {schema}.wiki_watchers
WHERE page_id = %(page_id)s AND user_id > %(after)s
ORDER BY user_id LIMIT %(limit)s

-- name: wiki_watchers_query
-- The watchers of a page, for an emit that captures them (N9).
SELECT user_id FROM {schema}.wiki_watchers WHERE page_id = {page_id}

-- name: wiki_review_rules
-- The enabled review rules of a site.
SELECT match, value, reviewer_groups FROM {schema}.wiki_review_rules
WHERE site_id = %(site_id)s AND enabled

-- name: wiki_members
-- A keyset batch of the members of some groups, each once.
SELECT DISTINCT user_id FROM {schema}.wiki_memberships
WHERE group_id = ANY(%(groups)s::text[]) AND user_id > %(after)s
ORDER BY user_id LIMIT %(limit)s

-- name: wiki_people
-- The facts of many people with their groups, as the fan-out reads them.
SELECT u.id, u.kind, u.active, u.system, u.email, u.verified,
       ARRAY(SELECT m.group_id FROM {schema}.wiki_memberships m
             WHERE m.user_id = u.id ORDER BY m.group_id)
FROM {schema}.wiki_users u
WHERE u.id = ANY(%(ids)s::text[])

-- name: wiki_people_users
-- wiki_people and wiki_users in one read: the facts, the groups and the cadence of each.
SELECT u.id, u.kind, u.active, u.system, u.email, u.verified,
       ARRAY(SELECT m.group_id FROM {schema}.wiki_memberships m
             WHERE m.user_id = u.id ORDER BY m.group_id),
       u.time_zone, u.locale, u.email_schedule, u.daily_hour
FROM {schema}.wiki_users u
WHERE u.id = ANY(%(ids)s::text[])

-- name: wiki_groups
-- Every group, its rules and its host permissions.
SELECT id, manage_system, rules, permissions FROM {schema}.wiki_groups

-- name: wiki_permission_holders
-- A keyset batch of the people holding a host permission (N8, N13): members of a group whose
-- permissions name it or that has manage_system, each once.
SELECT DISTINCT m.user_id FROM {schema}.wiki_memberships m
JOIN {schema}.wiki_groups g ON g.id = m.group_id
WHERE (g.manage_system OR %(permission)s = ANY(g.permissions)) AND m.user_id > %(after)s
ORDER BY m.user_id LIMIT %(limit)s

-- name: wiki_settings
-- The instance's notification settings (absent: the defaults).
SELECT email_delay_s, retention_days, mail_configured, sections FROM {schema}.wiki_settings

-- name: wiki_users
-- What the cadence reads of many people.
SELECT id, time_zone, locale, email_schedule, daily_hour FROM {schema}.wiki_users
WHERE id = ANY(%(ids)s::text[])

-- name: wiki_add_site
-- Create or replace a site.
INSERT INTO {schema}.wiki_sites (id, host, notifications) VALUES (%(id)s, %(host)s, %(notifications)s)
ON CONFLICT (id) DO UPDATE SET host = excluded.host, notifications = excluded.notifications

-- name: wiki_add_user
-- Create or replace a person.
INSERT INTO {schema}.wiki_users (id, kind, active, system, email, verified)
VALUES (%(id)s, %(kind)s, %(active)s, %(system)s, %(email)s, %(verified)s)
ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, active = excluded.active,
    system = excluded.system, email = excluded.email, verified = excluded.verified

-- name: wiki_add_group
-- Create or replace a group and its rules.
INSERT INTO {schema}.wiki_groups (id, manage_system, rules, permissions)
VALUES (%(id)s, %(manage_system)s, %(rules)s, %(permissions)s::text[])
ON CONFLICT (id) DO UPDATE SET manage_system = excluded.manage_system, rules = excluded.rules,
                               permissions = excluded.permissions

-- name: wiki_add_member
-- Add a person to a group.
INSERT INTO {schema}.wiki_memberships (group_id, user_id) VALUES (%(group_id)s, %(user_id)s)
ON CONFLICT DO NOTHING

-- name: wiki_add_page
-- Create a page.
INSERT INTO {schema}.wiki_pages (id, site_id, path, locale, title, tags)
VALUES (%(id)s, %(site_id)s, %(path)s, %(locale)s, %(title)s, %(tags)s)

-- name: wiki_delete_page
-- Delete a page: it stays as it was, flagged; its watchers go.
WITH gone AS (DELETE FROM {schema}.wiki_watchers WHERE page_id = %(id)s)
UPDATE {schema}.wiki_pages SET deleted = true WHERE id = %(id)s

-- name: wiki_watch
-- A person watches a page.
INSERT INTO {schema}.wiki_watchers (page_id, user_id) VALUES (%(page_id)s, %(user_id)s)
ON CONFLICT DO NOTHING

-- name: wiki_add_comment
-- Create a comment.
INSERT INTO {schema}.wiki_comments (id, page_id, author, parent, mentions, excerpt)
VALUES (%(id)s, %(page_id)s, %(author)s, %(parent)s, %(mentions)s, %(excerpt)s)

-- name: wiki_add_review_rule
-- Create a review rule.
INSERT INTO {schema}.wiki_review_rules (id, site_id, match, value, reviewer_groups, enabled)
VALUES (%(id)s, %(site_id)s, %(match)s, %(value)s, %(reviewer_groups)s, %(enabled)s)

-- name: wiki_set_settings
-- Set the instance's notification settings.
INSERT INTO {schema}.wiki_settings (id, email_delay_s, mail_configured, sections)
VALUES (true, %(email_delay_s)s, %(mail_configured)s, %(sections)s)
ON CONFLICT (id) DO UPDATE SET email_delay_s = excluded.email_delay_s,
    mail_configured = excluded.mail_configured, sections = excluded.sections

-- name: wiki_merge_site
-- Create a site or change the members given (NULL: keep; link templates one by one, an empty
-- one back to its default).
INSERT INTO {schema}.wiki_sites AS s (id, host, https, primary_locale, time_zone, notifications,
                                      links, name)
VALUES (%(id)s, coalesce(%(host)s, ''), coalesce(%(https)s, true), %(primary_locale)s,
        %(time_zone)s, coalesce(%(notifications)s, true),
        jsonb_strip_nulls(coalesce(%(links)s, jsonb_build_object())), %(name)s)
ON CONFLICT (id) DO UPDATE SET
    host = coalesce(%(host)s, s.host),
    name = coalesce(%(name)s, s.name),
    https = coalesce(%(https)s, s.https),
    primary_locale = coalesce(%(primary_locale)s, s.primary_locale),
    time_zone = coalesce(%(time_zone)s, s.time_zone),
    notifications = coalesce(%(notifications)s, s.notifications),
    links = s.links || coalesce(%(links)s, jsonb_build_object())

-- name: wiki_user_row
-- A person's row as stored (the loader merges an update into it).
SELECT kind, active, system, email, verified, locale, time_zone, email_schedule, daily_hour,
       name
FROM {schema}.wiki_users WHERE id = %(id)s

-- name: wiki_put_user
-- Create or replace a person with every member.
INSERT INTO {schema}.wiki_users (id, kind, active, system, email, verified, locale, time_zone,
                                 email_schedule, daily_hour, name)
VALUES (%(id)s, %(kind)s, %(active)s, %(system)s, %(email)s, %(verified)s, %(locale)s,
        %(time_zone)s, %(email_schedule)s, %(daily_hour)s, %(name)s)
ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, active = excluded.active,
    system = excluded.system, email = excluded.email, verified = excluded.verified,
    locale = excluded.locale, time_zone = excluded.time_zone,
    email_schedule = excluded.email_schedule, daily_hour = excluded.daily_hour,
    name = excluded.name

-- name: wiki_remove_member
-- Remove a person from a group.
DELETE FROM {schema}.wiki_memberships WHERE group_id = %(group_id)s AND user_id = %(user_id)s

-- name: wiki_put_review_rule
-- Create or replace a review rule.
INSERT INTO {schema}.wiki_review_rules (id, site_id, match, value, reviewer_groups, enabled)
VALUES (%(id)s, %(site_id)s, %(match)s, %(value)s, %(reviewer_groups)s, %(enabled)s)
ON CONFLICT (id) DO UPDATE SET site_id = excluded.site_id, match = excluded.match,
    value = excluded.value, reviewer_groups = excluded.reviewer_groups,
    enabled = excluded.enabled

-- name: wiki_unwatch
-- A person stops watching a page.
DELETE FROM {schema}.wiki_watchers WHERE page_id = %(page_id)s AND user_id = %(user_id)s

-- name: wiki_merge_settings
-- Change the members of the instance's settings given (NULL: keep; sections member by member).
INSERT INTO {schema}.wiki_settings AS s (id, email_delay_s, retention_days, mail_configured,
                                         sections)
VALUES (true, coalesce(%(email_delay_s)s, 180), coalesce(%(retention_days)s, 60),
        coalesce(%(mail_configured)s, false), %(sections)s)
ON CONFLICT (id) DO UPDATE SET
    email_delay_s = coalesce(%(email_delay_s)s, s.email_delay_s),
    retention_days = coalesce(%(retention_days)s, s.retention_days),
    mail_configured = coalesce(%(mail_configured)s, s.mail_configured),
    sections = s.sections || %(sections)s

-- name: wiki_change_page
-- Change a page's title, tags, path, locale or deleted flag (NULL: keep).
UPDATE {schema}.wiki_pages SET
    title = coalesce(%(title)s, title),
    tags = coalesce(%(tags)s, tags),
    path = coalesce(%(path)s, path),
    locale = coalesce(%(locale)s, locale),
    deleted = coalesce(%(deleted)s, deleted)
WHERE id = %(id)s

-- name: wiki_change_comment
-- Set a comment's mentions (the complete list) and, when given, its excerpt.
UPDATE {schema}.wiki_comments SET mentions = %(mentions)s, excerpt = coalesce(%(excerpt)s, excerpt)
WHERE id = %(id)s

-- name: wiki_delete_comment
-- Delete a comment.
DELETE FROM {schema}.wiki_comments WHERE id = %(id)s

-- name: wiki_put_submission
-- Create or replace a review submission.
INSERT INTO {schema}.wiki_submissions (id, page_id, author) VALUES (%(id)s, %(page_id)s, %(author)s)
ON CONFLICT (id) DO UPDATE SET page_id = excluded.page_id, author = excluded.author

-- name: wiki_retention_days
-- The instance's retention of inbox entries.
SELECT retention_days FROM {schema}.wiki_settings

-- name: wiki_sites_on
-- The sites whose notifications are on, by creation (the demo page's site switcher).
SELECT id, host, https, coalesce(name, '') FROM {schema}.wiki_sites WHERE notifications
ORDER BY created, id

-- name: wiki_first_site
-- The instance's first site by creation (the mail site of entries without one, E4).
SELECT id FROM {schema}.wiki_sites ORDER BY created LIMIT 1

-- name: wiki_admin_settings
-- The instance's settings an administrator changes (absent: the defaults).
SELECT email_delay_s, retention_days, mail_batch_size, sections FROM {schema}.wiki_settings

-- name: wiki_put_admin_settings
-- Store the instance's settings an administrator changed (mail_configured is kept).
INSERT INTO {schema}.wiki_settings AS s (id, email_delay_s, retention_days, mail_batch_size,
                                         sections)
VALUES (true, %(email_delay_s)s, %(retention_days)s, %(mail_batch_size)s, %(sections)s)
ON CONFLICT (id) DO UPDATE SET
    email_delay_s = excluded.email_delay_s,
    retention_days = excluded.retention_days,
    mail_batch_size = excluded.mail_batch_size,
    sections = excluded.sections

-- name: wiki_digest_schedules
-- Whether anyone waits for an hourly or daily digest (H2a).
SELECT EXISTS (SELECT 1 FROM {schema}.wiki_users WHERE email_schedule IN ('hourly', 'daily'))

-- name: wiki_set_schedule
-- Set a person's email schedule and daily hour.
UPDATE {schema}.wiki_users SET email_schedule = %(email_schedule)s, daily_hour = %(daily_hour)s
WHERE id = %(id)s

-- name: wiki_plain_http_sites
-- The sites served over plain http (mailbox providers ignore one-click unsubscribe there).
SELECT id FROM {schema}.wiki_sites WHERE NOT https ORDER BY id

-- name: wiki_forget_user
-- The host forgets a person (U3, user.forgotten): their row and memberships (by cascade) and
-- their watches go; comments and submissions keep the id they name.
WITH watches AS (DELETE FROM {schema}.wiki_watchers WHERE user_id = %(id)s)
DELETE FROM {schema}.wiki_users WHERE id = %(id)s
