-- A site's name, what its mails call the wiki (E6, formats.md section 4: "name" of
-- site.created / site.updated); NULL or empty: the mails name it by its host.
ALTER TABLE {schema}.wiki_sites ADD COLUMN name text;
