-- The instance's mail batch size (seed 004 section 12.1: people per mail drain round; the API
-- refuses anything outside 1-1000), beside the other notification settings.
ALTER TABLE {schema}.wiki_settings ADD COLUMN mail_batch_size integer NOT NULL DEFAULT 100;
ALTER TABLE {schema}.wiki_settings ADD CONSTRAINT wiki_settings_mail_batch_size_check
    CHECK (mail_batch_size BETWEEN 1 AND 1000);
