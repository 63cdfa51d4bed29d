-- The snapshot of a page_created entry says whether the page was created unpublished (E6:
-- "created as a draft"): a fact of the creation, kept with the entry as its title is (N11).
ALTER TABLE {schema}.inbox_entries ADD COLUMN draft boolean NOT NULL DEFAULT false;
