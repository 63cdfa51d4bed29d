-- The reference host's wiki (seed 004): sites, people, groups with their rules, memberships,
-- pages (a deleted page stays as it was, flagged), watchers, comments, submissions, review
-- rules and the instance's notification settings. A real wiki keeps its own tables and
-- implements notify_pg.inbox_fanout.InboxHostPorts on them.
CREATE TABLE {schema}.wiki_sites (
    id             text COLLATE "C" PRIMARY KEY,
    host           text NOT NULL DEFAULT '',
    https          boolean NOT NULL DEFAULT true,
    primary_locale text,
    time_zone      text,
    notifications  boolean NOT NULL DEFAULT true
);

CREATE TABLE {schema}.wiki_users (
    id             text COLLATE "C" PRIMARY KEY,
    kind           text NOT NULL DEFAULT 'human' CHECK (kind IN ('human', 'agent', 'app')),
    active         boolean NOT NULL DEFAULT true,
    system         boolean NOT NULL DEFAULT false,
    email          text,
    verified       boolean NOT NULL DEFAULT false,
    locale         text,
    time_zone      text,
    email_schedule text NOT NULL DEFAULT 'immediate',
    daily_hour     smallint
);

CREATE TABLE {schema}.wiki_groups (
    id            text COLLATE "C" PRIMARY KEY,
    manage_system boolean NOT NULL DEFAULT false,
    rules         jsonb NOT NULL DEFAULT '[]'
);

CREATE TABLE {schema}.wiki_memberships (
    group_id text COLLATE "C" NOT NULL REFERENCES {schema}.wiki_groups (id) ON DELETE CASCADE,
    user_id  text COLLATE "C" NOT NULL REFERENCES {schema}.wiki_users (id) ON DELETE CASCADE,
    PRIMARY KEY (group_id, user_id)
);
CREATE INDEX wiki_memberships_user_idx ON {schema}.wiki_memberships (user_id, group_id);

CREATE TABLE {schema}.wiki_pages (
    id      text COLLATE "C" PRIMARY KEY,
    site_id text COLLATE "C" NOT NULL REFERENCES {schema}.wiki_sites (id),
    path    text NOT NULL,
    locale  text NOT NULL DEFAULT '',
    title   text NOT NULL DEFAULT '',
    tags    text[] NOT NULL DEFAULT ARRAY[]::text[],
    deleted boolean NOT NULL DEFAULT false
);

CREATE TABLE {schema}.wiki_watchers (
    page_id text COLLATE "C" NOT NULL REFERENCES {schema}.wiki_pages (id) ON DELETE CASCADE,
    user_id text COLLATE "C" NOT NULL,
    PRIMARY KEY (page_id, user_id)
);

CREATE TABLE {schema}.wiki_comments (
    id       text COLLATE "C" PRIMARY KEY,
    page_id  text COLLATE "C" NOT NULL,
    author   text COLLATE "C",
    parent   text COLLATE "C",
    mentions text[] COLLATE "C" NOT NULL DEFAULT ARRAY[]::text[],
    excerpt  text
);

CREATE TABLE {schema}.wiki_submissions (
    id      text COLLATE "C" PRIMARY KEY,
    page_id text COLLATE "C" NOT NULL,
    author  text COLLATE "C"
);

CREATE TABLE {schema}.wiki_review_rules (
    id              text COLLATE "C" PRIMARY KEY,
    site_id         text COLLATE "C" NOT NULL,
    match           text NOT NULL CHECK (match IN ('all', 'path_prefix', 'path_exact', 'tag')),
    value           text,
    reviewer_groups text[] COLLATE "C" NOT NULL,
    enabled         boolean NOT NULL
);

-- One row: the instance's notification settings (sections, mail, delay, retention).
CREATE TABLE {schema}.wiki_settings (
    id              boolean PRIMARY KEY DEFAULT true CHECK (id),
    email_delay_s   integer NOT NULL DEFAULT 180,
    retention_days  integer NOT NULL DEFAULT 60,
    mail_configured boolean NOT NULL DEFAULT false,
    sections        jsonb NOT NULL DEFAULT jsonb_build_object()
);
