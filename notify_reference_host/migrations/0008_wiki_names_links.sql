-- A person's display name (what mails name them by, E6) and a site's link templates (where
-- its mails' links go, E6: only the templates it sets; the others are the defaults).
ALTER TABLE {schema}.wiki_users ADD COLUMN name text;
ALTER TABLE {schema}.wiki_sites ADD COLUMN links jsonb NOT NULL DEFAULT jsonb_build_object();
