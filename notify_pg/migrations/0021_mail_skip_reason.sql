-- Why the drain skipped an email (E4: site_off, inactive, no_access, section_off, preference)
-- and when, so that `notify db status` counts the skips of the last 24 hours by reason. An
-- email cancelled by a read (E1) has neither.
ALTER TABLE {schema}.inbox_entries
    ADD COLUMN email_skip text,
    ADD COLUMN email_skipped_at timestamptz;
