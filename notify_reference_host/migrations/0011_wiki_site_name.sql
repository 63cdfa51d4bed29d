-- A site's name, what its mails call the wiki (E6, formats.md section 4: "name" of
-- site.created / site.updated); NULL or empty: the mails name it by its host. IF NOT EXISTS:
-- a record that lost its rows (tests/pg/db/test_migrations.py) may apply it again.
ALTER TABLE {schema}.wiki_sites ADD COLUMN IF NOT EXISTS name text;
