-- E4: an entry without a site is mailed with the instance's first site by creation; an
-- identity column keeps the order in which sites were created.
ALTER TABLE {schema}.wiki_sites ADD COLUMN created bigint GENERATED ALWAYS AS IDENTITY;
